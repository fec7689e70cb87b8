"""Documents rebuilt from the gold snippets of a BioASQ file, and medcite's own training store made of them.

BioASQ golden files carry no abstracts, only the gold PMIDs and gold snippets (spans of the title or the
abstract). Each PMID that has snippets becomes one document (:func:`snippet_documents`): its title snippets
give the title (the longest one when they differ) and its abstract snippets, deduplicated, with those
contained in a longer one dropped, put back in their character order, form the abstract.

``medcite models build`` trains on such a store (:func:`snippet_store`) when the user's store holds too few
BioASQ gold articles (the demo store holds none): the LTR features are query-document features, so a model
trained there is then applied to the user's store.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..corpus.store import DocumentStore, FileStats
from ..errors import InputError
from ..io import read_bioasq_questions
from ..types import Article

log = logging.getLogger(__name__)

_PMID_URL = re.compile(r"(\d+)\s*$")
_SPACE = re.compile(r"\s+")
#: written last into a finished snippet store; a folder without it is built again
MARKER = "medcite-snippet-store.done"


def pmid_of(url: str) -> str:
    """``http://www.ncbi.nlm.nih.gov/pubmed/123`` -> ``"123"`` (bare PMIDs pass through)."""
    m = _PMID_URL.search(url)
    if not m:
        raise ValueError(f"no PMID at the end of {url!r}")
    return str(int(m.group(1)))


def clean(text: str) -> str:
    """Runs of whitespace as one space, stripped."""
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
            text = clean(s.get("text") or "")
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


def snippet_articles(questions: Iterable[dict[str, Any]]) -> list[Article]:
    """:func:`snippet_documents` as :class:`Article` records, in PMID order."""
    return [Article(d["pmid"], d["title"], d["abstract"]) for d in snippet_documents(questions).values()]


def data_hash(path: Path) -> str:
    """A short content hash of a training file (names its snippet store)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:12]


def is_complete(folder: Path) -> bool:
    return (folder / MARKER).is_file()


def snippet_store(data: Path, folder: Path) -> tuple[Path, int]:
    """The snippet store of BioASQ ``data`` at ``folder``, built unless a finished one is there; returns
    (folder, documents). The marker file is written last, so a build that was stopped is made again."""
    if is_complete(folder):
        with DocumentStore.open(folder) as store:
            return folder, len(store)
    if folder.exists():
        log.info("%s is an unfinished snippet store: building it again", folder)
        shutil.rmtree(folder)
    articles = snippet_articles(q for q in read_bioasq_questions(data, hint="give the training JSON with --data")
                                if isinstance(q, dict))
    if not articles:
        raise InputError("the BioASQ training file has no gold snippets to build a training store from",
                         path=str(data), hint="give --corpus a store that holds the BioASQ gold articles")
    with DocumentStore.create(folder) as store, store.transaction() as tx:
        tx.upsert(articles, FileStats(str(data)))
    (folder / MARKER).write_text(f"{len(articles)} documents from the gold snippets of {data}\n", encoding="utf-8")
    return folder, len(articles)
