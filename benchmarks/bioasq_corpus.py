"""A snippet-level retrieval corpus built from the BioASQ dev questions, plus its topics and qrels.

BioASQ golden files carry no abstracts, only the gold PMIDs and gold snippets (spans of the title or the
abstract). Each PMID that has snippets becomes one document: its title snippets give the title (the
longest one when they differ) and its abstract snippets, deduplicated and put back in their character
order, form the abstract. Distractors (the PubMed demo files and the PubMedQA abstracts) are ingested
before these documents, so a snippet document replaces a distractor with the same PMID.

Qrels are the questions' official ``documents`` lists (BioASQ's gold articles), so a gold PMID without
any snippet has no document and cannot be found by any system: the same ceiling for every system, and
counted in the corpus statistics.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medcite.io import write_jsonl

log = logging.getLogger(__name__)

BIOASQ_FILE = "bioasq/bioasq_taskb_golden_7b-11b_dev.json.gz"
DEV_IDS_FILE = "bioasq/dev_ids.txt"
PUBMEDQA_FILE = "pubmedqa/pqal_dev.json"
_PMID_URL = re.compile(r"(\d+)\s*$")
_SPACE = re.compile(r"\s+")


def pmid_of(url: str) -> str:
    """``http://www.ncbi.nlm.nih.gov/pubmed/123`` -> ``"123"`` (bare PMIDs pass through)."""
    m = _PMID_URL.search(url)
    if not m:
        raise ValueError(f"no PMID at the end of {url!r}")
    return str(int(m.group(1)))


def load_dev_questions(data_dir: Path) -> list[dict[str, Any]]:
    """The BioASQ dev questions, checked against ``dev_ids.txt`` (the file must hold exactly those)."""
    with gzip.open(data_dir / BIOASQ_FILE, "rt", encoding="utf-8") as fh:
        questions = json.load(fh)["questions"]
    dev_ids = set((data_dir / DEV_IDS_FILE).read_text(encoding="utf-8").split())
    found = {q["id"] for q in questions}
    extra, missing = found - dev_ids, dev_ids - found
    if extra or missing or len(questions) != len(found):
        raise ValueError(
            f"{BIOASQ_FILE} does not match {DEV_IDS_FILE}: {len(extra)} questions not in the dev list, "
            f"{len(missing)} dev ids missing, {len(questions) - len(found)} duplicate ids"
        )
    return list(questions)


def _clean(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def snippet_documents(questions: Iterable[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """``{pmid: {"pmid", "title", "abstract"}}`` from the gold snippets of all ``questions``.

    Abstract snippets are deduplicated on their text (the same span is often gold for several
    questions), a snippet contained in a longer one of the same PMID is dropped, and the rest are
    joined in the order of their offsets in the abstract.
    """
    titles: dict[str, set[str]] = defaultdict(set)
    spans: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for q in questions:
        for s in q.get("snippets") or []:
            text = _clean(s.get("text") or "")
            if not text:
                continue
            pmid = pmid_of(s["document"])
            if s.get("beginSection") == "title":
                titles[pmid].add(text)
                continue
            key = (int(s.get("offsetInBeginSection") or 0), int(s.get("offsetInEndSection") or 0))
            # keep the earliest offsets seen for a text, so the order is stable across input orders
            spans[pmid][text] = min(spans[pmid].get(text, key), key)
    docs: dict[str, dict[str, str]] = {}
    for pmid in sorted(set(titles) | set(spans), key=int):
        by_text = spans.get(pmid, {})
        kept = [t for t in by_text if not any(t != o and t in o for o in by_text)]
        kept.sort(key=lambda t: (by_text[t], t))
        title = max(titles.get(pmid, ()), key=lambda t: (len(t), t), default="")
        docs[pmid] = {"pmid": pmid, "title": title, "abstract": " ".join(kept)}
    return docs


def pubmedqa_documents(path: Path) -> Iterator[dict[str, str]]:
    """PubMedQA PQA-L items as untitled articles: the abstract is CONTEXTS joined, then LONG_ANSWER."""
    with open(path, encoding="utf-8") as fh:
        items = json.load(fh)
    for pmid, item in items.items():
        parts = [*item.get("CONTEXTS", []), item.get("LONG_ANSWER", "")]
        yield {"pmid": str(int(pmid)), "title": "", "abstract": _clean(" ".join(p for p in parts if p))}


@dataclass(frozen=True)
class CorpusFiles:
    """The files the benchmark feeds to the systems, and counts describing them."""

    snippet_docs: Path
    pubmedqa_docs: Path
    topics_jsonl: Path
    topics_tsv: Path
    qrels: Path
    stats: dict[str, int]


def build(data_dir: Path, out_dir: Path, max_questions: int | None = None) -> CorpusFiles:
    """Write the snippet documents, PubMedQA distractors, topics and qrels under ``out_dir``.

    The documents always come from all dev questions, so the corpus does not depend on
    ``max_questions``, which only limits the topics and qrels (first N dev questions, file order).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    questions = load_dev_questions(data_dir)
    docs = snippet_documents(questions)
    topics = questions[:max_questions] if max_questions else questions
    files = CorpusFiles(
        snippet_docs=out_dir / "bioasq_snippet_docs.jsonl",
        pubmedqa_docs=out_dir / "pubmedqa_docs.jsonl",
        topics_jsonl=out_dir / "topics.jsonl",
        topics_tsv=out_dir / "topics.tsv",
        qrels=out_dir / "qrels.txt",
        stats={},
    )
    write_jsonl(files.snippet_docs, docs.values())
    pubmedqa = list(pubmedqa_documents(data_dir / PUBMEDQA_FILE))
    write_jsonl(files.pubmedqa_docs, pubmedqa)
    write_jsonl(files.topics_jsonl, ({"id": q["id"], "question": _clean(q["body"]), "type": q["type"]}
                                     for q in topics))
    # Anserini's TsvString reader: "<id>\t<text>" per line; tabs and newlines in the text become spaces
    tsv = "".join(f"{q['id']}\t{_clean(q['body'])}\n" for q in topics)
    files.topics_tsv.write_text(tsv, encoding="utf-8")
    gold = [(q["id"], sorted({pmid_of(d) for d in q.get("documents") or []}, key=int)) for q in topics]
    qrels = "".join(f"{qid} 0 {p} 1\n" for qid, pmids in gold for p in pmids)
    files.qrels.write_text(qrels, encoding="utf-8")
    gold_pairs = sum(len(p) for _, p in gold)
    files.stats.update(
        dev_questions=len(questions),
        topics=len(topics),
        snippet_documents=len(docs),
        snippet_documents_with_title=sum(1 for d in docs.values() if d["title"]),
        snippet_documents_title_only=sum(1 for d in docs.values() if not d["abstract"]),
        pubmedqa_documents=len(pubmedqa),
        qrels_pairs=gold_pairs,
        qrels_pairs_without_snippet_document=sum(1 for _, p in gold for x in p if x not in docs),
    )
    log.info("BioASQ corpus: %s", json.dumps(files.stats))
    return files
