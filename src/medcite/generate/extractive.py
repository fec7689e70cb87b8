"""The extractive generator: no LLM, the offline default and the fallback when an LLM answer fails validation.

It composes a concise answer from the best evidence sentences, in evidence order (already ranked by relevance
and de-duplicated by MMR). Each sentence cites its own PMID plus the PMIDs of other selected evidence that says
nearly the same thing (TF-IDF cosine >= ``corroborate``), so agreeing sources are cited together, at most
``max_citations`` per sentence. Evidence scoring under ``min_relative`` of the best item is left out: a short
answer of relevant findings beats a long one padded with loosely related sentences. The result goes
through the same :func:`finalize` as LLM output, so the caps and the evidence-only rule hold by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..types import Answer, Evidence, Query, Topic
from .citations import DraftSentence
from .postprocess import finalize

_SECTION_LABEL_MIN = 3


@dataclass
class ExtractiveGenerator:
    name: str = "extractive"
    max_sentences: int = 5
    max_words: int = 250
    max_citations: int = 3
    corroborate: float = 0.5
    min_score: float = 0.0
    min_relative: float = 0.45  # keep evidence scoring at least this share of the best item's score

    def generate(self, topic: Topic, queries: Sequence[Query], evidence: Sequence[Evidence]) -> Answer:
        from ..evidence.tfidf_mmr import similarity_matrix

        top = max((e.score for e in evidence), default=0.0)
        floor = max(self.min_score, self.min_relative * top)
        usable = [e for e in evidence if e.score >= floor and e.text.strip()]
        # a title names a topic but rarely answers it: titles are used only when abstracts give too little
        ordered = [e for e in usable if e.section != "title"]
        if len(ordered) < min(2, self.max_sentences):
            ordered += [e for e in usable if e.section == "title"]
        chosen: list[Evidence] = []
        seen_text: set[str] = set()
        for e in ordered:
            key = " ".join(e.text.lower().split())
            if key in seen_text:
                continue
            seen_text.add(key)
            chosen.append(e)
            if len(chosen) >= self.max_sentences:
                break
        sim = similarity_matrix([e.text for e in usable]) if usable else None
        pos = {id(e): i for i, e in enumerate(usable)}
        drafts = []
        for e in chosen:
            indices = [e.index]
            if sim is not None:
                i = pos[id(e)]
                others = sorted(
                    (j for j in range(len(usable)) if j != i and sim[i, j] >= self.corroborate),
                    key=lambda j: -sim[i, j],
                )
                indices.extend(usable[j].index for j in others)
            drafts.append(DraftSentence(_as_sentence(e.text), indices))
        sentences, dropped = finalize(drafts, evidence, max_citations=self.max_citations, max_words=self.max_words)
        return Answer(topic_id=topic.id, sentences=sentences, dropped=dropped, generator=self.name)


def _as_sentence(text: str) -> str:
    text = " ".join(text.split())
    if text and text[-1] not in ".!?":
        text += "."
    return text
