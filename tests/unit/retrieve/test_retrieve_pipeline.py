"""RetrievalPipeline end to end on a tiny store: index reuse, fusion, pooling, reranking, dense branch."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from medcite.config import Settings, load_settings
from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import ConfigError
from medcite.index.base import index_folder
from medcite.pipeline import Context, RetrievalPipeline
from medcite.registry import validate_config
from medcite.retrieve.base import QuerySet
from medcite.types import Article, Hit, Query, Topic
from medcite_fakes import ReplyLLM

DOCS = [
    Article("11", "Statins reduce LDL cholesterol", "Statin therapy lowers LDL cholesterol in adults."),
    Article("12", "Statins and muscle pain", "Myalgia is a common side effect of statin treatment."),
    Article("13", "Aspirin for headache", "Aspirin relieves tension headache."),
    Article("14", "Dietary fibre and cholesterol", "Fibre intake reduces serum cholesterol."),
    Article("15", "Migraine prevention", "Beta blockers prevent migraine attacks."),
    Article("16", "Exercise and blood pressure", "Aerobic exercise lowers blood pressure."),
]
TOPIC = Topic("t1", "Do statins lower cholesterol?", narrative="An adult asks about statin therapy.",
              topic="statins cholesterol")


def make_store(path: Path, docs: list[Article] = DOCS) -> DocumentStore:
    store = DocumentStore.create(path)
    with store.transaction() as tx:
        tx.upsert(docs, FileStats("fixture"))
    return store


@pytest.fixture()
def store(tmp_path: Path) -> DocumentStore:
    return make_store(tmp_path / "store")


def settings(*overrides: str) -> Settings:
    return load_settings("offline", list(overrides))


def test_bm25_pipeline_builds_then_reuses_and_updates_the_index(store: DocumentStore) -> None:
    s = settings('retrieve.queries=["original", "keywords"]', "retrieve.k=5")
    pipe = RetrievalPipeline.from_settings(s, store.path, store=store)
    folder = index_folder(store.path, s.indexes["bm25"])
    assert folder.parent == store.path / "indexes" and folder.name.startswith("tantivy-")
    assert (folder / "manifest.json").exists()
    out = pipe.retrieve(TOPIC)
    assert [q.stage for q in out.queries] == ["original", "keywords"]
    assert set(out.runs) == {"bm25/q0", "bm25/q1"}
    assert out.final[0].pmid == "11"
    assert out.final[0].branches == {"bm25/q0", "bm25/q1"}
    assert "13" not in {h.pmid for h in out.final}
    assert list(out.rankings) == ["retrieval"]
    assert [h.rank for h in out.final] == list(range(1, len(out.final) + 1))

    # runtime-only settings map to the same folder; the index follows the store's updates
    assert index_folder(store.path, s.indexes["bm25"].model_copy(update={"threads": 2})) == folder
    with store.transaction() as tx:
        tx.upsert([Article("17", "Statins lower cholesterol", "Statins lower cholesterol strongly.")],
                  FileStats("update"))
    again = RetrievalPipeline.from_settings(s, store.path, store=store).retrieve(TOPIC)
    assert "17" in {h.pmid for h in again.final}
    assert [p.name for p in (store.path / "indexes").iterdir() if p.is_dir()] == [folder.name]  # no 2nd index


def test_keep_and_prf_branch(store: DocumentStore) -> None:
    s = settings('retrieve.branches=["bm25", {"backend": "bm25+rocchio", "k": 3, "fb_docs": 2}]', "retrieve.keep=2")
    out = RetrievalPipeline.from_settings(s, store.path, store=store).retrieve(TOPIC)
    assert set(out.runs) == {"bm25/q0", "bm25+rocchio/q0"}
    assert len(out.runs["bm25+rocchio/q0"]) <= 3
    assert len(out.final) == 2
    assert len(out.rankings["retrieval"]) > 2


class TableRetriever:
    """A real retriever over a fixed table: query text -> ranked (pmid, score) pairs."""

    def __init__(self, name: str, table: Mapping[str, list[tuple[str, float]]]) -> None:
        self.name = name
        self.table = table

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit(p, s, i + 1) for i, (p, s) in enumerate(self.table.get(query, [])[:k])]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]


class OverlapReranker:
    """Scores a document by the number of query words in its title (a real, if crude, reranker)."""

    name = "overlap"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, hits: Sequence[Hit], articles: Mapping[str, object], k: int) -> list[Hit]:
        self.calls.append((query, [h.pmid for h in hits]))
        words = set(query.lower().split())
        scored = [Hit(h.pmid, float(len(words & set(articles[h.pmid].title.lower().split()))))  # type: ignore[attr-defined]
                  for h in hits if h.pmid in articles]
        scored.sort(key=lambda h: (-h.score, h.pmid))
        return [Hit(h.pmid, h.score, i + 1) for i, h in enumerate(scored[:k])]


class TwoQueries:
    name = "two"

    def generate(self, topic: Topic) -> list:
        from medcite.types import Query

        return [Query("q0", "statins"), Query("q1", "migraine headache")]


TABLE = {
    "statins": [("12", 9.0), ("11", 8.0), ("14", 1.0)],
    "migraine headache": [("15", 4.0), ("13", 3.0), ("12", 0.5)],
}


def _pipe(store: DocumentStore, reranker: object = None, *overrides: str) -> RetrievalPipeline:
    s = settings(*overrides)
    return RetrievalPipeline(s, store, QuerySet([TwoQueries()]), {"bm25": TableRetriever("bm25", TABLE)}, reranker)


def test_fusion_methods_over_sub_queries(store: DocumentStore) -> None:
    rrf_out = _pipe(store).retrieve(TOPIC).final
    # 12 is first in q0 and third in q1: 1/61 + 1/63 beats every single-run document
    assert rrf_out[0].pmid == "12" and rrf_out[0].branches == {"bm25/q0", "bm25/q1"}
    assert rrf_out[0].score == pytest.approx(1 / 61 + 1 / 63)
    pooled = _pipe(store, None, "retrieve.fusion=pool", "retrieve.norm=none").retrieve(TOPIC).final
    assert [(h.pmid, h.score) for h in pooled] == [("12", 9.0), ("11", 8.0), ("15", 4.0), ("13", 3.0), ("14", 1.0)]
    wsum = _pipe(store, None, "retrieve.fusion=wsum").retrieve(TOPIC).final
    assert wsum[0].pmid == "12" and wsum[0].score == pytest.approx(1.0 + 0.0)


def test_rerank_fused_list_against_the_question(store: DocumentStore) -> None:
    rr = OverlapReranker()
    out = _pipe(store, rr, "rerank.k=2").retrieve(TOPIC)
    assert rr.calls == [(TOPIC.question, [h.pmid for h in out.rankings["retrieval"]])]
    assert [h.pmid for h in out.final] == ["11", "12"]  # "statins", "cholesterol" vs "statins" in the titles
    assert out.final[0].branches == {"bm25/q0"}
    assert list(out.rankings) == ["retrieval", "rerank"]


def test_rerank_per_sub_query_then_pool(store: DocumentStore) -> None:
    rr = OverlapReranker()
    out = _pipe(store, rr, "retrieve.rerank_per_query=true", "retrieve.keep=3").retrieve(TOPIC)
    assert [q for q, _ in rr.calls] == ["statins", "migraine headache"]
    assert rr.calls[0][1] == ["12", "11", "14"]
    # q0: 11 and 12 score 1; q1: 15 ("migraine") and 13 ("headache") score 1, 12 scores 0
    assert [(h.pmid, h.score) for h in out.final] == [("11", 1.0), ("12", 1.0), ("13", 1.0)]
    assert out.final[1].branches == {"bm25/q0", "bm25/q1", "rerank/q0", "rerank/q1"}


def test_unavailable_reranker_is_a_config_error(store: DocumentStore) -> None:
    with pytest.raises(ConfigError, match="rerank"):
        RetrievalPipeline.from_settings(settings("rerank.backend=nope"), store.path, store=store)


def test_empty_store_is_a_config_error(tmp_path: Path) -> None:
    empty = DocumentStore.create(tmp_path / "empty")
    with pytest.raises(ConfigError, match="empty"):
        RetrievalPipeline.from_settings(settings(), empty.path, store=empty)


def test_dense_index_folder_follows_the_model_folder_content(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Retraining models:NAME in place gives a new index folder; hub names and aliases hash settings only."""
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(tmp_path / "models"))
    model = tmp_path / "models" / "enc"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"hidden_size": 8}')
    dense = settings().indexes["dense"]

    def with_encoder(name: str):  # type: ignore[no-untyped-def]
        return dense.model_copy(update={"encoder": validate_config("encoder", name)})

    ref, by_path = with_encoder("models:enc"), with_encoder(str(model))
    first, first_path = index_folder(tmp_path, ref), index_folder(tmp_path, by_path)
    assert index_folder(tmp_path, ref) == first
    (model / "config.json").write_text('{"hidden_size": 16}')  # retrained in place
    assert index_folder(tmp_path, ref) != first
    assert index_folder(tmp_path, by_path) != first_path
    hub = with_encoder("org/some-model")
    assert index_folder(tmp_path, hub) == index_folder(tmp_path, hub)
    assert index_folder(tmp_path, dense).name == index_folder(tmp_path / "x", dense).name


def test_only_the_encoder_names_a_dense_index_folder() -> None:
    """Layout, search-time and runtime settings re-lay out or tune an index; they never re-encode the corpus."""
    dense = settings().indexes["dense"]
    folder = index_folder("/s", dense)
    for change in ({"threads": 1}, {"index_type": "ivfpq"}, {"nlist": 64}, {"pq_m": 8}, {"hnsw_m": 16},
                   {"vector_dtype": "float32"}, {"nprobe": 4}, {"chunk_size": 10}, {"train_size": 5000}):
        assert index_folder("/s", dense.model_copy(update=change)) == folder, change
    batch = dense.model_copy(update={"encoder": dense.encoder.model_copy(update={"batch_size": 4, "device": "cpu"})})
    assert index_folder("/s", batch) == folder
    other = dense.model_copy(update={"encoder": validate_config("encoder", "minilm-onnx")})
    assert index_folder("/s", other) != folder


def test_hybrid_bm25_and_dense_with_rrf(store: DocumentStore) -> None:
    pytest.importorskip("faiss")
    s = settings('retrieve.branches=["bm25", "dense"]', "retrieve.k=3", "indexes.dense.encoder.backend=hash-bow")
    pipe = RetrievalPipeline.from_settings(s, store.path, store=store)
    out = pipe.retrieve(TOPIC)
    assert set(out.runs) == {"bm25/q0", "dense/q0"}
    assert len(out.runs["dense/q0"]) == 3
    both = [h for h in out.final if h.branches == {"bm25/q0", "dense/q0"}]
    assert both and out.final[0] in both
    assert set(pipe.context.open_indexes()) == {"bm25", "dense"}  # type: ignore[union-attr]
    pipe.close()


def test_two_dense_branches_over_two_named_indexes(store: DocumentStore) -> None:
    """A preset mixes encoders: each branch names its index, and its label names its runs."""
    pytest.importorskip("faiss")
    extra = json.dumps({"backend": "faiss", "encoder": {"backend": "hash-bow", "dim": 16}})
    s = settings(f"indexes.small={extra}", "indexes.dense.encoder.backend=hash-bow", "retrieve.k=3",
                 'retrieve.branches=["dense", {"backend": "dense", "index": "small", "label": "dense16"}]')
    pipe = RetrievalPipeline.from_settings(s, store.path, store=store)
    out = pipe.retrieve(TOPIC)
    assert set(out.runs) == {"dense/q0", "dense16/q0"}
    assert pipe.retrievers["dense16"].dim == 16 and pipe.retrievers["dense"].dim == 32
    pipe.close()
    with pytest.raises(ConfigError, match="named dense"):
        settings('retrieve.branches=["dense", "dense"]')
    with pytest.raises(ConfigError, match="needs a vector index"):
        RetrievalPipeline.from_settings(settings('retrieve.branches=[{"backend": "dense", "index": "bm25"}]'),
                                        store=store)


def test_query_set_from_settings_with_llm_generators(store: DocumentStore) -> None:
    replies = "1. statin myalgia\n2. Do statins lower cholesterol?\n3. statin cholesterol lowering"
    s = settings('retrieve.queries=["original", "llm_reformulate", "topic_narrative"]', "llm.backend=replies",
                 f"llm.replies={json.dumps([replies])}")
    pipe = RetrievalPipeline.from_settings(s, store.path, store=store)
    out = pipe.query_set.generate(TOPIC)
    assert [(q.id, q.stage) for q in out] == [("q0", "original"), ("q1", "reformulation"),
                                              ("q2", "reformulation"), ("q3", "topic_narrative")]
    assert [q.text for q in out[1:3]] == ["statin myalgia", "statin cholesterol lowering"]
    assert set(pipe.retrieve(TOPIC).runs) == {"bm25/q0", "bm25/q1", "bm25/q2", "bm25/q3"}
    pipe.close()
    with pytest.raises(ConfigError, match="needs a language model"):
        RetrievalPipeline.from_settings(settings('retrieve.queries=["original", "llm_decompose"]'), store=store)
    with pytest.raises(ConfigError, match="unknown querygen backend"):
        settings('retrieve.queries=["nope"]')


def test_listwise_llm_reranker_builds_from_settings_alone(store: DocumentStore) -> None:
    """Finding: `rerank.backend=llm-listwise` could not be built from settings (the LLM was injected by hand)."""
    s = load_settings("offline", ["rerank.backend=llm-listwise", "llm.backend=local"])
    pipe = RetrievalPipeline.from_settings(s, store.path, store=store)
    from medcite.llm.local_backend import LocalBackend
    from medcite.rerank.llm_listwise import LLMListwiseReranker

    assert isinstance(pipe.reranker, LLMListwiseReranker) and isinstance(pipe.reranker.llm, LocalBackend)
    pipe.close()
    # the same path runs it: a settings-registered fake LLM answers the permutation
    s = load_settings("offline", ["rerank.backend=llm-listwise", "llm.backend=replies", 'llm.replies=["[2] > [1]"]',
                                  "rerank.k=2", "rerank.top_n=2", "rerank.window=2", "rerank.step=1"])
    pipe = RetrievalPipeline.from_settings(s, store.path, store=store)
    out = pipe.retrieve(TOPIC)
    first = out.rankings["retrieval"]
    assert [h.pmid for h in out.rankings["rerank"]] == [first[1].pmid, first[0].pmid]
    llm = pipe.context.llm()  # type: ignore[union-attr]
    assert isinstance(llm, ReplyLLM) and llm.prompts
    pipe.close()


def test_context_shares_one_llm_and_closes_everything(store: DocumentStore) -> None:
    s = load_settings("offline", ["llm.backend=replies", 'retrieve.queries=["original", "llm_reformulate"]',
                                  "rerank.backend=llm-listwise"])
    ctx = Context(s, store)
    pipe = RetrievalPipeline.from_settings(s, store=store, context=ctx)
    assert pipe.reranker.llm is pipe.query_set.generators[1].llm  # type: ignore[attr-defined]
    closed: list[str] = []
    pipe.reranker.llm.close = lambda: closed.append("llm")  # type: ignore[attr-defined,method-assign]
    ctx.close()
    assert closed == ["llm"]


class VariantOverlap(OverlapReranker):
    """An OverlapReranker that also takes the query variants (as MedCPT averages them)."""

    def __init__(self) -> None:
        super().__init__()
        self.variants: list[list[str]] = []

    def rerank_variants(self, queries: Sequence[str], hits: Sequence[Hit], articles: Mapping[str, object],
                        k: int) -> list[Hit]:
        self.variants.append(list(queries))
        return self.rerank(" ".join(queries), hits, articles, k)


def test_a_variant_reranker_reads_the_whole_query_set(store: DocumentStore) -> None:
    """Finding: MedCPT's query-variant averaging was never reached by the pipeline. CLaC 2025 averages the
    question, its variants, the topic and the narrative."""
    rr = VariantOverlap()
    _pipe(store, rr, "rerank.k=2").retrieve(TOPIC)
    assert rr.variants == [[TOPIC.question, "statins", "migraine headache", "statins cholesterol",
                            "An adult asks about statin therapy."]]


def test_a_dense_index_of_the_earlier_layout_is_adopted_not_rebuilt(store: DocumentStore) -> None:
    """medcite 0.1 named dense folders `dense-<hash of every setting>`: the same store and encoder is reused."""
    pytest.importorskip("faiss")
    from medcite.index.dense.build import build_dense_index
    from medcite_fakes import HashEncoder

    s = settings('retrieve.branches=["dense"]', "indexes.dense.encoder.backend=hash-bow")
    legacy = store.path / "indexes" / "dense-0123456789abcdef"
    build_dense_index(store, legacy, s.indexes["dense"], encoder=HashEncoder())
    ctx = Context(s, store)
    encoder = HashEncoder()
    ctx.models.get(("encoder", json.dumps(s.indexes["dense"].encoder.model_dump(mode="json"), sort_keys=True,
                                          default=str)), lambda: encoder)
    index = ctx.index("dense")
    assert encoder.documents_encoded == 0 and not legacy.exists()
    assert index.path == index_folder(store.path, s.indexes["dense"]) and len(index) == len(DOCS)
    ctx.close()


def test_a_branch_searches_only_the_query_stages_it_names(store: DocumentStore) -> None:
    """Dalhousie 2025: the keyword rewrite goes to BM25, the sub-queries to the dense index."""
    from medcite.types import Query

    class Staged:
        name = "staged"

        def generate(self, topic: Topic) -> list:
            return [Query("q0", "statins", "keyword_rewrite"), Query("q1", "migraine headache", "decomposition")]

    s = settings('retrieve.branches=[{"backend": "bm25", "queries": ["decomposition"]}]')
    pipe = RetrievalPipeline(s, store, QuerySet([Staged()]), {"bm25": TableRetriever("bm25", TABLE)})
    assert set(pipe.retrieve(TOPIC).runs) == {"bm25/q1"}
    # issue 32: a branch whose stages produced nothing searches the question, says so, and the run goes on
    s = settings('retrieve.branches=[{"backend": "bm25", "queries": ["reformulation"]}]')
    pipe = RetrievalPipeline(s, store, QuerySet([Staged()]), {"bm25": TableRetriever("bm25", TABLE)})
    out = pipe.retrieve(TOPIC)
    assert set(out.runs) == {"bm25/q2"} and out.queries[2] == Query("q2", TOPIC.question, "fallback")
    assert len(out.notes) == 1 and "branch bm25" in out.notes[0] and "['reformulation']" in out.notes[0]


class Searches(TableRetriever):
    """A TableRetriever that records every text it was asked to search."""

    def __init__(self, name: str, table: Mapping[str, list[tuple[str, float]]]) -> None:
        super().__init__(name, table)
        self.asked: list[str] = []

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        self.asked += list(queries)
        return super().search_many(queries, k)


class Said:
    """A query generator of one stage that says fixed texts."""

    def __init__(self, stage: str, *texts: str) -> None:
        self.name, self.stage, self.texts = stage, stage, texts

    def generate(self, topic: Topic) -> list:
        return [Query(f"{self.stage}-{i}", t, self.stage) for i, t in enumerate(self.texts, 1)]


def test_a_text_two_stages_give_is_one_query_credited_to_both() -> None:
    """Issue 32: the keyword rewrite came back as the question itself; it still belongs to its stage."""
    queries = QuerySet([Said("original", "Statins?"), Said("keyword_rewrite", "  STATINS? "),
                        Said("decomposition", "migraine headache", "statins?")]).generate(TOPIC)
    assert queries == [Query("q0", "Statins?", "original", ("keyword_rewrite", "decomposition")),
                       Query("q1", "migraine headache", "decomposition")]
    assert queries[0].stages == ("original", "keyword_rewrite", "decomposition")
    assert queries[0].belongs_to(["keyword_rewrite"]) and not queries[1].belongs_to(["original", "keywords"])


def test_a_branch_selecting_only_the_later_stage_searches_the_shared_query_once(store: DocumentStore) -> None:
    both = Searches("bm25", TABLE)
    dense = Searches("dense", TABLE)
    s = settings('retrieve.branches=[{"backend": "bm25", "queries": ["keyword_rewrite"]}, '
                 '{"backend": "bm25", "label": "dense", "queries": ["decomposition"]}]')
    gens = QuerySet([Said("original", "statins"), Said("keyword_rewrite", "Statins"),
                     Said("decomposition", "migraine headache")])
    out = RetrievalPipeline(s, store, gens, {"bm25": both, "dense": dense}).retrieve(TOPIC)
    assert both.asked == ["statins"] and dense.asked == ["migraine headache"]  # once each, no fallback
    assert set(out.runs) == {"bm25/q0", "dense/q1"} and out.notes == []
    assert [h.pmid for h in out.final][:2] == ["12", "15"]


def test_a_failed_generator_and_the_question_searched_instead_are_noted(store: DocumentStore) -> None:
    from medcite.errors import LLMError

    class Down:
        name = "llm_decompose"

        def generate(self, topic: Topic) -> list:
            raise LLMError("the server is down")

    searches = Searches("bm25", {TOPIC.question: [("11", 2.0)]})
    s = settings('retrieve.branches=[{"backend": "bm25", "queries": ["decomposition"]}]')
    out = RetrievalPipeline(s, store, QuerySet([Said("original", TOPIC.question), Down()]),
                            {"bm25": searches}).retrieve(TOPIC)
    assert searches.asked == [TOPIC.question] and set(out.runs) == {"bm25/q0"} and len(out.queries) == 1
    assert [h.pmid for h in out.final] == ["11"]
    assert "'llm_decompose' failed (the server is down)" in out.notes[0]
    assert "it searched the question (q0) instead" in out.notes[1]


def test_only_an_empty_question_stops_retrieval(store: DocumentStore) -> None:
    from medcite.errors import InputError

    s = settings('retrieve.branches=[{"backend": "bm25", "queries": ["decomposition"]}]')
    pipe = RetrievalPipeline(s, store, QuerySet([Said("decomposition")]), {"bm25": Searches("bm25", TABLE)})
    with pytest.raises(InputError, match="empty question"):
        pipe.retrieve(Topic("t0", "  "))
    out = pipe.retrieve(Topic("t2", "", topic="statins"))  # no question, but a topic label: that is searched
    assert out.queries == [Query("q0", "statins", "fallback")] and set(out.runs) == {"bm25/q0"}
