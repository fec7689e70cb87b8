"""What a perfect model answers to each prompt medcite sends, taken from held-out gold data.

Every handler gets the values the prompt file was filled with (:mod:`.templates`) and returns a
:class:`Meaning`: the content of the right answer and its kind (prose with citations, a JSON value, a label,
a permutation, ...). How it is written (markdown, fences, ``<think>``, chatter) is :mod:`.styles`' job, and
what goes wrong on purpose is :mod:`.faults`'.

The right answers:

- generation (``generate``, ``generate_topic``; ``retry`` repeats it): the question's human ideal answer,
  one sentence at a time, each citing the evidence item it shares most content words with (a second item
  when it shares as many); ``generate_plain`` / ``answer_first``: the same sentences uncited. A question the
  gold data does not hold (a BioGen topic) gets the first sentence of each of the first three evidence items,
  each citing its own item;
- ``condense``: the answer's sentences up to the word limit; ``summarize``: the gold snippet the abstract
  holds (its first sentence when it holds none);
- query writing (``reformulate``, ``decompose``, ``keyword_rewrite``, ``stance_queries``, ``stance_rewrite_*``,
  ``rocchio_clean``, ``sufficiency``):
  queries that hold the question's words and the gold answer's key words;
- ``listwise_rerank``: gold passages first (by the share of a gold snippet's words they hold), the rest in
  the order given;
- ``stance`` / ``bioace_citation``: the HealthVer label of a held-out pair; for an answer sentence of a gold
  question, SUPPORTS when the abstract holds gold evidence of it, else NEUTRAL (NOT RELEVANT for BioACE);
- ``bioace_completeness``: REQUIRED for a sentence mostly made of the ideal answer's words, else UNNECESSARY;
- ``bioasq_answer``: the gold exact answer (first synonym of each entity) and ideal answer as JSON;
- MedHopQA (``hop_*``): SIMPLE, the question as its own sub-question, DONE, the gold exact answer.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from medcite.evidence.sentences import split_spans
from medcite.types import Question

from .gold import STOP, Gold, key, overlap, words

_ITEM = re.compile(r"^\[(\d+)\]\s+(?:\((\d+)\)\s+)?(.*)$")


@dataclass
class Meaning:
    """The right answer to one prompt, before it is written out.

    ``kind``: ``prose`` (``sentences``, each with the evidence indices it cites), ``json`` (``value``),
    ``lines`` (``text`` as is: labels, queries, permutations). ``question``: the gold question behind it.
    """

    kind: str
    sentences: list[tuple[str, list[int]]] = field(default_factory=list)
    value: Any = None
    text: str = ""
    question: Question | None = None
    cited: bool = True
    evidence: dict[int, str] = field(default_factory=dict)  # index -> text, for faults that mis-cite


def sentences(text: str) -> list[str]:
    return [" ".join(text[s:e].split()) for s, e in split_spans(text) if text[s:e].strip()]


def evidence_items(block: str) -> dict[int, str]:
    """``[i] (PMID) text`` lines (or RankGPT's ``[i] text``) as index -> text."""
    out: dict[int, str] = {}
    for line in block.splitlines():
        m = _ITEM.match(line.strip())
        if m:
            out[int(m.group(1))] = m.group(3)
    return out


def cite(sentence: str, items: dict[int, str]) -> list[int]:
    """The evidence item ``sentence`` shares most content words with (and any that shares as many)."""
    mine = words(sentence)
    scores = {i: len(mine & words(text)) for i, text in items.items()}
    if not scores:
        return []
    best = max(scores.values())
    return [i for i, s in sorted(scores.items()) if s == best][:2] if best else [min(scores)]


def key_words(q: Question, n: int = 6) -> list[str]:
    """The gold answer's most frequent content words that the question does not already hold."""
    asked = words(q.body)
    counts = Counter(w for text in (*q.ideal_answers, *(s.text for s in q.snippets[:5])) for w in re.findall(
        r"[a-z0-9]+(?:-[a-z0-9]+)*", text.casefold()) if w not in STOP and w not in asked and len(w) > 3)
    return [w for w, _ in counts.most_common(n)]


def exact_names(q: Question) -> list[str]:
    if q.type == "yesno":
        return [str(q.exact_answer or "yes")]
    if isinstance(q.exact_answer, tuple):
        return [names[0] for names in q.exact_answer if names]
    return []


class Oracle:
    """The handlers, one per prompt file (see the module)."""

    def __init__(self, gold: Gold) -> None:
        self.gold = gold
        self.by_sentence: dict[str, str] = {}  # key(ideal-answer sentence) -> question id
        for q in gold.by_id.values():
            for text in q.ideal_answers[:1]:
                for s in sentences(text):
                    self.by_sentence[key(s)] = q.id
        self.handlers: dict[str, Callable[[dict[str, str]], Meaning]] = {
            "generate": self.generate, "generate_topic": self.generate, "generate_plain": self.generate_plain,
            "clac25_generate": self.generate, "generate_plain_question": self.generate_plain,
            "clac25_summarize": self.summarize, "clac25_reformulate": self.reformulate,
            "answer_first": self.generate_plain, "condense": self.condense, "summarize": self.summarize,
            "reformulate": self.reformulate, "decompose": self.decompose, "keyword_rewrite": self.keyword_rewrite,
            "stance_queries": self.stance_queries, "sufficiency": self.sufficiency,
            "rocchio_clean": lambda v: Meaning("lines", text=v.get("query", "")),
            "stance_rewrite_support": lambda v: Meaning("lines", text=v.get("sentence", "")),
            "stance_rewrite_contradict": lambda v: Meaning("lines", text=f"No evidence that {v.get('sentence', '')}"),
            "listwise_rerank": self.listwise, "stance": self.stance, "bioace_citation": self.bioace_citation,
            "bioace_completeness": self.completeness, "bioasq_answer": self.bioasq,
            "bioasq_pjs": self.bioasq_pjs,
            "hop_classify": lambda v: Meaning("lines", text="SIMPLE"),
            "hop_first": self.hop_first, "hop_next": lambda v: Meaning("lines", text="DONE"),
            "hop_short_answer": self.hop_short,
            # CLaC 2024's appendix prompts: the same right answers under the paper's placeholder names
            "clac24_decompose": self.decompose,
            "clac24_generate": lambda v: self.generate_plain({**v, "evidence": v.get("documents", "")}),
            "clac24_condense": lambda v: self.condense({**v, "answer": v.get("long_answer", "")}),
            "clac24_support": self.support_list, "clac24_contradict": self.contradict_list,
        }

    def answer(self, prompt: str, values: dict[str, str]) -> Meaning:
        handler = self.handlers.get(prompt)
        if handler is None:
            raise KeyError(f"the oracle has no answer for prompt {prompt!r}")
        return handler(values)

    # -- answers -------------------------------------------------------------------------------------
    def ideal(self, q: Question, max_words: int) -> list[str]:
        out: list[str] = []
        used = 0
        for s in sentences(q.ideal_answers[0] if q.ideal_answers else ""):
            n = len(s.split())
            if used + n > max_words and out:
                break
            out.append(s)
            used += n
        return out

    def generate(self, v: dict[str, str]) -> Meaning:
        items = evidence_items(v.get("evidence", ""))
        q = self.gold.question(v.get("question", ""))
        limit = int(v.get("max_words") or 250)
        if q is None or not q.ideal_answers:
            chosen = [(sentences(text)[0], [i]) for i, text in list(items.items())[:3] if sentences(text)]
            return Meaning("prose", chosen, question=q, evidence=items)
        return Meaning("prose", [(s, cite(s, items)) for s in self.ideal(q, limit)], question=q, evidence=items)

    def generate_plain(self, v: dict[str, str]) -> Meaning:
        meaning = self.generate(v)
        meaning.cited = False
        return meaning

    def condense(self, v: dict[str, str]) -> Meaning:
        from medcite.generate.citations import split_cited_sentences

        limit = int(v.get("max_words") or 250)
        out, used = [], 0
        for d in split_cited_sentences(v.get("answer", "")):
            if used + len(d.text.split()) > limit:
                break
            out.append((d.text, d.indices))
            used += len(d.text.split())
        return Meaning("prose", out)

    def summarize(self, v: dict[str, str]) -> Meaning:
        q = self.gold.question(v.get("question", ""))
        abstract = v.get("abstract", "")
        if q is not None:
            best = max(q.snippets, key=lambda s: overlap(s.text, abstract), default=None)
            if best is not None and overlap(best.text, abstract) >= 0.7:
                return Meaning("prose", [(" ".join(best.text.split()[:80]), [])], question=q, cited=False)
        first = sentences(abstract)[:1] or [abstract]
        return Meaning("prose", [(" ".join(first[0].split()[:80]), [])], question=q, cited=False)

    def _terms(self, question: str) -> tuple[Question | None, list[str]]:
        q = self.gold.question(question)
        tokens = re.findall(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", question)
        asked = [w for w in tokens if w.casefold() not in STOP and len(w) > 1]
        return q, asked + (key_words(q) if q is not None else [])

    def reformulate(self, v: dict[str, str]) -> Meaning:
        question = " ".join(v.get("question", "").split())
        q, terms = self._terms(question)
        extra = key_words(q, 4) if q is not None else []
        lines = [f"1. {question}",
                 f"2. What do studies of {' '.join(terms[:6])} show?",
                 f"3. What is known about {' and '.join(extra[:2]) or ' '.join(terms[:3])} "
                 f"in {terms[0] if terms else 'this'}?"]
        return Meaning("lines", text="\n".join(lines), question=q)

    def decompose(self, v: dict[str, str]) -> Meaning:
        q, terms = self._terms(v.get("question", ""))
        asked = [t for t in terms if q is None or t not in key_words(q)]
        extra = key_words(q) if q is not None else []
        queries = [" ".join(asked)] + [" ".join([*asked[:2], w]) for w in extra[:4]]
        return Meaning("json", value=[x for x in queries if x][:5], question=q)

    def keyword_rewrite(self, v: dict[str, str]) -> Meaning:
        _, terms = self._terms(v.get("question", ""))
        return Meaning("lines", text=" ".join(terms))

    def stance_queries(self, v: dict[str, str]) -> Meaning:
        terms = sorted(words(v.get("sentence", "")), key=len, reverse=True)[:6]
        return Meaning("lines", text=f"SUPPORT: {' '.join(terms)}\nCONTRADICT: {' '.join(terms)} no effect")

    def sufficiency(self, v: dict[str, str]) -> Meaning:
        return Meaning("lines", text="SUFFICIENT")

    def listwise(self, v: dict[str, str]) -> Meaning:
        q = self.gold.question(v.get("question", ""))
        items = evidence_items(v.get("passages", ""))
        order = sorted(items, key=lambda i: (-(self.gold.relevance(q, items[i]) if q else 0.0), i))
        return Meaning("lines", text=" > ".join(f"[{i}]" for i in order), question=q)

    # -- judgements ----------------------------------------------------------------------------------
    def _statement_question(self, statement: str) -> Question | None:
        qid = self.by_sentence.get(key(statement)) or self.gold.written.get(key(statement))
        return self.gold.by_id.get(qid) if qid else None

    def _label(self, statement: str, title: str, abstract: str) -> tuple[str, str]:
        label = self.gold.stance.get((key(statement), key(abstract)))
        decisive = max(sentences(abstract) or [""], key=lambda s: overlap(statement, s))
        if label is not None:
            return label, decisive if label != "NEUTRAL" else "NONE"
        q = self._statement_question(statement)
        if q is not None and self.gold.is_gold(q, f"{title} {abstract}"):
            return "SUPPORTS", decisive
        return "NEUTRAL", "NONE"

    def _listed(self, v: dict[str, str], want: str) -> list[str]:
        """The PMIDs of a CLaC 2024 listwise prompt's ``* PMID n: text`` lines whose stance label is ``want``."""
        docs = re.findall(r"^\* PMID (\d+): (.*)$", v.get("docs", ""), re.MULTILINE)
        return [p for p, text in docs if self._label(v.get("sentence", ""), "", text)[0] == want]

    def support_list(self, v: dict[str, str]) -> Meaning:
        """CLaC 2024 Appendix A support prompt: the supporting PMIDs, at most 3; the first shown when none does
        (the prompt says "You ** MUST provide at least one citation **")."""
        chosen = self._listed(v, "SUPPORTS")[:3]
        first = re.findall(r"^\* PMID (\d+):", v.get("docs", ""), re.MULTILINE)[:1]
        return Meaning("lines", text=f"Supporting Citations: [{', '.join(chosen or first)}]")

    def contradict_list(self, v: dict[str, str]) -> Meaning:
        """CLaC 2024 Appendix A contradiction prompt: the contradicting PMIDs as a JSON list, '[]' for none."""
        return Meaning("json", value=self._listed(v, "CONTRADICTS")[:3])

    def stance(self, v: dict[str, str]) -> Meaning:
        label, quote = self._label(v.get("statement", ""), v.get("title", ""), v.get("abstract", ""))
        return Meaning("lines", text=f"{label}\n{quote}")

    def bioace_citation(self, v: dict[str, str]) -> Meaning:
        statement, title, abstract = v.get("statement", ""), v.get("title", ""), v.get("abstract", "")
        label, quote = self._label(statement, title, abstract)
        if label == "NEUTRAL" and overlap(statement, f"{title} {abstract}") < 0.2:
            label = "NOT RELEVANT"
        return Meaning("lines", text=f"{label}\n{quote}")

    def completeness(self, v: dict[str, str]) -> Meaning:
        q = self.gold.question(v.get("question", ""))
        ideal = " ".join(q.ideal_answers) if q is not None else ""
        lines = [ln.strip() for ln in v.get("sentences", "").splitlines() if ln.strip()]
        labels = []
        for n, line in enumerate(lines, 1):
            text = re.sub(r"^\d+[.:)]\s*", "", line)
            labels.append(f"{n}: {'REQUIRED' if ideal and overlap(text, ideal) >= 0.5 else 'UNNECESSARY'}")
        return Meaning("lines", text="\n".join(labels), question=q)

    def bioasq(self, v: dict[str, str]) -> Meaning:
        q = self.gold.question(v.get("question", ""))
        shape = v.get("json", "")  # medcite's JSON request names the fields asked for (qa.json_instruction)
        value: dict[str, Any] = {}
        if q is None:
            raise KeyError(f"no held-out gold question {v.get('question', '')[:80]!r}")
        rules = v.get("rules", "")
        ideal = '"ideal_answer"' in shape if shape else _asks(rules, "ideal", "ideal_strict")
        exact = '"exact_answer"' in shape if shape else _asks(rules, *(f"{t}{s}" for t in ("yesno", "factoid", "list")
                                                                      for s in ("", "_strict")))
        if exact and q.type != "summary":
            names = exact_names(q)
            value["exact_answer"] = names[0] if q.type == "yesno" else names
        if ideal:
            value["ideal_answer"] = q.ideal_answers[0] if q.ideal_answers else ""
        return Meaning("json", value=value, question=q)

    def bioasq_pjs(self, v: dict[str, str]) -> Meaning:
        """PJs-team's one prompt: both answers in one JSON object, an entity as a one-name list."""
        q = self.gold.question(v.get("question", ""))
        if q is None:
            raise KeyError(f"no held-out gold question {v.get('question', '')[:80]!r}")
        value: dict[str, Any] = {"ideal_answer": q.ideal_answers[0] if q.ideal_answers else ""}
        names = exact_names(q)
        if q.type == "yesno":
            value["exact_answer"] = names[0]
        elif q.type in ("factoid", "list"):
            value["exact_answer"] = [[n] for n in names]
        return Meaning("json", value=value, question=q)

    def hop_first(self, v: dict[str, str]) -> Meaning:
        question = " ".join(v.get("question", "").split())
        phrase = max(re.findall(r"[A-Za-z0-9-]+", question), key=len, default=question)
        return Meaning("lines", text=f"KEY PHRASE: {phrase}\nSUB-QUESTION: {question}")

    def hop_short(self, v: dict[str, str]) -> Meaning:
        q = self.gold.question(v.get("question", ""))
        names = exact_names(q) if q is not None else []
        first = sentences(q.ideal_answers[0])[0] if q is not None and q.ideal_answers else "unknown"
        return Meaning("lines", text=", ".join(names[:3]) or first)


def _asks(rules: str, *kinds: str) -> bool:
    """Whether a DS@GT prompt's answer formatting template holds one of the templates ``bioasq_rules_KIND``."""
    from medcite.llm.prompts import load_prompt, prompt_names

    names = [f"bioasq_rules_{k}" for k in kinds if f"bioasq_rules_{k}" in prompt_names()]
    return any(load_prompt(name)[0]["content"].split("{")[0].strip() in rules for name in names)


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
