"""Synthetic run directories written with :class:`medcite.rundir.RunWriter` (benchmarks, tests).

The text is made up from templates and is not medical information; the structure is exactly what a real
run writes: topics, queries, TREC rankings, evidence spans with section offsets into the articles,
answers with citations, stances and dropped items, LLM trace lines and timings.
"""

from __future__ import annotations

import random
from pathlib import Path

from ..config import Settings
from ..design.rules import label_article
from ..rundir import RunWriter
from ..types import Answer, AnswerSentence, Article, Dropped, Evidence, Hit, MeshHeading, Section, Stance, Topic

CONDITIONS = ["type 2 diabetes", "atrial fibrillation", "chronic kidney disease", "asthma", "migraine",
              "osteoporosis", "heart failure", "major depression", "psoriasis", "sleep apnea"]
TREATMENTS = ["metformin", "SGLT2 inhibitors", "apixaban", "inhaled corticosteroids", "CGRP antibodies",
              "bisphosphonates", "beta blockers", "cognitive behavioural therapy", "IL-17 inhibitors", "CPAP"]
OUTCOMES = ["mortality", "hospital admissions", "symptom scores", "quality of life", "adverse events"]
LABELS = ["BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS"]
JOURNALS = ["Lancet", "BMJ", "JAMA Intern Med", "N Engl J Med", "Cochrane Database Syst Rev",
            "Ann Intern Med"]
#: what the articles are indexed as (publication types beyond "Journal Article", MeSH check tags): a mix of study
#: designs, one animal study, and records with no indexing (their design is predicted from the text)
INDEXING = [(("Randomized Controlled Trial",), ("Humans",)), (("Meta-Analysis", "Systematic Review"), ("Humans",)),
            (("Case Reports",), ("Humans",)), (("Review",), ("Humans",)), ((), ("Animals",)), ((), ())]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _abstract(rng: random.Random, cond: str, treat: str) -> tuple[str, tuple[Section, ...]]:
    out = rng.choice(OUTCOMES)
    n = rng.randint(120, 4000)
    rr = round(rng.uniform(0.55, 0.95), 2)
    parts = [
        f"The effect of {treat} on {out} in adults with {cond} remains uncertain.",
        f"We conducted a randomized trial of {n} patients followed for a median of "
        f"{rng.randint(6, 48)} months.",
        f"{_cap(treat)} reduced {out} compared with usual care (relative risk {rr}, 95% CI "
        f"{round(rr - 0.1, 2)} to {round(rr + 0.08, 2)}).",
        f"In adults with {cond}, {treat} lowers {out} and is generally well tolerated.",
    ]
    text, sections, pos = "", [], 0
    for label, sentence in zip(LABELS, parts, strict=True):
        if text:
            text += " "
            pos += 1
        text += sentence
        sections.append(Section(label, label, pos, pos + len(sentence)))
        pos += len(sentence)
    return text, tuple(sections)


def write_synthetic_run(path: str | Path, n_topics: int, *, seed: int = 0, preset: str = "offline",
                        n_docs: int = 10, n_retrieved: int = 100, llm_calls: int = 2) -> Path:
    """Write a complete run of ``n_topics`` topics to ``path``; runs with other seeds share some PMIDs."""
    path = Path(path)
    writer = RunWriter(path, Settings(preset=preset), command=f"medcite run --preset {preset} (synthetic)",
                       resume=False)
    for t in range(n_topics):
        trng = random.Random(1000 + t)  # the same topic and candidate pool in every run
        rng = random.Random(seed * 100_003 + t)
        cond, treat = CONDITIONS[t % len(CONDITIONS)], trng.choice(TREATMENTS)
        topic = Topic(str(181 + t), f"Is {treat} effective for people with {cond}?",
                      narrative=f"A patient with {cond} asks whether starting {treat} is worthwhile.",
                      topic=f"{treat} for {cond}")
        pool = [str(30_000_000 + t * 1000 + i) for i in range(2 * n_docs)]
        chosen = sorted(rng.sample(pool, n_docs), key=pool.index)
        articles = []
        for pmid in chosen:
            arng = random.Random(int(pmid))
            abstract, sections = _abstract(arng, cond, treat)
            title = f"{_cap(treat)} and {arng.choice(OUTCOMES)} in {cond}: a trial"
            journal, year = arng.choice(JOURNALS), arng.randint(2005, 2024)
            types, tags = INDEXING[int(pmid) % len(INDEXING)]
            articles.append(Article(pmid, title, abstract, sections, journal=journal, year=year,
                                    publication_types=("Journal Article", *types),
                                    mesh=tuple(MeshHeading(tag) for tag in tags)))
        evidence = []
        for i, a in enumerate(articles, start=1):
            sec = a.sections[2 if i % 2 else 3]
            evidence.append(Evidence(i, a.pmid, a.abstract[sec.start:sec.end], "abstract", sec.start, sec.end,
                                     score=round(10 - i * 0.37 + rng.random(), 4), kind="snippet",
                                     branches=frozenset(rng.sample(["q0", "q1", "q2"], rng.randint(1, 3)))))
        sentences = []
        for s in range(rng.randint(3, 5)):
            cited = rng.sample(evidence, rng.randint(1, 3))
            stances = tuple((e.pmid, Stance.SUPPORTS if rng.random() < 0.8 else Stance.NEUTRAL)
                            for e in cited)
            sentences.append(AnswerSentence(
                f"{'Evidence suggests' if s == 0 else 'Trials also report that'} {treat} "
                f"{rng.choice(['reduces', 'may reduce', 'lowers'])} {rng.choice(OUTCOMES)} in {cond}.",
                tuple(e.pmid for e in cited), tuple(e.index for e in cited), stances))
        dropped = ([Dropped("citation", f"[{n_docs + 3}]", "index not in the evidence block")]
                   if t % 3 == 0 else [])
        answer = Answer(topic.id, sentences, dropped,
                        generator="extractive" if preset == "offline" else "llm")
        order = chosen + [p for p in pool if p not in chosen]
        hits = [Hit(p, round(30 - i * 0.1, 4), i + 1) for i, p in enumerate(order)]
        extra = [str(40_000_000 + t * 10_000 + i) for i in range(max(0, n_retrieved - len(hits)))]
        retrieval = hits + [Hit(p, round(20 - i * 0.01, 4), len(hits) + i + 1) for i, p in enumerate(extra)]
        queries = [{"id": "q0", "text": topic.question, "stage": "original"},
                   {"id": "q1", "text": f"{treat} {cond} randomized trial", "stage": "reformulation"},
                   {"id": "q2", "text": f"{treat} {cond} outcomes adults", "stage": "reformulation"}]
        for c in range(llm_calls):
            writer.append("trace.jsonl", {
                "topic_id": topic.id, "stage": "reformulate" if c == 0 else "generate", "backend": "openai",
                "model": "qwen2.5-7b-instruct",
                "messages": [{"role": "system", "content": "You rewrite biomedical questions."},
                             {"role": "user", "content": f"Question: {topic.question}"}],
                "params": {"temperature": 0.0, "max_tokens": 256},
                "output": f"1. {queries[1]['text']}\n2. {queries[2]['text']}",
                "latency_s": round(rng.uniform(0.4, 3), 3),
                "cache_hit": rng.random() < 0.3,
            })
        writer.write_topic(topic, queries=queries, rankings={"retrieval": retrieval[:n_retrieved],
                                                             "rerank": hits[:n_docs * 2]},
                           evidence=evidence, answer=answer, articles=articles,
                           designs={a.pmid: label_article(a) for a in articles},
                           timings={"retrieve_s": rng.uniform(0.01, 0.2), "generate_s": rng.uniform(0.1, 2)})
    writer.close()  # lets go of the run folder's lock
    return path
