"""BioACE's Task B measures by hand: nugget precision/recall, completeness labels, four-label citation judging,
and `medcite eval biogen-b` with a reference file, an LLM judge (fake replies) and without an LLM."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.evaluate.biogen_b import completeness_scores, judge_citations, nugget_scores, read_references
from medcite.evaluate.completeness import completeness_report
from medcite.evaluate.nuggets import NuggetCounts, match, nugget_report
from medcite.evidence.sentences import sentence_texts
from medcite.index.dense.encoders import load_encoder, unit_embedder
from medcite.llm.prompts import placeholders
from medcite.llm.reply_parsers import parse_citation_label, parse_sentence_labels
from medcite.types import Answer, AnswerSentence, Article, Stance, StanceVerdict, Topic
from medcite.workflows.evaluate import completeness_needs_llm


def test_match_counts_both_sides_many_to_many() -> None:
    # 3 system sentences x 2 reference sentences
    sim = np.array([[0.9, 0.7],   # system 0 matches both references
                    [0.2, 0.59],  # system 1 matches nothing (0.59 < 0.6)
                    [0.6, 0.1]])  # system 2 matches reference 0 (at the threshold counts)
    c = match(sim, 0.6)
    assert (c.system, c.matched_system, c.reference, c.matched_reference) == (3, 2, 2, 2)
    assert c.precision == pytest.approx(2 / 3) and c.recall == 1.0 and c.f1 == pytest.approx(0.8)
    stricter = match(sim, 0.8)
    assert (stricter.matched_system, stricter.matched_reference) == (1, 1)
    assert stricter.precision == pytest.approx(1 / 3) and stricter.recall == pytest.approx(1 / 2)
    empty = match(np.zeros((0, 4)), 0.6)
    assert (empty.precision, empty.recall, empty.reference) == (0.0, 0.0, 4)
    with pytest.raises(ValueError, match="2-D"):
        match(np.zeros(3), 0.6)


def test_nugget_report_micro_and_macro() -> None:
    r = nugget_report({"a": NuggetCounts(3, 2, 2, 2), "b": NuggetCounts(1, 0, 4, 0)}, 0.6, ["c"])
    # micro: 2 of 4 system sentences, 2 of 6 reference sentences
    assert r.micro["precision"] == pytest.approx(0.5) and r.micro["recall"] == pytest.approx(1 / 3)
    assert r.micro["f1"] == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    # macro: topic a (2/3, 1, 0.8), topic b (0, 0, 0)
    assert r.macro == pytest.approx({"precision": 1 / 3, "recall": 0.5, "f1": 0.4})
    assert r.unreferenced == ["c"] and r.as_dict()["topics"] == 2


def test_completeness_rates_by_hand() -> None:
    r = completeness_report({"a": ["required", "unnecessary", "borderline", "inappropriate"],
                             "b": ["unnecessary", None], "c": []})
    # micro over the 5 judged sentences (1 unjudged left out): 1 required, 1 borderline, 1 inappropriate
    assert r.micro == pytest.approx({"required_rate": 0.2, "acceptable_rate": 0.4, "inappropriate_rate": 0.2,
                                     "answered": 1 / 3})
    # macro: a (1/4, 2/4, 1/4, 1), b (0, 0, 0, 0), c empty (0, 0, 0, 0)
    assert r.macro == pytest.approx({"required_rate": 1 / 12, "acceptable_rate": 1 / 6,
                                     "inappropriate_rate": 1 / 12, "answered": 1 / 3})
    assert r.counts["unjudged"] == 1 and r.counts["sentences"] == 6 and r.counts["required"] == 1
    with pytest.raises(ValueError, match="unknown completeness labels"):
        completeness_report({"a": ["vital"]})


def test_parse_four_citation_labels() -> None:
    assert parse_citation_label("NOT RELEVANT\nNONE") == ("not relevant", "")
    assert parse_citation_label("Label: supports\n\"Statins lowered LDL.\"") == ("supports", "Statins lowered LDL.")
    assert parse_citation_label("It does not support the sentence.") == ("neutral", "")
    assert parse_citation_label("CONTRADICTS") == ("contradicts", "")
    assert parse_citation_label("Irrelevant abstract") == ("not relevant", "")
    assert parse_citation_label("I cannot tell") == ("neutral", "")
    assert placeholders("bioace_citation") == {"statement", "title", "abstract"}
    assert placeholders("bioace_completeness") == {"question", "sentences"}


def test_parse_sentence_labels() -> None:
    labels = ("required", "unnecessary", "borderline", "inappropriate")
    text = "1: REQUIRED\n2. borderline\nSentence 4 - Inappropriate\n5: REQUIRED\n1: UNNECESSARY\n3: vital"
    assert parse_sentence_labels(text, 4, labels) == ["required", "borderline", None, "inappropriate"]


def test_nugget_scores_align_sentences_by_cosine() -> None:
    enc = load_encoder({"backend": "hash-bow", "dim": 256})
    answers = [Answer("t1", [AnswerSentence("Statins lower LDL cholesterol.", ("1",)),
                             AnswerSentence("Zebrafish regenerate fins.", ("2",))]),
               Answer("t2", [AnswerSentence("Aspirin thins blood.", ("3",))])]
    refs = {"t1": "Statins lower LDL cholesterol. They also reduce heart attacks in older adults."}
    r = nugget_scores(answers, refs, unit_embedder(enc), sentence_texts, threshold=0.99)
    # identical sentence: cosine 1; the others share no word (hash collisions aside, cosine < 0.99)
    assert r.per_topic["t1"]["matched_system"] == 1 and r.per_topic["t1"]["system"] == 2
    assert r.per_topic["t1"]["matched_reference"] == 1 and r.per_topic["t1"]["reference"] == 2
    assert r.micro["precision"] == 0.5 and r.micro["recall"] == 0.5
    assert r.unreferenced == ["t2"]


def test_read_references_bioasq_and_jsonl(tmp_path: Path) -> None:
    bioasq = tmp_path / "gold.json"
    bioasq.write_text(json.dumps({"questions": [{"id": "q1", "body": "?", "ideal_answer": ["First.", "Second."]},
                                                {"id": "q2", "ideal_answer": "Only."}]}))
    assert read_references(bioasq) == {"q1": "First.", "q2": "Only."}
    rows = tmp_path / "refs.jsonl"
    rows.write_text('{"topic_id": "7", "reference": "A."}\n{"topic_id": "8", "answer": [{"text": "B."}, '
                    '{"text": "C."}]}\n')
    assert read_references(rows) == {"7": "A.", "8": "B. C."}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"topic_id": "7"}\n')
    with pytest.raises(Exception, match="record 1 has keys"):
        read_references(bad)


def test_completeness_without_an_llm_says_so() -> None:
    assert ("--set llm.backend=openai --set llm.model=NAME --set llm.base_url=http://HOST:PORT/v1, or "
            "--set llm.backend=local for") in completeness_needs_llm()


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    from medcite.config import load_settings
    from medcite.pipeline import Pipeline

    with DocumentStore.create(tmp_path / "store") as store, store.transaction() as tx:
        tx.upsert([Article("1", "Statins", "Statins lowered LDL cholesterol in adults."),
                   Article("2", "Exercise", "Aerobic exercise lowered blood pressure.")], FileStats("x"))
    with Pipeline(load_settings("offline", ["evidence.docs=1"]), tmp_path / "store") as pipe:
        pipe.run([Topic("t1", "What is the effect of statins on LDL cholesterol?")], tmp_path / "run")
    return tmp_path / "run"


def test_eval_biogen_b_with_reference_and_llm_judges(run_dir: Path, tmp_path: Path) -> None:
    answers = [json.loads(x) for x in (run_dir / "answers.jsonl").read_text().splitlines()]
    sentences = answers[0]["sentences"]
    n = len(sentences)
    assert n >= 1 and all(s["pmids"] for s in sentences)
    ref = tmp_path / "ref.jsonl"
    ref.write_text(json.dumps({"topic_id": "t1", "reference": sentences[0]["text"] + " Zebrafish swim upstream."})
                   + "\n")
    # completeness first (one call for the topic: every sentence required), then one call per citation
    replies = ["\n".join(f"{i}: REQUIRED" for i in range(1, n + 1)), "NOT RELEVANT\nNONE"]
    args = ["eval", "biogen-b", "--run", str(run_dir), "--judge", "llm", "--reference", str(ref),
            "--encoder", '{"backend": "hash-bow", "dim": 256}', "--threshold", "0.99",
            "--set", "llm.backend=replies", "--set", f"llm.replies={json.dumps(replies)}", "--set", "llm.cache=false"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads((run_dir / "metrics_task_b.json").read_text())
    cites = report["citations"]
    assert cites["micro"]["coverage"] == 1.0 and cites["micro"]["not_relevant_rate"] == 1.0
    assert cites["micro"]["support_rate"] == 0.0 and report["judge"]["prompt"] == "bioace_citation"
    nug = report["nuggets"]["per_topic"]["t1"]
    assert nug["matched_reference"] == 1 and nug["reference"] == 2 and nug["matched_system"] >= 1
    assert report["completeness"]["micro"]["required_rate"] == 1.0
    assert report["completeness"]["counts"]["sentences"] == n
    assert "not_relevant_rate" in result.output and "nugget_recall" in result.output


def test_eval_biogen_b_offline_reports_completeness_needs_an_llm(run_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["eval", "biogen-b", "--run", str(run_dir), "--judge", "words"])
    assert result.exit_code == 0, result.output
    report = json.loads((run_dir / "metrics_task_b.json").read_text())
    assert report["completeness"] == {"status": completeness_needs_llm()} and "needs an LLM" in result.output
    assert "nuggets" not in report and report["citations"]["counts"]["judged"] >= 1


def test_judge_config_reads_each_judge_from_its_backends_abilities() -> None:
    from medcite.config import Settings
    from medcite.workflows.evaluate import judge_config

    settings = Settings.model_validate({"stance": {"backend": "classifier", "model": "models:medcite-reader",
                                                   "device": "cpu"}})
    llm = judge_config("llm", settings)
    assert (llm.backend, llm.prompt, llm.llm) == ("llm", "bioace_citation", None)
    assert judge_config("llm:judge", settings).llm == "judge"
    assert judge_config("classifier", settings) is settings.stance  # the run's own stance settings
    other = judge_config("classifier:some/model", settings)
    assert (other.model, other.device) == ("some/model", "cpu")  # where it runs is kept
    folder = judge_config("some/folder", settings)
    assert (folder.backend, folder.model) == ("classifier", "some/folder")


class _FakeJudges:
    """Both judges of the measures, with no LLM and no model: what the measures need of a judge is its protocol."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, list[str]]] = []

    def classify_articles(self, pairs: list[tuple[str, Article]]) -> list[StanceVerdict]:
        return [StanceVerdict(Stance.SUPPORTS if "LDL" in a.abstract else Stance.NOT_RELEVANT, ()) for _, a in pairs]

    def label(self, answers: list[tuple[str, list[str]]]) -> list[list[str | None]]:
        self.asked += [(q, list(s)) for q, s in answers]
        return [["required" if "LDL" in x else None for x in s] for _, s in answers]


def test_the_measures_run_with_judges_passed_in() -> None:
    judges = _FakeJudges()
    answers = [Answer("t1", [AnswerSentence("Statins lower LDL.", ("1",)), AnswerSentence("Fins regrow.", ("2",))]),
               Answer("t2", [])]
    articles = {"t1": {"1": Article("1", "S", "Statins lowered LDL."), "2": Article("2", "Z", "Zebrafish.")}}
    cites = judge_citations(answers, articles, judges)
    assert cites.counts.judged == 2 and cites.micro["support_rate"] == 0.5
    topics = {"t1": Topic("t1", "Do statins lower LDL?", narrative="adults")}
    done = completeness_scores(answers, topics, judges)
    # one request, for the answer with sentences: the question with its narrative, the sentences in order
    assert judges.asked == [("Do statins lower LDL? (adults)", ["Statins lower LDL.", "Fins regrow."])]
    assert done.counts["required"] == 1 and done.counts["unjudged"] == 1 and done.counts["sentences"] == 2

