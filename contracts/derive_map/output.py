"""`derive-map` output: a `replacements =` block to paste (text), or every score and piece of
evidence for review (`--format json`)."""

from __future__ import annotations

import json

from contracts.derive_map.model import (
    COMMON_NAME,
    MIN_SHARED,
    MODULE_MIN,
    SAME_DEFINITION,
    SAME_SIGNATURE,
    TIE_MARGIN,
    Derived,
    mapped_ancestor,
)


def render(result: Derived, header: str) -> str:
    lines = [f"# {header}", "replacements ="]
    lines += [f"    {old} -> {new}" for old, new in result.lines()]
    lines += [f"    {old} -> {new}" for old, new in result.name_lines()]
    for module, why in sorted(result.withheld.items()):
        lines.append(f"# withheld: {module} -> {result.mapped[module]}: {why}; its names are mapped one by one")
    for module, why in sorted(result.unmatched.items()):
        lines.append(f"# unmatched: {module}: {why}")
        parent = mapped_ancestor(module, result.printed())
        if parent is not None:
            lines.append(f"#   (the line for `{parent}` still sends it to "
                         f"`{result.printed()[parent] + module[len(parent):]}`)")
    for module, candidates in sorted(result.ambiguous.items()):
        scores = dict(result.scores.get(module, []))
        shown = " | ".join(f"{c} ({scores[c]:.0%})" if c in scores else c for c in candidates)
        lines.append(f"# ambiguous: {module} -> {shown}")
    by_module: dict[str, list[str]] = {}
    for module, name in result.shown_names():
        if (module, name) in result.names_ambiguous:
            shown = " | ".join(f"{c} ({s:.0%})" for c, s in result.names_ambiguous[module, name])
            by_module.setdefault(module, []).append(f"`{name}` (ambiguous: {shown})")
        else:
            by_module.setdefault(module, []).append(f"`{name}` ({result.names_unmatched[module, name]})")
    for module, items in sorted(by_module.items()):
        lines.append(f"# names of {module} its line does not cover: {'; '.join(items)}")
    return "\n".join(lines)


def summary(result: Derived) -> str:
    text = (f"{len(result.mapped)} of {len(result.modules)} modules mapped "
            f"({len(result.lines())} lines), {len(result.unmatched)} unmatched, "
            f"{len(result.ambiguous)} ambiguous")
    if result.withheld:
        text += f", {len(result.withheld)} lines withheld"
    if result.names:
        text += f"; {len(result.names)} names mapped one by one"
    if result.shown_names():
        text += f"; {len(result.shown_names())} names its lines do not cover"
    return text


def to_json(result: Derived, command: dict) -> str:
    modules = [_module_entry(result, m) for m in result.modules]
    names = [_name_entry(result, key)
             for key in sorted(set(result.names) | set(result.names_unmatched) | set(result.names_ambiguous))]
    data = {
        "command": command,
        "thresholds": {"same_definition": SAME_DEFINITION, "same_signature": SAME_SIGNATURE,
                       "module_min": MODULE_MIN, "tie_margin": TIE_MARGIN, "min_shared": MIN_SHARED,
                       "common_name": COMMON_NAME},
        "replacements": [f"{a} -> {b}" for a, b in result.lines() + result.name_lines()],
        "modules": modules,
        "names": names,
        "warnings": result.warnings,
        "summary": summary(result),
        "complete": result.complete(),
    }
    return json.dumps(data, indent=2, sort_keys=False)


def _module_entry(result: Derived, m: str) -> dict:
    """One module's object in the JSON: its status, target, evidence or reason, candidates."""
    entry: dict = {"module": m}
    if m in result.mapped:
        entry.update(status="withheld" if m in result.withheld else "mapped", target=result.mapped[m])
        if m in result.evidence:
            entry.update(result.evidence[m].to_json())
        if m in result.withheld:
            entry["reason"] = result.withheld[m]
    elif m in result.ambiguous:
        entry.update(status="ambiguous", reason="candidates tie")
    elif m in result.unmatched:
        entry.update(status="unmatched", reason=result.unmatched[m])
    elif result.effective(m) is not None:
        entry.update(status="covered", target=result.effective(m), reason="the line of a package above it")
    else:
        entry.update(status="no line", target=None,
                     reason="matched nothing itself; the modules under it have lines of their own")
    entry["candidates"] = [{"module": c, "score": round(s, 3)} for c, s in result.scores.get(m, [])] or [
        {"module": c, "score": None} for c in result.ambiguous.get(m, [])]
    return entry


def _name_entry(result: Derived, key: tuple[str, str]) -> dict:
    """One name's object in the JSON: mapped (with its evidence), ambiguous or unmatched."""
    module, name = key
    entry = {"module": module, "name": name}
    if key in result.names:
        target, new_name = result.names[key]
        entry.update(status="mapped", target=target, target_name=new_name,
                     **result.name_evidence[key].to_json())
    elif key in result.names_ambiguous:
        entry.update(status="ambiguous", candidates=[{"module": c, "score": round(s, 3)}
                                                     for c, s in result.names_ambiguous[key]])
    else:
        entry.update(status="unmatched", reason=result.names_unmatched[key])
    return entry
