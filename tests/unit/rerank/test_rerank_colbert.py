"""ColBERT late interaction on a tiny checkpoint built here: MaxSim computed by hand from the raw modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.errors import ConfigError
from medcite.pipeline import build_stage
from medcite.rerank.colbert import ColBERTReranker
from medcite.types import Article, Hit

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

ARTS = {"1": Article("1", "Statins", "Statins lower LDL, a lot."),
        "2": Article("2", "Malaria", "Malaria kills children."),
        "3": Article("3", "Sleep", "CPAP treats sleep apnea!")}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_models import build_tiny_colbert

    return build_tiny_colbert(tmp_path_factory.mktemp("colbert"), dim=8)


def _by_hand(folder: Path, query: str, doc: str) -> float:
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    bert = transformers.BertModel.from_pretrained(folder, add_pooling_layer=False).eval()
    from safetensors.torch import load_file

    linear = load_file(str(folder / "model.safetensors"))["linear.weight"]
    assert linear.shape[0] == 8

    def vecs(ids: list[int], attend: list[int]) -> torch.Tensor:
        with torch.no_grad():
            h = bert(input_ids=torch.tensor([ids]), attention_mask=torch.tensor([attend])).last_hidden_state[0]
        return torch.nn.functional.normalize(h @ linear.T, dim=1)

    q_ids = [tok.cls_token_id, tok.convert_tokens_to_ids("[unused0]"), *tok(query, add_special_tokens=False).input_ids,
             tok.sep_token_id]
    n = len(q_ids)
    q = vecs(q_ids + [tok.mask_token_id] * (32 - n), [1] * n + [0] * (32 - n))  # 32 rows: masks included
    d_ids = [tok.cls_token_id, tok.convert_tokens_to_ids("[unused1]"), *tok(doc, add_special_tokens=False).input_ids,
             tok.sep_token_id]
    d = vecs(d_ids, [1] * len(d_ids))
    keep = [i for i, t in enumerate(d_ids) if tok.convert_ids_to_tokens(t) not in {",", ".", "!"}]
    return float((q @ d[keep].T).max(dim=1).values.sum())


def test_maxsim_matches_a_hand_computation(folder: Path) -> None:
    rr = build_stage("rerank", {"backend": "colbert", "model": str(folder), "dim": 8, "k": 2})
    assert isinstance(rr, ColBERTReranker)
    query = "do statins lower ldl"
    want = {p: _by_hand(folder, query, a.text) for p, a in ARTS.items()}
    out = rr.rerank(query, [Hit(p, 1.0) for p in ARTS], ARTS, k=2)
    best = sorted(want, key=lambda p: -want[p])[:2]
    assert [h.pmid for h in out] == best
    assert [h.score for h in out] == pytest.approx([want[p] for p in best], abs=1e-4)
    assert rr.query_vectors(query).shape == (32, 8)


def test_a_hub_name_offline_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="not available offline"):
        build_stage("rerank", {"backend": "colbert", "model": "colbert-ir/colbertv2.0"})
