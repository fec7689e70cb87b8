from __future__ import annotations

from pathlib import Path

import pytest

from medcite.errors import ConfigError
from medcite.rerank.base import Reranker
from medcite.rerank.cross_encoder import CrossEncoderReranker, load_cross_encoder
from medcite.types import Article, Hit

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

QUERY = "Which drugs lower LDL cholesterol?"
ARTICLES = {
    "11": Article("11", "Statins and LDL", "Statins lower LDL cholesterol by inhibiting HMG-CoA reductase."),
    "22": Article("22", "Malaria in children", "Artemisinin combination therapy treats malaria."),
    "33": Article("33", "Ezetimibe", "Ezetimibe reduces intestinal cholesterol absorption."),
    "44": Article("44", "Sleep apnea", "CPAP is the first-line therapy for obstructive sleep apnea."),
    "55": Article("55", "PCSK9 inhibitors", "Evolocumab lowers LDL cholesterol further on top of statins."),
}
HITS = [Hit(p, 10.0 - i, i + 1, frozenset({f"b{i}"})) for i, p in enumerate(["11", "22", "33", "44", "55"])]


def _logits_by_hand(folder: Path, pairs: list[tuple[str, str]]) -> list[float]:
    """Reference: the raw transformers model on the same (query, title + abstract) pairs."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    out = []
    with torch.no_grad():
        for q, d in pairs:
            enc = tok(q, d, return_tensors="pt", truncation=True, max_length=512)
            out.append(float(model(**enc).logits[0, 0]))
    return out


def test_loads_by_path_and_scores_like_the_raw_model(tiny_cross_encoder: Path) -> None:
    rr = CrossEncoderReranker(str(tiny_cross_encoder), activation="raw", batch_size=2)
    assert isinstance(rr, Reranker)
    out = rr.rerank(QUERY, HITS, ARTICLES, k=5)
    expected = _logits_by_hand(tiny_cross_encoder, [(QUERY, ARTICLES[h.pmid].text) for h in HITS])
    by_pmid = {h.pmid: h.score for h in out}
    for hit, want in zip(HITS, expected, strict=True):
        assert by_pmid[hit.pmid] == pytest.approx(want, abs=1e-4)
    # ordering consistent with the scores, ranks from 1, branches kept
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)
    assert [h.rank for h in out] == [1, 2, 3, 4, 5]
    assert {h.pmid: h.branches for h in out} == {h.pmid: h.branches for h in HITS}
    assert len(set(by_pmid.values())) == 5  # the tiny model does tell the documents apart


def test_sigmoid_is_the_logistic_of_raw(tiny_cross_encoder: Path) -> None:
    raw = CrossEncoderReranker(str(tiny_cross_encoder), activation="raw").rerank(QUERY, HITS, ARTICLES, 5)
    sig = CrossEncoderReranker(str(tiny_cross_encoder)).rerank(QUERY, HITS, ARTICLES, 5)
    assert [h.pmid for h in raw] == [h.pmid for h in sig]
    for r, s in zip(raw, sig, strict=True):
        assert s.score == pytest.approx(1 / (1 + torch.exp(torch.tensor(-r.score)).item()), abs=1e-5)
        assert 0 < s.score < 1


def test_k_top_n_and_unknown_pmids(tiny_cross_encoder: Path) -> None:
    rr = CrossEncoderReranker(str(tiny_cross_encoder), top_n=3)
    hits = [*HITS, Hit("99", 100.0, 0)]  # best input score but not in the store
    out = rr.rerank(QUERY, hits, ARTICLES, k=2)
    assert len(out) == 2
    assert "99" not in {h.pmid for h in out}
    full = rr.rerank(QUERY, hits, ARTICLES, k=10)
    # top_n=3 reads only the three best known hits by input score: 11, 22, 33
    assert {h.pmid for h in full} == {"11", "22", "33"}
    assert [h.pmid for h in out] == [h.pmid for h in full[:2]]
    assert rr.rerank(QUERY, [Hit("99", 1.0)], ARTICLES, k=5) == []
    assert rr.rerank(QUERY, HITS, ARTICLES, k=0) == []


def test_max_length_truncates(tiny_cross_encoder: Path) -> None:
    long_doc = Article("66", "Long", "cholesterol " * 600)
    rr = CrossEncoderReranker(str(tiny_cross_encoder), max_length=32, activation="raw")
    (hit,) = rr.rerank(QUERY, [Hit("66", 1.0)], {"66": long_doc}, k=1)
    tok = transformers.AutoTokenizer.from_pretrained(tiny_cross_encoder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()
    with torch.no_grad():
        enc = tok(QUERY, long_doc.text, return_tensors="pt", truncation=True, max_length=32)
        assert hit.score == pytest.approx(float(model(**enc).logits[0, 0]), abs=1e-4)


def test_unknown_name_says_not_available_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError) as err:
        load_cross_encoder("cross-encoder/no-such-model-here")
    assert "not available offline" in err.value.message
    assert "--local-dir" in (err.value.hint or "") and "path" in (err.value.hint or "")


def test_bad_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_cross_encoder(str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="no config.json"):
        load_cross_encoder(str(tmp_path))


def test_multi_label_model_is_refused(tmp_path: Path, tiny_cross_encoder: Path) -> None:
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_cross_encoder, num_labels=3,
                                                                           ignore_mismatched_sizes=True)
    model.save_pretrained(tmp_path)
    transformers.AutoTokenizer.from_pretrained(tiny_cross_encoder).save_pretrained(tmp_path)
    with pytest.raises(ConfigError, match="3 output labels"):
        load_cross_encoder(str(tmp_path))


def test_int8_quantization_swaps_linear_layers_and_keeps_scores_close(tiny_cross_encoder: Path) -> None:
    full = CrossEncoderReranker(str(tiny_cross_encoder), activation="raw")
    q8 = CrossEncoderReranker(str(tiny_cross_encoder), activation="raw", quantize=True)
    modules = list(q8.model.modules())
    assert not any(type(m) is torch.nn.Linear for m in modules)
    assert any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in modules)
    a = {h.pmid: h.score for h in full.rerank(QUERY, HITS, ARTICLES, 5)}
    b = {h.pmid: h.score for h in q8.rerank(QUERY, HITS, ARTICLES, 5)}
    assert a.keys() == b.keys()
    spread = max(a.values()) - min(a.values())
    assert all(abs(a[p] - b[p]) <= 0.25 * spread for p in a)  # int8 error: small against the score spread
    assert any(a[p] != b[p] for p in a)  # and really a different (quantized) model


def test_quantization_is_cpu_only(tiny_cross_encoder: Path) -> None:
    with pytest.raises(ConfigError, match="CPU only"):
        load_cross_encoder(str(tiny_cross_encoder), device="cuda", quantize=True)
