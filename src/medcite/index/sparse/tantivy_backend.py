"""BM25 on disk with tantivy (the embedded default): incremental adds, replacements and deletions.

Scoring is tantivy's BM25, which is Lucene's (Robertson & Zaragoza 2009; same idf, same quantised
document lengths) times the constant (k1 + 1), so rankings equal Lucene's for the same terms.
tantivy fixes k1 = 1.2 and b = 0.75 and tantivy-py exposes no way to change them: other values are
refused with a hint to use the bm25s backend.

Analysis (both at index and query time, so they always agree): split on non-alphanumeric characters,
lowercase, remove Lucene's English stop words (and the lone "s" of possessives), Snowball English stemmer.
Queries are bags of analysed terms (one SHOULD clause per distinct term, boosted by its count, as
Anserini builds them), so no text can fail to parse.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import tantivy
from pydantic import Field, ValidationInfo, field_validator

from ...errors import ConfigError, CorruptIndexError
from ...io import JSONObject
from ...progress import progress
from ...set_option import set_line
from ...types import Article, Hit
from ...write_failures import write_failure
from .base import (
    MAX_TOKEN_CHARS,
    Applied,
    SparseBackendMixin,
    SparseConfig,
    backend_settings,
    query_terms,
    stopword_list,
    to_hits,
)

if TYPE_CHECKING:
    from ...corpus.store import DocumentStore

log = logging.getLogger(__name__)

SUBDIR = "tantivy"
TOKENIZER = "medcite_en"
TANTIVY_K1 = 1.2
TANTIVY_B = 0.75
BATCH = 2000


class TantivyConfig(SparseConfig):
    """tantivy BM25 on disk (the embedded default)."""

    backend: Literal["tantivy"] = "tantivy"
    k1: float = Field(TANTIVY_K1, description="BM25 k1: tantivy fixes 1.2 (use the bm25s backend for others).")
    b: float = Field(TANTIVY_B, description="BM25 b: tantivy fixes 0.75 (use the bm25s backend for others).")
    fields: list[Literal["contents", "title", "abstract"]] = Field(
        default_factory=lambda: ["contents"],  # type: ignore[arg-type,return-value]
        description="Fields a query is scored against, scores summed: 'contents' (title + abstract as one "
        "field, as Anserini indexes it), 'title', 'abstract'.",
    )

    @field_validator("k1", "b")
    @classmethod
    def _fixed(cls, value: float, info: ValidationInfo) -> float:
        fixed = TANTIVY_K1 if info.field_name == "k1" else TANTIVY_B
        if abs(value - fixed) > 1e-9:
            raise ValueError(
                f"the tantivy backend scores with k1={TANTIVY_K1}, b={TANTIVY_B} (fixed inside tantivy); got "
                f"{info.field_name}={value}: use the bm25s backend (--backend bm25s, or backend 'bm25s' in "
                "the index settings) for other k1/b values"
            )
        return value


def _analyzer(settings: SparseConfig) -> tantivy.TextAnalyzer:
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.custom_stopword(stopword_list(settings)))
    )
    if settings.stemmer == "english":
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()


def _schema(settings: TantivyConfig) -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("pmid", stored=True, indexed=True, fast=True)
    for field in ("contents", "title", "abstract"):
        if field == "contents" or field in settings.fields:
            # term frequencies without positions: BM25 needs no more, and the index stays small
            sb.add_text_field(field, stored=False, tokenizer_name=TOKENIZER, index_option="freq")
    return sb.build()


def _batches(items: Iterable[Article], size: int) -> Iterator[list[Article]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


_VIEWS: list[tempfile.TemporaryDirectory[str]] = []


def _read_only_view(path: Path) -> Path:
    """A folder of links to the index files of ``path``, a folder that cannot be written (a read-only mount).

    tantivy takes a lock file in the index folder even to read it; the links let it take that lock in a temporary
    folder of this process while it reads the files where they are. The folder goes when the process ends.
    """
    view = tempfile.TemporaryDirectory(prefix="medcite-tantivy-ro-")
    _VIEWS.append(view)  # kept until the process ends: the index maps the files through these links
    for name in os.listdir(path):
        if not name.endswith(".lock"):
            os.symlink(path.resolve() / name, Path(view.name) / name)
    log.info("%s cannot be written: reading the tantivy index through links in %s", path, view.name)
    return Path(view.name)


class TantivyIndex(SparseBackendMixin):
    """A tantivy BM25 index folder. Build/update with :func:`medcite.index.sparse.base.build_sparse`."""

    name = "tantivy"
    Config = TantivyConfig
    #: documents indexed per second, roughly (59,890 PubMed abstracts in 22 s: docs/BENCHMARKS.md)
    docs_per_s = 2_500.0

    def __init__(
        self, folder: Path, manifest: JSONObject, settings: TantivyConfig, index: tantivy.Index
    ) -> None:
        self.folder = folder
        self.manifest = manifest
        self.settings = settings
        self._index = index
        self._schema = index.schema
        self._analyzer = _analyzer(settings)
        self._searcher = index.searcher()  # one searcher for every query: a consistent, cheap snapshot

    # -- class side ----------------------------------------------------------------------------------
    @classmethod
    def check_settings(cls, settings: TantivyConfig) -> None:
        if settings.stemmer == "porter":
            raise ConfigError(
                "the tantivy backend has no Porter (1980) stemmer, only Snowball 'english'",
                hint=f"use {set_line('indexes.bm25.stemmer', 'english')}, or the bm25s backend for 'porter'",
            )

    @classmethod
    def _open(cls, path: Path, settings: TantivyConfig) -> tantivy.Index:
        if not (path / "meta.json").exists():
            raise CorruptIndexError(
                f"{path} has no tantivy meta.json: the index files are missing",
                hint="rebuild the index (medcite index bm25 --rebuild)",
            )
        where = path if os.access(path, os.W_OK) else _read_only_view(path)
        try:
            index = tantivy.Index.open(str(where))
        except (ValueError, OSError) as exc:
            raise CorruptIndexError(
                f"cannot open the tantivy index at {path} ({exc})",
                hint="rebuild the index (medcite index bm25 --rebuild)",
            ) from None
        index.register_tokenizer(TOKENIZER, _analyzer(settings))
        return index

    @classmethod
    def sync(cls, folder: Path, store: DocumentStore, settings: TantivyConfig, since: int | None) -> Applied:
        """Index the whole store (``since`` None) or only what changed after ``since``."""
        path = folder / SUBDIR
        full = since is None
        if full:
            path.mkdir(parents=True, exist_ok=True)
            index = tantivy.Index(_schema(settings), path=str(path), reuse=False)
            index.register_tokenizer(TOKENIZER, _analyzer(settings))
        else:
            index = cls._open(path, settings)
        try:
            writer = index.writer(heap_size=settings.heap_mb * 2**20, num_threads=settings.threads)
        except ValueError as exc:
            raise ConfigError(
                f"cannot write the tantivy index at {path} ({exc})",
                hint="another process may be updating it; wait for it to finish",
            ) from None
        try:
            added, replaced, deleted = cls._write(writer, index, store, settings, since, path)
        except (ValueError, OSError) as exc:
            kept = ("nothing already written was lost: the store is untouched, and "
                    + ("this first build is started again by the next `medcite index bm25`" if full else
                       "the index keeps its last commit and catches up next time"))
            failed = write_failure(exc, path, kept=kept)
            if failed is None:
                raise
            raise failed from exc
        index.reload()
        docs = index.searcher().num_docs
        return Applied(added, replaced, deleted, docs, full)

    @classmethod
    def _write(cls, writer: tantivy.IndexWriter, index: tantivy.Index, store: DocumentStore, settings: TantivyConfig,
               since: int | None, path: Path) -> tuple[int, int, int]:
        """Add the store's changes after ``since`` (all of it when None) and commit; (added, replaced, deleted)."""
        full = since is None
        schema = index.schema
        searcher = None if full else index.searcher()
        added = replaced = deleted = 0
        total = len(store) if full else store.count_changes_since(since or 0)
        articles = store.iter_articles() if full else store.iter_changes(since or 0)
        log.info("tantivy: %s %d documents into %s", "indexing" if full else "updating", total, path)
        with progress(total=total, desc="bm25 index", unit="doc") as bar:
            for batch in _batches(articles, BATCH):
                if searcher is not None:
                    present = cls._present(searcher, schema, [int(a.pmid) for a in batch])
                    if present:
                        writer.delete_documents_by_query(
                            tantivy.Query.term_set_query(schema, "pmid", present)
                        )
                    replaced += len(present)
                    added += len(batch) - len(present)
                else:
                    added += len(batch)
                for article in batch:
                    writer.add_document(cls._document(article, settings))
                bar.update(len(batch))
        if searcher is not None:
            gone = cls._present(searcher, schema, [int(p) for p in store.deleted_since(since or 0)])
            if gone:
                writer.delete_documents_by_query(tantivy.Query.term_set_query(schema, "pmid", gone))
            deleted = len(gone)
        writer.commit()
        writer.wait_merging_threads()
        return added, replaced, deleted

    @staticmethod
    def _present(searcher: tantivy.Searcher, schema: tantivy.Schema, pmids: list[int]) -> list[int]:
        """The PMIDs among ``pmids`` that are live documents of the index (deletions respected)."""
        if not pmids:
            return []
        found: list[int] = []
        for i in range(0, len(pmids), 10_000):
            chunk = pmids[i : i + 10_000]
            result = searcher.search(
                tantivy.Query.term_set_query(schema, "pmid", chunk), len(chunk), count=False
            )
            values = searcher.fast_field_values("pmid", [addr for _, addr in result.hits])
            found.extend(int(v) for v in values if v is not None)
        return sorted(set(found))

    @staticmethod
    def _document(article: Article, settings: TantivyConfig) -> tantivy.Document:
        doc = tantivy.Document()
        doc.add_unsigned("pmid", int(article.pmid))
        doc.add_text("contents", article.text)
        if "title" in settings.fields:
            doc.add_text("title", article.title)
        if "abstract" in settings.fields:
            doc.add_text("abstract", article.abstract)
        return doc

    @classmethod
    def load(cls, folder: Path, manifest: JSONObject) -> TantivyIndex:
        settings = backend_settings(folder, manifest, cls.name)
        assert isinstance(settings, TantivyConfig)
        index = cls._open(folder / SUBDIR, settings)
        try:
            return cls(folder, manifest, settings, index)
        except (ValueError, OSError) as exc:
            raise CorruptIndexError(
                f"the tantivy index at {folder} is damaged ({exc})",
                hint="rebuild the index (medcite index bm25 --rebuild)",
            ) from None

    # -- searching -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self._searcher.num_docs)

    def doc_freq(self, term: str) -> int:
        """Documents holding the index term ``term`` (already analysed) in the first search field.

        Used by pseudo-relevance feedback to skip over-common expansion terms (Anserini's max-df rule).
        """
        return int(self._searcher.doc_freq(self.settings.fields[0], term))

    def _query(self, text: str) -> tantivy.Query | None:
        terms = query_terms(self._analyzer.analyze(text))
        if not terms:
            return None
        clauses = []
        for field in self.settings.fields:
            for term, count in terms.items():
                q = tantivy.Query.term_query(self._schema, field, term, index_option="freq")
                if count > 1:
                    q = tantivy.Query.boost_query(q, float(count))
                clauses.append((tantivy.Occur.Should, q))
        return tantivy.Query.boolean_query(clauses)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        searcher = self._searcher
        k = min(k, searcher.num_docs)  # tantivy allocates for k hits: more than the index holds is never needed
        out: list[list[Hit]] = []
        for text in queries:
            q = self._query(text)
            if q is None or k <= 0:
                out.append([])
                continue
            result = searcher.search(q, k, count=False)
            pmids = searcher.fast_field_values("pmid", [addr for _, addr in result.hits])
            pairs = [(int(p), s) for p, (s, _) in zip(pmids, result.hits, strict=True) if p is not None]
            out.append(to_hits([p for p, _ in pairs], [s for _, s in pairs]))
        return out
