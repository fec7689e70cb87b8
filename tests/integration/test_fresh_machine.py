"""Issue 22: on a fresh machine (an empty models folder, no index built yet) every offline preset and command
that needs one of medcite's trained models runs with no training step, and first-use index builds announce
themselves. In process, on real PubMed records and held-out BioASQ questions."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.paths import models_dir

pytestmark = pytest.mark.slow  # the packaged MiniLM encodes two small stores and judges stance: ~1-2 min


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder that is empty, as on a fresh machine (the suite's own, never the user's)."""
    folder = models_dir()
    assert not folder.exists() or not any(folder.iterdir()), f"{folder} is not empty: tests must start from nothing"
    return folder


def ingest(shared_data: Path, store: Path) -> None:
    result = CliRunner().invoke(cli, ["-q", "ingest", str(shared_data / "pubmed_xml" / "pubmed20n0014_first200.xml.gz"),
                                      "--store", str(store), "--on-error", "skip"])
    assert result.exit_code == 0, result.output


def held_out_questions(shared_data: Path, out: Path, n: int = 8) -> Path:
    from medcite.train.qa_data import held_out_ids

    src = shared_data / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"
    held = held_out_ids(src)
    with gzip.open(src, "rt", encoding="utf-8") as fh:
        questions = [q for q in json.load(fh)["questions"] if q["id"] in held]
    picked = [q for kind in ("yesno", "factoid", "list", "summary")
              for q in [q for q in questions if q["type"] == kind][: n // 4]]
    for q in picked:  # Phase B input: the question with its gold snippets, no answers
        for key in ("ideal_answer", "exact_answer"):
            q.pop(key, None)
    out.write_text(json.dumps({"questions": picked}))
    return out


def test_bioasq_phase_b_offline_answers_with_the_shipped_models(fresh: Path, shared_data: Path,
                                                                tmp_path: Path) -> None:
    questions = held_out_questions(shared_data, tmp_path / "questions.json")
    out = tmp_path / "b.json"
    result = CliRunner().invoke(cli, ["bioasq", "phase-b", "--preset", "offline", "--questions", str(questions),
                                      "--output", str(out)])
    assert result.exit_code == 0, result.output
    answers = json.loads(out.read_text())["questions"]
    assert len(answers) == 8 and all(a["ideal_answer"] for a in answers)
    types = {q["id"]: q["type"] for q in json.loads(questions.read_text())["questions"]}
    assert {a["exact_answer"] for a in answers if types[a["id"]] == "yesno"} <= {"yes", "no"}
    assert not any(fresh.iterdir()) if fresh.exists() else True  # nothing was trained


def test_an_offline_run_is_scored_by_the_shipped_stance_judge(fresh: Path, shared_data: Path,
                                                              tmp_path: Path) -> None:
    store = tmp_path / "store"
    ingest(shared_data, store)
    topics = json.loads((shared_data / "biogen" / "biogen2025_taskB_topics.json").read_text())[:2]
    (tmp_path / "topics.json").write_text(json.dumps(topics))
    run_dir = tmp_path / "run"
    ran = CliRunner().invoke(cli, ["-q", "run", "--preset", "offline", "--topics", str(tmp_path / "topics.json"),
                                   "--corpus", str(store), "--out", str(run_dir)])
    assert ran.exit_code == 0, ran.output
    scored = CliRunner().invoke(cli, ["eval", "biogen-b", "--run", str(run_dir), "--no-completeness"])
    assert scored.exit_code == 0, scored.output
    report = json.loads((run_dir / "metrics_task_b.json").read_text())
    assert report["judge"]["model"] == "models:medcite-reader"
    assert "support_rate" in report["citations"]["micro"]
    assert not any(fresh.iterdir()) if fresh.exists() else True


@pytest.fixture(scope="module")
def snippet_store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 1,000 documents (the held-out questions' gold snippets, rebuilt as abstracts): enough that encoding
    them takes long enough to be announced as long work, with a measured rate."""
    from medcite.corpus.store import DocumentStore, FileStats
    from medcite.train.bioasq_docs import snippet_articles
    from medcite.train.qa_data import held_out_ids

    src = shared_data / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"
    held = held_out_ids(src)
    with gzip.open(src, "rt", encoding="utf-8") as fh:
        questions = [q for q in json.load(fh)["questions"] if q["id"] in held]
    articles = snippet_articles(questions)[:1000]
    folder = tmp_path_factory.mktemp("snippets") / "store"
    with DocumentStore.create(folder) as store, store.transaction() as tx:
        tx.upsert(articles, FileStats("held-out gold snippets"))
    return folder


def test_ground_offline_grounding_announces_its_first_use_index(fresh: Path, snippet_store: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite import progress

    # a clock that moves one second per reading: the rate line comes after "10 s" of work however fast the
    # machine encodes (CI's encoded the 1,000 abstracts in under 10 real seconds: no line was due)
    ticks = iter(range(1, 10**9))
    monkeypatch.setattr(progress, "clock", lambda: float(next(ticks)))
    task_a = [{"metadata": {"qa_id": "1", "question": "Is vitamin D deficiency associated with depression?"},
               "answer": [{"text": "Low vitamin D levels were associated with depressive symptoms.",
                           "existing_supported_citations": []}]}]
    (tmp_path / "a.json").write_text(json.dumps(task_a))
    result = CliRunner().invoke(cli, ["ground", "--preset", "offline-grounding", "--input", str(tmp_path / "a.json"),
                                      "--corpus", str(snippet_store), "--out", str(tmp_path / "ground")])
    assert result.exit_code == 0, result.output
    assert "1 question-answer pairs grounded" in result.output and "valid" in result.output
    text = result.output
    # announced before the work: what, how many, why, where, how to avoid it; then the measured rate and time left
    assert "building the dense index 'dense' on first use: encoding 1,000 abstracts" in text, text
    assert "why: preset 'offline-grounding'" in text and f"where: {snippet_store}" in text
    assert "to avoid it: --set 'retrieve.branches=[\"bm25\"]'" in text
    assert re.search(r"dense build: [\d,]+ of 1,000 docs .* left", text), text
    assert text.index("on first use") < text.index("dense build:")
    assert not any(fresh.iterdir()) if fresh.exists() else True


def test_search_best_runs_on_the_shipped_ltr_model_and_announces_its_dense_index(fresh: Path, shared_data: Path,
                                                                                tmp_path: Path) -> None:
    store = tmp_path / "store"
    ingest(shared_data, store)
    result = CliRunner().invoke(cli, ["-v", "search", "--preset", "best", "--corpus", str(store), "-k", "5",
                                      "renal function in patients"])
    assert result.exit_code == 0, result.output
    # a small store: one line (shown with -v), not the long-work warning
    assert "building the dense index 'dense': encoding 200 abstracts" in result.output, result.output
    assert "reuses the stored article vectors" in result.output  # the LTR reranker's dense features
    again = CliRunner().invoke(cli, ["-v", "search", "--preset", "best", "--corpus", str(store), "-k", "5",
                                     "renal function in patients"])
    assert again.exit_code == 0 and "building the dense index" not in again.output  # built once, then reused
    assert [line.split()[1] for line in again.stdout.splitlines()[:5]] == \
        [line.split()[1] for line in result.stdout.splitlines()[:5]]
    assert not any(fresh.iterdir()) if fresh.exists() else True
