"""Offline stand-ins of the model-based rerankers (issue 15): same stages, same budgets, the packaged MiniLM for
what is hub-only; a reranker without a stand-in fails before any work, naming the models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medcite.config import load_settings
from medcite.errors import ConfigError
from medcite.index.dense.encoders import load_encoder
from medcite.pipeline import build_stage
from medcite.presets.offline import offline_lines, offline_settings
from medcite.rerank.embedding import EmbeddingReranker
from medcite.rerank.medcpt import MedCPTReranker
from medcite.types import Article, Hit

QUESTION = "Do statins lower LDL cholesterol?"
ARTS = {
    "1": Article("1", "Statins and LDL", "Statins lowered LDL cholesterol by 30% in adults."),
    "2": Article("2", "Malaria in children", "Artemisinin cleared malaria parasites in children."),
    "3": Article("3", "Statin myopathy", "Muscle pain was reported by patients taking statins."),
    "4": Article("4", "Sleep apnea", "CPAP treats obstructive sleep apnea."),
    "5": Article("5", "Cholesterol diet", "A low-fat diet lowered LDL cholesterol modestly."),
}
HITS = [Hit(p, 1.0 / i, i) for i, p in enumerate(ARTS, start=1)]


def test_clac25_dense_runs_keep_the_medcpt_chain_with_minilm_stand_ins() -> None:
    for preset in ("clac25-c", "clac25-d"):
        base = load_settings(preset)
        s = offline_settings(base, "local")
        r = s.rerank
        assert (r.backend, r.bi_top, r.cross_top, r.k, r.top_n) == (  # type: ignore[attr-defined]
            "medcpt", 80, 24, 16, base.rerank.top_n)
        assert r.encoder.backend == "sentence-transformers" and r.cross.backend == "embedding"  # type: ignore[attr-defined]
        assert r.model_names() == []  # packaged models only: nothing left to swap
        assert offline_lines(s, "local") == []


@pytest.mark.parametrize(("preset", "top_n", "k"), [("dal25-rrf", 1000, 10), ("clac25-a", 25, 10),
                                                     ("clac24-simpleqa", 1000, 25)])
def test_hub_pointwise_rerankers_become_minilm_cosine_over_the_same_budget(preset: str, top_n: int, k: int) -> None:
    r = offline_settings(load_settings(preset), "local").rerank
    assert (r.backend, r.top_n, r.k) == ("embedding", top_n, k)
    assert r.model.backend == "sentence-transformers" and r.model_names() == []  # type: ignore[attr-defined]


def test_ensemble_members_are_swapped_one_by_one(tmp_path: Path) -> None:
    local = tmp_path / "ce"
    local.mkdir()
    (local / "config.json").write_text("{}")
    members = f'["cross-encoder:minilm-l12", "cross-encoder:{local}", "monot5"]'
    s = load_settings("offline", ["rerank.backend=ensemble-union", f"rerank.members={members}"])
    swapped = offline_settings(s, "local")
    got = [(m.backend, getattr(m, "model", None)) for m in swapped.rerank.members]  # type: ignore[attr-defined]
    assert got[0][0] == "embedding" and got[2][0] == "embedding"
    assert got[1] == ("cross-encoder", str(local))  # the local folder stays


def test_a_reranker_without_a_stand_in_fails_naming_the_model(hub_only: None) -> None:
    s = load_settings("bm25", ["rerank.backend=hub-only"])
    with pytest.raises(ConfigError, match="org/hub-only-reranker.*no offline stand-in") as err:
        offline_settings(s, "local")
    assert "hf download org/hub-only-reranker" in (err.value.hint or "")


def test_medcpt_with_stand_ins_ranks_by_hand_computation() -> None:
    """Stage 1: mean of the variants' MiniLM vectors against article vectors, top bi_top; stage 2: MiniLM
    cosine of the question alone over that shortlist, top cross_top."""
    rr = build_stage("rerank", {"backend": "medcpt", "encoder": "minilm", "cross": "embedding",
                                "bi_top": 3, "cross_top": 2})
    assert isinstance(rr, MedCPTReranker) and isinstance(rr.cross, EmbeddingReranker)
    variants = [QUESTION, "statin therapy and cholesterol", "muscle pain on statins"]
    out = rr.rerank_variants(variants, HITS, ARTS, k=16)
    enc = load_encoder("minilm")
    pmids = list(ARTS)
    docs = np.asarray(enc.encode_documents([ARTS[p] for p in pmids]), dtype=np.float64)
    bi = docs @ np.asarray(enc.encode_queries(variants), dtype=np.float64).mean(axis=0)
    shortlist = [pmids[i] for i in np.argsort(-bi)[:3]]
    q = np.asarray(enc.encode_queries([QUESTION]), dtype=np.float64)[0]
    sub = docs[[pmids.index(p) for p in shortlist]]
    cos = sub @ q / (np.linalg.norm(sub, axis=1) * np.linalg.norm(q))
    want = [shortlist[i] for i in np.argsort(-cos)[:2]]
    assert [h.pmid for h in out] == want
    assert [h.score for h in out] == pytest.approx(sorted(cos, reverse=True)[:2], abs=1e-5)
    assert "1" in want  # the statin/LDL abstract survives both stages
