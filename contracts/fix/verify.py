"""`--verify-against TREE`: does each rewritten import resolve in the new release?

TREE is a directory that contains the top-level packages, a wheel, or `name==version` (see
`contracts.engine.trees`). Each rewrite is checked before it is made: `import new.mod` needs the
module (a `.py` file, a package or namespace directory, a `.pyi` stub, an extension module);
`from new.mod import a, b` needs the module and each name bound in it (`contracts.engine.index`:
defined, imported, re-exported through a star import, or a submodule); a string target
`new.mod:attr` or `new.mod.attr` needs the module and the attribute. A name the index cannot
settle either way (an extension module, a module-level `__getattr__`, `globals()` writes) passes:
it may resolve at run time, and nothing says it does not. A rewrite that fails is reported with the
reason and not made. Nothing in TREE is imported.

Without `--verify-against`, `--fix` verifies against the checked tree itself, modules and names
alike: a rewrite into the tree's own packages must resolve there; one into another distribution
cannot be checked here and is made (pass `--verify-against` with that release to check it).

`--verify-against` is repeatable: each rewrite is checked against the first TREE that holds its
top-level package (`pkg.externals.joblib -> joblib` against a joblib release given beside the new
`pkg`), and is unverified (made, and said so) only when no TREE given holds it.
"""

from __future__ import annotations

import os

from contracts.engine.discover import discover
from contracts.engine.index import ModuleIndex
from contracts.engine.trees import is_requirement, open_tree, top_level_names
from contracts.errors import UsageError


class Verifier:
    def __init__(self, spec: str, option: str = "--verify-against", roots: tuple[str, ...] | None = None) -> None:
        """`roots`: the checked tree itself (`spec` is its directory): only modules under these
        top-level packages are verified; a rewrite into another distribution (a dependency not
        in the tree) cannot be, and passes (unknown is not missing)."""
        self.spec = spec
        directory = open_tree(spec, option) if roots is None else spec
        roots = top_level_names(directory) if roots is None else list(roots)
        # A target outside TREE's top-level packages is another distribution's (`-> joblib`):
        # not verifiable here, so made, and counted as unverified (never called missing).
        self.only = tuple(roots)
        self.unverified: set[str] = set()
        if not roots:
            raise UsageError(f"{option} {spec}: holds no Python package or module to check the rewrites "
                             f"against (name the directory that contains the packages)")
        found = discover(directory, roots)
        self.index = ModuleIndex(directory, found)
        # No text pass read these files: settle each module from its whole `ast` (star imports too).
        self.index.unsure = set(found.by_module)

    def _unknown(self, module: str) -> bool:
        if module.split(".", 1)[0] in self.only:
            return False
        self.unverified.add(module.split(".", 1)[0])
        return True

    def module(self, module: str) -> str | None:
        """None when `module` exists in TREE, else why not."""
        if self.index.exists(module) or self._unknown(module):
            return None
        return f"`{module}` does not exist in {self.spec}"

    def names(self, module: str, names: list[str]) -> str | None:
        """None when `from module import <names>` resolves in TREE, else why not."""
        why = self.module(module)
        if why is not None or self._unknown(module):
            return why
        lacking = [n for n in names if n != "*" and self.index.binds(module, n) is False]
        if lacking:
            shown = ", ".join(f"`{n}`" for n in lacking)
            return f"`{module}` in {self.spec} has no {shown}"
        return None

    def target(self, text: str) -> str | None:
        """A string target: `module:attr.sub` or a dotted `module.attr` (a `mock.patch` target)."""
        if ":" in text:
            module, _, attr = text.partition(":")
            return self.names(module, [attr.split(".", 1)[0]])
        if self._unknown(text):
            return None
        parts = text.split(".")
        for i in range(len(parts), 0, -1):
            module = ".".join(parts[:i])
            if self.index.exists(module):
                if i == len(parts):
                    return None
                return self.names(module, [parts[i]])
        return f"`{text}` does not exist in {self.spec}"


class Verifiers:
    """Several trees at once, each for its own top-level packages: the checked tree itself, and
    the release each `dependency_upgrade` contract names for its package. A module goes to the
    first tree that holds its top-level package; one no tree holds is unverified (and made)."""

    def __init__(self, verifiers: list[Verifier]) -> None:
        self.verifiers = verifiers
        self.spec = verifiers[0].spec
        self.unverified: set[str] = set()

    def _for(self, module: str) -> Verifier | None:
        top = module.split(".", 1)[0]
        found = next((v for v in self.verifiers if top in v.only), None)
        if found is None:
            self.unverified.add(top)
        return found

    def module(self, module: str) -> str | None:
        v = self._for(module)
        return None if v is None else v.module(module)

    def names(self, module: str, names: list[str]) -> str | None:
        v = self._for(module)
        return None if v is None else v.names(module, names)

    def target(self, text: str) -> str | None:
        v = self._for(text.partition(":")[0])
        return None if v is None else v.target(text)


def default_verifier(cfg, src: str) -> Verifiers:
    """No `--verify-against`: the checked tree for its own packages, and for each
    `dependency_upgrade` contract its `target` release for its package (a rewrite into it is
    written only when it resolves there)."""
    found = [Verifier(os.path.abspath(src), roots=tuple(cfg.root_packages))]
    for spec in getattr(cfg, "upgrades", ()):
        target = spec.target if is_requirement(spec.target) else os.path.normpath(os.path.join(cfg.base, spec.target))
        release = Verifier(target, option=f"dependency_upgrade contract {spec.id}: target")
        release.only = (spec.package,)
        release.spec = spec.target
        found.insert(0, release)
    return Verifiers(found)


def given_verifier(cfg, src: str, given: str | list[str] | None) -> tuple[Verifier | Verifiers, str | None]:
    """The verifier for `--verify-against` as given (one TREE, several, or none: the checked tree
    and the `dependency_upgrade` targets), and the trees' label for the summary line (None when
    none was given). One TREE is used exactly as before; several are routed by top-level package."""
    specs = [given] if isinstance(given, str) else list(given or ())
    if not specs:
        return default_verifier(cfg, src), None
    if len(specs) == 1:
        return Verifier(specs[0]), specs[0]
    return Verifiers([Verifier(spec) for spec in specs]), ", ".join(specs)
