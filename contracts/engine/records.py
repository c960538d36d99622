"""A file's record, the unit the cache keeps, and the plan that says what goes into one.

A record is a list of plain values (it is pickled by the cache and by a worker sending its part
back), indexed by the constants below. `ScanPlan` is what a run asks of every file: which words
or prefixes make it parsed with `ast`, which make its edges scanned, which packages the import
closure starts from and stops at. Both the build (`model.py`) and the per-file reading
(`reading.py`) use them.
"""

from __future__ import annotations

from functools import cached_property

from contracts._record import Record
from contracts.engine.cache import versions
from contracts.prefixes import PrefixIndex

# A file larger than this is reported (`not-scanned`) before a byte of it is read: the run's
# memory stays bounded whatever the tree holds (an 8 GiB file, a link to /dev/zero is not even
# a regular file). Upstream sglang's whole tree is 68 MB; its largest file 375 kB.
MAX_READ_BYTES = 64 * 2**20
# The prefix of every "could not read the file" reason: such a file is `not-scanned`, not a
# `parse-error` (it was never looked at).
UNREADABLE = "cannot read"


# A record, one per file (a list of plain values): the fields by index.
MTIME, SIZE, CTIME, DIGEST, FLAGS, REFS, ERROR, EDGES, NAMES, READ_AT = range(10)
SEMANTIC = slice(FLAGS, NAMES + 1)  # what the rules see of a record
AST, GRAPH, DECODED = 1, 2, 4  # FLAGS: parse it with ast (names a removed module); scan its
# edges; Python decodes it otherwise than grimp's scanner does (its edges come from ast)


class ScanPlan(Record, frozen=True):
    roots: tuple[str, ...]
    ast_words: tuple[bytes, ...]  # a file containing one of these is parsed with ast
    ast_prefixes: tuple[str, ...]  # modules under these are always parsed (e.g. a shim)
    graph_words: tuple[bytes, ...]  # a file containing one of these gets its edges scanned
    graph_prefixes: tuple[str, ...]  # modules under these always get their edges scanned
    closure_stop: tuple[str, ...]  # the import closure does not enter these
    # Edges into these keep their from-imported names, but for an edge between two modules of
    # one child package of a prefix (a group's imports of itself: no rule reads their names).
    name_prefixes: tuple[str, ...]
    # The removed prefixes themselves: files are routed to ast by `prefilter.py` (lookups by
    # name parts, one pass over the bytes), not by searching for each of `ast_words`.
    removed: tuple[str, ...]
    # The config's `exclude` patterns and the directory they are relative to (`importers.py`).
    exclude: tuple[str, ...]
    exclude_base: str
    # A rule reads the text of every file itself (`missing_imports`): the bytes read are kept
    # in `Model.texts`, and any changed file changes the generation.
    texts: bool
    # The root names of the `missing_imports` packages, when one reader serves every such
    # contract: each file's import statements and column-0 definitions are then read where the
    # file is read (in the workers, `Model.statements`), not after.
    statement_roots: tuple[str, ...]
    # The packages whose importers get their edges scanned (the operator groups' kernel package):
    # a file holding one of `graph_words` is scanned only if the prefilter finds a line of it that
    # may name a module under one of these (`triton_kernels`, `self.kernels`, prose are not).
    # Empty: the word alone decides.
    graph_named: tuple[str, ...]
    # A file in a `closure_stop` package (a higher layer) that is a graph file only because it
    # may name `graph_named` keeps only its edges into `graph_named`: the closure never enters
    # it, and no rule reads its other imports (the operator groups' read imports into the kernel
    # package; a layer's, those of its lower layers' modules). Off where a contract has
    # `ignore_imports`: a line there may name any import, and whether it matches one is reported.
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

    @property
    def layout(self):
        """The `importers.Layout` whose exclusions the walk honours, or None."""
        from contracts.engine.importers import Layout

        return Layout(self.exclude_base, self.exclude) if self.exclude else None

    @property
    def key(self) -> str:
        return repr(self)

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
        `graph_named` (see `narrow`)? Not a file under a graph prefix, one `ast` reads for the
        removal rules, or one read otherwise than its bytes (DECODED)."""
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
