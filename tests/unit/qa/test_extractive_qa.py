"""The offline BioASQ answerer: ideal-answer candidates and assembly, the scorer and yes/no head files,
entity candidates, the backend end to end with tiny models, and the fail-early model check."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from medcite.config import Settings
from medcite.errors import ConfigError
from medcite.qa import entities as ent
from medcite.qa import ideal
from medcite.qa.extractive import ExtractiveQA, ExtractiveQAConfig
from medcite.reader import verdict
from medcite.reader.model import ReaderSpec
from medcite.train.qa import best_threshold
from medcite.types import Question, Snippet

SNIPPETS = (
    Snippet("1", "CONCLUSIONS: Imatinib inhibits BCR-ABL in chronic myeloid leukemia."),
    Snippet("2", "Imatinib inhibits BCR-ABL in chronic myeloid leukemia."),
    Snippet("3", "Dasatinib and nilotinib also inhibit BCR-ABL. Resistance arises through T315I."),
)


def test_strip_label_removes_only_structured_abstract_labels() -> None:
    assert ideal.strip_label("CONCLUSIONS: We found x.") == "We found x."
    assert ideal.strip_label("Materials and Methods: x y") == "x y"
    assert ideal.strip_label("HIV: a virus") == "HIV: a virus"
    assert ideal.strip_label("Results show that x") == "Results show that x"


def test_snippet_candidates_dedupe_after_label_stripping_and_count_copies() -> None:
    cands = ideal.snippet_candidates(SNIPPETS)
    assert [c.snippet for c in cands] == [0, 2]
    assert cands[0].text == "Imatinib inhibits BCR-ABL in chronic myeloid leukemia."
    assert cands[0].copies == 2 and cands[1].copies == 1


def test_assemble_leads_with_best_and_respects_the_word_cap() -> None:
    cands = [ideal.Candidate(t, i, 0, 1, False) for i, t in enumerate(["a b c d", "e f g", "h i j k l"])]
    sim = np.eye(3)
    assert ideal.assemble(cands, [0.1, 0.9, 0.5], sim, keep_ratio=1.0) == [1]
    assert ideal.assemble(cands, [0.1, 0.9, 0.5], sim, keep_ratio=0.0, max_words=7) == [1, 0]
    assert ideal.join_capped(["one two three.", "four five"], 4) == "one two three. four..."


def _tiny_scorer(folder: Path) -> ideal.IdealScorer:
    """A LightGBM scorer that learns 'more question words = better' on synthetic rows."""
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    x = rng.random((300, len(ideal.FEATURES)))
    y = x[:, ideal.FEATURES.index("question_words_covered")]
    model = lgb.LGBMRegressor(n_estimators=30, num_leaves=4, min_child_samples=5, verbose=-1).fit(x, y)
    scorer = ideal.IdealScorer(model.booster_, ideal.FEATURES, "snippet")
    scorer.save(folder)
    return scorer


def test_ideal_scorer_round_trips_and_ranks(tmp_path: Path) -> None:
    scorer = _tiny_scorer(tmp_path)
    loaded = ideal.IdealScorer.load(tmp_path)
    x = np.zeros((2, len(ideal.FEATURES)), dtype=np.float32)
    x[1, ideal.FEATURES.index("question_words_covered")] = 1.0
    assert np.allclose(loaded.score(x), scorer.score(x))
    assert loaded.score(x)[1] > loaded.score(x)[0]


def test_ideal_scorer_with_a_bad_head_names_the_train_command(tmp_path: Path) -> None:
    (tmp_path / ideal.HEAD_FILE).write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        ideal.IdealScorer.load(tmp_path)
    assert "medcite train ideal" in str(err.value.hint)


def test_entities_rank_by_snippet_frequency_and_skip_question_words() -> None:
    q = "Which drugs inhibit BCR-ABL in chronic myeloid leukemia?"
    found = ent.extract(q, SNIPPETS)
    best = ent.ranked(found, ent.frequency_scores(found), 3)
    assert best[0] == "Imatinib"
    assert all(e.key != "bcr-abl" for e in found)
    assert "Dasatinib" in ent.ranked(found, ent.frequency_scores(found), 10)


@pytest.mark.parametrize(("scores", "gold", "expected"), [
    ([0.9, 0.8, 0.2, 0.1], ["yes", "yes", "no", "no"], 1.0),
    ([0.9, 0.6, 0.55, 0.1], ["yes", "yes", "no", "no"], 1.0),
])
def test_best_threshold_separates_when_it_can(scores: list[float], gold: list[str], expected: float) -> None:
    t, f1 = best_threshold(scores, gold)
    assert f1 == expected
    assert all((s >= t) == (g == "yes") for s, g in zip(scores, gold, strict=True))


class _FakeReader:
    """Stands in for medcite's reader (tested apart, tests/unit/reader): a snippet saying 'inhibits' answers
    yes; capitalised words ending in 'inib' are answer spans."""

    spec = ReaderSpec(("yesno", "span"), thresholds={"yesno": 0.5, "span_list": 0.3})

    def need(self, head: str) -> None:
        assert head in self.spec.heads

    def probabilities(self, head: str, firsts: list[str], seconds: list[str]) -> np.ndarray:
        return np.array([[0.9, 0.05, 0.05] if "inhibits" in s else [0.1, 0.8, 0.1] for s in seconds])

    def span_logits(self, question: str, passages: list[str]) -> list[tuple[np.ndarray, np.ndarray, list]]:
        out = []
        for text in passages:
            offsets = [(-1, -1)] + [(m.start(), m.end()) for m in re.finditer(r"\S+", text)] + [(-1, -1)]
            hot = np.array([4.0 if a >= 0 and text[a:b].rstrip(".,").endswith("inib") else -6.0
                            for a, b in offsets])
            out.append((hot, hot.copy(), offsets))
        return out


@pytest.mark.parametrize(("qtype", "exact"), [("yesno", "yes"), ("summary", None)])
def test_extractive_answers_every_type_within_caps(tmp_path: Path, qtype: str, exact: str | None) -> None:
    qa = ExtractiveQA(_FakeReader(), _tiny_scorer(tmp_path), ExtractiveQAConfig(ideal_max_words=6))  # type: ignore[arg-type]
    a = qa.answer(Question("q1", qtype, "Does imatinib inhibit BCR-ABL in leukemia?"), SNIPPETS)
    assert a.exact == exact
    assert 0 < len(a.ideal.split()) <= 6 and not a.ideal.startswith("CONCLUSIONS")
    assert a.sources


def test_extractive_factoid_gives_at_most_five_and_list_at_most_list_max(tmp_path: Path) -> None:
    qa = ExtractiveQA(_FakeReader(), _tiny_scorer(tmp_path), ExtractiveQAConfig(list_max=2))  # type: ignore[arg-type]
    fact = qa.answer(Question("q", "factoid", "Which drug inhibits BCR-ABL?"), SNIPPETS)
    lst = qa.answer(Question("q", "list", "List drugs that inhibit BCR-ABL."), SNIPPETS)
    assert isinstance(fact.exact, tuple) and 1 <= len(fact.exact) <= 5 and fact.exact[0] == "Imatinib"
    assert isinstance(lst.exact, tuple) and len(lst.exact) == 2


def test_settings_default_to_the_extractive_backend() -> None:
    assert Settings().qa.backend == "extractive"


def test_missing_models_fail_early_with_the_train_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite import trained_models

    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(tmp_path))
    monkeypatch.setattr(trained_models, "SHIPPED_DIR", tmp_path / "nothing-shipped")
    with pytest.raises(ConfigError) as err:
        ExtractiveQA.from_config(ExtractiveQAConfig(), None)
    assert "medcite models build medcite-reader --bioasq" in str(err.value.hint) and str(tmp_path) in str(err.value)


def test_the_exact_yes_no_is_decided_by_the_one_yes_no_function(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """medcite.reader.verdict.decide with the reader's threshold and no second one (every question answered), the
    function the offline answer's verdict calls too (tests/unit/generate/test_generate_extractive_qa.py)."""
    calls: list[tuple[float, float, float | None]] = []
    decide = verdict.decide

    def spy(p_yes: float, yes_from: float, no_below: float | None = None, *, cue_no: bool = False) -> str | None:
        calls.append((p_yes, yes_from, no_below))
        return decide(p_yes, yes_from, no_below, cue_no=cue_no)

    monkeypatch.setattr(verdict, "decide", spy)
    qa = ExtractiveQA(_FakeReader(), _tiny_scorer(tmp_path), ExtractiveQAConfig())  # type: ignore[arg-type]
    question = Question("q1", "yesno", "Does imatinib inhibit BCR-ABL in leukemia?")
    assert qa.answer(question, SNIPPETS).exact == "yes"
    assert [c[1:] for c in calls] == [(0.5, None)]
    monkeypatch.setattr(verdict, "decide", lambda *a, **k: "no")
    assert qa.answer(question, SNIPPETS).exact == "no"
