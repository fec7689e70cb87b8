"""``index.backend=milvus``: how settings move every named index to Milvus and pick server-side hybrid search.
No server needed (the backends themselves are tested against a real one in tests/integration/milvus)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.config import load_settings, preset_names
from medcite.errors import ConfigError
from medcite.index.milvus.layout import Layout, analyzer_params


@pytest.mark.parametrize("preset", preset_names())
def test_every_preset_moves_to_milvus(preset: str) -> None:
    embedded = load_settings(preset)
    porter = [n for n, c in embedded.indexes.items() if getattr(c, "stemmer", None) == "porter"]
    swaps: list[str] = []
    if porter:  # Lucene's Porter stemmer (CLaC 2025's Pyserini): Milvus has only Snowball, said before anything runs
        with pytest.raises(ConfigError, match="no Porter .* use stemmer 'english'"):
            load_settings(preset, ["index.backend=milvus"])
        swaps = [f"indexes.{n}.stemmer=english" for n in porter]
    settings = load_settings(preset, ["index.backend=milvus", *swaps])
    assert set(settings.indexes) == set(embedded.indexes)
    for name, cfg in settings.indexes.items():
        before = embedded.indexes[name]
        assert cfg.backend == {"sparse": "milvus-bm25", "vector": "milvus-dense"}[before.kind]
        if before.kind == "vector":  # the same vector space
            assert cfg.encoder.identity() == before.encoder.identity()
        else:
            stemmer = "english" if name in porter else before.stemmer
            assert (cfg.stemmer, cfg.stopwords) == (stemmer, before.stopwords)
    names = {b.index for b in settings.retrieve.branches} | {
        i for b in settings.retrieve.branches for i in getattr(b, "vector_indexes", [])}
    assert names <= set(settings.indexes)
    assert load_settings(preset, ["index.backend=milvus", *swaps]).hash() == settings.hash()


def test_hybrid_preset_fuses_on_the_server_unless_told_otherwise() -> None:
    server = load_settings("hybrid", ["index.backend=milvus"]).retrieve.branches
    assert [(b.backend, b.index, b.vector_indexes, b.rrf_k) for b in server] == [
        ("milvus-hybrid", "bm25", ["dense"], 60)]
    client = load_settings("hybrid", ["index.backend=milvus", "index.milvus.hybrid=client"]).retrieve.branches
    assert [b.backend for b in client] == ["bm25", "dense"]
    # unequal weights cannot be one server RRF: the branches stay and medcite fuses them
    weighted = load_settings("hybrid", ["index.backend=milvus",
                                        'retrieve.branches=[{"backend": "bm25", "weight": 2}, "dense"]'])
    assert [b.backend for b in weighted.retrieve.branches] == ["bm25", "dense"]
    # PRF branches stay (they search the Milvus BM25 index with expanded queries)
    dal = load_settings("dal25-rrf", ["index.backend=milvus"]).retrieve.branches
    assert [b.backend for b in dal] == ["bm25+rocchio", "dense"]


def test_options_carry_over_and_layout_names_the_collection() -> None:
    s = load_settings("hybrid", ["index.backend=milvus", "indexes.dense.index_type=ivfpq", "indexes.bm25.stemmer=none",
                                 "indexes.dense.ef_search=64"])
    assert (s.indexes["dense"].index_type, s.indexes["dense"].ef_search, s.indexes["bm25"].stemmer) == (
        "ivf_pq", 64, "none")
    layout = Layout.of(s)
    name = layout.collection_name(s.index.milvus, "0123456789abcdef")
    assert name.startswith("medcite_0123456789ab_") and len(name) == len("medcite_0123456789ab_") + 8
    # a search-time option does not change the collection; an analysis option does
    same = Layout.of(load_settings("hybrid", ["index.backend=milvus", "indexes.dense.index_type=ivfpq",
                                              "indexes.bm25.stemmer=none", "indexes.dense.ef_search=200"]))
    other = Layout.of(load_settings("hybrid", ["index.backend=milvus", "indexes.dense.index_type=ivfpq"]))
    assert same.collection_name(s.index.milvus, "0123456789abcdef") == name
    assert other.collection_name(s.index.milvus, "0123456789abcdef") != name
    explicit = load_settings("hybrid", ["index.backend=milvus", "index.milvus.collection=pubmed"])
    assert Layout.of(explicit).collection_name(explicit.index.milvus, "x") == "pubmed"


def test_analyzer_matches_the_embedded_analysis() -> None:
    s = load_settings("bm25", ["index.backend=milvus"])
    params = analyzer_params(s.indexes["bm25"])
    assert params["tokenizer"] == "standard"
    stop = next(f for f in params["filter"] if isinstance(f, dict) and f["type"] == "stop")
    assert {"the", "of", "s"} <= set(stop["stop_words"])
    assert {"type": "stemmer", "language": "english"} in params["filter"]
    unstemmed = analyzer_params(load_settings("bm25", ["index.backend=milvus", "indexes.bm25.stemmer=none"])
                                .indexes["bm25"])
    assert not any(isinstance(f, dict) and f["type"] == "stemmer" for f in unstemmed["filter"])


def test_unsupported_options_are_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="Porter"):
        load_settings("bm25", ["index.backend=milvus", "indexes.bm25.backend=bm25s", "indexes.bm25.stemmer=porter"])
    with pytest.raises(ConfigError, match="contents"):
        load_settings("bm25", ["index.backend=milvus", 'indexes.bm25.fields=["title"]'])


def test_server_errors_become_medcite_errors() -> None:
    pm = pytest.importorskip("pymilvus")
    from medcite.config import MilvusSettings
    from medcite.errors import IndexMismatchError, InputError
    from medcite.index.milvus.client import translate

    server = MilvusSettings(uri="http://db.example:19530")
    gone = translate(pm.MilvusException(code=100, message="collection 'c1' does not exist"), server, "searching", "c1")
    assert isinstance(gone, InputError) and "'c1'" in gone.message and "medcite index milvus" in (gone.hint or "")
    dim = translate(pm.MilvusException(code=6, message="vector field 'vec_dense' expected dim 384, got 768"),
                    server, "upserting articles", "c1")
    assert isinstance(dim, IndexMismatchError) and "dimension mismatch" in dim.message
    auth = translate(pm.MilvusException(code=1800, message="user hasn't authenticated"), server, "searching")
    assert isinstance(auth, ConfigError) and "MILVUS_TOKEN" in (auth.hint or "")
    other = translate(pm.MilvusException(code=1, message="disk quota"), server, "flushing")
    assert isinstance(other, InputError) and "db.example" in other.message and "disk quota" in other.message


@pytest.mark.parametrize("preset", ["best", "bm25", "hybrid"])
@pytest.mark.parametrize("analysis", [[], ["indexes.bm25.stemmer=none", "indexes.bm25.stopwords=none"]])
def test_milvus_bm25_counts_its_terms_where_the_embedded_index_of_the_same_analysis_lives(
        preset: str, analysis: list[str], tmp_path: Path) -> None:
    from medcite.index.base import index_folder
    from medcite.index.milvus.bm25_backend import statistics_config

    embedded = load_settings(preset, analysis).indexes["bm25"]
    moved = load_settings(preset, [*analysis, "index.backend=milvus"]).indexes["bm25"]
    stats = statistics_config(moved)  # type: ignore[arg-type]
    assert (stats.backend, stats.stemmer, stats.stopwords) == ("tantivy", embedded.stemmer, embedded.stopwords)
    # the folder a store indexed with the embedded default already has: moving to Milvus reuses it
    assert index_folder(tmp_path, stats) == index_folder(tmp_path, embedded)


def test_term_statistics_come_from_the_index_or_what_it_names() -> None:
    from medcite.index.base import term_statistics

    class Counts:
        def __len__(self) -> int:
            return 3

        def doc_freq(self, term: str) -> int:
            return {"statin": 2}.get(term, 0)

    class Elsewhere:
        def __init__(self) -> None:
            self.counts = Counts()

        def term_statistics(self) -> Counts:
            return self.counts

    counts, elsewhere = Counts(), Elsewhere()
    assert term_statistics(counts) is counts
    assert term_statistics(elsewhere) is elsewhere.counts
    assert term_statistics(object()) is None
