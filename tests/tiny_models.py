"""Tiny models built locally for tests (no network): real loading code paths, meaningless scores.

Every builder saves an ordinary Hugging Face (or sentence-transformers) folder that medcite loads by path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

WORDS = ["Query:", "Document:", "Relevant:", "true", "false", "statins", "lower", "ldl", "malaria", "kills",
         "children", "what", "do", "sleep", "apnea", "cpap", "treats", "filler"]


def _minilm_tokenizer() -> Any:
    from transformers import AutoTokenizer

    from medcite.index.dense.encoders import packaged_minilm_dir

    return AutoTokenizer.from_pretrained(str(packaged_minilm_dir()))


def _bert_config(**extra: Any) -> Any:
    from transformers import BertConfig

    return BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=512, initializer_range=0.5, **extra)


def build_tiny_cross_encoder(out: Path, seed: int = 0) -> Path:
    """A BertForSequenceClassification (1 logit) with the packaged MiniLM tokenizer, saved to ``out``."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(seed)
    BertForSequenceClassification(_bert_config(num_labels=1)).save_pretrained(out)
    _minilm_tokenizer().save_pretrained(out)
    return out


def build_tiny_bert(out: Path, seed: int = 0) -> Path:
    """A plain BertModel (for CLS-pooling encoders) with the packaged MiniLM tokenizer."""
    import torch
    from transformers import BertModel

    torch.manual_seed(seed)
    BertModel(_bert_config()).save_pretrained(out)
    _minilm_tokenizer().save_pretrained(out)
    return out


def build_tiny_colbert(out: Path, seed: int = 0, dim: int = 8) -> Path:
    """A ColBERT checkpoint (BERT + bias-free linear projection to ``dim``) as colbert-ir/colbertv2.0 is saved."""
    import torch

    from medcite.rerank.colbert import colbert_class

    torch.manual_seed(seed)
    colbert_class()(_bert_config(dim=dim)).save_pretrained(out)
    _minilm_tokenizer().save_pretrained(out)
    return out


def build_tiny_st(out: Path, bert_folder: Path) -> Path:
    """A sentence-transformers folder (transformer + mean pooling + normalise) around a tiny BERT."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    transformer = Transformer(str(bert_folder), max_seq_length=128)
    SentenceTransformer(modules=[transformer, Pooling(32, "mean"), Normalize()], device="cpu").save(str(out))
    return out


def build_tiny_monot5(out: Path, extra_words: tuple[str, ...] = ()) -> Path:
    """A tiny T5ForConditionalGeneration with a whitespace WordLevel tokenizer (no SentencePiece)."""
    import tokenizers
    import torch
    import transformers

    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate([*WORDS, *extra_words])}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tok.post_processor = tokenizers.processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>",
                                                unk_token="<unk>")
    fast.save_pretrained(out)
    config = transformers.T5Config(vocab_size=len(vocab), d_model=16, d_ff=32, d_kv=8, num_layers=1, num_heads=2,
                                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    torch.manual_seed(0)
    transformers.T5ForConditionalGeneration(config).save_pretrained(out)
    return out


def build_tiny_t5_nli(out: Path) -> Path:
    """A tiny T5 whose vocabulary has SciFive-MedNLI's input markers and label words (stance backend t5-nli)."""
    return build_tiny_monot5(out, ("mednli:", "sentence1:", "sentence2:", "entailment", "contradiction", "neutral"))


def build_tiny_stance(out: Path, labels: tuple[str, ...] = ("supports", "contradicts", "neutral"),
                      seed: int = 0) -> Path:
    """A 3-way BertForSequenceClassification named by ``labels`` (medcite's order, or an NLI model's)."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(seed)
    config = _bert_config(num_labels=len(labels), id2label=dict(enumerate(labels)),
                          label2id={name: i for i, name in enumerate(labels)})
    BertForSequenceClassification(config).save_pretrained(out)
    _minilm_tokenizer().save_pretrained(out)
    return out


def build_tiny_ltr(out: Path, groups: tuple[str, ...] = ("first_stage", "bm25", "terms"),
                    encoders: tuple[Any, ...] = ()) -> Path:
    """An LTR model folder (``config.json`` + ``model.txt``) of a LightGBM ranker fitted in a second on random
    rows of the right width; the ``dense`` group reads ``encoders`` (names or configs, e.g. ``{"backend":
    "hash-bow"}``)."""
    import json

    import lightgbm as lgb
    import numpy as np

    from medcite.rerank.ltr import BOOSTER, FORMAT, HEAD, feature_slug
    from medcite.rerank.ltr_features import feature_names

    names = feature_names(groups, [feature_slug(e) for e in encoders])
    rng = np.random.default_rng(0)
    x = rng.random((200, len(names)))
    y = (x[:, 0] > 0.7).astype(float)
    model = lgb.LGBMRanker(n_estimators=5, num_leaves=4, min_child_samples=5, verbose=-1, n_jobs=1)
    model.fit(x, y, group=[20] * 10)
    out.mkdir(parents=True, exist_ok=True)
    model.booster_.save_model(str(out / BOOSTER))
    (out / HEAD).write_text(json.dumps({"format": FORMAT, "groups": list(groups), "features": names,
                                        "encoders": list(encoders),
                                        "first_stage": "bm25", "top_n": 100, "bm25_depth": 300}))
    return out


#: (disease, drug) of the tiny BioASQ questions of :func:`build_tiny_bioasq`
TINY_TOPICS = [
    ("asthma", "salbutamol"), ("malaria", "artemisinin"), ("gout", "allopurinol"), ("migraine", "sumatriptan"),
    ("psoriasis", "methotrexate"), ("epilepsy", "valproate"), ("glaucoma", "latanoprost"),
    ("tuberculosis", "isoniazid"), ("hypertension", "amlodipine"), ("diabetes", "metformin"),
    ("anemia", "iron"), ("acne", "isotretinoin"),
]


def build_tiny_bioasq(root: Path) -> tuple[Path, Path]:
    """(BioASQ JSON, store folder) under ``root``: 12 questions "Which drug treats DISEASE?", each with 2 gold
    documents (PMIDs 1001 + 4i, 1002 + 4i) and 2 look-alikes, batches 1B1..3B2."""
    import json

    from medcite.corpus.store import DocumentStore, FileStats
    from medcite.types import Article

    articles, questions = [], []
    pmid = 1000
    for i, (disease, drug) in enumerate(TINY_TOPICS):
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
