"""Post-hoc citation of uncited sentences (CLaC 2024 "simpleqa"), restricted to what a sentence was written from.

CLaC 2024 attached evidence to each sentence of an uncited LLM answer by similarity. Lexical similarity
cannot tell a finding from its negation ("Vitamin D prevented hip fractures" and "... did not prevent hip
fractures" share every content word), so medcite cites at most one item per sentence: the most similar
one (TF-IDF cosine at least ``threshold``) whose negation polarity agrees with the sentence's
(:func:`negated`). A sentence no item reaches stays uncited and is dropped by the post-processor. More
citations per sentence need a stance check of each (sentence, abstract) pair, which this module does
not make.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..types import Evidence
from .citations import DraftSentence

# negation cues of clinical text (NegEx-style triggers, Chapman et al. 2001), matched as whole words
_NEGATION = re.compile(
    r"\b(?:no|not|never|none|neither|nor|without|cannot|can't|didn't|doesn't|don't|isn't|wasn't|weren't|"
    r"aren't|won't|failed to|fail to|fails to|lack of|lacked|absence of|absent|ineffective|"
    r"insignificant|non-significant|nonsignificant|unchanged|did not differ|no longer)\b",
    re.IGNORECASE,
)


def negated(text: str) -> bool:
    """Whether ``text`` contains a negation cue (a polarity signal, not a parse of its scope)."""
    return _NEGATION.search(text) is not None


def attribute(sentences: Sequence[str], evidence: Sequence[Evidence], *, threshold: float = 0.1) -> list[DraftSentence]:
    """Each sentence with the one evidence item it was most plausibly written from, or with none."""
    from ..evidence.tfidf_mmr import tfidf_vectors

    if not sentences:
        return []
    if not evidence:
        return [DraftSentence(s) for s in sentences]
    try:
        sent_vecs, ev_vecs = tfidf_vectors(list(sentences), [e.text for e in evidence])
    except ValueError:  # nothing but stop words
        return [DraftSentence(s) for s in sentences]
    sims = (sent_vecs @ ev_vecs.T).toarray()  # type: ignore[attr-defined]
    polarity = [negated(e.text) for e in evidence]
    drafts = []
    for row, text in zip(sims, sentences, strict=True):
        negative = negated(text)
        chosen: list[int] = []
        for j in sorted(range(len(evidence)), key=lambda j: (-row[j], j)):
            if row[j] < threshold:
                break
            if polarity[j] == negative:
                chosen.append(evidence[j].index)
                break
        drafts.append(DraftSentence(text, chosen))
    return drafts
