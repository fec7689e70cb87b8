from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medcite.errors import ConfigError
from medcite.pipeline import build_stage
from medcite.rerank.medcpt import MedCPTReranker
from medcite.types import Article, Hit

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

ARTS = {str(p): Article(str(p), f"title {w}", f"{w} abstract about {w} and more {w}")
        for p, w in zip(range(1, 7), ["statins", "malaria", "asthma", "gout", "sleep", "cancer"], strict=True)}
HITS = [Hit(p, 1.0, 0) for p in ARTS]


def _cls(folder: Path, *texts: str, max_length: int) -> np.ndarray:
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder).eval()
    with torch.no_grad():
        enc = tok(*texts, truncation=True, padding=True, max_length=max_length, return_tensors="pt")
        return model(**enc).last_hidden_state[:, 0, :].numpy().astype(np.float64)


def _logits(folder: Path, query: str, docs: list[str]) -> list[float]:
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        enc = tok([query] * len(docs), docs, truncation=True, padding=True, max_length=512, return_tensors="pt")
        return model(**enc).logits[:, 0].tolist()


@pytest.fixture(scope="module")
def settings(tiny_bert_pair: tuple[Path, Path], tiny_cross_encoder: Path) -> dict:
    q, a = tiny_bert_pair
    return {"backend": "medcpt", "query_model": str(q), "article_model": str(a),
            "cross_model": str(tiny_cross_encoder), "bi_top": 3, "cross_top": 2}


def test_pipeline_matches_a_by_hand_computation(settings: dict, tiny_bert_pair: tuple[Path, Path],
                                                tiny_cross_encoder: Path) -> None:
    rr = build_stage("rerank", settings)
    assert isinstance(rr, MedCPTReranker)
    variants = ["which drug lowers cholesterol", "statin therapy"]
    out = rr.rerank_variants(variants, [*HITS, Hit("99", 5.0)], ARTS, k=16)
    # 1) the mean of the variants' CLS vectors (query encoder, 64 tokens) ...
    qvec = _cls(tiny_bert_pair[0], variants, max_length=64).mean(axis=0)
    # 2) ... against [title, abstract] CLS vectors of the article encoder: the best 3 go on
    pmids = list(ARTS)
    docs = _cls(tiny_bert_pair[1], [ARTS[p].title for p in pmids], [ARTS[p].abstract for p in pmids], max_length=512)
    bi = docs @ qvec
    shortlist = [pmids[i] for i in np.argsort(-bi)[:3]]
    # 3) the cross-encoder reads [question, title + abstract]; cross_top=2 of them are kept
    ce = _logits(tiny_cross_encoder, variants[0], [ARTS[p].text for p in shortlist])
    want = [shortlist[i] for i in np.argsort(-np.array(ce))[:2]]
    assert [h.pmid for h in out] == want
    assert [h.score for h in out] == pytest.approx(sorted(ce, reverse=True)[:2], abs=1e-4)
    assert [h.rank for h in out] == [1, 2]


def test_k_and_single_query(settings: dict) -> None:
    rr = build_stage("rerank", settings)
    assert rr is not None
    one = rr.rerank("statin therapy", HITS, ARTS, k=1)
    assert len(one) == 1
    assert rr.rerank("statin therapy", [Hit("99", 1.0)], ARTS, k=5) == []
    with pytest.raises(ConfigError):
        rr.rerank_variants(["  "], HITS, ARTS, k=5)  # type: ignore[attr-defined]


def test_missing_models_say_how_to_get_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="not available offline"):
        build_stage("rerank", {"backend": "medcpt"})
