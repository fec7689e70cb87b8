"""A snippet-level retrieval corpus built from the BioASQ dev questions, plus its topics and qrels.

BioASQ golden files carry no abstracts, only the gold PMIDs and gold snippets (spans of the title or the
abstract). Each PMID that has snippets becomes one document, in one of two modes:

- ``concat`` (the default): its title snippets give the title (the longest one when they differ) and its
  abstract snippets, deduplicated and put back in their character order, form the abstract
  (:func:`medcite.train.bioasq_docs.snippet_documents`, re-exported here: ``medcite models build`` trains on
  the same documents when the user's store lacks the gold);
- ``faithful``: each gold snippet's text is placed at its gold offsets in the rebuilt title or abstract and
  the gaps between snippets are filled with spaces, so a gold snippet's offsets index the stored text exactly
  (BioASQ Phase A snippets can then be scored by character overlap). Snippets of one document that disagree
  (different abstract versions across BioASQ years) cannot all be placed; :func:`faithful_documents` counts
  every snippet it could not place and why (:data:`CATEGORIES`).

Distractors (the PubMed demo files and the PubMedQA abstracts) are ingested before these documents, so a
snippet document replaces a distractor with the same PMID.

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
from medcite.train.bioasq_docs import clean as _clean
from medcite.train.bioasq_docs import pmid_of, snippet_documents

log = logging.getLogger(__name__)

BIOASQ_FILE = "bioasq/bioasq_taskb_golden_7b-11b_dev.json.gz"
DEV_IDS_FILE = "bioasq/dev_ids.txt"
PUBMEDQA_FILE = "pubmedqa/pqal_dev.json"


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


#: why a gold snippet's text is not found at its gold offsets in a faithful document
CATEGORIES = {
    "span_shorter_than_text": "offsetInEndSection - offsetInBeginSection is the text's length - 1: a trailing "
    "space of the text lies outside the span (7B)",
    "span_longer_than_text": "the span is one character longer than the text (8B: the text lost a trailing "
    "character that the offsets count)",
    "conflict_whitespace": "another gold snippet of the same document puts different whitespace at the same "
    "offsets (e.g. 'BACKGROUND\\n' against 'BACKGROUND ')",
    "conflict_label": "another gold snippet of the same document puts a different structured-abstract label "
    "format at the same offsets ('BACKGROUND\\n' against 'BACKGROUND: ')",
    "conflict_text": "another gold snippet of the same document puts other words at the same offsets: two "
    "versions of the abstract (or of its label layout) across BioASQ years",
    "conflict_html": "another gold snippet of the same document (or this one) holds HTML markup at the same "
    "offsets ('<b>METHODS</b>: ', '<br>'): 7B counted offsets over an abstract with HTML labels",
    "negative_offset": "offsetInBeginSection is negative",
    "edge_whitespace": "the section starts or ends with whitespace that the JSONL reader strips",
}
_HTML = re.compile(r"</?(?:b|br|i|sup|sub|p)\s*/?>", re.IGNORECASE)
_LABEL_RUN = re.compile(r"[A-Z][A-Z ,&/'()-]{2,}(?::\s*|\n+)")


@dataclass
class _Gold:
    section: str
    begin: int
    end: int
    text: str
    batch: str


def _batch_key(batch: str) -> tuple[int, int]:
    m = re.search(r"(\d+)\s*[bB]\s*(\d+)", batch or "")
    return (int(m.group(1)), int(m.group(2))) if m else (-1, -1)


def _conflict_kind(a: str, b: str) -> str:
    """How two disagreeing texts at the same offsets differ (``a``: the snippet, ``b``: what was placed)."""
    if _HTML.search(a) or _HTML.search(b):
        return "conflict_html"
    if a.split() == b.split() or re.sub(r"\s", " ", a) == re.sub(r"\s", " ", b):
        return "conflict_whitespace"
    if _LABEL_RUN.search(a) or _LABEL_RUN.search(b):
        wa, wb = _LABEL_RUN.sub(" ", a).split(), _LABEL_RUN.sub(" ", b).split()
        n = min(len(wa), len(wb)) - 1  # the overlap may cut the last word
        if wa == wb or (n >= 1 and wa[:n] == wb[:n]):
            return "conflict_label"
    return "conflict_text"


def _place(snippets: list[_Gold]) -> tuple[str, dict[int, str]]:
    """One section's text with every placeable snippet at its offsets; ``{index: category}`` of the others.

    Snippets whose span length equals their text's length are placed first, the most recent BioASQ batch
    first (its abstract version wins), then longer snippets; a snippet is placed only when it agrees with
    every character already placed. Gaps become spaces; whitespace at offset 0 becomes '.' (the JSONL reader
    strips leading whitespace, which would shift every offset) and a '.' follows a trailing whitespace.
    """
    order = sorted(range(len(snippets)), key=lambda i: (
        len(snippets[i].text) != snippets[i].end - snippets[i].begin, [-x for x in _batch_key(snippets[i].batch)],
        -len(snippets[i].text), snippets[i].begin, snippets[i].text))
    chars: dict[int, str] = {}
    owner: dict[int, int] = {}
    failed: dict[int, str] = {}
    for i in order:
        g = snippets[i]
        if g.begin < 0:
            failed[i] = "negative_offset"
            continue
        clash = [p for p, ch in enumerate(g.text, g.begin) if p in chars and chars[p] != ch]
        if clash:
            j = owner[clash[0]]
            other = snippets[j]
            lo, hi = max(g.begin, other.begin), min(g.begin + len(g.text), other.begin + len(other.text))
            failed[i] = _conflict_kind(g.text[lo - g.begin: hi - g.begin],
                                       other.text[lo - other.begin: hi - other.begin])
            continue
        for p, ch in enumerate(g.text, g.begin):
            chars[p] = ch
            owner.setdefault(p, i)
    size = max(chars, default=-1) + 1
    text = [chars.get(p, " ") for p in range(size)]
    if text and text[0].isspace():  # a gap, or a gold snippet's leading space (that snippet loses its first char)
        text[0] = "."
    if text and text[-1].isspace():
        text.append(".")
    return "".join(text), failed


def gold_snippets(questions: Iterable[dict[str, Any]]) -> dict[tuple[str, str], list[_Gold]]:
    """The distinct gold snippets (offsets and text) of each (PMID, section), each with its most recent batch."""
    by_doc: dict[tuple[str, str], dict[tuple[int, int, str], _Gold]] = defaultdict(dict)
    for q in questions:
        for s in q.get("snippets") or []:
            text = s.get("text") or ""
            section = s.get("beginSection")
            if not text.strip() or section not in ("title", "abstract") or s.get("endSection") != section:
                continue
            g = _Gold(section, int(s.get("offsetInBeginSection") or 0), int(s.get("offsetInEndSection") or 0),
                      text, str(q.get("source_batch") or ""))
            key = (g.begin, g.end, g.text)
            doc = by_doc[(pmid_of(s["document"]), section)]
            if key not in doc or _batch_key(g.batch) > _batch_key(doc[key].batch):
                doc[key] = g
    return {k: sorted(v.values(), key=lambda g: (g.begin, g.end, g.text)) for k, v in by_doc.items()}


def faithful_documents(questions: Iterable[dict[str, Any]]) -> tuple[dict[str, dict[str, str]], dict[str, Any]]:
    """``({pmid: {"pmid", "title", "abstract"}}, report)``: every gold snippet placed at its gold offsets.

    The report counts the distinct gold snippets (PMID, section, offsets, text), those placed, and those not
    placed by category (:data:`CATEGORIES`; a snippet whose span length differs from its text's length is
    placed where its text starts and counted under its length category when checked).
    """
    docs: dict[str, dict[str, str]] = {}
    failed: dict[str, int] = defaultdict(int)
    total = 0
    for (pmid, section), snippets in sorted(gold_snippets(questions).items(), key=lambda kv: (int(kv[0][0]), kv[0][1])):
        total += len(snippets)
        text, bad = _place(snippets)
        for kind in bad.values():
            failed[kind] += 1
        doc = docs.setdefault(pmid, {"pmid": pmid, "title": "", "abstract": ""})
        doc[section] = text
    report = {"gold_snippets": total, "not_placed": dict(sorted(failed.items())),
              "documents": len(docs), "documents_title_only": sum(1 for d in docs.values() if not d["abstract"])}
    return docs, report


def check_offsets(questions: Iterable[dict[str, Any]], article_of: Any) -> dict[str, Any]:
    """Look every distinct gold snippet up in stored articles (``article_of(pmid) -> Article | None``).

    Returns counts: ``exact`` (the text is the stored section's text between its gold offsets), ``missing``
    (no stored document) and each category of :data:`CATEGORIES` for the others, plus ``unexplained`` (none
    fits) with up to 20 examples.
    """
    golds = gold_snippets(questions)
    counts: dict[str, int] = defaultdict(int)
    examples: list[dict[str, Any]] = []
    for (pmid, section), snippets in golds.items():
        article = article_of(pmid)
        if article is None:
            counts["missing"] += len(snippets)
            continue
        stored = article.title if section == "title" else article.abstract
        _, bad = _place(snippets)
        for i, g in enumerate(snippets):
            if g.begin >= 0 and stored[g.begin:g.end] == g.text:
                counts["exact"] += 1
            elif g.begin < 0:
                counts["negative_offset"] += 1
            elif g.end - g.begin == len(g.text) - 1 and stored[g.begin:g.end] == g.text[:-1]:
                counts["span_shorter_than_text"] += 1
            elif g.end - g.begin == len(g.text) + 1 and stored[g.begin:g.end - 1] == g.text:
                counts["span_longer_than_text"] += 1
            elif i in bad:
                counts[bad[i]] += 1
            elif stored.strip() != stored or g.text.strip() != g.text and (
                    stored[g.begin:g.end] == g.text.strip() or g.begin == 0 or g.end >= len(stored)):
                counts["edge_whitespace"] += 1
            else:
                counts["unexplained"] += 1
                if len(examples) < 20:
                    examples.append({"pmid": pmid, "section": section, "begin": g.begin, "end": g.end,
                                     "text": g.text, "stored": stored[g.begin:g.end]})
    return {"gold_snippets": sum(len(v) for v in golds.values()), **dict(sorted(counts.items())),
            "unexplained_examples": examples}


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


def build(data_dir: Path, out_dir: Path, max_questions: int | None = None, mode: str = "concat") -> CorpusFiles:
    """Write the snippet documents, PubMedQA distractors, topics and qrels under ``out_dir``.

    The documents always come from all dev questions, so the corpus does not depend on
    ``max_questions``, which only limits the topics and qrels (first N dev questions, file order).
    ``mode``: ``concat`` (snippets joined) or ``faithful`` (snippets at their gold offsets; the placement
    report is added to the stats under ``faithful_*`` keys).
    """
    if mode not in ("concat", "faithful"):
        raise ValueError(f"unknown corpus mode {mode!r}: use 'concat' or 'faithful'")
    out_dir.mkdir(parents=True, exist_ok=True)
    questions = load_dev_questions(data_dir)
    report: dict[str, Any] = {}
    if mode == "faithful":
        docs, report = faithful_documents(questions)
    else:
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
    if report:
        files.stats.update(faithful_gold_snippets=report["gold_snippets"],
                           **{f"faithful_not_placed_{k}": v for k, v in report["not_placed"].items()})
    log.info("BioASQ corpus: %s", json.dumps(files.stats))
    return files
