"""`--fix` / `--diff`: rewrite references to a removed module to the module that replaced it.

Works from the run's `removed-module` findings: each one names a place (line, column), what it
referenced and, when `replacements` knows it, the new module. The source is edited through
LibCST's concrete syntax tree, so everything but the rewritten names -- aliases, parentheses,
comments, blank lines, line endings, the encoding -- comes back byte for byte. Only the smallest
statements that hold a finding go through LibCST; the rest of the file is never re-rendered.

What is rewritten, and how:

- `from old.mod import a, b as c` -> `from new.mod import a, b as c`;
- `import old.mod as m` -> `import new.mod as m`;
- `from old import mod` -> `from new.parent import mod` (the bound name is kept; an `as` is
  added when the new module has another name); names that move to different places are split
  into one statement each, at the same place;
- relative imports that resolve into the removed path -> the absolute new path;
- string literals that are exactly a target (`"old.mod"`, `"old.mod:attr"`,
  `importlib.import_module("old.mod")`), in the same quotes;
- a bare `import old.mod`: the statement and every `old.mod.x` chain that uses the name it binds,
  but only when every use of that name is accounted for (see `bare.bare_import_verdicts`); otherwise
  the finding is reported as not auto-fixable, with the reason, and that import is left alone.

A file is written only when it has a fixable finding, only after the new text compiles, and
atomically (a temporary file in the same directory, then `os.replace`), with the same
permission bits.

The package, in the order a fix runs: `apply` (over a run's findings: read, fix, write) ->
`source` (one file) -> `pieces` (which statements to parse), `rewrite` (the LibCST pass) ->
`bare` (the survey of bare imports) -> `syntax` (shared helpers), `verify` (`--verify-against`),
`write` (which files may be read and written, and how), `linediff` (the diffs).
"""

from contracts.fix.apply import RULE_ID, FixRun, apply_fixes, fix_findings, line_edits, write_atomic
from contracts.fix.source import FileFix, fix_source

__all__ = ["RULE_ID", "FileFix", "FixRun", "apply_fixes", "fix_findings", "fix_source", "line_edits", "write_atomic"]
