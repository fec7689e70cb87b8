"""One Milvus collection per document store and index layout: schema, server-side sync state, searches.

The collection holds every named index that Milvus serves (``milvus-bm25`` and ``milvus-dense`` entries of
``settings.indexes``), so one upsert keeps them all in step and a hybrid search reaches them in one call:

```
pmid            INT64 primary key
text_<name>     VARCHAR, analysed (title + abstract), one per sparse index
bm25_<name>     SPARSE_FLOAT_VECTOR, output of Milvus's BM25 function over text_<name>
vec_<name>      FLOAT_VECTOR (dim of the index's encoder), one per vector index; FLAT, HNSW or IVF
```

The sync state lives on the server, in the collection's properties: ``medcite.store_id``, ``medcite.seq``
(the store sequence number last applied; -1 while the first build runs, which records its progress in
``medcite.build_seq`` and ``medcite.build_after`` so an interrupted build resumes) and ``medcite.layout``
(what the collection holds). :meth:`MilvusCollection.sync` applies the store's changes after that sequence number:
added and replaced articles are upserted, deleted PMIDs deleted, then the sequence number is recorded.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ...announce import long_work
from ...errors import ConfigError, IndexMismatchError
from ...io import JSONObject
from ...progress import progress
from ...set_option import set_line
from ...types import Article, Hit
from . import client as mc
from .layout import Layout, analyzer_params, field_name

if TYPE_CHECKING:
    from ...context import BuildContext
    from ...corpus.store import DocumentStore
    from ...milvus_settings import MilvusSettings
    from ..dense.encoders import Encoder

log = logging.getLogger(__name__)

T = TypeVar("T")

FORMAT = "1"
PROP_FORMAT, PROP_STORE, PROP_SEQ, PROP_LAYOUT = "medcite.format", "medcite.store_id", "medcite.seq", "medcite.layout"
#: an unfinished first build: the store sequence number it indexes and the last PMID it upserted
PROP_BUILD_SEQ, PROP_RESUME = "medcite.build_seq", "medcite.build_after"
PK = "pmid"
#: VARCHAR limit of Milvus (bytes); longer texts are cut at a character boundary
MAX_TEXT_BYTES = 65_535
#: Milvus's largest top-k per search
MAX_TOPK = 16_384
#: the fix of a collection that is not this one: name another
_NAME_IT = set_line("index.milvus.collection", "NAME")
_INDEX_TYPES = {"flat": "FLAT", "hnsw": "HNSW", "ivf_flat": "IVF_FLAT", "ivf_pq": "IVF_PQ"}


def _truncate(text: str) -> str:
    data = text.encode("utf-8")
    return text if len(data) <= MAX_TEXT_BYTES else data[:MAX_TEXT_BYTES].decode("utf-8", "ignore")


def _batches(items: Iterable[Article], size: int) -> Iterator[list[Article]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


class MilvusCollection:
    """The collection of one store and layout on one server; shared by the index objects of a context."""

    def __init__(self, server: MilvusSettings, client: Any, name: str, layout: Layout,
                 encoders: dict[str, Encoder]) -> None:
        self.server = server
        self.client = client
        self.name = name
        self.layout = layout
        self.encoders = encoders
        self.lite = False
        #: what the last sync did (``sync``'s report)
        self.last_report: JSONObject = {}

    # -- opening ---------------------------------------------------------------------------------------------
    @classmethod
    def open(cls, ctx: BuildContext, *, create: bool = False, rebuild: bool = False) -> MilvusCollection:
        """The collection of ``ctx.store`` for the Milvus indexes of the settings, brought up to date with the
        store. Missing: built when ``create`` (``medcite index milvus``), else InputError naming that command."""
        if ctx.store is None:
            raise ConfigError("a Milvus index follows a document store", hint="pass --corpus STORE (or --store)")
        store, server = ctx.store, ctx.index_engine().milvus
        layout = Layout.of(ctx.index_configs())
        name = layout.collection_name(server, store.store_id)
        key = ("milvus-collection", server.uri, server.db_name, name)
        if create or rebuild:
            coll = cls._connect(ctx, layout, name)
            coll.ensure(store, create=True, rebuild=rebuild)
            ctx.models.get(key, lambda: coll)
            return coll

        def load() -> MilvusCollection:
            coll = cls._connect(ctx, layout, name)
            coll.ensure(store, create=False)
            return coll

        coll = ctx.models.get(key, load)
        coll.sync(store)
        return coll

    @classmethod
    def _connect(cls, ctx: BuildContext, layout: Layout, name: str) -> MilvusCollection:
        server = ctx.index_engine().milvus
        client = mc.connect(server)
        encoders = {n: ctx.encoder(c.encoder) for n, c in layout.vector.items()}
        coll = cls(server, client, name, layout, encoders)
        version = str(mc.call(server, "asking its version", client.get_server_version))
        coll.lite = version.startswith("milvus_lite")
        if coll.lite and any(c.stemmer != "none" for c in layout.sparse.values()):
            log.warning("the Milvus server at %s is Milvus Lite %s, whose analyzer has no stemmer filter: BM25 there "
                        "matches unstemmed terms (a Milvus server stems as asked)", server.uri, version)
        return coll

    def _call(self, doing: str, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        return mc.call(self.server, doing, lambda: fn(*args, **kwargs), self.name)

    def exists(self) -> bool:
        return bool(self._call("looking up the collection", self.client.has_collection, self.name))

    def properties(self) -> dict[str, str]:
        info = self._call("describing the collection", self.client.describe_collection, self.name)
        return {str(k): str(v) for k, v in (info.get("properties") or {}).items()}

    def ensure(self, store: DocumentStore, *, create: bool, rebuild: bool = False) -> JSONObject:
        """Check (or create) the collection, then sync it with ``store``; returns the sync report."""
        if rebuild and self.exists():
            log.info("dropping Milvus collection %s to rebuild it", self.name)
            self._call("dropping the collection", self.client.drop_collection, self.name)
        if not self.exists():
            if not create:
                raise mc.missing_collection(self.server, self.name)
            self._create(store)
        else:
            self._check(store)
        return self.sync(store)

    def _create(self, store: DocumentStore) -> None:
        pm = mc.pymilvus()
        dt = pm.DataType
        schema = pm.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(PK, dt.INT64, is_primary=True)
        index_params = pm.MilvusClient.prepare_index_params()
        for name, cfg in self.layout.sparse.items():
            text, sparse = field_name("text", name), field_name("bm25", name)
            schema.add_field(text, dt.VARCHAR, max_length=MAX_TEXT_BYTES, enable_analyzer=True,
                             analyzer_params=analyzer_params(cfg))
            schema.add_field(sparse, dt.SPARSE_FLOAT_VECTOR)
            schema.add_function(pm.Function(name=f"bm25_fn_{name}", function_type=pm.FunctionType.BM25,
                                            input_field_names=[text], output_field_names=[sparse]))
            index_params.add_index(field_name=sparse, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                                   params={"bm25_k1": cfg.k1, "bm25_b": cfg.b})
        for name, dcfg in self.layout.vector.items():
            vec = field_name("vec", name)
            schema.add_field(vec, dt.FLOAT_VECTOR, dim=self.encoders[name].dim)
            index_params.add_index(field_name=vec, index_type=_INDEX_TYPES[dcfg.index_type], metric_type="IP",
                                   params=dcfg.build_params(self.encoders[name].dim))
        props = {PROP_FORMAT: FORMAT, PROP_STORE: store.store_id, PROP_SEQ: "-1",
                 PROP_LAYOUT: json.dumps(self.layout.identity(), sort_keys=True, separators=(",", ":"))}
        log.info("creating Milvus collection %s on %s", self.name, self.server.uri)
        self._call("creating the collection", self.client.create_collection, self.name, schema=schema,
                   index_params=index_params, consistency_level="Strong", properties=props)

    def _check(self, store: DocumentStore) -> None:
        """Refuse a collection of another store, of another layout, or whose vector fields have another size."""
        info = self._call("describing the collection", self.client.describe_collection, self.name)
        props = {str(k): str(v) for k, v in (info.get("properties") or {}).items()}
        where = f"Milvus collection {self.name!r} at {self.server.uri}"
        if PROP_STORE not in props:
            raise IndexMismatchError(f"{where} was not made by medcite (it has no {PROP_STORE} property)",
                                     hint=f"choose another name: {_NAME_IT}")
        dims = {f["name"]: int(f.get("params", {}).get("dim", 0)) for f in info.get("fields", [])}
        for name, encoder in self.encoders.items():
            vec = field_name("vec", name)
            if vec in dims and dims[vec] != encoder.dim:
                raise IndexMismatchError(
                    f"{where}: vector field {vec!r} holds {dims[vec]}-d vectors, but index {name!r} encodes with "
                    f"{encoder.name!r} ({encoder.dim}-d): dimension mismatch",
                    hint="use the encoder the collection was built with, or rebuild it with this one: medcite "
                    f"index milvus --rebuild (or name another collection: {_NAME_IT})",
                )
        if props[PROP_STORE] != store.store_id:
            raise IndexMismatchError(
                f"{where} follows document store {props[PROP_STORE]}, not {store.store_id} ({store.path})",
                hint=f"give the store it was built from, or name another collection: {_NAME_IT}",
            )
        want = json.dumps(self.layout.identity(), sort_keys=True, separators=(",", ":"))
        if props.get(PROP_LAYOUT) != want:
            have = json.loads(props.get(PROP_LAYOUT) or "{}")
            mine = json.loads(want)
            diff = sorted(f"{kind}.{n}" for kind in ("sparse", "vector")
                          for n in set(have.get(kind, {})) | set(mine.get(kind, {}))
                          if have.get(kind, {}).get(n) != mine.get(kind, {}).get(n))
            raise IndexMismatchError(
                f"{where} was built for other indexes or settings (differs in: {', '.join(diff)})",
                hint="rebuild it with these settings (medcite index milvus --rebuild), or leave "
                "index.milvus.collection unset so each layout gets its own collection",
            )
        state = self._call("asking the load state", self.client.get_load_state, self.name)
        if "NotLoad" in str(state.get("state", "")):
            self._call("loading the collection", self.client.load_collection, self.name)

    # -- sync ------------------------------------------------------------------------------------------------
    def sync(self, store: DocumentStore) -> JSONObject:
        """Apply the store's changes since the recorded sequence number (all of it after a fresh create).

        A first build upserts the store in PMID order and records after each batch the last PMID done
        (``medcite.build_after``) and the store sequence number it indexes (``medcite.build_seq``), so an
        interrupted build goes on where it stopped; the changes made to the store meanwhile are applied next,
        as an ordinary update from that sequence number.
        """
        start = time.perf_counter()
        props = self.properties()
        if props.get(PROP_STORE) != store.store_id:
            self._check(store)  # raises, naming both stores
        since = int(props.get(PROP_SEQ, "-1"))
        full = since < 0
        target, after = store.seq, -1
        if full and props.get(PROP_BUILD_SEQ, "") != "":
            target, after = int(props[PROP_BUILD_SEQ]), int(props.get(PROP_RESUME) or -1)
            log.info("Milvus collection %s: resuming its first build after PMID %d", self.name, after)
        elif full:
            self._set({PROP_BUILD_SEQ: str(target), PROP_RESUME: "-1"})
        report: JSONObject = {"collection": self.name, "added": 0, "replaced": 0, "deleted": 0, "seq": target,
                                  "full": full, "seconds": 0.0}
        if since >= target:
            report["docs"] = len(self)
            self.last_report = report
            return report
        total = len(store) if full else store.count_changes_since(since)
        articles = store.iter_articles() if full else store.iter_changes(since)
        encoders = [c.encoder for c in self.layout.vector.values()]
        doing = (f"upserting {total:,} {'' if full else 'new or changed '}abstracts (store seq {max(since, 0)} -> "
                 f"{target})" + (f", encoded with {', '.join(e.describe() for e in encoders)}" if encoders else ""))
        with (
            long_work(log, what="the Milvus collection of index", doing=doing, count=total, full=full,
                      where=f"collection {self.name!r} on {self.server.uri}",
                      per_second=min((e.docs_per_s() for e in encoders), default=1_000.0)),
            progress(total=total, desc="milvus sync", unit="doc") as bar,
        ):
            for batch in _batches((a for a in articles if int(a.pmid) > after), self.server.batch_size):
                present = set() if full else self._present([int(a.pmid) for a in batch])
                report["replaced"] += len(present)
                report["added"] += len(batch) - len(present)
                self._call("upserting articles", self.client.upsert, self.name, self._rows(batch))
                if full:
                    self._set({PROP_RESUME: batch[-1].pmid})
                bar.update(len(batch))
        if not full:
            gone = self._present([int(p) for p in store.deleted_since(since)])
            if gone:
                ids = sorted(gone)
                for i in range(0, len(ids), 10_000):
                    self._call("deleting articles", self.client.delete, self.name, ids=ids[i : i + 10_000])
            report["deleted"] = len(gone)
        self._call("flushing", self.client.flush, self.name)
        self._set({PROP_SEQ: str(target)})
        report["docs"] = len(self)
        report["seconds"] = round(time.perf_counter() - start, 3)
        log.info("Milvus collection %s: %s", self.name, report)
        self.last_report = report
        if full and store.seq > target:  # the store moved on during the build: apply that as an update
            more = self.sync(store)
            for key in ("added", "replaced", "deleted"):
                report[key] += more[key]
            report.update(seq=more["seq"], docs=more["docs"], seconds=round(time.perf_counter() - start, 3))
            self.last_report = report
        return report

    def _set(self, properties: dict[str, str]) -> None:
        self._call("recording the sync state", self.client.alter_collection_properties, self.name,
                   properties=properties)

    def _rows(self, batch: list[Article]) -> list[JSONObject]:
        rows: list[JSONObject] = [{PK: int(a.pmid)} for a in batch]
        for name in self.layout.sparse:
            text = field_name("text", name)
            for row, article in zip(rows, batch, strict=True):
                row[text] = _truncate(article.text)
        for name, encoder in self.encoders.items():
            vec = field_name("vec", name)
            vectors = np.asarray(encoder.encode_documents(batch), dtype=np.float32)
            for row, v in zip(rows, vectors, strict=True):
                row[vec] = v.tolist()
        return rows

    def _present(self, pmids: list[int]) -> set[int]:
        """The PMIDs among ``pmids`` that the collection holds."""
        found: set[int] = set()
        for i in range(0, len(pmids), 1000):
            chunk = pmids[i : i + 1000]
            rows = self._call("looking up PMIDs", self.client.query, self.name, filter=f"{PK} in {chunk}",
                              output_fields=[PK])
            found.update(int(r[PK]) for r in rows)
        return found

    # -- reading ---------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        rows = self._call("counting rows", self.client.query, self.name, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def search(self, anns_field: str, data: Sequence[Any], k: int, params: JSONObject) -> list[list[Hit]]:
        """Top ``k`` PMIDs per query (texts for a BM25 field, vectors for a vector field)."""
        if not len(data) or k < 1:
            return [[] for _ in data]
        res = self._call("searching", self.client.search, self.name, data=list(data), anns_field=anns_field,
                         limit=min(k, MAX_TOPK), search_params=params, output_fields=[PK])
        return [_hits(row, bm25=params.get("metric_type") == "BM25") for row in res]

    def hybrid(self, requests: list[tuple[str, Sequence[Any], JSONObject]], k: int,
               rrf_k: float) -> list[list[Hit]]:
        """Reciprocal rank fusion (Cormack et al. 2009) of several searches, on the server, per query."""
        pm = mc.pymilvus()
        limit = min(k, MAX_TOPK)
        reqs = [pm.AnnSearchRequest(data=list(data), anns_field=f, param=p, limit=limit) for f, data, p in requests]
        res = self._call("running a hybrid search", self.client.hybrid_search, self.name, reqs,
                         pm.RRFRanker(int(rrf_k)), limit=limit, output_fields=[PK])
        return [_hits(row) for row in res]

    def get_vectors(self, vec: str, pmids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        ids = [int(p) for p in pmids]
        for i in range(0, len(ids), 1000):
            rows = self._call("reading vectors", self.client.get, self.name, ids=ids[i : i + 1000],
                              output_fields=[vec])
            for r in rows:
                out[str(r[PK])] = np.asarray(r[vec], dtype=np.float32)
        return {str(p): out[str(p)] for p in pmids if str(p) in out}

    def close(self) -> None:
        try:
            self.client.close()
        except Exception as exc:  # noqa: BLE001 - closing a dead connection must not fail a run
            log.debug("closing the Milvus client failed: %s", exc)


def _hits(row: Any, *, bm25: bool = False) -> list[Hit]:
    """Hits in the server's order. BM25 distances are positive scores on a Milvus server and their negatives on
    Milvus Lite: abs() reads both (a BM25 score is never negative); inner products and RRF scores are kept."""
    out = []
    for rank, hit in enumerate(row, start=1):
        score = float(hit["distance"])
        pmid = getattr(hit, "id", None)
        out.append(Hit(str(int(pmid if pmid is not None else hit[PK])), abs(score) if bm25 else score, rank))
    return out
