from __future__ import annotations

from pathlib import Path

import pytest

from medcite.errors import ConfigError
from medcite.pipeline import build_stage
from medcite.rerank.monot5 import MonoT5Reranker
from medcite.types import Article, Hit

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

@pytest.fixture(scope="module")
def tiny_monot5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_models import build_tiny_monot5

    return build_tiny_monot5(tmp_path_factory.mktemp("tiny-monot5"))


ARTS = {"1": Article("1", "statins", "statins lower ldl"), "2": Article("2", "malaria", "malaria kills children"),
        "3": Article("3", "sleep apnea", "cpap treats sleep apnea")}


def _reference(folder: Path, query: str, doc: str) -> float:
    """The plain monoT5 recipe: tokenizer on the whole prompt, one decoder step, log-softmax(false, true)."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.T5ForConditionalGeneration.from_pretrained(folder).eval()
    enc = tok(f"Query: {query} Document: {doc} Relevant:", return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[0, 0]
    true_id, false_id = tok.convert_tokens_to_ids("true"), tok.convert_tokens_to_ids("false")
    return float(torch.log_softmax(logits[[false_id, true_id]], dim=-1)[1])


def test_scores_match_the_reference_recipe(tiny_monot5: Path) -> None:
    rr = build_stage("rerank", {"backend": "monot5", "model": str(tiny_monot5), "batch_size": 2})
    assert isinstance(rr, MonoT5Reranker)
    query = "what do statins lower"
    out = rr.rerank(query, [Hit(p, 1.0) for p in [*ARTS, "404"]], ARTS, k=3)
    assert {h.pmid for h in out} == {"1", "2", "3"}
    for hit in out:
        assert hit.score == pytest.approx(_reference(tiny_monot5, query, ARTS[hit.pmid].text), abs=1e-5)
        assert hit.score < 0  # a log-probability
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)
    assert len(rr.rerank(query, [Hit(p, 1.0) for p in ARTS], ARTS, k=1)) == 1


def test_truncation_keeps_the_prompt_end(tiny_monot5: Path) -> None:
    rr = MonoT5Reranker(str(tiny_monot5), max_length=12)
    ids = rr.input_ids("what do statins lower", "filler " * 50)
    tok = rr.tokenizer
    assert len(ids) == 12
    assert tok.convert_ids_to_tokens(ids[-2:]) == ["Relevant:", "</s>"]
    assert tok.convert_ids_to_tokens(ids[:6]) == ["Query:", "what", "do", "statins", "lower", "Document:"]


def test_unknown_name_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="not available offline"):
        MonoT5Reranker("castorini/monot5-base-msmarco")
