"""The retrieval benchmark's questions and its documented sub-corpus of the snippet-level BioASQ corpus.

Questions: the BioASQ dev questions that ``medcite train`` held back (:func:`medcite.train.data.split_questions`
with the trainer's dev fraction and seed), so no evaluated question was seen in training.

Corpus: encoding the whole snippet-level corpus (~40k documents, 30k of them full PubMed abstracts) with
MiniLM does not fit the benchmark's budget on a shared 2-core machine, so every system runs on the same
fixed subset: every snippet document that is gold for a held-back question, plus a seeded random sample of
the other snippet documents (gold for training questions: topically close, hard distractors), of the
PubMedQA abstracts and of the PubMed demo-file abstracts.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bioasq_corpus

from medcite.io import write_jsonl
from medcite.train.data import Question, read_bioasq, split_questions

# what `medcite train reranker|encoder` used (src/medcite/train; its CLI defaults and the trained models'
# training.json): --dev-fraction 0.2 --seed 13
DEV_FRACTION = 0.2
SPLIT_SEED = 13
SAMPLE_SEED = 0


@dataclass(frozen=True)
class SubsetSizes:
    """How many distractors of each kind the sub-corpus draws."""

    snippet: int = 2000
    pubmedqa: int = 150
    pubmed: int = 150


def held_back(data_dir: Path) -> list[Question]:
    """The held-back (dev) side of the trainer's split, in the split's order."""
    questions = read_bioasq(data_dir / bioasq_corpus.BIOASQ_FILE)
    return split_questions(questions, DEV_FRACTION, SPLIT_SEED).dev


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _pubmed_abstracts(store_path: Path, n: int, exclude: set[str]) -> list[dict[str, str]]:
    """A seeded sample of ``n`` articles with abstracts from an ingested store of the demo files."""
    from medcite.corpus.store import DocumentStore

    store = DocumentStore.open(store_path)
    try:
        pool = [a for a in store.iter_articles() if a.abstract and a.pmid not in exclude]
    finally:
        store.close()
    pool.sort(key=lambda a: int(a.pmid))
    pick = random.Random(SAMPLE_SEED).sample(pool, min(n, len(pool)))
    return [{"pmid": a.pmid, "title": a.title, "abstract": a.abstract} for a in pick]


def build_subset(corpus_dir: Path, demo_store: Path, questions: list[Question], out: Path,
                 sizes: SubsetSizes = SubsetSizes()) -> dict[str, int]:
    """Write ``out`` (JSONL articles) and return the counts of each part."""
    gold = {p for q in questions for p in q.gold}
    snippet = list(_jsonl(corpus_dir / "bioasq_snippet_docs.jsonl"))
    gold_docs = [d for d in snippet if d["pmid"] in gold]
    others = [d for d in snippet if d["pmid"] not in gold]
    rng = random.Random(SAMPLE_SEED)
    snip = rng.sample(others, min(sizes.snippet, len(others)))
    taken = {d["pmid"] for d in gold_docs + snip}
    pqa_pool = [d for d in _jsonl(corpus_dir / "pubmedqa_docs.jsonl") if d["pmid"] not in taken]
    pqa = rng.sample(pqa_pool, min(sizes.pubmedqa, len(pqa_pool)))
    # the demo-file articles: everything in the full benchmark store that is neither kind of JSONL document
    not_pubmed = {d["pmid"] for d in snippet} | {d["pmid"] for d in pqa_pool} | taken
    pubmed = _pubmed_abstracts(demo_store, sizes.pubmed, not_pubmed)
    docs = gold_docs + snip + pqa + pubmed
    write_jsonl(out, docs)
    return {"documents": len(docs), "gold_snippet_documents": len(gold_docs), "snippet_distractors": len(snip),
            "pubmedqa_distractors": len(pqa), "pubmed_distractors": len(pubmed),
            "held_back_gold_pmids": len(gold),
            "held_back_gold_pmids_without_document": len(gold - {d["pmid"] for d in gold_docs})}
