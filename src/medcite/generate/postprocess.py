"""Evidence-constrained post-processing (CLaC 2025, Dalhousie 2025): indices -> PMIDs, caps, dropped items.

Invariants, whatever the input text: every emitted PMID belongs to an evidence item shown to the generator, and
no PMID stays in the prose (a PMID the text names itself is removed and recorded, never made a citation);
no sentence has more than ``max_citations`` PMIDs; no sentence is uncited; the answer has at most
``max_words`` words, kept by dropping trailing sentences (CLaC 2025). Whatever the preset: no sentence speaks about
the instructions or the evidence instead of the question ("I will now ignore the evidence.", "As an AI ...", an
instruction an abstract carries; :func:`medcite.llm.reply.meta_sentence`), and no sentence is kept twice (the
second copy of a sentence is dropped: a paper's answer never repeats itself on purpose). Everything removed is
recorded as a :class:`~medcite.types.Dropped` with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..llm.reply import meta_sentence, sentence_key, without_evidence_lead
from ..types import AnswerSentence, Dropped, Evidence
from .citations import DraftSentence, split_cited_sentences, strip_pmid_mentions


def word_count(text: str) -> int:
    return len(text.split())


def not_answer(text: str, kept: set[str]) -> str | None:
    """Why ``text`` is no answer sentence whatever it cites: it speaks about the instructions or the evidence
    (:func:`~medcite.llm.reply.meta_sentence`), or it repeats a sentence already kept (``kept``: their
    :func:`~medcite.llm.reply.sentence_key`); None for a sentence to judge on its citations."""
    meta = meta_sentence(text)
    if meta is not None:
        return f"speaks about the instructions or the evidence, not the question ({meta!r})"
    if sentence_key(text) in kept:
        return "repeats an earlier sentence of the answer"
    return None


def answer_sentences(texts: Sequence[str]) -> tuple[list[str], list[Dropped]]:
    """Plain answer sentences (no citations yet) as :func:`finalize` would keep them: a lead-in pointing at the
    evidence taken off, meta sentences and repeats dropped (and recorded)."""
    out: list[str] = []
    dropped: list[Dropped] = []
    kept: set[str] = set()
    for text in texts:
        text = without_evidence_lead(text)
        why = not_answer(text, kept)
        if why is not None:
            dropped.append(Dropped("sentence", text, why))
            continue
        out.append(text)
        kept.add(sentence_key(text))
    return out, dropped


def finalize(
    drafts: Sequence[DraftSentence],
    evidence: Sequence[Evidence],
    *,
    max_citations: int = 3,
    max_words: int = 250,
    model_text: bool = False,
) -> tuple[list[AnswerSentence], list[Dropped]]:
    """Validated, cited answer sentences from ``drafts``, and what was dropped. ``model_text``: the drafts are a
    model's prose (not sentences quoted from the evidence), so a lead-in that only points at the evidence ("Based
    on the provided evidence, ...") is taken off (:func:`~medcite.llm.reply.without_evidence_lead`); an
    abstract's own "according to the evidence, ..." is quoted as it is."""
    by_index = {e.index: e for e in evidence}
    shown = {e.pmid for e in evidence}
    sentences: list[AnswerSentence] = []
    dropped: list[Dropped] = []
    words = 0
    capped = False
    kept: set[str] = set()  # the sentences kept so far, by sentence_key
    for draft in drafts:
        if capped:
            # CLaC 2025: once a sentence would overflow the cap, it and every later sentence are dropped (a
            # later, shorter sentence is not slipped in, and no sentence is cut mid-way)
            dropped.append(Dropped("sentence", draft.text, f"after the {max_words}-word cap"))
            continue
        plain = without_evidence_lead(draft.text) if model_text else draft.text
        if plain != draft.text:
            draft = DraftSentence(plain, list(draft.indices), list(draft.invalid))
        why = not_answer(draft.text, kept)
        if why is not None:
            dropped.append(Dropped("sentence", draft.text, why))
            continue
        for reason in draft.invalid:
            dropped.append(Dropped("citation", reason, "not a usable evidence citation"))
        text, mentions = strip_pmid_mentions(draft.text, shown)
        dropped.extend(Dropped("citation", mention, why) for mention, why in mentions)
        if mentions:
            draft = DraftSentence(text, list(draft.indices), list(draft.invalid))
            if not any(c.isalnum() for c in text):
                dropped.append(Dropped("sentence", text, "nothing left once the PMIDs named in it were removed"))
                continue
        pmids: list[str] = []
        used: list[int] = []
        for i in draft.indices:
            ev = by_index.get(i)
            if ev is None:
                dropped.append(Dropped("citation", f"[{i}]", f"index {i} is not in the evidence block"))
                continue
            if ev.pmid in pmids:
                continue
            if len(pmids) >= max_citations:
                dropped.append(Dropped("citation", f"[{i}] ({ev.pmid})",
                                       f"more than {max_citations} PMIDs in one sentence"))
                continue
            pmids.append(ev.pmid)
            used.append(i)
        if not pmids:
            dropped.append(Dropped("sentence", draft.text, "no valid citation"))
            continue
        n = word_count(draft.text)
        if words + n > max_words:
            capped = True
            if not sentences and max_words >= 5:
                # the paper's rule would leave no answer at all: a lone over-long first sentence is cut instead
                cut = " ".join(draft.text.split()[:max_words]).rstrip(",;:") + "…"
                dropped.append(Dropped("sentence", draft.text, f"truncated to {max_words} words (the cap)"))
                sentences.append(AnswerSentence(cut, tuple(pmids), tuple(used)))
                kept.add(sentence_key(draft.text))
                continue
            dropped.append(Dropped("sentence", draft.text, f"answer would exceed {max_words} words"))
            continue
        sentences.append(AnswerSentence(draft.text, tuple(pmids), tuple(used)))
        kept.add(sentence_key(draft.text))
        words += n
    return sentences, dropped


def postprocess(
    text: str,
    evidence: Sequence[Evidence],
    *,
    max_citations: int = 3,
    max_words: int = 250,
) -> tuple[list[AnswerSentence], list[Dropped]]:
    """Parse generated text citing evidence indices into validated, cited sentences."""
    return finalize(split_cited_sentences(text), evidence, max_citations=max_citations, max_words=max_words,
                    model_text=True)
