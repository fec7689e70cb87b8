"""The offline BioASQ Phase A+ / B answerer (qa backend ``extractive``): no LLM, three small trained models.

- **yes/no**: :class:`medcite.qa.yesno.YesNoHead`, a logistic-regression head over frozen MiniLM features of
  (question, snippet) pairs, trained by ``medcite train yesno`` (``models:medcite-yesno``).
- **factoid / list**: candidate entities chunked from the snippets by :mod:`medcite.qa.entities` (a
  documented pattern-based chunker), ranked by how many snippets contain them; at most 5 for a factoid,
  ``list_max`` for a list.
- **ideal answer**: extractive (:mod:`medcite.qa.ideal`): every distinct snippet (or sentence) is scored by a
  LightGBM regressor trained by ``medcite train ideal`` (``models:medcite-ideal``) to predict its ROUGE-2 F1
  against gold ideal answers; the best one leads, more follow by MMR while they score within ``keep_ratio``
  of the lead, and the whole is cut to ``ideal_max_words`` words.

A model that is missing fails when the backend is built, with the ``medcite train`` command that makes it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..types import QAAnswer, Question, Snippet
from . import entities as ent
from . import ideal
from .base import FACTOID_MAX, QAConfig

if TYPE_CHECKING:
    from ..context import BuildContext
    from .yesno import YesNoModel

log = logging.getLogger(__name__)

YESNO_MODEL = "models:medcite-yesno"
IDEAL_MODEL = "models:medcite-ideal"


class ExtractiveQAConfig(QAConfig):
    """Offline exact and ideal answers: a trained yes/no head, snippet entities, a learned extractive summary."""

    backend: Literal["extractive"] = "extractive"
    yesno_model: str = Field(YESNO_MODEL, description="The yes/no head: models:NAME or a folder (trained by "
                             "`medcite train yesno`).")
    ideal_model: str = Field(IDEAL_MODEL, description="The ideal-answer scorer: models:NAME or a folder (trained "
                             "by `medcite train ideal`).")
    keep_ratio: float = Field(1.0, ge=0, le=1, description="Ideal answer: candidates scoring at least this share "
                              "of the lead's (min-max scaled) score may follow it (1.0: the lead alone, the best "
                              "setting measured on held-back BioASQ questions; docs/QA.md).")
    mmr_lambda: float = Field(0.7, ge=0, le=1, description="MMR trade-off of score against redundancy.")
    max_overlap: float = Field(0.6, ge=0, le=1, description="Most TF-IDF cosine of a follower to a chosen one.")
    device: str = Field("cpu", description="Torch device of the yes/no encoder.")

    runtime_fields = frozenset({"device"})

    def model_names(self) -> list[str]:
        return [self.yesno_model, self.ideal_model]


class ExtractiveQA:
    """Answers a question from its snippets with the trained yes/no head and ideal-answer scorer."""

    name = "extractive"
    Config = ExtractiveQAConfig

    def __init__(self, yesno: YesNoModel, scorer: ideal.IdealScorer, cfg: ExtractiveQAConfig) -> None:
        self.yesno, self.scorer, self.cfg = yesno, scorer, cfg

    @classmethod
    def from_config(cls, cfg: ExtractiveQAConfig, ctx: BuildContext | None) -> ExtractiveQA:
        from .models import model_folder
        from .yesno import HEAD_FILE, load_yesno

        # both folders are checked before anything heavy loads, so a missing model fails at once
        yn_folder = model_folder(cfg.yesno_model, "yesno", HEAD_FILE)
        id_folder = model_folder(cfg.ideal_model, "ideal", ideal.HEAD_FILE)

        def load_yn() -> YesNoModel:
            return load_yesno(yn_folder, cfg.device)

        def load_ideal() -> ideal.IdealScorer:
            return ideal.IdealScorer.load(id_folder)

        if ctx is None:
            return cls(load_yn(), load_ideal(), cfg)
        return cls(ctx.models.get(("qa-yesno", str(yn_folder), cfg.device), load_yn),
                   ctx.models.get(("qa-ideal", str(id_folder)), load_ideal), cfg)

    def answer(self, question: Question, snippets: Sequence[Snippet]) -> QAAnswer:
        snippets = [s for s in snippets if s.text.strip()]
        text, chosen = self.ideal_answer(question, snippets)
        exact: str | tuple[str, ...] | None = None
        if question.type == "yesno":
            exact = self.yesno.answer(question.body, [s.text for s in snippets])
        elif question.type in ("factoid", "list"):
            exact = tuple(self.entities(question, snippets))
        return QAAnswer(question.id, exact, text, tuple(snippets[i] for i in chosen))

    def yes_probability(self, question: str, texts: Sequence[str]) -> tuple[float, float]:
        """(the yes/no head's P(yes) for ``question`` given ``texts``, the threshold it answers yes from)."""
        return self.yesno.p_yes(question, list(texts)), float(self.yesno.head.threshold)

    def entities(self, question: Question, snippets: Sequence[Snippet]) -> list[str]:
        """Ranked candidate entities: at most 5 for a factoid, ``list_max`` for a list."""
        found = ent.extract(question.body, snippets)
        k = FACTOID_MAX if question.type == "factoid" else self.cfg.list_max
        return ent.ranked(found, ent.frequency_scores(found), k)

    def ideal_answer(self, question: Question, snippets: Sequence[Snippet]) -> tuple[str, list[int]]:
        """(the ideal answer, indices of the snippets it draws on)."""
        if not snippets:
            return "", []
        unit = ideal.snippet_candidates if self.scorer.unit == "snippet" else ideal.candidates
        cands = unit(snippets)
        if not cands:
            return "", []
        sims = ideal.similarity(question.body, cands)
        scores = self.scorer.score(ideal.features(question.body, question.type, cands, sims))
        order = ideal.assemble(cands, scores, sims[1], max_words=self.cfg.ideal_max_words,
                               keep_ratio=self.cfg.keep_ratio, lam=self.cfg.mmr_lambda,
                               max_overlap=self.cfg.max_overlap)
        text = ideal.join_capped([cands[i].text for i in order], self.cfg.ideal_max_words)
        return text, sorted({cands[i].snippet for i in order})

