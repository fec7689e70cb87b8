"""The BioASQ 13b presets (pjs-ensemble, dsgt-ensemble): their pipelines and the offline swaps they document."""

from __future__ import annotations

from medcite.config import Settings, load_settings, preset_description
from medcite.presets.offline import is_local_model, offline_settings


def test_pjs_ensemble_is_dense_then_a_union_of_embedding_rerankers() -> None:
    s = load_settings("pjs-ensemble")
    assert [b.backend for b in s.retrieve.branches] == ["dense"] and s.retrieve.k == 10000
    assert s.rerank.backend == "ensemble-union" and s.rerank.member_k == 5 and s.rerank.k == 10
    assert [m.backend for m in s.rerank.members] == ["embedding"] * 3
    assert s.bioasq.scorer == "embedding" and s.bioasq.encoder.model_names() == []  # the packaged MiniLM
    assert s.bioasq.documents == s.bioasq.snippets == 10


def test_dsgt_ensemble_is_a_cross_encoder_then_its_weighted_ensemble_with_a_listwise_llm() -> None:
    s = load_settings("dsgt-ensemble")
    assert s.retrieve.k == 1000 and s.rerank.backend == "cascade"
    ce, ensemble = s.rerank.stages
    assert ce.backend == "cross-encoder" and ce.k == 30
    assert ensemble.backend == "ensemble-weighted" and ensemble.weights == [0.125, 0.875] and ensemble.k == 10
    assert [m.backend for m in ensemble.members] == ["cross-encoder", "llm-listwise"]
    assert ensemble.members[1].window == 30 and s.rerank.llm_names() == {None}
    # DS@GT's fine-tuned cross-encoder (trained by medcite as 004 describes) in both places, and its build command
    assert ce.model == ensemble.members[0].model == "models:dsgt-minilm-l12-ce-bioasq"
    assert "medcite models build dsgt-b1" in preset_description("dsgt-ensemble")


DSGT_PHASE_B = ["dsgt-b-gpt4-style1", "dsgt-b-gpt4-style2", "dsgt-b-gpt4-style3", "dsgt-b-mistral-style1",
                "dsgt-b-mistral-style3"]


def test_offline_the_presets_rerank_and_score_snippets_with_models_that_are_here() -> None:
    for preset in ("pjs-ensemble", "dsgt-ensemble", "dsgt-b1", *DSGT_PHASE_B):
        s = offline_settings(load_settings(preset), "local")
        assert s.rerank.backend != "none" and all(is_local_model(m) for m in s.rerank.model_names())
        assert all(is_local_model(m) for m in s.indexes["dense"].model_names())
        assert s.bioasq.encoder.model_names() == []
    assert load_settings("dsgt-ensemble").bioasq.encoder.model_names()  # bge-large-en, swapped above


def test_a_reranker_snippet_scorer_without_its_model_becomes_minilm() -> None:
    s = load_settings("offline", ["bioasq.scorer=reranker", "bioasq.reranker=cross-encoder:no/such-model"])
    minilm = load_settings("offline").bioasq.encoder
    assert _bioasq(offline_settings(s, "local")) == ("embedding", minilm)
    listwise = load_settings("offline", ["bioasq.scorer=reranker", "bioasq.reranker=llm-listwise"])
    assert _bioasq(offline_settings(listwise, "local")) == ("reranker", minilm)
    assert _bioasq(offline_settings(listwise, "none")) == ("embedding", minilm)


def _bioasq(s: Settings) -> tuple[str, object]:
    return s.bioasq.scorer, s.bioasq.encoder
