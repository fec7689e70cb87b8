"""Which support gate runs (``verify.gate``) is decided once, in :mod:`medcite.presets.gates`: the settings
give its kind (:mod:`medcite.pipeline.gate` builds it), the built :class:`Gate` carries kind, judge and
thresholds, and the loop reads them from it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from medcite.attribute.overlap import OverlapStance
from medcite.config import load_settings
from medcite.pipeline.gate import Gate, build_gate
from medcite.pipeline.loops import gate_citations
from medcite.presets.gates import gate_kind
from medcite.presets.offline import uses_stance
from medcite.settings_base import BackendConfig
from medcite.types import Answer, AnswerSentence, Article, Stance, StanceVerdict, Topic


@pytest.mark.parametrize(("overrides", "kind"), [
    ([], "overlap"),                                                # the default gate
    (["verify.gate=stance"], "stance"),
    (["verify.gate=off"], "off"),
    (["verify.citations=check", "verify.gate=stance"], "stance"),   # 'check' records; the gate still gates
    (["verify.citations=drop", "verify.gate=stance"], "off"),       # the stance check already gates
    (["verify.citations=regenerate"], "off"),
    (["flow=generate-then-ground"], "off"),                         # every sentence is grounded instead
])
def test_the_settings_decide_the_kind(overrides: list[str], kind: str) -> None:
    settings = load_settings("offline", overrides)
    assert gate_kind(settings) == kind
    assert uses_stance(settings) == (kind == "stance" or any("citations=" in o or "flow=" in o for o in overrides))


class _Builds:
    """A build context that builds the stance stage it is given (the overlap judge) and records the config."""

    def __init__(self) -> None:
        self.built: list[tuple[str, BackendConfig]] = []

    def build(self, stage: str, cfg: BackendConfig) -> Any:
        self.built.append((stage, cfg))
        return OverlapStance(cfg.threshold)  # type: ignore[attr-defined]


def test_build_gate_makes_the_judge_of_that_kind() -> None:
    stance = object()
    ctx = _Builds()
    overlap = build_gate(load_settings("offline", ["verify.gate_threshold=0.7"]), ctx, stance)  # type: ignore[arg-type]
    assert overlap is not None and (overlap.kind, overlap.min_support, overlap.threshold) == ("overlap", 0.0, 0.7)
    assert isinstance(overlap.judge, OverlapStance) and overlap.judge.threshold == 0.7
    assert [(s, c.backend) for s, c in ctx.built] == [("stance", "overlap")]
    by_stance = build_gate(load_settings("offline", ["verify.gate=stance", "verify.min_support=0.8"]), ctx,
                           stance)  # type: ignore[arg-type]
    assert by_stance == Gate("stance", stance, 0.8, 0.8)  # type: ignore[arg-type]
    assert build_gate(load_settings("offline", ["verify.gate=off"]), ctx, stance) is None  # type: ignore[arg-type]
    assert len(ctx.built) == 1  # only the overlap gate builds a judge of its own


class _Supports:
    """A stance judge that supports every citation with P = 0.9."""

    def classify_articles(self, pairs: list[tuple[str, Article]]) -> list[StanceVerdict]:
        return [StanceVerdict(Stance.SUPPORTS, {Stance.SUPPORTS: 0.9, Stance.NEUTRAL: 0.1}) for _ in pairs]

    def classify(self, pairs: list[tuple[str, str]]) -> list[StanceVerdict]:
        return [StanceVerdict(Stance.SUPPORTS, {Stance.SUPPORTS: 0.9, Stance.NEUTRAL: 0.1}) for _ in pairs]


def test_the_loop_records_the_gate_it_was_given() -> None:
    """A stance gate whose judge is not the pipeline's stance object is still a stance gate (the loop once
    inferred the kind from ``pipe.gate is not pipe.stance``)."""
    article = Article("1", "Statins", "Statins lowered LDL cholesterol by 30% after one year.")
    answer = Answer("t", [AnswerSentence("Statin therapy reduces cardiovascular events.", ("1",), (1,))], [], "llm")
    settings = load_settings("offline", ["verify.gate=stance"])
    pipe = SimpleNamespace(settings=settings, stance=None, generator=object(),
                           gate=Gate("stance", _Supports(), 0.5, 0.5))
    gated, record = gate_citations(pipe, Topic("t", "q"), [], [], answer, {"1": article})  # type: ignore[arg-type]
    assert (record["judge"], record["threshold"], record["rejected"]) == ("stance", 0.5, 0)
    assert gated.sentences[0].stances == (("1", Stance.SUPPORTS),)  # a stance gate records the stance
    pipe.gate = Gate("overlap", OverlapStance(0.6), 0.0, 0.6)
    gated, record = gate_citations(pipe, Topic("t", "q"), [], [], answer, {"1": article})  # type: ignore[arg-type]
    assert (record["judge"], record["threshold"], record["rejected"]) == ("overlap", 0.6, 1)
    assert gated.sentences == []
