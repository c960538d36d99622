"""The plan that says what a run asks of every file, and the constants of a file's record.

`ScanPlan` is what a run asks of every file: which words or prefixes make it parsed with `ast`,
which make its edges scanned, which packages the import closure starts from and stops at. The
record each file gets is `file_record.FileRecord`; its `flags` are the constants below. (This
module is imported by a warm run, answered from the cache: it defines no dataclass.)
"""

from __future__ import annotations

from functools import cached_property

from contracts._record import Record
from contracts.engine.cache import versions
from contracts.engine.importers import Layout
from contracts.prefixes import PrefixIndex

# A file larger than this is reported (`not-scanned`) before a byte of it is read: the run's
# memory stays bounded whatever the tree holds (an 8 GiB file, a link to /dev/zero is not even
# a regular file).
MAX_READ_BYTES = 64 * 2**20
# The prefix of every "could not read the file" reason: such a file is `not-scanned`, not a
# `parse-error` (it was never looked at).
UNREADABLE = "cannot read"

# What a rule may ask of the scan: each rule module's `needs(spec, config)` gives a dict of these
# (any left out: nothing), and `ScanPlan.united` makes one plan of every rule's.
NEEDS = {
    "removed": "prefixes of removed modules: a file that may name one is parsed with `ast` around those lines",
    "parsed": "prefixes whose modules are always parsed with `ast`",
    "edges": "packages whose modules get their edges scanned, and the import closure from them",
    "edges_named": "as `edges`, and any file that may name one of these packages gets its edges too",
    "names": "prefixes into which an edge keeps its from-imported names",
    "closure_stop": "packages the import closure does not enter",
    "texts": "True: every file's text is kept for the rule",
    "statement_roots": "root names each file's import statements are read for (one set per plan)",
}

AST, GRAPH, DECODED = 1, 2, 4  # `FileRecord.flags`: parse it with ast (it may name a removed
# module); scan its edges; Python decodes it otherwise than grimp's scanner does (its edges come from ast)


class ScanPlan(Record, frozen=True):
    roots: tuple[str, ...]
    ast_words: tuple[bytes, ...]  # a file containing one of these is parsed with ast
    ast_prefixes: tuple[str, ...]  # modules under these are always parsed (e.g. a shim)
    graph_words: tuple[bytes, ...]  # a file containing one of these gets its edges scanned
    graph_prefixes: tuple[str, ...]  # modules under these always get their edges scanned
    closure_stop: tuple[str, ...]  # the import closure does not enter these
    # Edges into these keep their from-imported names, but for an edge between two modules of
    # one child package of a prefix (a package's imports of itself: the plan asks no names of those).
    name_prefixes: tuple[str, ...]
    # The removed prefixes themselves: files are routed to ast by `prefilter.py` (lookups by
    # name parts, one pass over the bytes), not by searching for each of `ast_words`.
    removed: tuple[str, ...]
    # The config's `exclude` patterns and the directory they are relative to (`importers.py`).
    exclude: tuple[str, ...]
    exclude_base: str
    # A rule reads the text of every file itself: the bytes read are kept in `Model.texts`, and
    # any changed file changes the generation.
    texts: bool
    # The root names a statement reader (`import_lines.StatementReader`) is made for, when one
    # reader serves every contract that reads statements: each file's import statements and
    # column-0 definitions are then read where the file is read (in the workers,
    # `Model.statements`), not after.
    statement_roots: tuple[str, ...]
    # Packages whose importers get their edges scanned: a file holding one of `graph_words` is
    # scanned only if the prefilter finds a line of it that may name a module under one of these
    # (for `pkg.kernels`: not `triton_kernels`, `self.kernels` or prose). Empty: the word alone decides.
    graph_named: tuple[str, ...]
    # A file in a `closure_stop` package that is a graph file only because it may name
    # `graph_named` keeps only its edges into `graph_named`: the closure never enters it, and the
    # plan's maker (`check.plan_for`) says no rule reads its other imports. Off where a contract
    # has `ignore_imports`: a line there may name any import, and whether it matches one is reported.
    narrow: bool

    def __init__(self, roots: tuple[str, ...], ast_words: tuple[bytes, ...], ast_prefixes: tuple[str, ...],
                 graph_words: tuple[bytes, ...], graph_prefixes: tuple[str, ...], closure_stop: tuple[str, ...] = (),
                 name_prefixes: tuple[str, ...] = (), removed: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
                 exclude_base: str = "", texts: bool = False, statement_roots: tuple[str, ...] = (),
                 graph_named: tuple[str, ...] = (), narrow: bool = False) -> None:
        self.__dict__.update(roots=roots, ast_words=ast_words, ast_prefixes=ast_prefixes, graph_words=graph_words,
                             graph_prefixes=graph_prefixes, closure_stop=closure_stop, name_prefixes=name_prefixes,
                             removed=removed, exclude=exclude, exclude_base=exclude_base, texts=texts,
                             statement_roots=statement_roots, graph_named=graph_named, narrow=narrow)

    @classmethod
    def united(cls, roots: tuple[str, ...], needs: list[dict], exclude: tuple[str, ...] = (), exclude_base: str = "",
               narrow: bool = True) -> ScanPlan:
        """The plan that gives every rule what it `needs` (see `NEEDS`). `narrow`: whether files
        that only may name an `edges_named` package may keep only their edges into it (off where
        a contract's `ignore_imports` may name any import)."""
        union = {key: [] for key in NEEDS if key not in ("texts", "statement_roots")}
        for need in needs:
            for key, values in need.items():
                if key in union:
                    union[key].extend(values)
        removed, named = union["removed"], set(union["edges_named"])
        stop = set(union["closure_stop"])
        statement_roots = {need["statement_roots"] for need in needs if "statement_roots" in need}
        return cls(
            roots=roots,
            ast_words=tuple(sorted({p.rsplit(".", 1)[-1].encode() for p in removed})),
            ast_prefixes=tuple(sorted(set(union["parsed"]))),
            graph_words=tuple(sorted({p.rsplit(".", 1)[-1].encode() for p in named})),
            graph_prefixes=tuple(sorted(named.union(union["edges"]))),
            closure_stop=tuple(sorted(stop)),
            name_prefixes=tuple(sorted(set(union["names"]))),
            removed=tuple(dict.fromkeys(removed)),
            exclude=exclude,
            exclude_base=exclude_base,
            texts=any(need.get("texts") for need in needs),
            statement_roots=statement_roots.pop() if len(statement_roots) == 1 else (),
            graph_named=tuple(sorted(named)),
            narrow=narrow and bool(named and stop),
        )

    @property
    def layout(self) -> Layout | None:
        """The `importers.Layout` whose exclusions the walk honours, or None."""
        return Layout(self.exclude_base, self.exclude) if self.exclude else None

    @property
    def key(self) -> str:
        """The plan's part of a cache's key (the tool's and its libraries' versions are added by
        `cache_key`), so no version number is kept by hand."""
        return repr(self)

    @cached_property
    def looks_for_nothing(self) -> bool:
        """No word or prefix to look for in a file (a plan for the text-reading rules alone)."""
        return not (self.ast_words or self.graph_words or self.ast_prefixes or self.graph_prefixes or self.removed)

    @cached_property
    def ast_index(self) -> PrefixIndex:
        return PrefixIndex(self.ast_prefixes)

    @cached_property
    def graph_index(self) -> PrefixIndex:
        return PrefixIndex(self.graph_prefixes)

    @cached_property
    def name_index(self) -> PrefixIndex:
        return PrefixIndex(self.name_prefixes)

    @cached_property
    def stop_index(self) -> PrefixIndex:
        return PrefixIndex(self.closure_stop)

    @cached_property
    def named_index(self) -> PrefixIndex:
        return PrefixIndex(self.graph_named)

    def narrow_file(self, module: str, flags: int) -> bool:
        """Does the graph file `module` (a record's `flags`) keep only its edges into
        `graph_named` (see `narrow`)? Not a file under a graph prefix, one `ast` reads (AST), or
        one read otherwise than its bytes (DECODED)."""
        return (self.narrow and not flags & (AST | DECODED) and self.graph_index.longest_of(module) is None
                and self.stop_index.longest_of(module) is not None)


def ref_tuple(r) -> tuple:
    """An `ImportRef` as the plain tuple a record keeps."""
    return (r.line, r.col, r.end_line, r.kind, r.imported, r.name, r.asname, r.level, r.lazy,
            r.type_checking, r.attr, r.guarded, r.lazy_keyword)


def cache_key(src: str, plan: ScanPlan) -> str:
    """Which cache a tree's records and stamp belong to: its directory, the scan plan, and the
    versions of the code that makes the records (`cache.versions`)."""
    return repr((src, plan.key, versions()))
