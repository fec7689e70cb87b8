"""Extractive ideal answers: score the snippets' sentences, then select, order and trim them.

BioASQ ideal answers reuse snippet sentences (the first gold snippet alone scores ROUGE-2 F1 ~0.44 against
them on held-back questions; the best choice of snippet sentences ~0.69). The gap is closed by *learning*
which sentences they reuse: each candidate sentence gets the features below, a scorer trained by ``medcite
train ideal`` (labels: ROUGE-2 overlap of the sentence with the gold ideal answers) scores it, and the answer
is assembled by maximal marginal relevance (Carbonell & Goldstein 1998): the best sentence first (the one
that answers the question), then further sentences while their score stays within ``keep_ratio`` of the
best, none too similar to one already taken, within ``max_words`` words.

Features of a sentence (``FEATURES``): where it is (snippet rank, position in its snippet, title or not), how
long, how often the snippets repeat it, how close it is to the question (TF-IDF cosine, shared words and,
with an encoder, MiniLM cosine), how central it is among the snippets (mean and max similarity to the
others), surface cues (numbers, p-values, first-person study talk, conclusions) and the question type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError
from ..evidence.sentence_features import (  # noqa: F401  (re-exported: the ideal scorer's feature API)
    DENSE,
    FEATURE_VERSION,
    FEATURES,
    LEXICAL,
    Candidate,
    TextEncoder,
    consensus,
    content_words,
    features,
    similarity,
    strip_label,
    words,
)
from ..evidence.sentences import split_spans
from ..io import write_json
from ..types import Snippet

if TYPE_CHECKING:
    from ..evidence.answer_scorer import Booster


def candidates(snippets: Sequence[Snippet]) -> list[Candidate]:
    """The distinct sentences of the snippets in snippet order (a repeated sentence counts its copies)."""
    first: dict[str, int] = {}
    out: list[Candidate] = []
    copies: list[int] = []
    for i, s in enumerate(snippets):
        spans = split_spans(s.text) or [(0, len(s.text))]
        for j, (a, b) in enumerate(spans):
            text = strip_label(" ".join(s.text[a:b].split()))
            if len(words(text)) < 2:
                continue
            key = text.lower()
            if key in first:
                copies[first[key]] += 1
                continue
            first[key] = len(out)
            out.append(Candidate(text, i, j, len(spans), s.begin_section == "title"))
            copies.append(1)
    return [Candidate(c.text, c.snippet, c.position, c.of, c.title, n) for c, n in zip(out, copies, strict=True)]


def snippet_candidates(snippets: Sequence[Snippet]) -> list[Candidate]:
    """The distinct snippets as whole candidates (structured-abstract label stripped, copies counted).

    On held-back BioASQ questions the best single *snippet* reaches ROUGE-2 F1 0.67 against the ideal answers
    and the best single sentence 0.66, but a learned scorer picks whole snippets far better (0.48 against
    0.43 for sentences; docs/QA.md): a snippet is the unit the experts who wrote the ideal answer chose.
    """
    at: dict[str, int] = {}
    out: list[Candidate] = []
    for i, s in enumerate(snippets):
        text = strip_label(" ".join(s.text.split()))
        if len(words(text)) < 2:
            continue
        key = text.lower()
        if key in at:
            c = out[at[key]]
            out[at[key]] = Candidate(c.text, c.snippet, 0, 1, c.title, c.copies + 1)
            continue
        at[key] = len(out)
        out.append(Candidate(text, i, 0, 1, s.begin_section == "title"))
    return out


def assemble(cands: Sequence[Candidate], scores: Sequence[float] | np.ndarray, sim: np.ndarray, *, max_words: int = 200,
             keep_ratio: float = 1.0, max_sentences: int = 10, lam: float = 0.7, max_overlap: float = 0.6
             ) -> list[int]:
    """Indices of the chosen sentences, in answer order: the best-scoring one first, then by MMR
    (``lam * score - (1 - lam) * max similarity to those chosen``) among sentences scoring at least
    ``keep_ratio`` times the best (scores shifted to be positive) and at most ``max_overlap`` similar to a
    chosen one, while the words fit in ``max_words``. A lead sentence longer than the cap is still chosen
    (:func:`join_capped` trims it)."""
    n = len(cands)
    if not n:
        return []
    s = np.asarray(scores, dtype=np.float64)
    s = (s - s.min()) / (s.max() - s.min()) if s.max() > s.min() else np.ones(n)
    lead = int(np.argmax(s))
    chosen, used = [lead], len(cands[lead].text.split())
    floor = keep_ratio * s[lead]
    rest = [i for i in range(n) if i != lead and s[i] >= floor]
    while rest and len(chosen) < max_sentences:
        best, best_val = -1, -np.inf
        for i in rest:
            redundancy = max(sim[i, j] for j in chosen)
            if redundancy > max_overlap or used + len(cands[i].text.split()) > max_words:
                continue
            val = lam * s[i] - (1 - lam) * redundancy
            if val > best_val:
                best, best_val = i, val
        if best < 0:
            break
        chosen.append(best)
        used += len(cands[best].text.split())
        rest.remove(best)
    return chosen


def join_capped(texts: Sequence[str], max_words: int) -> str:
    """The sentences joined by spaces, cut to ``max_words`` words (a cut sentence ends with '...')."""
    out: list[str] = []
    for t in texts:
        w = t.split()
        room = max_words - len(out)
        if room <= 0:
            break
        if len(w) > room:
            out.extend(w[:room])
            out[-1] = out[-1].rstrip(".,;:") + "..."
            break
        out.extend(w)
    return " ".join(out)


HEAD_FILE = "ideal_head.json"
BOOSTER_FILE = "ideal_lgbm.txt"
FORMAT = "medcite-ideal-scorer/1"


@dataclass
class IdealScorer:
    """A LightGBM regressor (Ke et al. 2017) from ``features`` of a candidate to its ROUGE-2 F1 against the
    gold ideal answers, with the candidate unit and the assembly settings it was tuned with."""

    booster: Booster
    features: tuple[str, ...]
    unit: str = "snippet"
    meta: dict[str, object] = field(default_factory=dict)

    def score(self, x: np.ndarray) -> np.ndarray:
        """One score per row of :func:`features`' output."""
        if not len(x):
            return np.zeros(0)
        cols = [FEATURES.index(f) for f in self.features]
        return np.asarray(self.booster.predict(x[:, cols], num_threads=1), dtype=np.float64)

    def save(self, folder: Path) -> None:
        self.booster.save_model(str(folder / BOOSTER_FILE))
        write_json(folder / HEAD_FILE, {"format": FORMAT, "feature_version": FEATURE_VERSION,
                                         "features": list(self.features), "unit": self.unit,
                                         "booster": BOOSTER_FILE, **({"meta": self.meta} if self.meta else {})})

    @classmethod
    def load(cls, folder: Path) -> IdealScorer:
        from ..registry import require
        from ..trained_models import make_command
        from .models import read_head

        data = read_head(folder, HEAD_FILE, FORMAT, "ideal", FEATURE_VERSION)
        lgb = require("lightgbm", "qa", "the ideal-answer sentence scorer")
        try:
            feats = tuple(str(f) for f in data["features"])
            unknown = [f for f in feats if f not in FEATURES]
            if unknown or data.get("unit") not in ("snippet", "sentence"):
                raise ValueError(f"unknown features {unknown} or unit {data.get('unit')!r}")
            booster = lgb.Booster(model_file=str(folder / BOOSTER_FILE))
            if booster.num_feature() != len(feats):
                raise ValueError(f"the booster reads {booster.num_feature()} features, the head lists {len(feats)}")
        except (KeyError, TypeError, ValueError, lgb.basic.LightGBMError) as exc:
            raise ConfigError(f"{folder} is not a readable ideal-answer scorer ({exc})",
                              hint=f"retrain it with `{make_command('medcite-ideal')}`") from None
        return cls(booster, feats, str(data["unit"]), data.get("meta") or {})
