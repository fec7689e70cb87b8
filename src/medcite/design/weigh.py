"""medcite's own uses of study-design labels in an answer (options of medcite's presets; no paper preset uses them).

- :func:`prefer_levels`: among hits of equal relevance, evidence selection reads the higher evidence level first,
  then the human study, then the more recent one (the order between hits of different relevance is kept);
- :func:`with_caveat`: when every citation of an answer sentence is an animal, in-vitro or case-report study, the
  answer ends with one short line saying which sentences rest on such evidence only;
- :func:`keep_matching`: the ``--design`` / ``--humans`` filter of a first-stage run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..types import (
    ANIMAL,
    CASE_REPORT,
    IN_VITRO,
    Answer,
    AnswerSentence,
    Article,
    Dropped,
    Hit,
    StudyDesign,
)
from .base import level, matches

#: the answer sentence kind of the caveat line (it cites nothing and quotes nothing)
CAVEAT = "caveat"
#: how the caveat names each kind of weak evidence, in this order
_WEAK = ((ANIMAL, "animal studies"), (IN_VITRO, "in-vitro studies"), (CASE_REPORT, "case reports"))


def equal_groups(hits: Sequence[Hit], within: float) -> list[list[Hit]]:
    """Consecutive runs of hits whose scores are within ``within`` (a fraction of the first hit's score) of the
    run's first hit: the hits of equal relevance (``within`` 0: exact ties only)."""
    groups: list[list[Hit]] = []
    for hit in hits:
        if groups:
            head = groups[-1][0].score
            if abs(head - hit.score) <= within * abs(head):
                groups[-1].append(hit)
                continue
        groups.append([hit])
    return groups


def prefer_levels(hits: Sequence[Hit], label: Callable[[Sequence[str]], Mapping[str, StudyDesign]],
                  years: Mapping[str, int | None], within: float, depth: int | None = None) -> list[Hit]:
    """``hits`` with each run of equally relevant hits among the first ``depth`` (None: all) ordered by evidence
    level, then human studies first, then the more recent, then their former order; ranks renumbered, scores kept.
    ``label`` gives the designs of the PMIDs it is asked for (only hits that share their relevance with another
    are labelled)."""
    top = list(hits if depth is None else hits[:depth])
    groups = equal_groups(top, within)
    tied = [h.pmid for g in groups if len(g) > 1 for h in g]
    if not tied:
        return list(hits)
    designs = label(tied)
    out: list[Hit] = []
    for group in groups:
        if len(group) > 1:
            group = sorted(group, key=lambda h: _preference(h, group, designs, years))
        out += group
    out += hits[len(top):]
    return [Hit(h.pmid, h.score, i, h.branches) for i, h in enumerate(out, start=1)]


def _preference(hit: Hit, group: list[Hit], designs: Mapping[str, StudyDesign],
                years: Mapping[str, int | None]) -> tuple[int, int, int, int]:
    design = designs.get(hit.pmid)
    if design is None:
        return (0, 0, 0, group.index(hit))
    return (-level(design), 0 if design.humans else 1, -(years.get(hit.pmid) or 0), group.index(hit))


def weak_kinds(design: StudyDesign) -> list[str]:
    """Why an article is weak support for a clinical claim: the kinds of :data:`_WEAK` it is, none for a study
    that is also a human study of another design (an animal study beside patients is not animal-only)."""
    if design.preclinical:
        return [name for name, _ in _WEAK[:2] if design.has(name)]
    return [CASE_REPORT] if design.design.name == CASE_REPORT else []


def caveat_text(sentences: Sequence[int], kinds: Sequence[str]) -> str:
    """``Caution: sentence 2 rests only on animal studies.`` / ``Caution: sentences 1 and 3 rest only on animal
    studies and case reports.``"""
    numbers = [str(n) for n in sentences]
    which = numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " and " + numbers[-1]
    names = [text for name, text in _WEAK if name in kinds]
    what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    verb = "rests" if len(numbers) == 1 else "rest"
    return f"Caution: sentence{'s' if len(numbers) > 1 else ''} {which} {verb} only on {what}."


def with_caveat(answer: Answer, designs: Mapping[str, StudyDesign], max_words: int) -> Answer:
    """``answer`` with one closing caveat line when some sentence cites only animal, in-vitro or case-report
    studies (a lead sentence states the answer and is not weighed). When the line would take the answer past
    ``max_words``, trailing sentences are dropped (and recorded) to make room, as the word cap drops them."""
    sentences = [s for s in answer.sentences if s.kind != CAVEAT]
    dropped = list(answer.dropped)
    while True:
        weak: list[int] = []
        kinds: set[str] = set()
        for n, s in enumerate(sentences, start=1):
            found = [weak_kinds(designs[p]) for p in s.pmids if p in designs]
            if s.is_lead or not s.pmids or len(found) < len(s.pmids) or not all(found):
                continue
            weak.append(n)
            kinds.update(k for f in found for k in f)
        if not weak:
            return Answer(answer.topic_id, sentences, dropped, answer.generator, answer.question_type,
                          answer.verdict, answer.abstained)
        line = caveat_text(weak, sorted(kinds))
        words = sum(len(s.text.split()) for s in sentences) + len(line.split())
        if words <= max_words or len(sentences) <= 1:
            break
        last = sentences.pop()
        dropped.append(Dropped("sentence", last.text, f"made room for the evidence caveat within {max_words} words"))
    return Answer(answer.topic_id, [*sentences, AnswerSentence(line, kind=CAVEAT)], dropped, answer.generator,
                  answer.question_type, answer.verdict, answer.abstained)


def keep_matching(hits: Sequence[Hit], designs: Mapping[str, StudyDesign], wanted: Sequence[str], humans: bool,
                  k: int) -> list[Hit]:
    """The first ``k`` hits whose article passes the filter (an unlabelled one, missing from the store, does not),
    ranks closed up."""
    kept = [h for h in hits if h.pmid in designs and matches(designs[h.pmid], wanted, humans)][:k]
    return [Hit(h.pmid, h.score, i, h.branches) for i, h in enumerate(kept, start=1)]


def years_of(articles: Mapping[str, Article]) -> dict[str, int | None]:
    return {p: a.year for p, a in articles.items()}
