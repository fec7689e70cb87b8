"""The stance stage: passages and spans, label mapping of real models, the LLM prompt backend, validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medcite.attribute.base import article_passages, closest, text_passages, verdict_from
from medcite.attribute.classifier import label_columns
from medcite.attribute.validation import apply_checks, corroborating, judge_citations, reasons
from medcite.errors import ConfigError
from medcite.llm.reply_parsers import parse_stance
from medcite.pipeline import build_stage
from medcite.types import Answer, AnswerSentence, Article, Evidence, Section, Stance

ART = Article("7", "Vitamin D and fractures",
              "BACKGROUND: Falls are common. RESULTS: Vitamin D prevented hip fractures in older women. "
              "Falls were unchanged.",
              sections=(Section("BACKGROUND", "BACKGROUND", 0, 29), Section("RESULTS", "RESULTS", 30, 110)))


def test_passages_are_exact_spans_of_their_text() -> None:
    text = "Vitamin D prevented hip fractures. Falls were unchanged. Mood improved."
    ps = text_passages("vitamin D hip fractures", text, whole_text_chars=1000, sentences=2)
    assert ps[0] == (None, 0, len(text), text)  # short: judged whole too
    for _, start, end, body in ps:
        assert text[start:end] == body
    assert [p[3] for p in ps[1:]] == ["Vitamin D prevented hip fractures.", "Falls were unchanged."]
    only = text_passages("mood", text, whole_text_chars=0, sentences=1)
    assert [p[3] for p in only] == ["Mood improved."]
    for section, start, end, body in article_passages("vitamin D hip fractures", ART, 0, 2):
        assert (ART.title if section == "title" else ART.abstract)[start:end] == body
    assert closest("beta", [(None, 0, 5, "alpha"), (None, 6, 10, "beta")], 1)[0][3] == "beta"


def test_the_clearest_passage_decides() -> None:
    ps = [(None, 0, 5, "a"), ("abstract", 6, 9, "b"), ("abstract", 10, 12, "c")]
    probs = np.array([[0.3, 0.3, 0.4], [0.2, 0.7, 0.1], [0.6, 0.1, 0.3]])
    v = verdict_from(probs, ps)
    assert (v.label, v.section, v.start, v.end) == (Stance.CONTRADICTS, "abstract", 6, 9)
    assert v.score("contradicts") == pytest.approx(0.7)
    assert verdict_from(np.zeros((0, 3)), []).label is Stance.NEUTRAL


def test_model_labels_are_mapped_by_name() -> None:
    assert label_columns({0: "supports", 1: "contradicts", 2: "neutral"}) == [0, 1, 2]
    assert label_columns({0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"}) == [1, 0, 2]
    assert label_columns({0: "Refutes", 1: "Not Enough Info", 2: "Supports"}) == [2, 0, 1]
    with pytest.raises(ConfigError, match="labels are"):
        label_columns({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_a_real_classifier_folder_loads_and_gives_probabilities(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from tiny_models import build_tiny_stance

    folder = build_tiny_stance(tmp_path / "nli", ("contradiction", "entailment", "neutral"))
    clf = build_stage("stance", {"backend": "nli", "model": str(folder)})
    text = "Vitamin D prevented hip fractures. Falls were unchanged."
    (v,) = clf.classify([("Vitamin D prevents fractures", text)])
    assert sum(dict(v.scores).values()) == pytest.approx(1.0, abs=1e-5)
    assert text[v.start:v.end] in (text, "Vitamin D prevented hip fractures.", "Falls were unchanged.")
    (a,) = clf.classify_articles([("Vitamin D prevents fractures", ART)])
    assert a.section in ("title", "abstract")


def test_missing_trained_model_names_the_training_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from medcite import trained_models

    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(tmp_path))
    monkeypatch.setattr(trained_models, "SHIPPED_DIR", tmp_path / "nothing-shipped")
    with pytest.raises(ConfigError) as err:
        build_stage("stance", {"backend": "classifier"})
    assert "medcite models build medcite-reader --bioasq" in str(err.value) + (err.value.hint or "")


def test_llm_stance_parses_and_finds_the_quoted_span() -> None:
    from medcite.config import load_settings

    assert parse_stance("CONTRADICTS\n\"Falls were unchanged.\"") == ("contradicts", "Falls were unchanged.")
    assert parse_stance("It does not support it.")[0] == "neutral"
    s = load_settings("offline", ["llm.backend=replies", 'llm.replies=["SUPPORTS\\nVitamin D prevented hip '
                                                          'fractures in older women."]'])
    clf = build_stage("stance", "llm", settings=s)
    (v,) = clf.classify_articles([("Vitamin D prevents hip fractures", ART)])
    assert v.label is Stance.SUPPORTS and v.score("supports") == 1.0
    assert ART.abstract[v.start:v.end] == "Vitamin D prevented hip fractures in older women."


def test_citation_validation_drops_what_the_abstract_does_not_support() -> None:
    words = build_stage("stance", "words")
    yes = Article("1", "Statins", "Statins lowered LDL cholesterol in adults.")
    no = Article("2", "Statins", "Statins never lowered LDL cholesterol in adults.")
    off = Article("3", "Zebrafish", "Zebrafish fins regenerate.")
    answer = Answer("t", [AnswerSentence("Statins lowered LDL cholesterol.", ("1", "2"), (1, 2)),
                          AnswerSentence("Zebrafish grow new teeth.", ("3",), (3,))])
    arts = {"1": yes, "2": no, "3": off}
    checks = judge_citations(answer, arts, words)
    assert [(c.pmid, c.verdict.label, c.kept) for c in checks] == [
        ("1", Stance.SUPPORTS, True), ("2", Stance.CONTRADICTS, False), ("3", Stance.NEUTRAL, False)]
    out = apply_checks(answer, checks)
    assert [(s.text, s.pmids, s.stances) for s in out.sentences] == [
        ("Statins lowered LDL cholesterol.", ("1",), (("1", Stance.SUPPORTS),))]
    assert [d.what for d in out.dropped] == ["citation", "citation", "sentence"]
    assert "contradicts" in out.dropped[0].reason
    assert len(reasons(checks, answer)) == 2
    ev = [Evidence(1, "1", yes.abstract), Evidence(4, "4", "Statins lowered LDL cholesterol markedly.")]
    arts["4"] = Article("4", "More statins", "Statins lowered LDL cholesterol markedly.")
    extra = corroborating(Answer("t", [AnswerSentence("Statins lowered LDL cholesterol.", ("1",), (1,))]), ev,
                          arts, words, min_support=0.5, max_citations=3)
    assert [(c.sentence, c.pmid) for c in extra] == [(0, "4")]


def test_skipping_layers_keeps_features() -> None:
    """The pair pass skips the layers above the deepest one read; its features are bit-identical to a full
    pass, on padded batches of different lengths."""
    import contextlib

    import numpy as np
    import torch
    from transformers import BertModel

    from medcite.attribute.probe import FeatureSpec, Featurizer
    from tiny_models import _bert_config, _minilm_tokenizer

    torch.manual_seed(0)
    cfg = _bert_config()
    cfg.num_hidden_layers = 5
    model = BertModel(cfg).eval()
    claims = ["vitamin D prevents fractures", "masks reduce spread", "zinc shortens colds in adults over sixty"]
    evidence = ["a trial found no effect of vitamin D on hip fractures in older women", "masks worked",
                "zinc lozenges shortened colds by a day"]
    feats = Featurizer(_minilm_tokenizer(), model, FeatureSpec(64, (1, 2), ("pair",)), batch_size=2)
    layers_seen: list[int] = []
    hook = model.encoder.register_forward_pre_hook(lambda mod, args: layers_seen.append(len(mod.layer)))
    cut = feats(claims, evidence)
    hook.remove()
    feats._only_layers_needed = contextlib.nullcontext  # type: ignore[method-assign]
    full = feats(claims, evidence)
    assert layers_seen and set(layers_seen) == {3} and len(model.encoder.layer) == 5
    assert np.array_equal(cut, full)
