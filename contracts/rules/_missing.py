"""Helper code, not a rule: the analysis `missing-module` and `missing-name` share (their
modules hold the rules' documentation and ids, and load this in `check`), one pass over the
tree for both, and the "moved?" hints.

1. Every file's import statements and string targets are read off its text
   (`engine/import_lines.py`), and each is checked against the tree (`engine/index.py`): does
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
from contracts.engine import workers
from contracts.engine.files import read_capped
from contracts.engine.import_lines import WHOLE_FILE, StatementReader
from contracts.engine.index import ModuleIndex, plain_value, text_definitions
from contracts.engine.records import MAX_READ_BYTES
from contracts.engine.resolve import is_under, resolve_relative
from contracts.engine.runtime import text_facts
from contracts.engine.scan import decode_source, scan_source
from contracts.engine.window import keep_hot_statements
from contracts.findings import Finding
from contracts.rules import parse_error

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

MODULE_RULE = "missing-module"
NAME_RULE = "missing-name"
MAX_LISTED = 5  # candidates named in a message
# Directories that hold other projects' code: a module below one is suggested only in that project.
_VENDOR_DIRS = frozenset({"_vendor", "vendor", "_vendored", "vendored", "extern", "_extern", "third_party"})


def findings(model: Model, config: Config, spec: MissingSpec) -> list[Finding]:
    """Both rules' findings of one contract, computed once per model (`ignore_imports` is applied
    to them by `check.contract_findings`, as to every contract's)."""
    cache = model.__dict__.setdefault("_missing_findings", {})
    if spec not in cache:
        analysis = model.__dict__.setdefault("_missing_analyses", {})[spec] = _Analysis(model, config, spec)
        cache[spec] = analysis.run()
    return cache[spec]


def importer_findings(model: Model, config: Config, spec: MissingSpec, files) -> list[Finding]:
    """Both rules' findings in files outside the root packages (`importer_paths`, or named on
    the command line: tests, benchmarks, scripts), checked against the package's modules and
    names as the package's own files are. `files`: their `SourceFile`s (`engine/importers.py`);
    they are importers only, never modules anything can import, so the index stays the package's."""
    findings(model, config, spec)  # the index of the package, built once
    analysis = model.__dict__["_missing_analyses"][spec]
    return sorted(set(analysis.importers(files)))


class _Analysis:
    def __init__(self, model: Model, config: Config, spec: MissingSpec) -> None:
        self.model, self.config, self.spec = model, config, spec
        self.packages = spec.packages_for(config.root_packages)
        self.removed = tuple(p for r in config.removed for p in r.removed)
        self._checked: dict[str, bool] = {}
        self._suspects: dict[tuple, bool] = {}  # (kind, module, names) -> `_suspect`

    def internal(self, module: str) -> bool:
        return any(is_under(module, p) for p in self.packages)

    def checked(self, module: str) -> bool:
        """Under `packages`, and not a removed module (`removed-module` reports those)."""
        verdict = self._checked.get(module)
        if verdict is None:  # (asked of every statement's module: the same few hundred, often)
            verdict = self._checked[module] = self.internal(module) and not any(
                is_under(module, p) for p in self.removed)
        return verdict

    # ---- pass 1: the text of every file

    def run(self) -> list[Finding]:
        model = self.model
        texts = model.texts
        roots = self.spec.statement_roots(self.config.root_packages)
        reader = StatementReader(roots)
        # Read with the files where the build did it (in its workers), else here.
        read = model.statements if roots == model.statement_roots else {}
        statements, unsure, facts, defs = {}, {}, {}, {}
        readable = []
        for f in model.discovery.files:
            done = read.get(f.rel)
            if done is not None:
                found, doubt, whole, fact, defs[f.module] = done  # (a worker's statements `packed`)
                doubt = WHOLE_FILE if whole else doubt
            else:
                data = texts.get(f.rel)
                if data is None:
                    try:
                        data = texts[f.rel] = read_capped(f.path, MAX_READ_BYTES)
                    except OSError:
                        continue  # `not-scanned` reports it
                found, doubt = reader.read(data)
                fact = text_facts(data)
            if model.discovery.by_module.get(f.module) is f:
                facts[f.module] = fact
            statements[f.module] = found
            if doubt:
                unsure[f.module] = doubt
            readable.append(f)
        index = self.index = ModuleIndex(model.src, model.discovery, texts, statements, model.shared)
        index.unsure = set(unsure)
        index.defs = defs
        if len(facts) == len(index.py):  # every module's: the tree need not be searched for them
            index.runtime.facts = facts
        self._unsure = unsure
        # The files in as many processes as read them (a fork of this one, which holds the index:
        # each file's findings are the index's answers, whichever process asks), else here.
        jobs = model.workers if model.workers > 1 and workers.fork_is_safe() else 1
        parts = workers.map_parts(_files_findings, self, readable, jobs)
        return sorted({finding for part in parts for finding in part})

    def file_findings(self, f) -> list[Finding]:
        """The findings of one file of the package (after `run` built the index)."""
        doubt = self._unsure.get(f.module, ())
        if doubt is WHOLE_FILE:
            return self._exact(f, self._text(f), None)
        # The suspects, and the lines the text pass could not read (parsed around them).
        lines = sorted({*self._suspect_lines(f, self.index.statements_of(f.module)), *doubt})
        return self._exact(f, self._text(f), lines) if lines else []

    def importers(self, files) -> list[Finding]:
        """The findings of `files` outside the package (after `run`, which built the index)."""
        reader = StatementReader(self.spec.statement_roots(self.config.root_packages))
        out: list[Finding] = []
        for f in files:
            try:
                data = self._text(f)
            except OSError:
                continue  # `not-scanned` reports it
            found, doubt = reader.read(data)
            if doubt is WHOLE_FILE:
                out.extend(self._exact(f, data, None))
                continue
            lines = sorted({*self._suspect_lines(f, found), *doubt})
            if lines:
                out.extend(self._exact(f, data, lines))
        return out

    def _text(self, f) -> bytes:
        """`f`'s content (`ModuleIndex.file_text`: the index's texts are the model's)."""
        return self.index.file_text(f)

    def _suspect_lines(self, f, stmts) -> list[int]:
        """The lines of the statements in which something may be missing."""
        return sorted({s.line for s in stmts if self._suspect(f, s)})

    def _suspect(self, f, s) -> bool:
        """May something `s` imports be missing? Asked once per statement text (its module
        resolved): the same statements recur across a tree's files."""
        base = s.module
        if s.kind == "from" and s.level:
            base = resolve_relative(f.module, f.is_package, s.level, s.module)
            if base is None:
                return True
        key = (s.kind, base, s.names)
        verdict = self._suspects.get(key)
        if verdict is None:
            verdict = self._suspects[key] = self._statement_suspect(s.kind, base, s.names)
        return verdict

    def _statement_suspect(self, kind: str, base: str | None, names: tuple[str, ...]) -> bool:
        index = self.index
        if kind == "import":
            return any(self.checked(m) and index.missing(m) for m in names)
        if not self.checked(base):
            return False
        if index.missing(base):
            return True
        if kind == "from":
            return any(name != "*" and index.binds(base, name, self.internal) is False for name in names)
        return kind == "string" and index.binds(base, names[0].split(".", 1)[0], self.internal) is False

    # ---- pass 2: `ast`, for the suspects

    def _exact(self, f, data: bytes, lines: list[int] | None) -> list[Finding]:
        """The findings of one file from `ast`: of the top-level statements around `lines` (the
        suspects the text pass found), or of the whole file (`lines` None: the text pass was
        not sure of it)."""
        result = _scanned(f, data, lines)
        if result.error is not None:
            return [parse_error.finding(f.rel, f.module, result.error)]
        include_guarded = self.spec.include_guarded
        out: list[Finding] = []
        for ref in result.unresolved or ():  # relative imports stay in the importer's package
            if self.internal(f.module) and (not ref.guarded or include_guarded):
                out.append(self._climbs(f, ref))
        groups: dict[tuple, list] = {}  # one statement -> [its ref, its missing names] (for "moved?")
        for ref in result.refs:
            if not ref.guarded or include_guarded:
                self._group(ref, groups)
        for (rule, _line, _col, module), (ref, *names) in groups.items():
            out.extend(self._report(f, rule, ref, module, tuple(dict.fromkeys(names))))
        return out

    def _group(self, ref, groups: dict[tuple, list]) -> None:
        """Add `ref` to its statement's group in `groups` when it names a missing module (rule
        `missing-module`) or a name its module does not bind (`missing-name`)."""
        if ref.kind == "from":
            self._group_from(ref, groups)
        elif ref.kind in ("import", "importlib"):
            if self.checked(ref.imported) and self.index.missing(ref.imported):
                groups.setdefault((MODULE_RULE, ref.line, ref.col, ref.imported), [ref])
        elif ref.kind == "string" and ref.attr and self.checked(ref.imported):
            first = ref.attr.split(".", 1)[0]
            if self.index.missing(ref.imported):
                groups.setdefault((MODULE_RULE, ref.line, ref.col, ref.imported), [ref]).append(first)
            elif self.index.binds(ref.imported, first, self.internal) is False:
                groups.setdefault((NAME_RULE, ref.line, ref.col, ref.imported), [ref]).append(first)

    def _group_from(self, ref, groups: dict[tuple, list]) -> None:
        """`_group` for `from base import name`: the module is missing (its names go with it, for
        the "moved?" hint), or it does not bind the name."""
        base, name = ref.imported, ref.name
        if not self.checked(base):
            return
        named = bool(name) and name != "*"
        if self.index.missing(base):
            group = groups.setdefault((MODULE_RULE, ref.line, ref.col, base), [ref])
            if named:
                group.append(name)
        elif named and self.index.binds(base, name, self.internal) is False:
            groups.setdefault((NAME_RULE, ref.line, ref.col, base), [ref]).append(name)

    def _where(self, ref) -> str:
        if ref.kind == "string":
            what = "string target"
        elif ref.kind == "importlib":
            what = "dynamic import"
        elif ref.type_checking:
            what = "type-only import"
        elif ref.lazy_keyword:
            what = ref.context
        elif ref.lazy:
            what = "lazy import"
        else:
            what = "module-level import"
        if ref.type_checking and ref.kind in ("string", "importlib"):
            what += " under `TYPE_CHECKING`"
        elif ref.lazy and ref.kind in ("string", "importlib"):
            what += " in a function"
        return what + (", guarded by `except ImportError` or a test expecting it to fail" if ref.guarded else "")

    def _climbs(self, f, ref) -> Finding:
        top = f.module.split(".", 1)[0]
        return Finding(f.rel, ref.line, ref.col, MODULE_RULE, f.module, ref.imported,
                       f"`from {ref.imported} import ...` climbs above the top-level package `{top}` "
                       f"({self._where(ref)}; Python raises ImportError); import it by its absolute name")

    def _report(self, f, rule: str, ref, module: str, names: tuple[str, ...]) -> list[Finding]:
        """The findings of one statement's group: one for a missing module, one per missing name."""
        if rule == MODULE_RULE:
            return [self._module_finding(f, ref, module, names)]
        return self._name_findings(f, ref, module, names)

    def _module_finding(self, f, ref, module: str, names: tuple[str, ...]) -> Finding:
        """`module` does not exist: where the statement's names (or the module) may have gone."""
        missing = _first_missing(self.index, module)
        gone = f"`{module}` does not exist" + (f" (nor does `{missing}`)" if missing != module else "")
        candidates = self._candidates(f, module, names)
        hint, replacement = _unless_guarded(ref, *_hint(module, names, candidates, self._proven(module, names)))
        shown = module + (f":{ref.attr}" if ref.kind == "string" else "")
        new = None
        if replacement is not None:
            new = replacement + (f":{ref.attr}" if ref.kind == "string" else "")
        message = f"{gone} ({self._where(ref)}); {hint}"
        return Finding(f.rel, ref.line, ref.col, MODULE_RULE, f.module, shown, message, new)

    def _name_findings(self, f, ref, module: str, names: tuple[str, ...]) -> list[Finding]:
        """`module` binds none of `names`: one finding each, with where they (or each alone) went."""
        out = []
        candidates = self._candidates(f, module, names)
        hint, replacement = _unless_guarded(ref, *_hint(module, names, candidates, self._proven(module, names)))
        package = " and has no submodule of that name" if self.index.is_package(module) else ""
        for name in names:
            if ref.kind == "string":
                shown, new = f"{module}:{ref.attr}", (f"{replacement}:{ref.attr}" if replacement else None)
            else:
                shown, new = f"{module}.{name}", (f"{replacement}.{name}" if replacement else None)
            said = hint
            if len(names) > 1 and not candidates:  # no module has them all: where is this one?
                said = self._alone(f, module, name, hint)
            message = (f"`{module}` has no name `{name}` ({self._where(ref)}): it does not define, "
                       f"import or re-export it{package}; {said}")
            out.append(Finding(f.rel, ref.line, ref.col, NAME_RULE, f.module, shown, message, new))
        return out

    def _alone(self, f, module: str, name: str, hint: str) -> str:
        """The hint for one of several names no one module defines all of: the modules that
        define it alone."""
        alone = self._candidates(f, module, (name,))
        if not alone:
            return _hint(module, (name,), [])[0]
        return (f"{hint}; `{name}` alone: " + ", ".join(f"`{m}`" for m in alone[:MAX_LISTED])
                + (f" and {len(alone) - MAX_LISTED} more" if len(alone) > MAX_LISTED else ""))

    def _candidates(self, f, module: str, names: tuple[str, ...]) -> list[str]:
        """The modules that define every one of `names` (or, with none, are named like `module`):
        never the importing module itself, nor for a dunder (every module has its own), nor
        outside the vendored package a vendored module belongs to."""
        index = self.index
        if any(_dunder(n) for n in names):
            return []
        if names:
            found = index.definers(names)
        else:
            found = {m for m in index.children(module.rpartition(".")[2]) if index.exists(m)}
        return sorted(m for m in found if self._may_be_home(f.module, module, names, m))

    def _may_be_home(self, importer: str, module: str, names: tuple[str, ...], m: str) -> bool:
        """Not the importing module (nor a package whose submodule `X` it is), not the missing
        module, under `packages` and not removed, inside the vendored package `module` is in, and
        in `module`'s own top-level package: a project checked beside a dependency's tree does not
        hold the dependency's moved code."""
        if m in (importer, module) or any(f"{m}.{n}" == importer for n in names):
            return False
        if m.split(".", 1)[0] != module.split(".", 1)[0]:
            return False
        home = _vendored_home(module)
        return self.internal(m) and not any(is_under(m, p) for p in self.removed) and (
            home is None or is_under(m, home))

    def _proven(self, module: str, names: tuple[str, ...]):
        """A test of one candidate: is it proven to be where `names` went? Only when the
        statement imports names (a module named alike is a name match), each is defined in
        that candidate by a `def`, a `class` or an assignment of something other than a literal,
        at module level, and no other module of the tree defines it but by a literal (`X = None`,
        a fallback; a submodule of that name counts, so a module in place of a name is never
        proven), and the candidate is in the missing module's top-level package."""
        def definition(m: str, name: str):
            text = self.index.text(m)
            try:
                return text_definitions(decode_source(text)).get(name) if text is not None else None
            except (SyntaxError, ValueError, UnicodeDecodeError, LookupError):
                return None

        def placeholder(m: str, name: str) -> bool:
            d = definition(m, name)
            return d is not None and plain_value(d)

        top = module.split(".", 1)[0]

        def proven(candidate: str) -> bool:
            if not names or candidate.split(".", 1)[0] != top:
                return False
            for name in names:
                d = definition(candidate, name)
                if d is None or plain_value(d):
                    return False
                # Another module's `name = None` (a fallback for a failed import) is no rival, nor
                # is a module of another top-level package (never a home: `_may_be_home`).
                rivals = {m for m in self.index.definers((name,)) - {candidate} if m.split(".", 1)[0] == top}
                if not all(placeholder(m, name) for m in rivals):
                    return False
            return True

        return proven


def _scanned(f, data: bytes, lines: list[int] | None):
    """`ast`'s reading of the statements that span `lines` (the suspects: only what they hold is
    looked into), inside their blocks, else the top-level statements around them, else the whole
    file (a window that does not parse: a line at column 0 inside brackets cut a statement, as in
    `reading.file_refs`); of every statement of the whole file where `lines` is None."""
    if lines is None:
        return scan_source(data, f.module, f.is_package)
    for nested in (True, False):
        kept = keep_hot_statements(data, (), hot=lines, nested=nested)
        if kept is None:
            break
        result = scan_source(kept, f.module, f.is_package, hot=lines)
        if result.error is None:
            return result
    return scan_source(data, f.module, f.is_package, hot=lines)


def _files_findings(analysis: _Analysis, chunks) -> list[Finding]:
    """The findings of the files of `chunks` (`workers.map_parts` hands each process its own)."""
    return [finding for chunk in chunks for f in chunk for finding in analysis.file_findings(f)]


def _first_missing(index: ModuleIndex, module: str) -> str:
    """The shortest missing prefix of `module` (`a.b` for a missing `a.b.c` when `a.b` is)."""
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if not index.exists(prefix):
            return prefix
    return module


def _unless_guarded(ref, hint: str, replacement: str | None) -> tuple[str, str | None]:
    """A guarded import keeps its hint but is never rewritten: a test may assert that it fails."""
    if ref.guarded and replacement is not None:
        return f"{hint} (guarded: a test may expect it to fail; not fixed)", None
    return hint, replacement


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _vendored_home(module: str) -> str | None:
    """The vendored package `module` is in (`pip._vendor.six` for `pip._vendor.six.moves`), or None."""
    parts = module.split(".")
    for i, part in enumerate(parts[:-1]):
        if part in _VENDOR_DIRS:
            return ".".join(parts[: i + 2])
    return None


def _hint(module: str, names: tuple[str, ...], candidates: list[str], proven=lambda c: False
          ) -> tuple[str, str | None]:
    """The "moved?" part of a message, and the replacement module when the evidence proves it
    (`proven`); a candidate chosen by a name match alone is a hint, with no replacement."""
    what = ", ".join(f"`{n}`" for n in names)
    last = module.rpartition(".")[2]
    # At most one candidate can be proven (a proof leaves the others literal fallbacks only).
    strong = [c for c in candidates if proven(c)] if len(candidates) <= MAX_LISTED else []
    if strong:
        return f"moved? `{strong[0]}` defines {what}", strong[0]
    chosen = candidates if len(candidates) <= 1 else [c for c in candidates if c.rpartition(".")[2] == last]
    if len(chosen) == 1:
        new = chosen[0]
        if names:
            return f"hint: `{new}` defines {what} (a name match, not proof: not fixed)", None
        return f"hint: a module `{new}` exists (a name match, not proof: not fixed)", None
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
