"""The rewriting pass: the matched imports, string targets and chains, as LibCST edits."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from contracts.engine.resolve import resolve_relative
from contracts.findings import Finding
from contracts.fix.bare import Survey, owner_of
from contracts.fix.syntax import Key, Positions, dotted_name, parse_dotted
from contracts.fix.verify import Verifier

# (module, name) -> (new module, new name), or None when `replacements` knows no new place
NameTargets = Callable[[str, str], "tuple[str, str] | None"]


class Rewriter(cst.CSTTransformer):
    """Second pass: rewrite the matched imports, strings and chains."""

    def __init__(self, pos: Positions, module: str, is_package: bool, fixable: dict[Key, Finding],
                 known: set[Key], bare_ok: dict[str, str] | None = None, survey: Survey | None = None,
                 names: NameTargets | None = None, verifier: Verifier | None = None) -> None:
        self.pos, self.module, self.is_package = pos, module, is_package
        self.names, self.verifier = names, verifier
        self.fixable, self.known, self.bare_ok = fixable, known, bare_ok or {}
        self.claimed: set[Key] = set()
        self.refused: dict[Key, str] = {}
        self.alias_uses: dict[str, set[str]] = {}  # `m` -> the `m.X` the file reads (fix/source.py)
        self._split_lines: set[int] = set()
        # id(node) -> new dotted name, for the `M` part of each `M.x.y` chain that is rewritten:
        # a chain belongs to the longest bare-imported module it starts with.
        self._chain_sites: dict[int, str] = {}
        all_bare = {m for _, m in survey.bare} if survey else set()
        for chain in survey.chains if survey else ():
            owner = owner_of(chain.dotted, all_bare)
            if owner in self.bare_ok:
                node = chain.nodes[chain.dotted.count(".") - owner.count(".")]
                self._chain_sites[id(node)] = self.bare_ok[owner]

    # ---- chains under a rewritten bare import

    def _chain_site(self, original, updated):
        new = self._chain_sites.get(id(original))
        if new is None:
            return updated
        return parse_dotted(new).with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def leave_Attribute(self, original, updated):
        return self._chain_site(original, updated)

    def leave_Name(self, original, updated):
        return self._chain_site(original, updated)

    # ---- import a.b.c [as x]

    def visit_Import(self, node) -> bool:
        return False  # its names are not chains

    def leave_Import(self, original: cst.Import, updated: cst.Import):
        names = []
        changed = False
        for alias in updated.names:
            old = dotted_name(alias.name)
            key = self.pos.key(original, old)
            finding = self.fixable.get(key)
            why = self._verify_import(finding, alias)
            if why is not None:
                self.refused[key] = f"not rewritten: {why}"
                names.append(alias)
            elif finding is not None and (alias.asname is not None or old in self.bare_ok):
                names.append(alias.with_changes(name=parse_dotted(finding.replacement)))
                self.claimed.add(key)
                changed = True
            else:
                names.append(alias)
        return updated.with_changes(names=names) if changed else updated

    def _verify_import(self, finding, alias) -> str | None:
        """Why `import new.mod [as m]` would not resolve: the module, and for `as m` each name the
        file reads as `m.X` (checked as `from new.mod import X` is)."""
        if finding is None or self.verifier is None:
            return None
        used = sorted(self.alias_uses.get(alias.asname.name.value, ())) if alias.asname is not None and \
            isinstance(alias.asname.name, cst.Name) else []
        if used:
            return self.verifier.names(finding.replacement, used)
        return self.verifier.module(finding.replacement)

    # ---- from x import a, b as c

    def visit_ImportFrom(self, node) -> bool:
        return False

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        module_name = dotted_name(original.module) if original.module is not None else None
        base = resolve_relative(self.module, self.is_package, len(original.relative), module_name)
        if base is None:
            return updated
        star = isinstance(original.names, cst.ImportStar)
        aliases = [None] if star else list(original.names)
        # (target, key, original index, alias node) per name, in order. A target is a module to
        # import from, ("import", module, bound name) for a top-level module, or None (as it was).
        placed = [self._place(original, base, star, index, alias) for index, alias in enumerate(aliases)]
        placed = self._verified(placed, aliases)
        if all(target is None for target, _, _, _ in placed):
            return updated
        return self._split(original, updated, placed, star)

    def _place(self, original: cst.ImportFrom, base: str, star: bool, index: int, alias) -> tuple:
        """Where one name of `from base import ...` goes: (target, key, index, alias), the finding
        claimed; (None, key or None, index, alias) where it stays as it was. A name is a
        submodule when a finding is about `base.name`, else a name of `base`."""
        name = None if alias is None else alias.name.value
        sub_key = self.pos.key(original, f"{base}.{name}") if name else None
        base_key = self.pos.key(original, base)
        from_base = not (sub_key is not None and (sub_key in self.fixable or sub_key in self.known))
        key = base_key if from_base else sub_key
        finding = self.fixable.get(key)
        if finding is None:
            return None, None, index, alias
        if from_base:
            target = self._name_target(finding, key, base, name, star)
            if target is None:
                return None, key, index, alias
            new_module, new_name = target
            if not star and new_name != name:  # renamed: bind the old name
                alias = alias.with_changes(name=cst.Name(new_name),
                                           asname=alias.asname or cst.AsName(name=cst.Name(name)))
            placed = (new_module, key, index, alias)
        else:
            placed = _submodule_place(finding.replacement, key, index, alias, name)
        self.claimed.add(key)
        return placed

    def _name_target(self, finding: Finding, key: Key, base: str, name: str | None, star: bool):
        """(new module, new name) of `name` imported from `base`, or None (refused: no new place).
        Per-name lines are the removed-module contract's; a missing-module finding's replacement
        defines every name the statement imports."""
        per_name = self.names is not None and not star and finding.rule == "removed-module"
        target = self.names(base, name) if per_name else (finding.replacement, name)
        if target is None:
            self.refused[key] = (f"`replacements` names no new place for `{name}` (imported from "
                                 f"`{base}`); add a line `{base}:{name} -> new.module:{name}`")
        return target

    def _split(self, original: cst.ImportFrom, updated: cst.ImportFrom, placed: list, star: bool):
        """The statement, or the statements (one per target, in order of first use), that import
        the placed names from where they are now."""
        groups: dict[object, list] = {}
        for target, _, index, alias in placed:
            groups.setdefault(target, []).append((index, alias))
        statements = [_statement(original, updated, i, target, group, star)
                      for i, (target, group) in enumerate(groups.items())]
        if len(statements) == 1:
            return statements[0].with_changes(semicolon=updated.semicolon)
        statements = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in statements[:-1]] + [
            statements[-1].with_changes(semicolon=updated.semicolon)]
        self._split_lines.add(id(original))
        return cst.FlattenSentinel(statements)

    # `lazy import ...` / `lazy from ... import ...` (PEP 810): LibCST's own node types, rewritten
    # as the plain forms are; the node keeps its `lazy` keyword and its whitespace.
    visit_LazyImport = visit_Import
    leave_LazyImport = leave_Import
    visit_LazyImportFrom = visit_ImportFrom
    leave_LazyImportFrom = leave_ImportFrom

    def _verified(self, placed: list, aliases: list) -> list:
        """`placed` with every finding put back as it was when one of its names has no new place
        or (with --verify-against) one of its new imports would not resolve: a statement is
        rewritten whole or not at all for each finding."""
        if self.verifier is not None:
            groups: dict[object, list] = {}
            for target, key, _, alias in placed:
                if target is not None:
                    groups.setdefault(target, []).append((key, alias))
            for target, members in groups.items():
                if isinstance(target, tuple):
                    why = self.verifier.module(target[1])
                else:
                    why = self.verifier.names(target, ["*" if a is None else a.name.value for _, a in members])
                if why is not None:
                    for key, _ in members:
                        self.refused.setdefault(key, f"not rewritten: {why}")
        if not any(key in self.refused for _, key, _, _ in placed):
            return placed
        return [(None, key, index, aliases[index]) if key in self.refused else (target, key, index, alias)
                for target, key, index, alias in placed]

    def leave_SimpleStatementLine(self, original, updated):
        # One `from` statement split into several: one line each, at the same indentation, each
        # keeping the trailing comment (a noqa comment applies to every part).
        if len(original.body) == 1 and id(original.body[0]) in self._split_lines:
            first = updated.with_changes(body=[updated.body[0]])
            rest = [cst.SimpleStatementLine(body=[s], trailing_whitespace=updated.trailing_whitespace)
                    for s in updated.body[1:]]
            return cst.FlattenSentinel([first, *rest])
        return updated

    # ---- string targets

    def leave_SimpleString(self, original: cst.SimpleString, updated):
        value = original.evaluated_value
        if not isinstance(value, str):
            return updated
        key = self.pos.key(original, value)
        finding = self.fixable.get(key)
        if finding is None:
            return updated
        self.claimed.add(key)
        why = self.verifier.target(finding.replacement) if self.verifier is not None else None
        if why is not None:
            self.refused[key] = f"not rewritten: {why}"
            return updated
        return updated.with_changes(value=f"{original.prefix}{original.quote}{finding.replacement}{original.quote}")

    def leave_ConcatenatedString(self, original: cst.ConcatenatedString, updated):
        try:
            value = original.evaluated_value
        except Exception:  # an f-string part
            return updated
        if isinstance(value, str):
            key = self.pos.key(original, value)
            if key in self.fixable:
                self.refused[key] = "the string target is split over adjacent literals; join it by hand"
        return updated


def _submodule_place(new: str, key: Key, index: int, alias: cst.ImportAlias, name: str) -> tuple:
    """The place of `from old import name` where `old.name` is now `new`: `from parent import
    last` (as `name`, its bound name), or `import new` for a top-level module."""
    parent, _, last = new.rpartition(".")
    bound = alias.asname.name.value if alias.asname is not None else name
    if not parent:  # a top-level module: `import six` (as the name it was bound to)
        return ("import", new, bound), key, index, alias
    asname = alias.asname
    if asname is None and last != name:
        asname = cst.AsName(name=cst.Name(name))
    return parent, key, index, alias.with_changes(name=cst.Name(last), asname=asname)


def _statement(original: cst.ImportFrom, updated: cst.ImportFrom, i: int, target, group: list, star: bool):
    """The `i`-th statement of a split: `import new [as bound]` for a top-level module (`lazy`
    kept), else `updated` importing `group` from `target` (or from where it was, for None)."""
    if isinstance(target, tuple):
        _, new, bound = target
        asname = None if bound == new else cst.AsName(name=cst.Name(bound))
        # (`lazy from a import b` -> `lazy import b`: the `lazy` keyword stays)
        kind = cst.LazyImport if isinstance(original, cst.LazyImportFrom) else cst.Import
        return kind(names=[cst.ImportAlias(name=parse_dotted(new), asname=asname)])
    node = updated if i == 0 else updated.with_changes(
        whitespace_after_from=cst.SimpleWhitespace(" "), semicolon=cst.MaybeSentinel.DEFAULT)
    if target is not None:
        node = node.with_changes(module=parse_dotted(target), relative=[])
    if not star:
        node = _with_names(node, group, list(original.names))
    return node


def _with_names(node: cst.ImportFrom, group: list, everything: list) -> cst.ImportFrom:
    """`node` importing only `group` ((original index, alias) pairs): the commas between them as
    they were; after the last, what followed the original last name (nothing, or the trailing
    comma before `)`). A name's own comment stays with it."""
    last_index = len(everything) - 1
    original_last = everything[-1]
    names = []
    for i, (index, alias) in enumerate(group):
        if i < len(group) - 1:
            if not isinstance(alias.comma, cst.Comma):
                alias = alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            names.append(alias)
            continue
        if index == last_index:
            names.append(alias)
            continue
        own = alias.comma  # a Comma: this name was not last
        own_ws = own.whitespace_after if isinstance(own, cst.Comma) else None
        if isinstance(original_last.comma, cst.Comma):  # a trailing comma before `)`
            ending = original_last.comma.whitespace_after
            if isinstance(own_ws, cst.ParenthesizedWhitespace) and isinstance(ending, cst.ParenthesizedWhitespace):
                own = own.with_changes(whitespace_after=own_ws.with_changes(
                    indent=ending.indent, last_line=ending.last_line))
            else:
                own = original_last.comma
            names.append(alias.with_changes(comma=own))
        elif isinstance(own_ws, cst.ParenthesizedWhitespace) and node.rpar is not None and \
                isinstance(node.rpar.whitespace_before, cst.ParenthesizedWhitespace):
            # `(\n    a,  # why\n    b\n)` without `b`: keep `a`'s comma and comment, end at `)`.
            ending = node.rpar.whitespace_before
            names.append(alias.with_changes(comma=own.with_changes(whitespace_after=own_ws.with_changes(
                indent=ending.indent, last_line=ending.last_line))))
            node = node.with_changes(rpar=node.rpar.with_changes(whitespace_before=cst.SimpleWhitespace("")))
        else:
            names.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
    return node.with_changes(names=names)
