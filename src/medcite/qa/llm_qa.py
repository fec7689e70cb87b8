"""BioASQ Phase A+ / B answers by an LLM: DS@GT's and PJs-team's prompting (BioASQ 13b).

DS@GT ("Beyond Retrieval: Ensembling Cross-Encoders and GPT Rerankers with LLMs for Biomedical QA", Verma et
al., CLEF 2025) prompt every question with its snippets as a passage (``bioasq_answer.txt``), after ``shots``
solved training questions of the same type (1 or 10 in the paper, "drawn from the training set": ``draw=random``,
seeded; or, medcite's own choice, ``draw=similar``: the most similar by encoder cosine; never the question itself;
:mod:`.examples`), in one of three prompt styles:

- **style 1**: one call returns the exact and the ideal answer together in one JSON object (answer
  formatting template 1, after Ateia & Kruschwitz 2024; list examples show one gold item each, as the
  paper's query template 1 did);
- **style 2**: the exact answer first; then the ideal-answer prompt carries the system's own exact answer as a
  hint, "(Hint: short answer is ...)" (query template 2; list examples show the whole gold list);
- **style 3**: style 2 with answer formatting template 2 (004 Fig. 5, verbatim in the ``*_strict`` rule files):
  factoid items without synonyms or acronyms, numbers merged into ranges; list items cut from the passage; ideal
  answers that combine the passage's own phrases.

Summary questions get the ideal-answer prompt only.

PJs-team ("Exploring Retrieval-Reranking and LLM-Based Answer Generation for Biomedical QA", Vachharajani, CLEF
2025) prompted differently: ``prompt="pjs"`` sends their one zero-shot prompt (``bioasq_pjs.txt``, Appendix A:
"answer accurately in JSON in <JSON>...</JSON> tags", the snippets numbered as "Context", the question and the
format instructions of its type), one call for the exact and the ideal answer. Their config-5 answered in Phase
B with an "ensemble of Claude Sonnet 3.7 and Sonnet 3" whose combination the paper does not describe:
``ensemble`` names further LLMs (of ``llms``) that answer with the same prompt, and medcite combines the answers
as :func:`combine_answers` says (its own choice). Every reply is read as JSON tolerantly (:mod:`.answer_json`);
an unreadable reply is asked for once more with the reason (``bioasq_repair.txt``), and if that fails too a
fallback is used and said in ``QAAnswer.notes``: "yes" for yes/no (BioASQ's majority answer), no entities, and an
ideal answer made of the best snippets. Exact answers are normalised by type and the ideal answer is cut to
``ideal_max_words``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from pydantic import Field

from ..errors import ConfigError, InputError
from ..llm.base import reject
from ..registry import stage_field
from ..set_option import set_line
from ..settings_base import UsesLLM
from ..types import QUESTION_TYPES, QAAnswer, Question, Snippet
from .answer_json import (
    AnswerFormatError,
    answer_fields,
    cap_words,
    extract_json,
    normalize_entities,
    normalize_ideal,
    normalize_yesno,
    plain_answer,
)
from .base import FACTOID_MAX, QAConfig
from .examples import Draw, ExamplePicker, QueryEncoder, RandomDraw, read_examples

if TYPE_CHECKING:
    from ..context import BuildContext
    from ..llm.base import LLM, Message
    from ..llm.completion import Completion

log = logging.getLogger(__name__)

#: an exact answer: "yes"/"no", ranked entity names, or None (QAAnswer.exact)
Exact: TypeAlias = "str | tuple[str, ...] | None"

YESNO_FALLBACK = "yes"  # 257 of 402 yes/no questions of the BioASQ 7b-11b dev file are "yes"
_EXACT_SHAPE = {"yesno": '"yes"', "factoid": '["entity 1", "entity 2"]', "list": '["item 1", "item 2", "item 3"]'}
_IDEAL_SHAPE = '"one paragraph"'


class LLMQAConfig(UsesLLM, QAConfig):
    """Exact and ideal answers by an LLM prompted as DS@GT and PJs-team (BioASQ 13b): zero/one/few-shot, three
    prompt styles, JSON output read tolerantly with one repair retry."""

    no_llm: ClassVar[dict[str, str]] = {"backend": "extractive"}

    backend: Literal["llm"] = "llm"
    style: Literal[1, 2, 3] = Field(
        1, description="DS@GT prompt style: 1 (exact and ideal in one JSON), 2 (exact first, then the ideal answer "
        "with the system's exact answer as a hint), 3 (style 2 with the stricter answer formatting template 2)."
    )
    shots: int = Field(1, ge=0, le=20, description="Solved training questions shown first (0: zero-shot; DS@GT: 1 "
                       "or 10), of the question's type, chosen as `draw` says.")
    draw: Literal["similar", "random"] = Field(
        "similar", description="How the `shots` examples are chosen among the training questions of the question's "
        "type: 'similar' (medcite's choice: the most similar bodies by `encoder` cosine) or 'random' (DS@GT: "
        "'drawn from the training set'; seeded by `draw_seed` and the question id)."
    )
    draw_seed: int = Field(13, ge=0, description="Seed of the random draw (draw=random): with the question id, it "
                           "fixes which examples each question gets.")
    examples: str | None = Field(
        None, description="BioASQ training JSON (.json or .json.gz) the examples come from; needed when shots > 0."
    )
    encoder: stage_field("encoder") = Field(  # type: ignore[valid-type]
        "minilm", validate_default=True,
        description="Encoder that ranks training questions by similarity to the question (draw=similar; packaged "
        "MiniLM).",
    )
    passage_snippets: int | None = Field(
        20, ge=1, description="Most snippets shown in the passage of the question, the first ones (None: all, as "
        "DS@GT's 'Passage: {All snippets}', 004 Fig. 4).")
    example_snippets: int | None = Field(
        5, ge=1, description="Most snippets shown in the passage of each example (None: all).")
    dedupe_snippets: bool = Field(
        True, description="Show a snippet whose text was shown already (BioASQ gold snippets repeat) only once; "
        "false: every snippet as given.")
    context_tokens: int | None = Field(
        None, ge=256, description="The LLM's context window in tokens: the question's snippets are trimmed from the "
        "end, whole, until the prompt (estimated at one token per 3 characters, more tokens than English text "
        "takes) and max_tokens fit, and the answer's notes and the log say so per question (PJs-team, 002 §2.3: "
        "'trimming input to the LLM to fit within its maximum token limit'). None: never trimmed.")
    max_tokens: int | None = Field(512, ge=1, description="Most tokens generated per call (None: the LLM's).")
    repair: bool = Field(
        True, description="Ask once more, with the reason, when a reply is not the JSON asked for (medcite's safety "
        "net; no paper asks again: their presets set it false).")
    json_instruction: bool = Field(
        True, description="prompt=dsgt: end each query with medcite's request for a JSON object of the answer's "
        "form ('Return only a JSON object of this form, with no other text: {...}'), after the answer formatting "
        "template. False: the query template as 004 Fig. 4 prints it, and a reply without JSON is read as plain "
        "text (a yes/no word, one entity per line or comma, the ideal answer as written).")
    prompt: Literal["dsgt", "pjs"] = Field(
        "dsgt", description="'dsgt': DS@GT's prompts (styles 1-3, shots); 'pjs': PJs-team's one zero-shot prompt "
        "(bioasq_pjs.txt: <JSON>...</JSON> tags, numbered snippets as Context), exact and ideal in one call."
    )
    ensemble: list[str] = Field(
        default_factory=list, description="Further LLMs (names in `llms`) that answer with the same prompt; the "
        "answers are combined (PJs-team config-5; see qa.llm_qa.combine_answers). Empty: one LLM."
    )
    aplus_ensemble: list[str] | None = Field(
        None, description="Phase A+ only: the further LLMs there (None: `ensemble` in every phase; []: `llm` "
        "alone). PJs-team config-5 answered Phase B with its ensemble but Phase A+ with Claude 3 Sonnet alone "
        "(002 §2.2)."
    )

    def llm_names(self) -> set[str | None]:
        return {self.llm, *self.ensemble, *(self.aplus_ensemble or ())}

    def model_names(self) -> list[str]:
        if not self.shots or self.draw != "similar":
            return []
        return self.encoder.model_names()  # type: ignore[no-any-return,attr-defined]


class _Unreadable(Exception):
    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def shown_snippets(snippets: Sequence[Snippet], limit: int | None, dedupe: bool = True) -> list[Snippet]:
    """The snippets a passage shows: in their order, empty ones left out, a repeated text once (``dedupe``), at
    most ``limit`` (None: all)."""
    seen: set[str] = set()
    out = []
    for s in snippets:
        key = " ".join(s.text.split())
        if not key or (dedupe and key in seen):
            continue
        seen.add(key)
        out.append(s)
        if limit is not None and len(out) >= limit:
            break
    return out


#: characters per token of the context estimate (qa.context_tokens): fewer than English text averages (about 4 in
#: GPT-style tokenizers), so the estimate errs on the side of more tokens
CHARS_PER_TOKEN = 3


def estimate_tokens(messages: Sequence[Message]) -> int:
    """Tokens of a chat, estimated from above by :data:`CHARS_PER_TOKEN` (no tokenizer of a served model here)."""
    return sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN + 4 * len(messages)


class LLMQA:
    """The LLM qa backend (see the module docstring)."""

    name = "llm"
    Config = LLMQAConfig

    def __init__(self, llm: LLM, *, style: int = 1, shots: int = 0, examples: Sequence[Question] = (),
                 encoder: QueryEncoder | None = None, draw: str = "similar", draw_seed: int = 13,
                 ideal_max_words: int = 200, list_max: int = 10,
                 passage_snippets: int | None = 20,
                 example_snippets: int | None = 5, max_tokens: int | None = 512, repair: bool = True,
                 prompt_dir: str | Path | None = None, prompt: str = "dsgt",
                 ensemble: Sequence[LLMQA] = (), dedupe_snippets: bool = True, context_tokens: int | None = None,
                 json_instruction: bool = True) -> None:
        if prompt not in ("dsgt", "pjs"):
            raise ConfigError(f"unknown BioASQ answer prompt {prompt!r}", hint="use 'dsgt' or 'pjs'")
        if style not in (1, 2, 3):
            raise ConfigError(f"unknown prompt style {style!r}", hint="use 1, 2 or 3 (DS@GT, BioASQ 13b)")
        if draw not in ("similar", "random"):
            raise ConfigError(f"unknown few-shot draw {draw!r}", hint="use 'similar' or 'random'")
        if shots and draw == "similar" and encoder is None:
            raise ConfigError("few-shot examples by similarity need an encoder to rank them",
                              hint="pass encoder=..., or draw='random'")
        self.llm = llm
        self.style = style
        self.shots = shots
        self.picker: Draw | None = None
        if shots and draw == "random":
            self.picker = RandomDraw(examples, draw_seed)
        elif shots and encoder is not None:  # (checked above)
            self.picker = ExamplePicker(examples, encoder)
        self.ideal_max_words = ideal_max_words
        self.list_max = list_max
        self.passage_snippets = passage_snippets
        self.example_snippets = example_snippets
        self.max_tokens = max_tokens
        self.repair = repair
        self.prompt_dir = prompt_dir
        self.prompt = prompt
        self.ensemble = list(ensemble)
        self.dedupe_snippets = dedupe_snippets
        self.context_tokens = context_tokens
        self.json_instruction = json_instruction

    @classmethod
    def from_config(cls, cfg: LLMQAConfig, ctx: BuildContext) -> LLMQA:
        llm = ctx.llm(cfg.llm, purpose="qa.backend 'llm'")
        examples: list[Question] = []
        encoder = None
        if cfg.shots:
            if not cfg.examples:
                raise ConfigError(f"qa.shots={cfg.shots} needs training questions to draw the examples from",
                                  hint=f"{set_line('qa.examples', 'TRAINING.json')} (a BioASQ JSON file), or "
                                  + set_line("qa.shots", 0))
            examples = read_examples(cfg.examples)
            encoder = ctx.encoder(cfg.encoder) if cfg.draw == "similar" else None
        common = dict(style=cfg.style, shots=cfg.shots, examples=examples, encoder=encoder, draw=cfg.draw,
                      draw_seed=cfg.draw_seed,
                      ideal_max_words=cfg.ideal_max_words, list_max=cfg.list_max,
                      passage_snippets=cfg.passage_snippets,
                      example_snippets=cfg.example_snippets, max_tokens=cfg.max_tokens, repair=cfg.repair,
                      prompt=cfg.prompt, dedupe_snippets=cfg.dedupe_snippets, context_tokens=cfg.context_tokens,
                      json_instruction=cfg.json_instruction)
        others = [cls(ctx.llm(name, purpose="qa.ensemble"), **common) for name in cfg.ensemble]  # type: ignore[arg-type]
        return cls(llm, **common, ensemble=others)  # type: ignore[arg-type]

    # -- prompts ---------------------------------------------------------------------------------------
    def _limit(self, qtype: str) -> int:
        return FACTOID_MAX if qtype == "factoid" else self.list_max

    def _rules(self, qtype: str, part: str) -> str:
        from ..llm.prompts import render

        strict = "_strict" if self.style == 3 and qtype != "yesno" else ""
        parts = []
        if part in ("exact", "joint"):
            parts.append(render(f"bioasq_rules_{qtype}{strict}", self.prompt_dir,
                                **({} if qtype == "yesno" else {"max_items": self._limit(qtype)}))[0]["content"])
        if part in ("ideal", "joint"):
            ideal = "bioasq_rules_ideal_strict" if self.style == 3 else "bioasq_rules_ideal"
            parts.append(render(ideal, self.prompt_dir, max_words=self.ideal_max_words)[0]["content"])
        return "\n".join(parts)

    @staticmethod
    def shape(qtype: str, part: str) -> str:
        """The JSON object a reply must be, as shown to the model."""
        fields = []
        if part in ("exact", "joint"):
            fields.append(f'"exact_answer": {_EXACT_SHAPE[qtype]}')
        if part in ("ideal", "joint"):
            fields.append(f'"ideal_answer": {_IDEAL_SHAPE}')
        return "{" + ", ".join(fields) + "}"

    @staticmethod
    def hint(exact: str | Sequence[str] | None) -> str:
        """DS@GT query template 2: the short answer given to the ideal-answer prompt ("" when there is none)."""
        if not exact:
            return ""
        text = exact if isinstance(exact, str) else ", ".join(exact)
        return f" (Hint: short answer is {text})"

    def _user(self, body: str, snippets: Sequence[Snippet], qtype: str, part: str, hint: str) -> list[Message]:
        from ..llm.prompts import render

        if self.prompt == "pjs":
            context = "\n".join(f"{i}. {' '.join(s.text.split())}" for i, s in enumerate(snippets, start=1))
            fmt = render(f"bioasq_pjs_format_{qtype}", self.prompt_dir)[0]["content"]
            return render("bioasq_pjs", self.prompt_dir, context=context, question=" ".join(body.split()), format=fmt)
        passage = "\n".join(" ".join(s.text.split()) for s in snippets)
        instruction = (render("bioasq_json", self.prompt_dir, shape=self.shape(qtype, part))[0]["content"]
                       if self.json_instruction else "")
        return render("bioasq_answer", self.prompt_dir, passage=passage, question=" ".join(body.split()),
                      hint=hint, rules=self._rules(qtype, part), json=("\n" + instruction) if instruction else "")

    def _gold(self, ex: Question, part: str) -> tuple[dict[str, object], str | list[str] | None]:
        """The example's gold reply for ``part`` and its exact answer (for a hint)."""
        exact: str | list[str] | None = None
        if ex.type == "yesno":
            exact = normalize_yesno(ex.exact_answer)
        elif ex.type in ("factoid", "list") and isinstance(ex.exact_answer, tuple):
            names = [names[0] for names in ex.exact_answer if names]
            exact = names[: self._limit(ex.type)]
            if ex.type == "list" and self.style == 1:
                exact = exact[:1]  # DS@GT query template 1: one gold list item per example
        reply: dict[str, object] = {}
        if part in ("exact", "joint"):
            reply["exact_answer"] = exact
        if part in ("ideal", "joint"):
            reply["ideal_answer"] = cap_words(ex.ideal_answers[0], self.ideal_max_words)
        return reply, exact

    def messages(self, question: Question, snippets: Sequence[Snippet], part: str, hint: str = "",
                 examples: Sequence[Question] = ()) -> list[Message]:
        """The chat of one call: system, each example as a user turn and its gold reply, then the question."""
        final = self._user(question.body, snippets, question.type, part, hint)
        out: list[Message] = [final[0]] if final[0]["role"] == "system" else []
        for ex in examples:
            gold, exact = self._gold(ex, part)
            ex_hint = self.hint(exact) if part == "ideal" and self.style != 1 else ""
            turn = self._user(ex.body, shown_snippets(ex.snippets, self.example_snippets, self.dedupe_snippets),
                              ex.type, part, ex_hint)
            out += [m for m in turn if m["role"] != "system"]
            out.append({"role": "assistant", "content": json.dumps(gold, ensure_ascii=False)})
        return out + [m for m in final if m["role"] != "system"]

    # -- calls -----------------------------------------------------------------------------------------
    def _complete(self, messages: list[Message], step: str, attempt: int) -> Completion:
        from ..llm.trace import trace_context

        with trace_context(stage="qa", step=step, attempt=attempt):
            return self.llm.complete(messages, max_tokens=self.max_tokens)

    def _read(self, text: str, qtype: str, part: str) -> tuple[Exact, str | None]:
        # a part not asked for is None (answer_fields gives None for it)
        try:
            found = extract_json(text)
        except AnswerFormatError:
            if self.json_instruction or self.prompt != "dsgt" or part == "joint":
                raise
            found = plain_answer(text, qtype, part)  # no JSON was asked for: the reply as written
        raw_exact, raw_ideal = answer_fields(found, part in ("exact", "joint"), part in ("ideal", "joint"))
        exact: Exact = None
        ideal: str | None = None
        if part in ("exact", "joint"):
            exact = (normalize_yesno(raw_exact) if qtype == "yesno"
                     else normalize_entities(raw_exact, self._limit(qtype)))
        if part in ("ideal", "joint"):
            ideal = normalize_ideal(raw_ideal, self.ideal_max_words)
        return exact, ideal

    def _ask(self, messages: list[Message], qtype: str, part: str, notes: list[str]) -> tuple[Exact, str | None]:
        """One call, and one repair call when its reply cannot be read; raises _Unreadable after that."""
        reply = self._complete(messages, part, 1)
        text = reply.text
        try:
            return self._read(text, qtype, part)
        except AnswerFormatError as exc:
            error = str(exc)
        reject(self.llm, reply, f"{part}: {error}")
        if not self.repair:
            raise _Unreadable(error)
        from ..llm.prompts import render

        retry = [*messages, {"role": "assistant", "content": text},
                 *render("bioasq_repair", self.prompt_dir, error=error, shape=self.shape(qtype, part))]
        reply = self._complete(retry, part, 2)
        try:
            got = self._read(reply.text, qtype, part)
        except AnswerFormatError as exc:
            reject(self.llm, reply, f"{part} after the repair request: {exc}")
            raise _Unreadable(f"{error}; after the repair request: {exc}") from None
        notes.append(f"{part}: reply repaired after: {error}")
        return got

    def _fit(self, question: Question, shown: list[Snippet], examples: Sequence[Question],
             notes: list[str]) -> list[Snippet]:
        """The snippets of the question's passage cut, last ones first, until the longest prompt of the question
        fits ``context_tokens`` with ``max_tokens`` to spare (PJs-team 002 §2.3); the cut is noted and logged."""
        if self.context_tokens is None:
            return shown
        budget = self.context_tokens - (self.max_tokens or 0)
        one_call = self.style == 1 or self.prompt == "pjs"
        part = "ideal" if question.type == "summary" else "joint" if one_call else "exact"
        hint = self.hint(["x" * 40]) if part == "exact" else ""  # the ideal prompt of styles 2-3 adds a hint

        def size(kept: list[Snippet]) -> int:
            return max(estimate_tokens(self.messages(question, kept, p, hint if p == "ideal" else "", examples))
                       for p in ({part, "ideal"} if part == "exact" else {part}))

        kept = list(shown)
        while kept and size(kept) > budget:
            kept.pop()
        if len(kept) < len(shown):
            note = (f"context trimmed to {len(kept)} of {len(shown)} snippets to fit {self.context_tokens:,} tokens "
                    f"(estimated {size(shown):,} with all of them, {self.max_tokens or 0} kept for the reply)")
            notes.append(note)
            log.info("question %s: %s", question.id, note)
        return kept

    def _fallback_ideal(self, snippets: Sequence[Snippet]) -> str:
        return cap_words(" ".join(" ".join(s.text.split()) for s in snippets), self.ideal_max_words)

    def answer(self, question: Question, snippets: Sequence[Snippet]) -> QAAnswer:
        if question.type not in QUESTION_TYPES:
            raise InputError(f"question {question.id} has type {question.type!r}",
                             hint=f"BioASQ types are {', '.join(QUESTION_TYPES)}")
        first = self._answer_one(question, snippets)
        if not self.ensemble:
            return first
        answers = [first, *(m._answer_one(question, snippets) for m in self.ensemble)]
        return combine_answers(answers, question.type, self.list_max)

    def _answer_one(self, question: Question, snippets: Sequence[Snippet]) -> QAAnswer:
        qtype = question.type
        shown = shown_snippets(snippets, self.passage_snippets, self.dedupe_snippets)
        examples = self.picker.pick(question, self.shots) if self.picker is not None else []
        notes = [(f"style {self.style}" if self.prompt == "dsgt" else "PJs-team prompt") + f", {len(examples)}-shot"
                 + (f" (examples {', '.join(e.id for e in examples)})" if examples else "")]
        shown = self._fit(question, shown, examples, notes)
        exact: Exact = None
        ideal: str | None = None
        if qtype == "summary" or self.style == 1 or self.prompt == "pjs":
            part = "ideal" if qtype == "summary" else "joint"
            try:
                exact, ideal = self._ask(self.messages(question, shown, part, "", examples), qtype, part, notes)
            except _Unreadable as exc:
                notes.append(f"{part}: reply unreadable ({exc.error})")
        else:
            try:
                exact, _ = self._ask(self.messages(question, shown, "exact", "", examples), qtype, "exact", notes)
            except _Unreadable as exc:
                notes.append(f"exact: reply unreadable ({exc.error})")
            hint = self.hint(exact)
            try:
                _, ideal = self._ask(self.messages(question, shown, "ideal", hint, examples), qtype, "ideal", notes)
            except _Unreadable as exc:
                notes.append(f"ideal: reply unreadable ({exc.error})")
        if qtype == "summary":
            exact = None
        elif exact is None:
            exact = YESNO_FALLBACK if qtype == "yesno" else ()
            notes.append(f"fallback exact answer: {exact!r}" + (" (BioASQ's majority answer)" if qtype == "yesno"
                                                                 else " (no entities)"))
        if ideal is None:
            ideal = self._fallback_ideal(shown)
            notes.append("fallback ideal answer: the snippets' own sentences")
        return QAAnswer(question.id, exact, ideal, tuple(shown), tuple(notes), tuple(e.id for e in examples))


def _key(name: str) -> str:
    return " ".join(name.lower().split())


def combine_answers(answers: Sequence[QAAnswer], qtype: str, list_max: int = 100) -> QAAnswer:
    """Several LLMs' answers to one question as one (PJs-team config-5: "ensemble of Claude Sonnet 3.7 and
    Sonnet 3"; the paper does not say how they were combined, so this is medcite's rule):

    - yes/no: the majority answer; a tie goes to the first LLM's (``qa.llm``);
    - factoid: the LLMs' names interleaved by rank (every first name, then every second...), a name given
      twice kept once (case and spacing ignored), at most 5;
    - list: the union, the first LLM's items first, repeats kept once, at most ``list_max``;
    - ideal answer: the first LLM's.
    """
    if not answers:
        raise ValueError("no answers to combine")
    first = answers[0]
    exact: Any = first.exact
    if qtype == "yesno":
        votes = [a.exact for a in answers]
        exact = max(dict.fromkeys(votes), key=votes.count)  # ties: the earliest, the first LLM's
    elif qtype in ("factoid", "list"):
        runs = [list(a.exact or ()) for a in answers]
        order = ([run[i] for i in range(max(map(len, runs), default=0)) for run in runs if i < len(run)]
                 if qtype == "factoid" else [x for run in runs for x in run])
        seen: set[str] = set()
        names = []
        for name in order:
            if _key(str(name)) not in seen:
                seen.add(_key(str(name)))
                names.append(name)
        exact = tuple(names[: FACTOID_MAX if qtype == "factoid" else list_max])
    notes = [*first.notes, f"ensemble of {len(answers)} LLMs: " + "; ".join(
        f"LLM {i + 1}: exact {a.exact!r}" for i, a in enumerate(answers))]
    return QAAnswer(first.question_id, exact, first.ideal, first.sources, tuple(notes), first.examples)
