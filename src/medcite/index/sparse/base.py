"""The sparse (BM25) index protocol and what every backend shares: build/update from a document store,
the manifest, and :func:`open_sparse`.

BM25 is Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond" (2009), scored as
Lucene does (idf = ln(1 + (N - n + 0.5) / (n + 0.5)), no (k1 + 1) factor), which is what Anserini, the
reference the published systems used, runs.

An index folder holds ``manifest.json`` plus one sub-folder written by its backend. The manifest records
the store it follows (store id and the store sequence number last applied), so :func:`build_sparse` on
an existing folder applies only the articles added, replaced or deleted since then.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

from pydantic import Field, ValidationError

from ... import registry
from ...announce import long_work
from ...errors import ConfigError, CorruptIndexError, IndexMismatchError, MedciteError
from ...io import JSONObject, remove_stale_temp_files
from ...types import Hit
from ..base import IndexConfig, SparseIndex, built_read_only, digest, index_folder
from ..build_lock import building
from ..manifest import MANIFEST, read_manifest, write_manifest

if TYPE_CHECKING:
    from ...context import BuildContext
    from ...corpus.store import DocumentStore

log = logging.getLogger(__name__)

KIND = "medcite-sparse-index"
FORMAT_VERSION = 1

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, the default stop list of Anserini.
LUCENE_STOPWORDS: tuple[str, ...] = (
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "but",
    "by",
    "for",
    "if",
    "in",
    "into",
    "is",
    "it",
    "no",
    "not",
    "of",
    "on",
    "or",
    "such",
    "that",
    "the",
    "their",
    "then",
    "there",
    "these",
    "they",
    "this",
    "to",
    "was",
    "will",
    "with",
)
# Lucene's StandardTokenizer keeps "patient's" whole and EnglishPossessiveFilter strips the "'s"; our
# tokenizers split on the apostrophe, so dropping the lone "s" gives the same terms.
POSSESSIVE = ("s",)
MAX_TOKEN_CHARS = 100


class SparseConfig(IndexConfig):
    """What every BM25 backend shares: the analysis (same at index and query time) and build resources."""

    kind: ClassVar[str] = "sparse"
    runtime_fields: ClassVar[frozenset[str]] = frozenset({"heap_mb", "threads"})

    stemmer: Literal["english", "porter", "none"] = Field(
        "english",
        description="Stemmer: 'english' (Snowball/Porter2, both backends), 'porter' (Porter 1980 as in "
        "Lucene/Anserini, bm25s only, needs PyStemmer) or 'none'.",
    )
    stopwords: Literal["lucene", "none"] = Field(
        "lucene", description="Stop words: 'lucene' (Lucene's 33 English stop words, as Anserini) or 'none'."
    )
    heap_mb: int = Field(256, ge=16, description="Indexing memory budget in MiB (tantivy writer heap).")
    threads: int = Field(1, ge=1, description="Indexing threads.")


def stopword_list(settings: SparseConfig) -> list[str]:
    """The stop words both backends remove (after lowercasing, before stemming)."""
    if settings.stopwords == "lucene":
        return [*LUCENE_STOPWORDS, *POSSESSIVE]
    return list(POSSESSIVE)


def index_settings(settings: SparseConfig) -> JSONObject:
    """The settings that shape an index on disk (an update must use the same ones)."""
    return settings.identity()


@dataclass
class UpdateReport:
    """What one build or update did. ``full`` is True when every document was (re)indexed."""

    backend: str
    folder: str
    added: int
    replaced: int
    deleted: int
    docs: int
    seq: int
    full: bool
    seconds: float

    def as_dict(self) -> JSONObject:
        return asdict(self)


@dataclass
class Applied:
    """A backend's account of one sync: counts of changes and the documents now in the index."""

    added: int
    replaced: int
    deleted: int
    docs: int
    full: bool


class SparseBackend(Protocol):
    """The class side of a backend: check settings, write the index, load it."""

    name: str

    @classmethod
    def check_settings(cls, settings: SparseConfig) -> None: ...

    @classmethod
    def sync(cls, folder: Path, store: DocumentStore, settings: SparseConfig, since: int | None) -> Applied:
        """Index the store's changes after ``since`` (everything when None) into ``folder``."""
        ...

    @classmethod
    def load(cls, folder: Path, manifest: JSONObject) -> SparseIndex: ...


def backend_class(name: str) -> SparseBackend:
    cls = registry.load("index", name)
    if getattr(getattr(cls, "Config", None), "kind", None) != "sparse":
        raise ConfigError(f"index backend {name!r} is not a sparse (BM25) index",
                          hint=f"sparse backends: {', '.join(sparse_backends())}")
    return cls  # type: ignore[no-any-return]


def sparse_backends() -> list[str]:
    return [n for n in registry.names("index") if getattr(registry.config_class("index", n), "kind", "") == "sparse"]


def query_terms(tokens: Sequence[str]) -> Counter[str]:
    """Bag of query terms with counts: a repeated term weighs more, as in Anserini's BagOfWords query."""
    return Counter(t for t in tokens if t)


def to_hits(pmids: Sequence[int | str], scores: Sequence[float]) -> list[Hit]:
    """Hits in the given (descending score) order, ranks from 1; ties keep the backend's order."""
    return [Hit(str(p), float(s), i + 1) for i, (p, s) in enumerate(zip(pmids, scores, strict=True))]


def build_sparse(
    store: DocumentStore, folder: str | Path, settings: SparseConfig, *, rebuild: bool = False
) -> UpdateReport:
    """Build a BM25 index of ``store`` in ``folder``, or bring an existing one up to date.

    An existing index must be of the same store (else :class:`IndexMismatchError`) and the same index
    settings (else the same error, with a hint to pass ``rebuild=True`` or use a new folder). Only the
    articles changed since the index's recorded store sequence are applied. Holds the folder's build lock
    (:mod:`..build_lock`): another job's build of the same folder is waited for, then found up to date.
    """
    folder = Path(folder)
    backend = backend_class(settings.backend)
    backend.check_settings(settings)
    with building(folder, "the BM25 index"):
        return _build(store, folder, settings, backend, rebuild=rebuild)


def _build(store: DocumentStore, folder: Path, settings: SparseConfig, backend: SparseBackend, *,
           rebuild: bool) -> UpdateReport:
    start = time.perf_counter()
    if rebuild:
        clear_folder(folder)
    since: int | None = None
    old: JSONObject = {}
    remove_stale_temp_files(folder)  # a manifest write that a kill interrupted (``.manifest.json.XXXX.tmp``)
    if (folder / MANIFEST).exists():
        old = read_manifest(folder, kind=KIND, format_version=FORMAT_VERSION)
        _check_same_store(folder, old, store)
        _check_same_settings(folder, old, settings)
        since = int(old["corpus"]["seq"])
    elif folder.exists() and any(folder.iterdir()) and _only_index_files(folder):
        # a first build that was interrupted (killed, full disk): nothing in it was ever used; start over
        log.warning("%s: an earlier build did not finish (no %s); building it again", folder, MANIFEST)
        clear_folder(folder)
    elif folder.exists() and any(folder.iterdir()):
        raise CorruptIndexError(
            f"{folder} is not empty but has no {MANIFEST}: "
            "an earlier build did not finish, or it is not an index",
            hint="pass --rebuild to start over in this folder, or choose an empty --out folder",
        )
    folder.mkdir(parents=True, exist_ok=True)
    seq = store.seq  # read before the changes: whatever lands meanwhile is applied again next time
    if since is not None and since >= seq:
        docs = int(old.get("counts", {}).get("docs", 0))
        log.info("%s is up to date with the store (seq %d)", folder, seq)
        return UpdateReport(
            settings.backend, str(folder), 0, 0, 0, docs, seq, False, time.perf_counter() - start
        )
    applied = backend.sync(folder, store, settings, since)
    write_manifest(
        folder,
        kind=KIND,
        format_version=FORMAT_VERSION,
        settings=index_settings(settings),
        corpus={
            "store_id": store.store_id,
            "seq": seq,
            "count": len(store),
            "path": str(store.path.resolve()),
        },
        counts={"docs": applied.docs},
        backend=settings.backend,
        settings_hash=digest(settings.model_dump(mode="json")),
    )
    report = UpdateReport(
        settings.backend,
        str(folder),
        applied.added,
        applied.replaced,
        applied.deleted,
        applied.docs,
        seq,
        applied.full,
        time.perf_counter() - start,
    )
    log.info("sparse index %s: %s", folder, report.as_dict())
    return report


def open_sparse(folder: str | Path, store: DocumentStore | None = None) -> SparseIndex:
    """Load the index in ``folder`` with the backend its manifest names.

    With ``store``, refuse an index of another store and warn when the index is behind the store.
    """
    folder = Path(folder)
    manifest = read_manifest(folder, kind=KIND, format_version=FORMAT_VERSION)
    name = manifest.get("backend")
    if not isinstance(name, str):
        raise CorruptIndexError(f"{folder}/{MANIFEST} names no backend", hint="rebuild the index")
    if store is not None:
        _check_same_store(folder, manifest, store)
        behind = store.seq - int(manifest["corpus"]["seq"])
        if behind > 0:
            log.warning(
                "%s is behind its store by %d change sets; run `medcite index bm25` to update it",
                folder,
                behind,
            )
    return backend_class(name).load(folder, manifest)


def _only_index_files(folder: Path) -> bool:
    """The folder holds nothing but what a sparse index build writes (its backend folders)."""
    backends = sparse_backends()
    known = {MANIFEST, *backends, *(f"{name}.new" for name in backends)}
    return all(p.name in known for p in folder.iterdir())


def clear_folder(folder: Path) -> None:
    """Remove an index's own files (manifest and backend sub-folders), refusing unknown content."""
    if not folder.exists():
        return
    backends = sparse_backends()
    known = {MANIFEST, *backends, *(f"{name}.new" for name in backends)}
    unknown = sorted(p.name for p in folder.iterdir() if p.name not in known)
    if unknown:
        raise ConfigError(
            f"refusing to clear {folder}: it holds files no sparse index writes ({', '.join(unknown[:5])})",
            hint="choose an empty or new --out folder",
        )
    for p in folder.iterdir():
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def settings_from_manifest(folder: Path, manifest: JSONObject) -> SparseConfig:
    try:
        cfg = registry.validate_config("index", {"backend": manifest.get("backend"), **manifest["settings"]})
    except (ValidationError, KeyError, TypeError) as exc:  # either way the manifest is unusable here
        raise CorruptIndexError(
            f"{folder}/{MANIFEST} has settings this medcite cannot read ({exc})",
            hint="rebuild the index (medcite index bm25 --rebuild)",
        ) from None
    assert isinstance(cfg, SparseConfig)
    return cfg


def backend_settings(folder: Path, manifest: JSONObject, backend: str) -> SparseConfig:
    """The settings of the index in ``folder`` (its manifest), which must be a ``backend`` index."""
    if manifest.get("backend") != backend:
        raise IndexMismatchError(
            f"{folder} is a {manifest.get('backend')!r} index, not a {backend} one",
            hint="open it with medcite.index.sparse.base.open_sparse",
        )
    return settings_from_manifest(folder, manifest)


def _check_same_store(folder: Path, manifest: JSONObject, store: DocumentStore) -> None:
    have = manifest.get("corpus", {}).get("store_id")
    if have != store.store_id:
        raise IndexMismatchError(
            f"{folder} indexes document store {have}, not {store.store_id} ({store.path})",
            hint="give the --store it was built from, or build into a new --out folder",
        )


def _check_same_settings(folder: Path, manifest: JSONObject, settings: SparseConfig) -> None:
    old, new = manifest.get("settings", {}), index_settings(settings)
    diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if diff:
        shown = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in diff)
        raise IndexMismatchError(
            f"{folder} was built with other index settings ({shown})",
            hint="pass --rebuild to rebuild it with the new settings, or build into a new --out folder",
        )


def ensure_sparse(store: DocumentStore, cfg: SparseConfig) -> SparseIndex:
    """Build (or bring up to date) the store's BM25 index for ``cfg`` under ``<store>/indexes`` and open it; a
    long build or sync is announced first (:mod:`medcite.announce`)."""
    folder = index_folder(store.path, cfg)
    if built_read_only(store, folder, "the BM25 index", f"medcite index bm25 --store {store.path}", say_behind=False):
        return open_sparse(folder, store)
    backend = backend_class(cfg.backend)
    # what is left to do is read under the lock: after waiting for another job's build, it is nothing
    with building(folder, "the BM25 index"):
        count, full = pending(folder, store, rebuilds=getattr(backend, "rebuilds_on_update", False))
        doing = f"indexing {count:,} {'' if full else 'new or changed '}abstracts with {cfg.backend}"
        with long_work(log, what="the BM25 index", doing=doing, count=count, where=str(folder), full=full,
                       per_second=getattr(backend, "docs_per_s", 1_000.0)):
            report = build_sparse(store, folder, cfg)
        if report.added or report.replaced or report.deleted:
            log.info("BM25 index %s: +%d ~%d -%d documents", folder, report.added, report.replaced, report.deleted)
    return open_sparse(folder, store)  # opened after letting go: jobs that only open it do not queue


def pending(folder: Path, store: DocumentStore, *, rebuilds: bool = False) -> tuple[int, bool]:
    """The abstracts a build or sync of ``folder`` is about to index, and whether it is a first build
    (``rebuilds``: the backend re-indexes the whole store for any change)."""
    if not (folder / MANIFEST).exists():
        return len(store), True
    try:
        corpus = read_manifest(folder, kind=KIND, format_version=FORMAT_VERSION)["corpus"]
    except (MedciteError, KeyError):
        return 0, False  # the sync refuses it, saying why
    changes = store.count_changes_since(int(corpus.get("seq", 0)))
    return (len(store) if rebuilds and changes else changes), False


class SparseBackendMixin:
    """``from_config`` shared by the embedded BM25 backends: their index follows ``ctx.store``."""

    @classmethod
    def from_config(cls, cfg: SparseConfig, ctx: BuildContext) -> SparseIndex:
        if ctx.store is None:
            raise ConfigError(f"the {cfg.backend} index needs a document store", hint="pass --corpus STORE")
        return ensure_sparse(ctx.store, cfg)
