"""The offline BioASQ Phase A+ / B answerer (qa backend ``extractive``): no LLM, medcite's reader and a scorer.

- **yes/no**: medcite's reader (:mod:`medcite.reader`, ``models:medcite-reader``: the packaged MiniLM fine-tuned
  end to end) reads (question, snippet) pairs; the question's P(yes) is
  :func:`medcite.reader.verdict.yes_probability` of its snippets, "yes" from the threshold chosen on held-back
  validation questions (stored with the reader).
- **factoid / list**: the reader's span head marks answers in each snippet; spans naming the same thing
  (normalised text, an abbreviation and its definition) are one answer, scored by the noisy-or of its spans
  (:mod:`medcite.reader.spans`); a factoid answer is the best 5, a list answer those scoring at least the
  reader's list threshold (at least one, at most ``list_max``).
- **ideal answer**: extractive (:mod:`medcite.qa.ideal`): every distinct snippet (or sentence) is scored by a
  LightGBM regressor trained by ``medcite train ideal`` (``models:medcite-ideal``) to predict its ROUGE-2 F1
  against gold ideal answers; the best one leads, more follow by MMR while they score within ``keep_ratio``
  of the lead, and the whole is cut to ``ideal_max_words`` words.

A model that is missing fails when the backend is built, with the command that makes it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from ..devices import Device, Dtype, device_field, dtype_field
from ..types import QAAnswer, Question, Snippet
from . import ideal
from .base import FACTOID_MAX, QAConfig

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..reader.infer import Reader
    from ..reader.spans import Answer

log = logging.getLogger(__name__)

READER_MODEL = "models:medcite-reader"
IDEAL_MODEL = "models:medcite-ideal"


class ExtractiveQAConfig(QAConfig):
    """Offline exact and ideal answers: medcite's reader (yes/no, answer spans), a learned extractive summary."""

    backend: Literal["extractive"] = "extractive"
    reader_model: str = Field(READER_MODEL, description="The reader (yes/no and span heads): models:NAME or a folder "
                              "(made by `medcite train reader`).")
    ideal_model: str = Field(IDEAL_MODEL, description="The ideal-answer scorer: models:NAME or a folder (trained "
                             "by `medcite train ideal`).")
    keep_ratio: float = Field(1.0, ge=0, le=1, description="Ideal answer: candidates scoring at least this share "
                              "of the lead's (min-max scaled) score may follow it (1.0: the lead alone, the best "
                              "setting measured on held-back BioASQ questions; docs/QA.md).")
    mmr_lambda: float = Field(0.7, ge=0, le=1, description="MMR trade-off of score against redundancy.")
    max_overlap: float = Field(0.6, ge=0, le=1, description="Most TF-IDF cosine of a follower to a chosen one.")
    max_snippets: int = Field(12, ge=1, description="Most distinct snippets the reader reads per question.")
    device: Device = device_field("the reader (int8 on the CPU)")
    dtype: Dtype = dtype_field("the reader")

    runtime_fields = frozenset({"device", "dtype"})

    def model_names(self) -> list[str]:
        return [self.reader_model, self.ideal_model]


class ExtractiveQA:
    """Answers a question from its snippets with medcite's reader and the ideal-answer scorer."""

    name = "extractive"
    Config = ExtractiveQAConfig

    def __init__(self, reader: Reader, scorer: ideal.IdealScorer, cfg: ExtractiveQAConfig) -> None:
        reader.need("yesno")
        reader.need("span")
        self.reader, self.scorer, self.cfg = reader, scorer, cfg

    @classmethod
    def from_config(cls, cfg: ExtractiveQAConfig, ctx: BuildContext | None) -> ExtractiveQA:
        from ..reader.infer import load_reader, reader_folder, reader_placement
        from .models import model_folder

        # both folders are checked before anything heavy loads, so a missing model fails at once
        rd_folder = reader_folder(cfg.reader_model)
        id_folder = model_folder(cfg.ideal_model, "ideal", ideal.HEAD_FILE)
        placed = reader_placement(rd_folder, cfg.device, cfg.dtype, setting="qa")

        def load_rd() -> Reader:
            return load_reader(rd_folder, placement=placed)

        def load_ideal() -> ideal.IdealScorer:
            return ideal.IdealScorer.load(id_folder)

        if ctx is None:
            return cls(load_rd(), load_ideal(), cfg)
        return cls(ctx.models.get(("reader", str(rd_folder), placed.device, placed.dtype), load_rd),
                   ctx.models.get(("qa-ideal", str(id_folder)), load_ideal), cfg)

    def answer(self, question: Question, snippets: Sequence[Snippet]) -> QAAnswer:
        snippets = [s for s in snippets if s.text.strip()]
        text, chosen = self.ideal_answer(question, snippets)
        exact: str | tuple[str, ...] | None = None
        if question.type == "yesno":
            from ..reader.verdict import decide

            p, threshold = self.yes_probability(question.body, [s.text for s in snippets])
            exact = decide(p, threshold)
        elif question.type in ("factoid", "list"):
            exact = tuple(self.entities(question, snippets))
        return QAAnswer(question.id, exact, text, tuple(snippets[i] for i in chosen))

    def texts(self, snippets: Sequence[str]) -> list[str]:
        """The distinct non-empty texts the reader reads, first ``max_snippets`` of them."""
        seen: dict[str, None] = {}
        for t in snippets:
            t = " ".join(t.split())
            if t:
                seen.setdefault(t, None)
        return list(seen)[: self.cfg.max_snippets]

    def yesno_probabilities(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """(P(yes), P(no), P(maybe)) of each text as an answer to ``question`` (calibrated)."""
        texts = [" ".join(t.split()) for t in texts]
        return self.reader.probabilities("yesno", [question] * len(texts), texts)

    def yes_probability(self, question: str, texts: Sequence[str]) -> tuple[float, float]:
        """(the reader's P(yes) for ``question`` given ``texts``, the threshold it answers yes from)."""
        from ..reader.verdict import yes_probability

        probs = self.yesno_probabilities(question, self.texts(texts))
        return yes_probability(probs), float(self.reader.spec.thresholds.get("yesno", 0.5))

    def span_answers(self, question: str, texts: Sequence[str]) -> list[Answer]:
        """The reader's ranked answers to ``question`` in ``texts`` (each with the spans that name it)."""
        from ..reader.spans import aggregate, decode

        texts = list(texts)
        hits = []
        for k, (start, end, offsets) in enumerate(self.reader.span_logits(question, texts)):
            hits += decode(texts[k], start, end, offsets, passage=k)
        return aggregate(hits, texts, question)

    def entities(self, question: Question, snippets: Sequence[Snippet]) -> list[str]:
        """Ranked answers: the best 5 for a factoid, those over the list threshold for a list (at least one)."""
        answers = self.span_answers(question.body, self.texts([s.text for s in snippets]))
        if question.type == "factoid":
            return [a.text for a in answers[:FACTOID_MAX]]
        threshold = float(self.reader.spec.thresholds.get("span_list", 0.5))
        kept = [a.text for a in answers if a.score >= threshold][: self.cfg.list_max]
        return kept or [a.text for a in answers[:1]]

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
