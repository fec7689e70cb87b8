"""`medcite run --format biogen24` on the 30 shared BioGen topics, offline, into a submission that validates.

The store holds, per topic, three abstracts of long sentences built from the topic's own words, with reference
markers (``[12]``), isotope labels (``[3H]thymidine``), ranges (``[1-3]``) and ions (``[Ca2+]``) in the text,
so the extractive answers fill the 250-word cap, carry many citation brackets and quote those brackets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.tasks.biogen_b_format import count_words, find_citations, parse_biogen24_answer
from medcite.types import Article

_EXTRAS = ["as reported before [12]", "with [3H]thymidine uptake", "after [1-3] weeks", "in [Ca2+]-free medium",
           "in most cohorts [4, 5]", "(see [7])"]


def _abstract(words: list[str], k: int) -> str:
    sentences = []
    for j in range(3):  # 50 words each: five of them make a 250-word answer
        extra = _EXTRAS[(j + k) % len(_EXTRAS)]
        body = " ".join(words[(i + 7 * j + k) % len(words)] for i in range(50 - len(extra.split())))
        sentences.append(f"{body.capitalize()} {extra}.")
    return " ".join(sentences)


def _store(path: Path, topics: list[dict[str, object]]) -> Path:
    arts = []
    for t in topics:
        words = re.findall(r"[a-z]{3,}", f"{t['question']} {t['narrative']} {t['topic']}".lower())
        arts += [Article(f"{t['id']}{k:03d}", str(t["topic"]), _abstract(words, k)) for k in range(3)]
    with DocumentStore.create(path) as store, store.transaction() as tx:
        tx.upsert(arts, FileStats("fixture"))
    return path


def test_run_writes_a_valid_biogen24_submission(shared_data: Path, tmp_path: Path) -> None:
    topics_file = shared_data / "biogen" / "biogen2025_taskB_topics.json"
    topics = json.loads(topics_file.read_text())
    store = _store(tmp_path / "store", topics)
    out = tmp_path / "run"
    # the extractive answers of 250 words the offline preset gave before it answered first (issue 24): the
    # longest, most heavily cited answers medcite writes offline, the hardest case for the 2024 format
    result = CliRunner().invoke(cli, ["run", "--topics", str(topics_file), "--corpus", str(store), "--out", str(out),
                                      "--preset", "offline", "--set", "evidence.backend=snippets",
                                      "--set", "generate.backend=extractive", "--format", "biogen24"])
    assert result.exit_code == 0, result.output + (out / "submission.json.errlog").read_text()
    assert json.loads((out / "validation.json").read_text()) == {
        "file": str(out / "submission.json"), "ok": True, "topics": 30, "errors": []}
    results = json.loads((out / "submission.json").read_text())["results"]
    answers = [r["answer"] for r in results]
    # the answers are full and heavily cited: counting each bracket as a word would put them over 250
    assert max(count_words(a) for a in answers) == 250
    assert any(count_words(a) + len(find_citations(a)) > 250 for a in answers)
    # text brackets: chemistry stays as written; reference markers no longer look like citations
    text = " ".join(answers)
    assert "[3H]thymidine" in text and "[1-3]" in text and "[Ca2+]" in text
    assert "(12)" in text and "[12]" not in text and "(4, 5)" in text
    for r in results:
        assert parse_biogen24_answer(r["answer"]).cited == r["references"]


def test_the_answer_first_offline_preset_writes_a_valid_biogen24_submission(shared_data: Path, tmp_path: Path) -> None:
    """The offline preset as it is (verdicts, entity leads, abstentions: issue 24) on the 30 BioGen topics."""
    topics_file = shared_data / "biogen" / "biogen2025_taskB_topics.json"
    store = _store(tmp_path / "store", json.loads(topics_file.read_text()))
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", "--topics", str(topics_file), "--corpus", str(store), "--out", str(out),
                                      "--preset", "offline", "--format", "biogen24"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "validation.json").read_text())
    assert report["ok"] and report["topics"] == 30, report
