"""Candidate answer sentences of the retrieved abstracts, and the features a trained scorer ranks them by.

Candidates (:func:`answer_candidates`) are sentences of the retrieved *abstracts* (a title names a topic, it
rarely answers a question), as exact spans (a leading structured-abstract label cut off, offsets moved with
it). Left out, because they never stand alone in an answer: fragments under :data:`MIN_WORDS` words, run-ons
over :data:`MAX_WORDS` words (sentences the splitter could not part), list
items ("2) ...", "• ..."), headings (an upper-case label alone), metadata (copyright, trial registration,
funding) and near-duplicates of an earlier candidate (TF-IDF cosine over :data:`NEAR_DUPLICATE`, counted as
copies of it).

Features (:data:`ANSWER_FEATURES`): the ideal-answer scorer's sentence features
(:mod:`medcite.evidence.sentence_features`, with the retrieved documents in the place of snippets), then
question-type cues (negation and hedges for yes/no questions, definitions for the others), key-concept
coverage (:mod:`medcite.evidence.concepts`), the sentence's place in its abstract and its part (results,
conclusions, methods), the retrieval rank of its document, and how much other documents say the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..types import Article, Hit
from . import sentence_features as sf
from .concepts import _NAME_LIKE, _norm_tokens, mentions
from .sentences import SentenceSpan, article_sentences, strip_label

MIN_WORDS = 6
MIN_TITLE_WORDS = 4
MAX_WORDS = 80
NEAR_DUPLICATE = 0.8

_LIST_ITEM = re.compile(r"^\s*(?:\(?\d{1,2}[).:]|\(?[a-hivx]{1,3}\)|[•\-*·▪◦–])\s")
_HEADING = re.compile(r"^[A-Z0-9 ,&/()\-]{3,}:?$")
_METADATA = re.compile(
    r"copyright|©|\ball rights reserved\b|\btrial registration\b|clinicaltrials\.gov|\bNCT\d{6,}|"
    r"\bISRCTN\d+|\bPROSPERO\b|\bCRD\d{8,}|\bpublished by\b|\bfunding:|\bthis article is protected\b|"
    r"\bthe authors? declare|\bconflicts? of interest\b|\bdoi:\s*10\.", re.IGNORECASE)
_NEGATION = re.compile(r"\b(no|not|neither|nor|without|failed to|did not|does not|was not|were not|cannot|"
                       r"lack(?:ed|s)?|absence|unlikely|no significant|non-?significant)\b", re.IGNORECASE)
_HEDGE = re.compile(r"\b(may|might|could|possibly|potential(?:ly)?|suggest(?:s|ed)?|appear(?:s|ed)? to|"
                    r"further (?:studies|research)|remains? (?:unclear|unknown|to be)|limited)\b", re.IGNORECASE)
_FINDING = re.compile(r"\b(show(?:s|ed|n)?|found|demonstrat(?:e|es|ed)|reveal(?:s|ed)?|indicat(?:e|es|ed)|"
                      r"significant(?:ly)?|associated with|increase[sd]?|decrease[sd]?|reduce[sd]?|improve[sd]?|"
                      r"effective|efficacy|caus(?:e|es|ed)|is (?:a|an|the))\b", re.IGNORECASE)
_AIM = re.compile(r"^(we (aimed|sought|investigated|examined|studied|evaluated|assessed|conducted|performed|"
                  r"describe|report)|(the )?(aim|purpose|objective|goal)s? (of|was|were|is)|this (study|paper|"
                  r"article|review) (aim|was|is|describes)|to (investigate|evaluate|assess|determine|examine|"
                  r"explore|compare))", re.IGNORECASE)
#: what earlier work said or what a study did, not what it found: "It has been suggested that ...", "Recent
#: studies have implicated ...", "Risk was assessed by ...", "Patients were enrolled ..."
_PRIOR_OR_METHOD = re.compile(
    r"\b(?:(?:has|have|had) been (?:suggested|proposed|reported|hypothesi[sz]ed|implicated|postulated|"
    r"speculated|shown to be associated)|(?<!with )(?<!to )(?:recent|previous|prior|earlier|several|many|some) "
    r"(?:studies|reports|trials|data)|studies have|little is known|"
    r"(?:is|are|remains?) (?:unknown|unclear|controversial|debated)|"
    r"(?:was|were) (?:assessed|measured|evaluated|analy[sz]ed|examined|recorded|collected|recruited|enrolled|"
    r"randomi[sz]ed|included|compared|reviewed|surveyed|interviewed|calculated|estimated|quantified|obtained)"
    r"(?: (?:by|using|with|from|in|at|for|to|between|during)\b|\.|,|$)|analys[ie]s (?:assessed|examined|evaluated)|"
    r"we (?:compared|measured|analy[sz]ed|recruited|enrolled|reviewed|surveyed|retrospectively|prospectively))",
    re.IGNORECASE)
_PARTS = (("BACKGROUND", "INTRODUCTION", "CONTEXT"), ("OBJECTIVE", "AIM", "PURPOSE"),
          ("METHOD", "MATERIAL", "DESIGN", "SETTING", "PATIENTS", "PARTICIPANTS"), ("RESULT", "FINDING"),
          ("CONCLUSION", "INTERPRETATION", "SIGNIFICANCE", "DISCUSSION"))

EXTRA = ("concept_coverage", "all_concepts", "concepts", "position_rel", "last_in_abstract", "doc_rank",
         "doc_rank_inv", "doc_score_rel", "part_background", "part_objective", "part_methods", "part_results",
         "part_conclusions", "negation", "hedge", "finding_cue", "aim_opening", "yesno_negation",
         "yesno_hedge", "other_docs_similar", "max_sim_other_doc", "concept_in_doc_title")
ANSWER_FEATURES = sf.FEATURES + EXTRA
#: bump whenever a feature's definition changes (the shipped medcite-answer scorer is then rebuilt)
ANSWER_FEATURE_VERSION = 1


@dataclass(frozen=True, slots=True)
class AnswerCandidate:
    """A candidate sentence: its exact span, its document's hit and its place among the abstract's sentences."""

    span: SentenceSpan
    hit: Hit
    doc: int  # index of its document among the retrieved ones (0 first)
    position: int  # index among its abstract's kept-or-not sentences
    of: int  # sentences in its abstract
    copies: int = 1

    @property
    def text(self) -> str:
        return self.span.text


def negated(text: str) -> bool:
    """Whether a sentence holds a negation cue ("not", "no", "failed to", "absence", ...)."""
    return bool(_NEGATION.search(text))


def states_aim(text: str) -> bool:
    """Whether a sentence states what a study set out to do ("We investigated ...", "The aim was ..."), not
    what it found."""
    return bool(_AIM.search(text.strip()))


def prior_or_method(text: str) -> bool:
    """Whether a sentence tells what earlier work suggested or what a study did ("It has been suggested that
    ...", "Recent studies have implicated ...", "Risk was assessed by ..."), not what it found."""
    return bool(_PRIOR_OR_METHOD.search(text))


def usable(text: str) -> bool:
    """Whether a sentence can stand in an answer: not a fragment (short, starting mid-sentence with a lower-case
    word, a word cut at a snippet's edge, or not ending as a sentence ends), list item, heading, metadata,
    reference string ("... situation report-96.,].", "J Neurol. 2020;267:1-9") or glued pieces (unbalanced
    brackets, "cohort.Results")."""
    words = text.split()
    if len(words) < MIN_WORDS or len(words) > MAX_WORDS:
        return False  # a fragment, or several sentences the splitter could not part (a run-on, not a sentence)
    first = words[0].strip("([\"'").rstrip(",;:.)]\"'")
    if first[:1].islower() and first.isalpha() and not _NAME_LIKE.search(first) and not _GREEK.match(first):
        return False  # a sentence starts with a capital, a digit or a name ("mRNA", "p53", "α-synuclein")
    if not _SENTENCE_END.search(text.rstrip()):
        return False  # cut at the end (a snippet's edge) or a title-like line
    if _LIST_ITEM.match(text) or _HEADING.match(text.strip()):
        return False
    if _REFERENCE.search(text) or _GLUED.search(text) or _JUNK_TOKEN.search(text) or not _balanced(text):
        return False
    if _repeats(text):
        return False
    return not _METADATA.search(text)


_GREEK = re.compile(r"^[\u0370-\u03ff]")
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")
#: reference strings and bibliographic fragments quoted into abstracts
_REFERENCE = re.compile(
    r"[.,;]\s*[,\]]\s*\.?$|\bsituation report\b|\bet al\.?,?\s*\(?(?:19|20)\d\d|\b(?:19|20)\d\d\s*;\s*\d+\s*[(:]|"
    r"\bavailable (?:from|at|online)\b|\bhttps?://|\bwww\.|\[internet\]|\baccessed\b.*\b(?:19|20)\d\d\b",
    re.IGNORECASE)
#: two pieces run together: without a space ("cohort.Results"), a sentence's start after a cut one ("associated
#: with increased The study demonstrated"), or a cut one after a sentence ("in clinical development. aches targeting")
_GLUED = re.compile(r"[a-z]{3,}[.;:][A-Z][a-z]{2,}|\b[a-z]{3,} (?:The|This|These|We|Our|Here|In this) [a-z]|"
                    r"\b(?!(?:subsp|approx|resp|incl|spp|var|strain|nov|comb|syn|cv|ssp)\.)[a-z]{4,}\. [a-z]{3,}\b")


#: a long run without spaces mixing digits with / or ; (a figure or file reference glued to the text)
_JUNK_TOKEN = re.compile(r"(?<!\S)(?=\S*\d)(?=\S*[/;])\S{25,}")


def _repeats(text: str, width: int = 40) -> bool:
    """Whether a run of ``width`` characters occurs twice: two copies of a passage glued together."""
    return any(text.count(text[i: i + width]) > 1 for i in range(0, max(0, len(text) - width), 8))


def _balanced(text: str) -> bool:
    """Every bracket closed, none closed before it opened."""
    for left, right in ("()", "[]"):
        depth = 0
        for ch in text:
            depth += (ch == left) - (ch == right)
            if depth < 0:
                return False
        if depth:
            return False
    return True


def _unlabelled(span: SentenceSpan) -> SentenceSpan | None:
    label, rest = strip_label(span.text)
    rest = rest.strip()
    if not rest:
        return None
    if label is None and rest == span.text:
        return span
    start = span.end - len(rest) if span.text.endswith(rest) else span.start + span.text.find(rest)
    return SentenceSpan(span.pmid, span.section, start, start + len(rest), rest, span.label or label,
                        span.category or (label.upper() if label else None))


def answer_candidates(hits: Sequence[Hit], articles: Mapping[str, Article], docs: int = 10,
                      splitter: str = "syntok") -> list[AnswerCandidate]:
    """The usable abstract sentences of the top ``docs`` hits, in rank and text order, near-duplicates merged.
    When no abstract holds one (title-only records), the titles of at least :data:`MIN_TITLE_WORDS` words."""
    raw: list[AnswerCandidate] = []
    top = [h for h in hits[:docs] if h.pmid in articles]
    for d, hit in enumerate(top):
        spans = [s for s in article_sentences(articles[hit.pmid], splitter) if s.section == "abstract"]
        for i, span in enumerate(spans):
            clean = _unlabelled(span)
            if clean is None or not usable(clean.text):
                continue
            raw.append(AnswerCandidate(clean, hit, d, i, len(spans)))
    if not raw:
        for d, hit in enumerate(top):
            title = [s for s in article_sentences(articles[hit.pmid], splitter) if s.section == "title"]
            if title and len(title[0].text.split()) >= MIN_TITLE_WORDS and not _METADATA.search(title[0].text):
                raw.append(AnswerCandidate(title[0], hit, d, 0, 1))
    if len(raw) < 2:
        return raw
    sim = sf.similarity("", [_as_sf(c) for c in raw])[1]
    out: list[AnswerCandidate] = []
    kept: list[int] = []
    for i, c in enumerate(raw):
        # TF-IDF drops "not"/"no" as stop words: a sentence that negates another is never its copy
        dup = next((j for j in kept if (sim[i, j] >= NEAR_DUPLICATE or _contained(c.text, raw[j].text))
                    and negated(c.text) == negated(raw[j].text)), None)
        if dup is not None:
            k = kept.index(dup)
            o = out[k]
            out[k] = AnswerCandidate(o.span, o.hit, o.doc, o.position, o.of, o.copies + 1)
            continue
        kept.append(i)
        out.append(c)
    return out


def part_of(span: SentenceSpan) -> int:
    """0 background, 1 objective, 2 methods, 3 results, 4 conclusions; -1 when its part is unlabelled."""
    part = (span.category or span.label or "").upper()
    return next((i for i, names in enumerate(_PARTS) if part.startswith(names)), -1)


def _contained(a: str, b: str) -> bool:
    """One sentence is the other with words cut off (snippets of one abstract that overlap)."""
    x, y = (" ".join(t.lower().split()).rstrip(".;:!? ") for t in (a, b))
    return len(x) > 20 and len(y) > 20 and (x in y or y in x)


def _as_sf(c: AnswerCandidate) -> sf.Candidate:
    return sf.Candidate(c.text, c.doc, c.position, c.of, False, c.copies)


def answer_features(question: str, qtype: str, cands: Sequence[AnswerCandidate], concepts: Sequence[str]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(one row of :data:`ANSWER_FEATURES` per candidate, their TF-IDF similarity matrix)."""
    n = len(cands)
    if not n:
        return np.zeros((0, len(ANSWER_FEATURES)), dtype=np.float32), np.zeros((0, 0))
    base_cands = [_as_sf(c) for c in cands]
    sims = sf.similarity(question, base_cands)
    base = sf.features(question, qtype, base_cands, sims)
    sim = sims[1]
    top_score = max((c.hit.score for c in cands), default=0.0) or 1.0
    docs = np.array([c.doc for c in cands])
    vocab_of_doc: dict[int, set[str]] = {}
    for c in cands:
        vocab_of_doc.setdefault(c.doc, set()).update(_norm_tokens(c.text))
    rows = []
    for k, c in enumerate(cands):
        vocab = _norm_tokens(c.text)
        covered = sum(mentions(x, vocab) for x in concepts)
        in_doc = sum(mentions(x, vocab_of_doc[c.doc]) for x in concepts)
        other = docs != c.doc
        other_sims = sim[k][other] if other.any() else np.zeros(1)
        neg, hedge = bool(_NEGATION.search(c.text)), bool(_HEDGE.search(c.text))
        rows.append([
            covered / max(1, len(concepts)), float(covered == len(concepts)), len(concepts),
            c.position / max(1, c.of - 1), float(c.position == c.of - 1), c.doc, 1.0 / (c.doc + 1),
            c.hit.score / top_score, *(float(part_of(c.span) == j) for j in range(len(_PARTS))),
            float(neg), float(hedge), float(bool(_FINDING.search(c.text))), float(bool(_AIM.match(c.text))),
            float(neg and qtype == "yesno"), float(hedge and qtype == "yesno"),
            float((other_sims > 0.3).sum()), float(other_sims.max()), in_doc / max(1, len(concepts)),
        ])
    x = np.concatenate([base, np.asarray(rows, dtype=np.float32)], axis=1)
    return x.astype(np.float32), sim
