"""Everything the topic page shows, built from one run's parsed files (view models, no HTML)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..rundir_read import design_from_json
from ..types import (
    DESIGN_SHORT,
    DESIGN_SLUGS,
    DESIGNS,
    HUMANS,
    OTHER_DESIGN,
    PREDICTED,
    SUBJECTS,
    DesignLabel,
    StudyDesign,
)
from .highlight import Part, Segment, Span, parts, segments
from .loader import Run, as_dict, as_float, as_int, as_list, as_str


@dataclass(slots=True)
class DesignView:
    """An article's study design as the page shows it: a badge, its filter keys and where it came from."""

    text: str  # "randomised controlled trial, animal study"
    short: str  # "RCT · animal"
    slug: str  # the design's slug (the badge's colour class)
    keys: list[str]  # every slug it matches in the filter: its design, its subjects ("animal", "humans")
    source: str  # "indexed" | "predicted"
    title: str  # the tooltip: source, confidence, cue of each label


def design_view(design: StudyDesign | None) -> DesignView | None:
    if design is None:
        return None
    labels = [design.design, *design.subjects]
    shown = [s.name for s in design.subjects if s.name != HUMANS]
    names = ([] if design.design.name == OTHER_DESIGN and shown else [design.design.name]) + shown
    short = " · ".join(DESIGN_SHORT.get(n, n) for n in names)
    title = "; ".join(_label_title(label) for label in labels)
    return DesignView(design.text, short, DESIGN_SLUGS.get(design.design.name, "other"),
                      [DESIGN_SLUGS[n.name] for n in labels if n.name in DESIGN_SLUGS], design.design.source, title)


def _label_title(label: DesignLabel) -> str:
    sure = f" ({label.confidence:.0%})" if label.source == PREDICTED else ""
    return f"{label.name}: {label.source}{sure}" + (f", from {label.cue!r}" if label.cue else "")


@dataclass(slots=True)
class Chip:
    pmid: str
    stance: str | None
    evidence: list[int]
    known: bool  # the abstract is in articles.jsonl
    retracted: bool = False  # articles.jsonl marks it retracted
    design: DesignView | None = None  # articles.jsonl's study design of it


@dataclass(slots=True)
class SentenceView:
    number: int  # 1-based, the #s<number> anchor
    text: str
    chips: list[Chip]
    kind: str = ""  # "" quoted/generated; verdict, entities or abstain: a lead sentence stating the answer


@dataclass(slots=True)
class EvidenceRow:
    index: int | None
    pmid: str
    text: str
    section: str | None
    start: int | None
    end: int | None
    score: float | None
    rank: int | None
    kind: str
    branches: list[str]
    cited_in: list[int]  # sentence numbers citing this evidence
    offsets_match: bool | None  # None: no offsets or no article to check against
    ranks: dict[str, int]  # TREC stage -> rank of this PMID


@dataclass(slots=True)
class StancePill:
    """The stance of one citing sentence toward an article; the probability and the judged passage come from
    the run's stance check (``verification.jsonl``) when it recorded one."""

    number: int  # the citing sentence, 1-based
    label: str
    score: float | None = None
    passage: str = ""


@dataclass(slots=True)
class ArticleView:
    pmid: str
    title: list[Segment]
    abstract: list[Part]
    journal: str
    year: str
    doi: str
    retracted: bool
    publication_types: list[str]
    pubmed_url: str | None
    stances: list[StancePill]
    evidence: list[int]
    design: DesignView | None = None


@dataclass(slots=True)
class CallView:
    number: int
    stage: str
    backend: str
    model: str
    latency_s: float | None
    cache_hit: bool | None
    messages: list[tuple[str, str]]
    params: str
    output: str
    rejected: str = ""  # why medcite did not use the reply (a ``rejected`` trace line naming this call's key)


@dataclass(slots=True)
class TopicView:
    id: str
    question: str
    narrative: str
    topic: str
    type: str
    answered: bool
    question_type: str
    verdict: str
    abstained: bool
    generator: str
    words: int
    sentences: list[SentenceView]
    dropped: list[tuple[str, str, str]]
    queries: list[tuple[str, str, str]]  # (id, text, its stages joined by " + ")
    evidence: list[EvidenceRow]
    articles: list[ArticleView]
    missing_articles: list[str]
    calls: list[CallView]
    timings: dict[str, float]
    stages: list[str]
    validation_state: str
    validation_errors: list[str]
    prev_id: str | None = None
    next_id: str | None = None
    citations: int = field(default=0)
    query_notes: list[str] = field(default_factory=list)  # a generator left out, a branch that searched the question
    design_filter: list[tuple[str, str, int]] = field(default_factory=list)  # (slug, label, articles) to filter by
    #: the top retrieved articles the evidence selector read: (rank, pmid, "evidence [n]" or "rejected", reason)
    read: list[tuple[int, str, str, str]] = field(default_factory=list)


def pubmed_url(pmid: str) -> str | None:
    """Link only plain numeric PMIDs (anything else in a run file is shown, never linked)."""
    return f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/" if pmid.isdigit() else None


def build_topic(run: Run, topic_id: str) -> TopicView | None:
    """The topic page's content, or None when the run has no such topic."""
    ids = run.topic_ids()
    if topic_id not in ids:
        return None
    pos = ids.index(topic_id)
    topic = run.topics.last(topic_id) or {}
    answer = run.answers.last(topic_id)
    ans = as_dict(answer)
    ev_row = as_dict(run.last("evidence.jsonl", topic_id))
    ev_rows = [as_dict(e) for e in as_list(ev_row.get("evidence"))]
    by_index = {i: e for e in ev_rows if (i := as_int(e.get("index"))) is not None}
    rankings = run.rankings(topic_id)

    sentences: list[SentenceView] = []
    cited_in: dict[int, list[int]] = {}
    stances: dict[str, list[StancePill]] = {}
    checks = _checks(run.last("verification.jsonl", topic_id))
    articles_raw: dict[str, dict[str, object]] = {}
    for row in run.rows("articles.jsonl", topic_id):
        articles_raw[as_str(row.get("pmid"))] = row
    for n, s in enumerate((as_dict(x) for x in as_list(ans.get("sentences"))), start=1):
        ev_idx = [i for i in (as_int(x) for x in as_list(s.get("evidence"))) if i is not None]
        for i in ev_idx:
            cited_in.setdefault(i, []).append(n)
        st = as_dict(s.get("stances"))
        chips = []
        for p in (as_str(x) for x in as_list(s.get("pmids"))):
            label = as_str(st.get(p)) or None
            if label:
                stances.setdefault(p, []).append(_pill(n, p, label, checks.get((n, p)), articles_raw.get(p)))
            mine = [i for i in ev_idx if as_str(by_index.get(i, {}).get("pmid")) == p]
            chips.append(Chip(p, label, mine, p in articles_raw,
                              as_dict(articles_raw.get(p)).get("retracted") is True,
                              design_view(design_from_json(as_dict(articles_raw.get(p)).get("design")))))
        sentences.append(SentenceView(n, as_str(s.get("text")), chips, as_str(s.get("kind"))))

    evidence = [_evidence_row(e, articles_raw, cited_in, rankings) for e in ev_rows]
    articles = [_article_view(pmid, a, ev_rows, stances) for pmid, a in articles_raw.items()]
    cited = {c.pmid for s in sentences for c in s.chips}
    trace = _calls([as_dict(c) for c in run.rows("trace.jsonl", topic_id)])
    timings = {k: v for k, raw in as_dict(run.last("timings.jsonl", topic_id)).items()
               if k != "topic_id" and (v := as_float(raw)) is not None}
    validation = run.validation
    query_row = as_dict(run.last("queries.jsonl", topic_id))
    queries = as_list(query_row.get("queries"))
    return TopicView(
        id=topic_id,
        question=as_str(topic.get("question") or ans.get("question")),
        narrative=as_str(topic.get("narrative")),
        topic=as_str(topic.get("topic")),
        type=as_str(topic.get("type")),
        answered=answer is not None,
        question_type=as_str(ans.get("question_type")),
        verdict=as_str(ans.get("verdict")),
        abstained=ans.get("abstained") is True,
        generator=as_str(ans.get("generator")),
        words=as_int(ans.get("words")) or sum(len(s.text.split()) for s in sentences),
        sentences=sentences,
        dropped=[(as_str(d.get("what")), as_str(d.get("text")), as_str(d.get("reason")))
                 for d in (as_dict(x) for x in as_list(ans.get("dropped")))],
        queries=[(as_str(q.get("id")), as_str(q.get("text")), _stages(q)) for q in (as_dict(x) for x in queries)],
        evidence=evidence,
        articles=articles,
        missing_articles=sorted(cited - set(articles_raw)),
        calls=trace,
        timings=timings,
        stages=list(rankings),
        validation_state=validation.topic_state(topic_id),
        validation_errors=validation.by_topic.get(topic_id, []),
        prev_id=ids[pos - 1] if pos > 0 else None,
        next_id=ids[pos + 1] if pos + 1 < len(ids) else None,
        citations=sum(len(s.chips) for s in sentences),
        query_notes=[as_str(n) for n in as_list(query_row.get("notes"))],
        design_filter=_design_filter(articles),
        read=[(as_int(r.get("rank")) or 0, as_str(r.get("pmid")),
               f"evidence [{as_int(r.get('evidence'))}]" if as_str(r.get("status")) == "evidence" else "rejected",
               as_str(r.get("reason"))) for r in (as_dict(x) for x in as_list(ev_row.get("read")))],
    )


def _design_filter(articles: list[ArticleView]) -> list[tuple[str, str, int]]:
    """The designs and subjects the topic's articles have, in the vocabulary's order, with how many have each."""
    counts: dict[str, int] = {}
    for a in articles:
        for key in a.design.keys if a.design else []:
            counts[key] = counts.get(key, 0) + 1
    return [(DESIGN_SLUGS[name], name, counts[DESIGN_SLUGS[name]]) for name in (*DESIGNS, *SUBJECTS)
            if DESIGN_SLUGS[name] in counts]


def _stages(q: dict[str, object]) -> str:
    """A query's stages as the page shows them: ``original + keyword_rewrite`` for a query two stages produced (a
    row of an older run names its one ``stage``)."""
    stages = [as_str(s) for s in as_list(q.get("stages"))] or [as_str(q.get("stage"))]
    return " + ".join(dict.fromkeys(s for s in stages if s))


def _evidence_row(e: dict[str, object], articles: dict[str, dict[str, object]], cited_in: dict[int, list[int]],
                  rankings: dict[str, dict[str, tuple[int, float]]]) -> EvidenceRow:
    pmid = as_str(e.get("pmid"))
    index = as_int(e.get("index"))
    section = as_str(e.get("section")) or None
    start, end = as_int(e.get("start")), as_int(e.get("end"))
    text = as_str(e.get("text"))
    match: bool | None = None
    art = articles.get(pmid)
    if art is not None and section in ("title", "abstract") and start is not None and end is not None:
        match = as_str(art.get(section))[start:end] == text
    return EvidenceRow(
        index=index, pmid=pmid, text=text, section=section, start=start, end=end,
        score=as_float(e.get("score")), rank=as_int(e.get("rank")), kind=as_str(e.get("kind")),
        branches=[as_str(b) for b in as_list(e.get("branches"))],
        cited_in=cited_in.get(index, []) if index is not None else [],
        offsets_match=match,
        ranks={stage: got[0] for stage, hits in rankings.items() if (got := hits.get(pmid)) is not None},
    )


MAX_PASSAGE = 400


def _checks(record: dict[str, object] | None) -> dict[tuple[int, str], dict[str, object]]:
    """(sentence number, PMID) -> the stance check of that citation in a ``verification.jsonl`` row: the
    ``citations.checks`` of ``verify.citations`` and the ``grounding[].verdicts`` of Task A."""
    rec = as_dict(record)
    out: dict[tuple[int, str], dict[str, object]] = {}
    for c in (as_dict(x) for x in as_list(as_dict(rec.get("citations")).get("checks"))):
        if (i := as_int(c.get("sentence"))) is not None:
            out.setdefault((i + 1, as_str(c.get("pmid"))), c)
    for i, g in enumerate(as_dict(x) for x in as_list(rec.get("grounding"))):
        for pmid, v in as_dict(g.get("verdicts")).items():
            out.setdefault((i + 1, pmid), as_dict(v))
    return out


def _pill(n: int, pmid: str, label: str, check: dict[str, object] | None,
          article: dict[str, object] | None) -> StancePill:
    """A stance pill; the check's figures are used only when it judged the same label (a check of a sentence
    that a 'drop' later removed can sit at a shifted index: it must not lend its numbers to another)."""
    c = as_dict(check)
    if as_str(c.get("stance")).strip().lower() != label.strip().lower():
        return StancePill(n, label)
    score = as_float(as_dict(c.get("scores")).get(label))
    span = as_list(c.get("span"))
    passage = ""
    if len(span) == 3 and span[0] in ("title", "abstract"):
        start, end = as_int(span[1]), as_int(span[2])
        text = as_str(as_dict(article).get(span[0]))
        if start is not None and end is not None and 0 <= start < end <= len(text):
            passage = text[start:end]
            if len(passage) > MAX_PASSAGE:
                passage = passage[:MAX_PASSAGE] + "…"
    return StancePill(n, label, score, passage)


def _article_view(pmid: str, a: dict[str, object], ev_rows: list[dict[str, object]],
                  stances: dict[str, list[StancePill]]) -> ArticleView:
    title, abstract = as_str(a.get("title")), as_str(a.get("abstract"))
    spans: dict[str, list[Span]] = {"title": [], "abstract": []}
    mine: list[int] = []
    for e in ev_rows:
        if as_str(e.get("pmid")) != pmid:
            continue
        index = as_int(e.get("index"))
        if index is None:
            continue
        mine.append(index)
        start, end, section = as_int(e.get("start")), as_int(e.get("end")), e.get("section")
        if section in spans and start is not None and end is not None:
            spans[section].append(Span(start, end, index))
    sections = []
    for s in as_list(a.get("sections")):
        s = as_list(s)
        if len(s) == 3 and (st := as_int(s[1])) is not None and (en := as_int(s[2])) is not None:
            sections.append((as_str(s[0]) or None, st, en))
    year = a.get("year")
    return ArticleView(
        pmid=pmid,
        title=segments(title, spans["title"]),
        abstract=parts(abstract, spans["abstract"], sections),
        journal=as_str(a.get("journal")),
        year=as_str(year) if year is not None else "",
        doi=as_str(a.get("doi")),
        retracted=a.get("retracted") is True,
        publication_types=[as_str(x) for x in as_list(a.get("publication_types"))],
        pubmed_url=pubmed_url(pmid),
        stances=stances.get(pmid, []),
        evidence=mine,
        design=design_view(design_from_json(a.get("design"))),
    )


def _calls(rows: list[dict[str, object]]) -> list[CallView]:
    """The calls of a topic's trace lines; a ``rejected`` line is no call: its reason goes to the latest call
    before it with the same key."""
    calls: list[CallView] = []
    keys: list[str] = []
    for row in rows:
        if row.get("event") == "rejected":
            key = as_str(row.get("key"))
            for call, k in zip(reversed(calls), reversed(keys), strict=True):
                if k == key:
                    call.rejected = as_str(row.get("reason")) or "rejected"
                    break
            continue
        if row.get("event") is not None:  # a kind of line this viewer does not know
            continue
        calls.append(_call_view(len(calls) + 1, row))
        keys.append(as_str(row.get("key")))
    return calls


def _call_view(n: int, c: dict[str, object]) -> CallView:
    messages = []
    for m in as_list(c.get("messages")):
        m = as_dict(m) if isinstance(m, dict) else {"role": "", "content": m}
        messages.append((as_str(m.get("role")), as_str(m.get("content"))))
    hit = c.get("cache_hit")
    params = c.get("params")
    # the loop labels a call carries beside its stage (generation attempt, sufficiency round, multi-hop hop)
    labels = "".join(f" {k} {as_str(c[k])}" for k in ("hop", "round", "attempt") if c.get(k) is not None)
    return CallView(
        number=n, stage=as_str(c.get("stage")) + labels, backend=as_str(c.get("backend")),
        model=as_str(c.get("model")),
        latency_s=as_float(c.get("latency_s")), cache_hit=hit if isinstance(hit, bool) else None,
        messages=messages, params=as_str(params) if params else "", output=as_str(c.get("output")),
    )
