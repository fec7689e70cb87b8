"""Encoders: loading by path (tiny models built here, never downloaded), pooling, limits, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from _dense_fakes import make_tiny_bert, make_tiny_st

from medcite.errors import ConfigError
from medcite.index.dense.encoders import Encoder, load_encoder, parse_encoder, resolve_model
from medcite.types import Article


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("models")
    query, article = make_tiny_bert(root / "query", seed=1), make_tiny_bert(root / "article", seed=2)
    return {"query": query, "article": article, "st": make_tiny_st(root / "st", query)}


def pair(article: object, query: object, **extra: object) -> dict:
    """The config of an asymmetric (query model, article model) encoder."""
    return {"backend": "hf-asymmetric", "model": str(article), "query_model": str(query), **extra}


@pytest.fixture(scope="module")
def asym(tiny: dict) -> Encoder:
    return load_encoder(pair(str(tiny["article"]), str(tiny["query"])))


def test_backend_is_chosen_from_the_name() -> None:
    assert parse_encoder("minilm") == {"backend": "sentence-transformers", "model": "minilm"}
    assert parse_encoder("medcpt") == {"backend": "hf-asymmetric", "model": "ncbi/MedCPT-Article-Encoder",
                                       "query_model": "ncbi/MedCPT-Query-Encoder"}
    assert parse_encoder("/m/article") == {"backend": "sentence-transformers", "model": "/m/article"}
    assert parse_encoder("minilm-onnx") == {"backend": "onnx-minilm"}


def test_manifest_specs_of_the_earlier_layout_still_load() -> None:
    from medcite.index.dense.encoders import spec_to_config

    old = {"backend": "hf-asymmetric", "encoder": "/m/a", "query_encoder": "/m/q", "normalize": None,
           "query_max_length": None, "doc_max_length": None}
    cfg = spec_to_config(old)
    assert (cfg.backend, cfg.model, cfg.query_model) == ("hf-asymmetric", "/m/a", "/m/q")  # type: ignore[attr-defined]
    st = spec_to_config({"backend": "sentence-transformers", "encoder": "minilm"})
    assert (st.backend, st.model) == ("sentence-transformers", "minilm")  # type: ignore[attr-defined]
    assert spec_to_config({"backend": "onnx-minilm", "encoder": "minilm-onnx"}).backend == "onnx-minilm"


def test_asymmetric_uses_cls_of_each_model(tiny: dict, asym: Encoder) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny["query"])
    q_model = AutoModel.from_pretrained(tiny["query"]).eval()
    d_model = AutoModel.from_pretrained(tiny["article"]).eval()
    with torch.no_grad():
        q_ref = q_model(**tok(["statins and stroke"], return_tensors="pt")).last_hidden_state[:, 0].numpy()
        d_ref = d_model(**tok(["Statins"], ["They lower LDL."], return_tensors="pt")).last_hidden_state[:, 0].numpy()
    assert isinstance(asym, Encoder) and asym.dim == 32
    np.testing.assert_allclose(asym.encode_queries(["statins and stroke"]), q_ref, atol=1e-5)
    np.testing.assert_allclose(asym.encode_documents([Article("1", "Statins", "They lower LDL.")]), d_ref, atol=1e-5)
    # separate models: the same text lands elsewhere on the article side
    assert not np.allclose(asym.encode_queries(["Statins"]), asym.encode_documents([Article("2", "Statins")]))


def test_asymmetric_truncates_queries_at_64_and_articles_at_512_tokens(asym: Encoder) -> None:
    # "alpha" is one WordPiece: 62 words + [CLS] + [SEP] = 64 tokens, the query limit
    at_limit, longer, shorter = ("alpha " * n for n in (62, 200, 61))
    q = asym.encode_queries([at_limit, longer, shorter])
    np.testing.assert_allclose(q[0], q[1], atol=1e-5)
    assert not np.allclose(q[0], q[2], atol=1e-4)
    # pairs: [CLS] beta [SEP] 507 x gamma + last [SEP] = 512 tokens, the article limit: the 512th token
    # still counts (delta vs epsilon differ), a 513th is cut (delta vs epsilon after 508 gammas do not)
    body = "gamma " * 507
    kept_a, kept_b = f"{body}delta", f"{body}epsilon"
    cut_a, cut_b = f"{body}gamma delta", f"{body}gamma epsilon"
    d = asym.encode_documents([Article(str(i), "beta", t) for i, t in enumerate((kept_a, kept_b, cut_a, cut_b))])
    assert np.abs(d[0] - d[1]).max() > 0
    np.testing.assert_array_equal(d[2], d[3])


def test_batches_keep_input_order(tiny: dict) -> None:
    enc = load_encoder(pair(str(tiny["article"]), str(tiny["query"]), batch_size=2))
    texts = ["a", "much longer query about statins", "mid length text", "b c"]
    one_by_one = np.vstack([enc.encode_queries([t]) for t in texts])
    np.testing.assert_allclose(enc.encode_queries(texts), one_by_one, atol=1e-5)


def test_sentence_transformers_from_a_local_folder(tiny: dict) -> None:
    enc = load_encoder(str(tiny["st"]))
    vecs = enc.encode_documents([Article("1", "Aspirin", "reduces stroke risk"), Article("2", "Malaria", "")])
    assert enc.dim == 32 and vecs.shape == (2, 32)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # a symmetric model: a document equals the query made of its text (title + " " + abstract)
    np.testing.assert_allclose(vecs[0], enc.encode_queries(["Aspirin reduces stroke risk"])[0], atol=1e-5)


def test_fingerprints_tell_models_apart(tiny: dict, asym: Encoder) -> None:
    st_q = load_encoder(str(tiny["st"]))
    again = load_encoder(pair(str(tiny["article"]), str(tiny["query"])))
    swapped = load_encoder(pair(str(tiny["query"]), str(tiny["article"])))
    assert again.fingerprint == asym.fingerprint
    assert len({asym.fingerprint, swapped.fingerprint, st_q.fingerprint}) == 3


def test_unknown_model_name_says_it_is_not_available_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError) as err:
        load_encoder("no-such-org/no-such-model-xyz")
    assert "not available offline" in err.value.message
    assert "local folder" in (err.value.hint or "")


def test_medcpt_without_a_local_copy_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache("ncbi/MedCPT-Query-Encoder", "config.json"), str):
        pytest.skip("MedCPT is in the local Hugging Face cache")
    with pytest.raises(ConfigError, match="MedCPT-Query-Encoder.*not available offline"):
        load_encoder("medcpt")


def test_a_folder_that_is_not_a_model_is_refused(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ConfigError, match="is not a model"):
        load_encoder(str(tmp_path))
    with pytest.raises(ConfigError, match="is a file"):
        resolve_model(str(tmp_path / "notes.txt"))
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_model(str(tmp_path / "missing" / "model"))


def test_a_model_folder_with_broken_weights_is_refused(tmp_path, tiny: dict) -> None:
    (tmp_path / "config.json").write_text((tiny["query"] / "config.json").read_text())
    (tmp_path / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(ConfigError, match="cannot load"):
        load_encoder(pair(str(tmp_path), str(tiny["query"])))


def test_asymmetric_needs_equal_sizes_and_a_query_model(tiny: dict, tmp_path) -> None:
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(tmp_path)
    (tmp_path / "tokenizer.json").write_bytes((tiny["query"] / "tokenizer.json").read_bytes())
    (tmp_path / "tokenizer_config.json").write_bytes((tiny["query"] / "tokenizer_config.json").read_bytes())
    with pytest.raises(ConfigError, match="32-d.*16-d"):
        load_encoder(pair(str(tmp_path), str(tiny["query"])))
    with pytest.raises(ConfigError, match="MedCPT-Query-Encoder"):  # the default query side, not available here
        load_encoder({"backend": "hf-asymmetric", "model": str(tiny["article"])})


def test_onnx_minilm_is_torch_free_and_shares_the_minilm_space() -> None:
    enc = load_encoder("minilm-onnx")
    vecs = enc.encode_queries(["statins lower cholesterol", "malaria is spread by mosquitoes"])
    assert enc.dim == 384 and vecs.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert float(vecs[0] @ vecs[1]) < 0.5


@pytest.mark.slow
def test_packaged_minilm_torch_and_onnx_agree() -> None:
    torch_enc = load_encoder("minilm")
    onnx_enc = load_encoder("minilm-onnx")
    assert torch_enc.fingerprint == onnx_enc.fingerprint and torch_enc.dim == 384
    arts = [Article("1", "Statin therapy and stroke", "Statins reduce LDL cholesterol and ischaemic stroke."),
            Article("2", "Malaria vaccines", "RTS,S reduces clinical malaria in African children.")]
    a, b = torch_enc.encode_documents(arts), onnx_enc.encode_documents(arts)
    assert (a * b).sum(axis=1).min() > 0.98
    q = torch_enc.encode_queries(["does a statin prevent stroke?"])[0]
    assert float(a[0] @ q) > float(a[1] @ q) + 0.2


def test_the_onnx_path_never_imports_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import medcite.config\n"
        "from medcite.index.dense.encoders import load_encoder\n"
        "import medcite.index.dense.faiss_backend\n"
        "enc = load_encoder('minilm-onnx')\n"
        "assert enc.encode_queries(['aspirin']).shape == (1, 384)\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_an_index_built_with_torch_minilm_answers_onnx_queries(tmp_path) -> None:
    from _dense_fakes import fill_store

    from medcite.index.dense.build import build_dense_index
    from medcite.index.dense.faiss_backend import FaissConfig, FaissIndex

    arts = [
        Article("1", "Statins and stroke", "Statin therapy lowers LDL cholesterol and the risk of ischaemic stroke."),
        Article("2", "Malaria vaccine", "The RTS,S vaccine reduces clinical malaria episodes in young children."),
        Article("3", "Sleep apnea", "Continuous positive airway pressure treats obstructive sleep apnea."),
    ]
    store = fill_store(tmp_path / "store", arts)
    build_dense_index(store, tmp_path / "dense", FaissConfig(encoder="minilm", threads=1))
    r = FaissIndex(tmp_path / "dense", load_encoder("minilm-onnx"))
    assert [hits[0].pmid for hits in r.search_many(["vaccines against malaria", "CPAP for apnoea"], 3)] == ["2", "3"]


def test_models_prefix_names_a_trained_model_folder(tmp_path, tiny: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(tmp_path))
    shutil.copytree(tiny["st"], tmp_path / "my-bi-encoder")
    enc = load_encoder("models:my-bi-encoder")
    direct = load_encoder(str(tiny["st"]))
    assert enc.fingerprint == direct.fingerprint  # same weights in another folder: same vector space
    with pytest.raises(ConfigError, match="not at"):
        load_encoder("models:missing-model")


def test_query_limit_never_changes_the_shared_model(tiny: dict) -> None:
    """Finding: the sentence-transformers encoder set the shared model's max_seq_length per query batch."""
    enc = load_encoder({"backend": "sentence-transformers", "model": str(tiny["st"]), "query_max_length": 4,
                        "doc_max_length": 64})
    model = enc._model  # type: ignore[attr-defined]
    long = "statin therapy lowers cholesterol in older adults with diabetes"
    q = enc.encode_queries([long, "statin therapy lowers"])
    assert model.max_seq_length == 64  # the articles' limit, untouched by query encoding
    np.testing.assert_allclose(q[0], q[1], atol=1e-5)  # both cut at 4 tokens: [CLS] statin therapy [SEP]... same
    d = enc.encode_documents([Article("1", long), Article("2", "statin therapy lowers")])
    assert not np.allclose(d[0], d[1], atol=1e-4)  # documents keep their 64 tokens
