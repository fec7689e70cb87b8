"""The offset-faithful BioASQ snippet corpus: gold snippets at their gold offsets in the stored documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench_modules import load_bench
from medcite.corpus.ingest import ingest
from medcite.corpus.store import DocumentStore
from medcite.io import write_jsonl

corpus = load_bench("bioasq_corpus")

URL = "http://www.ncbi.nlm.nih.gov/pubmed/"


def _snip(pmid: str, text: str, begin: int, end: int | None = None, section: str = "abstract") -> dict[str, Any]:
    return {"document": URL + pmid, "text": text, "beginSection": section, "endSection": section,
            "offsetInBeginSection": begin, "offsetInEndSection": begin + len(text) if end is None else end}


def _store(tmp_path: Path, docs: dict[str, dict[str, str]]) -> DocumentStore:
    write_jsonl(tmp_path / "docs.jsonl", docs.values())
    store = DocumentStore.create(tmp_path / "store")
    ingest([tmp_path / "docs.jsonl"], store)
    return store


def test_snippets_land_at_their_offsets_and_gaps_keep_sentences_apart(tmp_path: Path) -> None:
    questions = [
        {"id": "q1", "source_batch": "11B1", "snippets": [
            _snip("1", "BACKGROUND: Statins lower LDL.", 0),
            _snip("1", "METHODS: We pooled 12 trials.", 60),
            _snip("1", "Statins and LDL", 0, section="title"),
        ]},
        {"id": "q2", "source_batch": "10B2", "snippets": [
            _snip("1", "We pooled 12 trials.", 69),          # inside the METHODS snippet: agrees
            _snip("2", "Myalgia was rare. ", 20),             # ends with a space; starts after a gap
        ]},
    ]
    docs, report = corpus.faithful_documents(questions)
    assert report["gold_snippets"] == 5 and report["not_placed"] == {}
    assert docs["1"]["abstract"][0:30] == "BACKGROUND: Statins lower LDL."
    assert docs["1"]["abstract"][60:89] == "METHODS: We pooled 12 trials."
    assert docs["1"]["abstract"][30:60].strip() == ""
    assert docs["2"]["abstract"].startswith(".")  # the reader strips leading spaces: offset 0 is kept busy
    with _store(tmp_path, docs) as store:
        checked = corpus.check_offsets(questions, store.get)
        assert checked["exact"] == 5 and checked.get("unexplained", 0) == 0
        from medcite.evidence.sentences import article_sentences

        texts = [s.text for s in article_sentences(store.get("1"))]
    assert "BACKGROUND: Statins lower LDL." in texts and "METHODS: We pooled 12 trials." in texts


def test_disagreeing_snippets_are_counted_by_kind_and_the_newest_batch_wins() -> None:
    questions = [
        {"id": "old", "source_batch": "7B1", "snippets": [
            _snip("5", "BACKGROUND\nStatins lower LDL.", 0),          # label format of an older year
            _snip("5", "Completely different words here.", 31),     # another abstract version
            _snip("5", "<b>RESULTS</b>: Myalgia was rare.", 60),     # 7B's HTML labels
            _snip("5", "Trailing space counted out. ", 110, 137),   # span one shorter than the text
        ]},
        {"id": "new", "source_batch": "11B1", "snippets": [
            _snip("5", "BACKGROUND: Statins lower LDL.", 0),
            _snip("5", "METHODS: We pooled twelve trials.", 30),
            _snip("5", "RESULTS: Myalgia was rare in the trial.", 63),
        ]},
    ]
    docs, report = corpus.faithful_documents(questions)
    assert docs["5"]["abstract"].startswith("BACKGROUND: Statins lower LDL.METHODS: We pooled")
    assert report["not_placed"] == {"conflict_label": 1, "conflict_text": 1, "conflict_html": 1}
    from medcite.types import Article

    checked = corpus.check_offsets(questions, lambda p: Article(p, "", docs[p]["abstract"]) if p in docs else None)
    assert checked["exact"] == 3 and checked["span_shorter_than_text"] == 1
    assert checked["conflict_label"] == checked["conflict_text"] == checked["conflict_html"] == 1
    assert checked.get("unexplained", 0) == 0


@pytest.mark.slow
def test_every_dev_gold_snippet_is_found_at_its_offsets_or_explained(shared_data: Path, tmp_path: Path) -> None:
    """On the 1,502 dev questions: the stored faithful documents hold 12,610 of the 13,686 distinct gold
    snippets exactly at their gold offsets; every other one falls in a documented category."""
    questions = corpus.load_dev_questions(shared_data)
    docs, report = corpus.faithful_documents(questions)
    with _store(tmp_path, docs) as store:
        checked = corpus.check_offsets(questions, store.get)
    print({k: v for k, v in checked.items() if k != "unexplained_examples"})
    assert checked["unexplained_examples"] == [] and checked.get("unexplained", 0) == 0
    assert checked.get("missing", 0) == 0
    explained = sum(v for k, v in checked.items() if k in corpus.CATEGORIES)
    assert checked["exact"] + explained == checked["gold_snippets"] == report["gold_snippets"] == 13686
    assert checked["exact"] >= 12600  # 92 %; the rest: 7B/8B snippets of other abstract versions and label layouts
    # conflicts come only from the oldest batches: from 9B on, every gold snippet of a document agrees
    for snippets in corpus.gold_snippets(questions).values():
        _, bad = corpus._place(snippets)
        assert all(corpus._batch_key(snippets[i].batch)[0] <= 8 for i in bad if bad[i] != "negative_offset")
