"""What `missing-module` and `missing-name` share: one pass over the tree, and "moved?" hints.

1. Every file's import statements and string targets are read off its text
   (`engine/import_lines.py`), and each is checked against the tree (`engine/bindings.py`): does
   the module exist, does it bind the name. This is cheap and conservative.
2. Only files where something may be missing (or whose text the first pass could not read with
   certainty) are parsed with `ast` (`engine/scan.py`), and their references are checked again:
   the findings, with their exact positions and flags (lazy, type-only, guarded), come from
   this second pass alone.
3. For each finding's statement, the modules that define every name it imports (or, with no
   names, that have the module's last name part) are looked up; a unique one is the
   replacement `--fix` writes.
"""

from __future__ import annotations

from contracts.config import Config, MissingSpec
from contracts.engine.resolve import is_under, resolve_relative
from contracts.findings import Finding

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.bindings import ModuleIndex
    from contracts.engine.model import Model

MODULE_RULE = "missing-module"
NAME_RULE = "missing-name"
MAX_LISTED = 5  # candidates named in a message


def findings(model: Model, config: Config, spec: MissingSpec) -> list[Finding]:
    """Both rules' findings of one contract, computed once per model (`ignore_imports` is applied
    to them by `check.contract_findings`, as to every contract's)."""
    cache = model.__dict__.setdefault("_missing_findings", {})
    if spec not in cache:
        cache[spec] = _Analysis(model, config, spec).run()
    return cache[spec]


class _Analysis:
    def __init__(self, model: Model, config: Config, spec: MissingSpec) -> None:
        self.model, self.config, self.spec = model, config, spec
        self.packages = spec.packages_for(config.root_packages)
        self.removed = tuple(p for r in config.removed for p in r.removed)

    def internal(self, module: str) -> bool:
        return any(is_under(module, p) for p in self.packages)

    def checked(self, module: str) -> bool:
        """Under `packages`, and not a removed module (`removed-module` reports those)."""
        return self.internal(module) and not any(is_under(module, p) for p in self.removed)

    # ---- pass 1: the text of every file

    def run(self) -> list[Finding]:
        from contracts.engine.bindings import ModuleIndex
        from contracts.engine.import_lines import WHOLE_FILE, StatementReader

        model = self.model
        texts = model.texts
        roots = self.spec.statement_roots(self.config.root_packages)
        reader = StatementReader(roots)
        # Read with the files where the build did it (in its workers), else here.
        read = model.statements if roots == model.statement_roots else {}
        statements, unsure, defs = {}, {}, {}
        readable = []
        for f in model.discovery.files:
            done = read.get(f.rel)
            if done is not None:
                found, doubt, whole, defs[f.module] = done
                doubt = WHOLE_FILE if whole else doubt
            else:
                data = texts.get(f.rel)
                if data is None:
                    try:
                        with open(f.path, "rb") as fh:
                            data = texts[f.rel] = fh.read()
                    except OSError:
                        continue  # `not-scanned` reports it
                found, doubt = reader.read(data)
            statements[f.module] = found
            if doubt:
                unsure[f.module] = doubt
            readable.append(f)
        index = self.index = ModuleIndex(model.src, model.discovery, texts, statements)
        index.defs = defs
        index.unsure = set(unsure)
        out: list[Finding] = []
        for f in readable:
            doubt = unsure.get(f.module, ())
            if doubt is WHOLE_FILE:
                out.extend(self._exact(f, self._text(f), None))
                continue
            # The suspects, and the lines the text pass could not read (parsed around them).
            lines = sorted({*self._suspect_lines(f, statements[f.module]), *doubt})
            if lines:
                out.extend(self._exact(f, self._text(f), lines))
        return sorted(set(out))

    def _text(self, f) -> bytes:
        """`f`'s content: read by this run already, or (a worker read it) read again."""
        data = self.model.texts.get(f.rel)
        if data is None:
            with open(f.path, "rb") as fh:
                data = self.model.texts[f.rel] = fh.read()
        return data

    def _suspect_lines(self, f, stmts) -> list[int]:
        """The lines of the statements in which something may be missing."""
        return sorted({s.line for s in stmts if self._suspect(f, s)})

    def _suspect(self, f, s) -> bool:
        index = self.index
        if s.kind == "from":
            base = s.module if not s.level else resolve_relative(f.module, f.is_package, s.level, s.module)
            if base is None:
                return True
            if not self.checked(base):
                return False
            if not index.exists(base):
                return True
            return any(name != "*" and index.binds(base, name, self.internal) is False for name in s.names)
        if s.kind == "import":
            return any(self.checked(m) and not index.exists(m) for m in s.names)
        if not self.checked(s.module):
            return False
        if not index.exists(s.module):
            return True
        return s.kind == "string" and index.binds(s.module, s.names[0].split(".", 1)[0], self.internal) is False

    # ---- pass 2: `ast`, for the suspects

    def _exact(self, f, data: bytes, lines: list[int] | None) -> list[Finding]:
        """The findings of one file from `ast`: of the top-level statements around `lines` (the
        suspects the text pass found), or of the whole file (`lines` None: the text pass was
        not sure of it)."""
        from contracts.engine.scan import scan_source
        from contracts.engine.window import keep_hot_statements
        from contracts.rules import parse_error

        result = None
        if lines is not None:
            kept = keep_hot_statements(data, (), hot=lines)
            if kept is not None:
                result = scan_source(kept, f.module, f.is_package)
                if result.error is not None:
                    result = None  # the window cut a statement: parse it all
        if result is None:
            result = scan_source(data, f.module, f.is_package)
        if result.error is not None:
            return [parse_error.finding(f.rel, f.module, result.error)]
        index = self.index
        out: list[Finding] = []
        groups: dict[tuple, list] = {}  # one statement -> its missing names (for "moved?")
        for ref in result.unresolved or ():  # relative imports stay in the importer's package
            if self.internal(f.module) and (not ref.guarded or self.spec.include_guarded):
                out.append(self._climbs(f, ref))
        for ref in result.refs:
            if ref.guarded and not self.spec.include_guarded:
                continue
            if ref.kind == "from":
                base = ref.imported
                if not self.checked(base):
                    continue
                if not index.exists(base):
                    groups.setdefault((MODULE_RULE, ref.line, ref.col, base), [ref])
                    if ref.name and ref.name != "*":
                        groups[(MODULE_RULE, ref.line, ref.col, base)].append(ref.name)
                elif ref.name and ref.name != "*" and index.binds(base, ref.name, self.internal) is False:
                    groups.setdefault((NAME_RULE, ref.line, ref.col, base), [ref]).append(ref.name)
            elif ref.kind in ("import", "importlib"):
                if self.checked(ref.imported) and not index.exists(ref.imported):
                    groups.setdefault((MODULE_RULE, ref.line, ref.col, ref.imported), [ref])
            elif ref.kind == "string" and ref.attr and self.checked(ref.imported):
                first = ref.attr.split(".", 1)[0]
                if not index.exists(ref.imported):
                    groups.setdefault((MODULE_RULE, ref.line, ref.col, ref.imported), [ref]).append(first)
                elif index.binds(ref.imported, first, self.internal) is False:
                    groups.setdefault((NAME_RULE, ref.line, ref.col, ref.imported), [ref]).append(first)
        for (rule, _line, _col, module), (ref, *names) in groups.items():
            out.extend(self._report(f, rule, ref, module, tuple(dict.fromkeys(names))))
        return out

    def _where(self, ref) -> str:
        if ref.kind == "string":
            what = "string target"
        elif ref.kind == "importlib":
            what = "dynamic import"
        elif ref.type_checking:
            what = "type-only import"
        elif ref.lazy:
            what = "lazy import"
        else:
            what = "module-level import"
        if ref.type_checking and ref.kind in ("string", "importlib"):
            what += " under `TYPE_CHECKING`"
        elif ref.lazy and ref.kind in ("string", "importlib"):
            what += " in a function"
        return what + (", guarded by `except ImportError`" if ref.guarded else "")

    def _climbs(self, f, ref) -> Finding:
        top = f.module.split(".", 1)[0]
        return Finding(f.rel, ref.line, ref.col, MODULE_RULE, f.module, ref.imported,
                       f"`from {ref.imported} import ...` climbs above the top-level package `{top}` "
                       f"({self._where(ref)}; Python raises ImportError); import it by its absolute name")

    def _report(self, f, rule: str, ref, module: str, names: tuple[str, ...]) -> list[Finding]:
        index = self.index
        if rule == MODULE_RULE:
            missing = _first_missing(index, module)
            gone = f"`{module}` does not exist" + (
                f" (nor does `{missing}`)" if missing != module else "")
            candidates = self._candidates(f, module, names)
            hint, replacement = _hint(module, names, candidates)
            shown = module + (f":{ref.attr}" if ref.kind == "string" else "")
            new = None
            if replacement is not None:
                new = replacement + (f":{ref.attr}" if ref.kind == "string" else "")
            message = f"{gone} ({self._where(ref)}); {hint}"
            return [Finding(f.rel, ref.line, ref.col, rule, f.module, shown, message, new)]
        out = []
        kept = names
        candidates = self._candidates(f, module, kept)
        hint, replacement = _hint(module, kept, candidates)
        for name in kept:
            if ref.kind == "string":
                shown, new = f"{module}:{ref.attr}", (f"{replacement}:{ref.attr}" if replacement else None)
            else:
                shown, new = f"{module}.{name}", (f"{replacement}.{name}" if replacement else None)
            package = " and has no submodule of that name" if index.is_package(module) else ""
            said = hint
            if len(kept) > 1 and not candidates:  # no module has them all: where is this one?
                alone = self._candidates(f, module, (name,))
                said = _hint(module, (name,), [])[0] if not alone else (
                    f"{hint}; `{name}` alone: " + ", ".join(f"`{m}`" for m in alone[:MAX_LISTED])
                    + (f" and {len(alone) - MAX_LISTED} more" if len(alone) > MAX_LISTED else ""))
            message = (f"`{module}` has no name `{name}` ({self._where(ref)}): it does not define, "
                       f"import or re-export it{package}; {said}")
            out.append(Finding(f.rel, ref.line, ref.col, rule, f.module, shown, message, new))
        return out

    def _candidates(self, f, module: str, names: tuple[str, ...]) -> list[str]:
        index = self.index
        if names:
            found = index.definers(names)
        else:
            found = {m for m in index.children(module.rpartition(".")[2]) if index.exists(m)}
        found.discard(f.module)
        found.discard(module)
        # Never the importer itself through its package (`from app import data` in `app/data.py`),
        # nor another top-level package's module for this one's names: a project checked beside a
        # dependency's tree does not hold the dependency's moved code.
        top = module.split(".", 1)[0]
        found = {m for m in found if m.split(".", 1)[0] == top and not any(f"{m}.{n}" == f.module for n in names)}
        return sorted(m for m in found if self.internal(m) and not any(is_under(m, p) for p in self.removed))


def _first_missing(index: ModuleIndex, module: str) -> str:
    """The shortest missing prefix of `module` (`a.b` for a missing `a.b.c` when `a.b` is)."""
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if not index.exists(prefix):
            return prefix
    return module


def _hint(module: str, names: tuple[str, ...], candidates: list[str]) -> tuple[str, str | None]:
    """The "moved?" part of a message, and the replacement module when there is one."""
    what = ", ".join(f"`{n}`" for n in names)
    last = module.rpartition(".")[2]
    chosen = candidates if len(candidates) <= 1 else [c for c in candidates if c.rpartition(".")[2] == last]
    if len(chosen) == 1:
        new = chosen[0]
        if names:
            return f"moved? `{new}` defines {what}", new
        return f"moved? `{new}` exists", new
    if candidates:
        listed = ", ".join(f"`{c}`" for c in candidates[:MAX_LISTED])
        more = f" and {len(candidates) - MAX_LISTED} more" if len(candidates) > MAX_LISTED else ""
        which = f"define {what}" if names else f"are named `{last}`"
        return f"several modules {which} ({listed}{more}); not guessed, choose one", None
    if len(names) > 1:
        return f"no one module of the tree defines all of {what} (this statement's names)", None
    if names:
        return f"no module of the tree defines {what}", None
    return f"no module of the tree is named `{last}`", None
