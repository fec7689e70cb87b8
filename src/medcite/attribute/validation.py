"""Citation validation (Dalhousie 2025): every (answer sentence, cited PMID) pair is judged by the stance stage.

:func:`judge_citations` asks the stance classifier about each pair once and returns one
:class:`CitationCheck` per pair (the verdict, and whether the citation is kept under the settings);
:func:`apply_checks` then removes the citations that are not kept (and the sentences left without a
citation), recording each removal with its reason, and writes each kept citation's stance into the
sentence. The pipeline runs this after generation; for LLM answers it may first regenerate with the
reasons fed back (bounded by ``verify.max_rounds``).

With ``corroborate``, a sentence also gains citations: other evidence items that the stance classifier
says support it (at most ``max_citations`` PMIDs per sentence in all) — the stance check replaces the
lexical similarity that could not tell a finding from its negation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..types import Answer, AnswerSentence, Article, Dropped, Evidence, Stance, StanceVerdict
from .base import StanceClassifier


@dataclass(frozen=True)
class CitationCheck:
    """The stance verdict of one (sentence, PMID) citation and whether it stays."""

    sentence: int
    pmid: str
    verdict: StanceVerdict
    kept: bool
    reason: str = ""


def keeps(verdict: StanceVerdict, min_support: float, keep_neutral: bool) -> tuple[bool, str]:
    """Whether a citation with this verdict stays, and why not."""
    p = verdict.score(Stance.SUPPORTS)
    if verdict.label is Stance.CONTRADICTS:
        return False, f"the abstract contradicts the sentence (p={verdict.score(Stance.CONTRADICTS):.2f})"
    if verdict.label is Stance.SUPPORTS and p >= min_support:
        return True, ""
    if verdict.label is Stance.NEUTRAL and keep_neutral:
        return True, ""
    return False, f"the abstract does not support the sentence ({verdict.label.value}, p(supports)={p:.2f})"


def judge_citations(answer: Answer, articles: Mapping[str, Article], stance: StanceClassifier, *,
                    min_support: float = 0.5, keep_neutral: bool = False) -> list[CitationCheck]:
    """One check per cited (sentence, PMID) pair, in answer order; all pairs are judged in one batch."""
    # a lead sentence ("Yes.", the named entities, an abstention) states the answer and quotes nothing: not judged
    pairs = [(i, p) for i, s in enumerate(answer.sentences) if not s.is_lead for p in s.pmids if p in articles]
    verdicts = stance.classify_articles([(answer.sentences[i].text, articles[p]) for i, p in pairs])
    out = []
    for (i, p), v in zip(pairs, verdicts, strict=True):
        kept, why = keeps(v, min_support, keep_neutral)
        if not kept and quotes(answer.sentences[i].text, articles[p]):
            # a verbatim quote says what its abstract says: a verdict against it is the classifier's error,
            # recorded, never a reason to drop the quote's own source
            kept, why = True, f"kept: a verbatim quote of the cited abstract (the check said: {why})"
        out.append(CitationCheck(i, p, v, kept, why))
    return out


def _squash(text: str) -> str:
    return " ".join(text.split()).lower()


def quotes(sentence: str, article: Article) -> bool:
    """Whether ``sentence`` is a verbatim quote of the article's title or abstract (whitespace and case aside);
    a quote cut at the word cap ("...…") still is one."""
    s = _squash(sentence).rstrip("…").rstrip(" .,;:")
    return bool(s) and (s in _squash(article.abstract) or s in _squash(article.title))


def gate_checks(answer: Answer, articles: Mapping[str, Article], judge: StanceClassifier, *,
                min_support: float) -> tuple[list[CitationCheck], int]:
    """The support gate: a check of every (sentence, PMID) citation whose sentence is not a verbatim quote of
    the cited article (what a generator wrote, not copied); returns the checks and the number of quotes passed."""
    pairs, quoted = [], 0
    for i, s in enumerate(answer.sentences):
        if s.is_lead:
            continue
        for p in s.pmids:
            if p not in articles:
                continue
            if quotes(s.text, articles[p]):
                quoted += 1
            else:
                pairs.append((i, p))
    verdicts = judge.classify_articles([(answer.sentences[i].text, articles[p]) for i, p in pairs])
    checks = []
    for (i, p), v in zip(pairs, verdicts, strict=True):
        kept, why = keeps(v, min_support, False)
        explain = getattr(judge, "reason", None)
        if not kept and callable(explain):
            why = explain(v)
        checks.append(CitationCheck(i, p, v, kept, why))
    return checks, quoted


def corroborating(answer: Answer, evidence: Sequence[Evidence], articles: Mapping[str, Article],
                  stance: StanceClassifier, *, min_support: float, max_citations: int) -> list[CitationCheck]:
    """Evidence PMIDs (not yet cited by a sentence) that the stance classifier says support it."""
    shown = list(dict.fromkeys(e.pmid for e in evidence if e.pmid in articles))
    pairs = [(i, p) for i, s in enumerate(answer.sentences) if len(s.pmids) < max_citations and not s.is_lead
             for p in shown if p not in s.pmids]
    verdicts = stance.classify_articles([(answer.sentences[i].text, articles[p]) for i, p in pairs])
    room = {i: max_citations - len(s.pmids) for i, s in enumerate(answer.sentences)}
    ranked = sorted(zip(pairs, verdicts, strict=True), key=lambda x: -x[1].score(Stance.SUPPORTS))
    out = []
    for (i, p), v in ranked:
        if room[i] > 0 and v.label is Stance.SUPPORTS and v.score(Stance.SUPPORTS) >= min_support:
            room[i] -= 1
            out.append(CitationCheck(i, p, v, True, "corroborates the sentence"))
    return out


def apply_checks(answer: Answer, checks: Sequence[CitationCheck], extra: Sequence[CitationCheck] = (),
                 evidence: Sequence[Evidence] = (), *, record_stance: bool = True,
                 check_name: str = "the stance check") -> Answer:
    """The answer with rejected citations removed, ``extra`` ones added, every kept citation's stance set.

    A sentence left without a citation is dropped (every sentence of an answer cites). Each removal is
    recorded in ``Answer.dropped`` with its reason. ``record_stance=False`` (a lexical gate, not a stance
    judgement) leaves the sentences' stances as they were.
    """
    index_of = {e.pmid: e.index for e in evidence}
    by_pair = {(c.sentence, c.pmid): c for c in checks}
    added: dict[int, list[CitationCheck]] = {}
    for c in extra:
        added.setdefault(c.sentence, []).append(c)
    sentences: list[AnswerSentence] = []
    dropped = list(answer.dropped)
    for i, s in enumerate(answer.sentences):
        if s.is_lead:  # a verdict, the named entities or an abstention states the answer; it quotes nothing
            sentences.append(s)
            continue
        pmids, indices, stances = [], [], []
        for n, p in enumerate(s.pmids):
            check = by_pair.get((i, p))
            if check is not None and not check.kept:
                dropped.append(Dropped("citation", f"{p} in: {s.text}", check.reason))
                continue
            pmids.append(p)
            if n < len(s.evidence):
                indices.append(s.evidence[n])
            if check is not None and record_stance:
                stances.append((p, check.verdict.label))
            elif not record_stance:
                stances.extend((q, lab) for q, lab in s.stances if q == p)
        for c in added.get(i, []):
            pmids.append(c.pmid)
            if c.pmid in index_of:
                indices.append(index_of[c.pmid])
            stances.append((c.pmid, c.verdict.label))
        if not pmids:
            dropped.append(Dropped("sentence", s.text, f"no citation survived {check_name}"))
            continue
        sentences.append(AnswerSentence(s.text, tuple(pmids), tuple(indices), tuple(stances), s.kind))
    return Answer(answer.topic_id, lead_cites_support(sentences), dropped, answer.generator,
                  answer.question_type, answer.verdict, answer.abstained)


def lead_cites_support(sentences: list[AnswerSentence]) -> list[AnswerSentence]:
    """A cited lead sentence (a verdict) cites only PMIDs some kept quoted sentence still cites (all it had when
    none is left)."""
    kept = {p for s in sentences if not s.is_lead for p in s.pmids}
    out = []
    for s in sentences:
        if s.is_lead and s.pmids and kept:
            pairs = [(p, e) for p, e in zip(s.pmids, (*s.evidence, *([None] * len(s.pmids))), strict=False)
                     if p in kept]
            if pairs:
                s = AnswerSentence(s.text, tuple(p for p, _ in pairs),
                                   tuple(e for _, e in pairs if e is not None), s.stances, s.kind)
        out.append(s)
    return out


def reasons(checks: Sequence[CitationCheck], answer: Answer) -> list[str]:
    """The rejected citations as feedback a generator can act on."""
    out = []
    for c in checks:
        if not c.kept:
            words = answer.sentences[c.sentence].text.split()
            quote = " ".join(words[:8]) + (" ..." if len(words) > 8 else "")
            out.append(f'sentence {c.sentence + 1} ("{quote}") cites PMID {c.pmid}, but {c.reason}')
    return out


@dataclass(frozen=True)
class SupportSummary:
    """How many of a run's citations the overlap check (or another judge) passes: `medcite validate`'s second
    line, separate from format validity."""

    citations: int
    quoted: int  # the sentence quotes the cited abstract verbatim
    supported: int  # quoted, or judged supporting
    missing: int  # the cited abstract is not recorded in the run (cannot be checked)
    failures: tuple[tuple[str, str, str, str], ...]  # (topic id, sentence, PMID, reason)

    @property
    def rate(self) -> float:
        checked = self.citations - self.missing
        return self.supported / checked if checked else 1.0

    def line(self, judge: str) -> str:
        checked = self.citations - self.missing
        out = (f"{self.supported} of {checked} citations pass the {judge} check ({self.rate:.1%}; "
               f"{self.quoted} quote the cited abstract verbatim)")
        if self.missing:
            out += f"; {self.missing} cite an abstract the run did not record"
        return out


def support_summary(answers: Sequence[Answer], articles: Mapping[str, Mapping[str, Article]],
                    judge: StanceClassifier, *, min_support: float = 0.0) -> SupportSummary:
    """Every citation of ``answers`` checked against the abstract the run recorded for its topic."""
    total = quoted_n = supported = missing = 0
    failures: list[tuple[str, str, str, str]] = []
    for answer in answers:
        arts = articles.get(answer.topic_id, {})
        n = sum(len(s.pmids) for s in answer.sentences)
        have = sum(1 for s in answer.sentences for p in s.pmids if p in arts)
        total += n
        missing += n - have
        checks, q = gate_checks(answer, arts, judge, min_support=min_support)
        quoted_n += q
        supported += q + sum(c.kept for c in checks)
        failures += [(answer.topic_id, answer.sentences[c.sentence].text, c.pmid, c.reason)
                     for c in checks if not c.kept]
    return SupportSummary(total, quoted_n, supported, missing, tuple(failures))
