"""Which resolved settings a run reads (issue 43): every leaf of a settings tree that a run of one task does *not*
read, with the reason, worked out from the settings alone.

:mod:`.provenance` gives every resolved setting of a paper preset one source: a quote of the paper, medcite's
choice where the paper is silent, or "not used by this run". The third comes from here, so that no preset has to
say it and none can claim it falsely: a setting is unread only by a rule below, each of which follows the code that
reads it (the stage a task never builds, a backend's option that another option switches off). Everything no rule
names counts as read, so a new setting with a default is read until a rule here says otherwise, and every paper
preset must then say where its value comes from (tests/unit/test_preset_sources.py).

The tasks a paper run declares (its preset's ``task``, ``config.PRESET_TASKS``): ``biogen-a`` (``medcite ground``:
retrieval, rerank, the stance stage, ``ground``), ``biogen-b`` and ``medhopqa`` (``medcite run``: retrieval, rerank,
evidence, generation, verification, and ``ground`` / ``hops`` in the flows that use them) and ``bioasq``
(``medcite bioasq``: retrieval and rerank for Phase A, ``bioasq`` snippets, ``qa`` answers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal, get_args

from pydantic import BaseModel

from .. import registry
from ..errors import ConfigError
from ..io import JSONObject
from ..settings_base import BackendConfig
from .gates import gate_kind
from .offline import grounds, uses_stance

if TYPE_CHECKING:
    from ..config import Settings

Task = Literal["biogen-a", "biogen-b", "medhopqa", "bioasq"]
TASKS: tuple[str, ...] = get_args(Task)
#: leaves that are not settings of a run: the name of the preset the settings came from
NOT_SETTINGS = frozenset({"preset"})


def leaves(tree: object, path: str = "") -> Iterator[tuple[str, object]]:
    """(dotted path, value) of every leaf of a settings dump (``model_dump(mode="json")``): an item of a list of
    configs by its index; a list of plain values (names, numbers), an empty list or object as one leaf."""
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            if not path and key in NOT_SETTINGS:
                continue
            yield from leaves(value, f"{path}.{key}" if path else key)
    elif isinstance(tree, list) and tree and any(isinstance(v, (dict, list)) for v in tree):
        for i, value in enumerate(tree):
            yield from leaves(value, f"{path}.{i}")
    else:
        yield path, tree


@dataclass
class RunView:
    """The settings of one run of ``task``, with what the rules ask of them."""

    settings: Settings
    task: str
    tree: JSONObject = field(init=False)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ConfigError(f"unknown task {self.task!r}", hint=f"one of {', '.join(TASKS)}")
        self.tree = self.settings.model_dump(mode="json")

    @property
    def a(self) -> bool:
        return self.task == "biogen-a"

    @property
    def b(self) -> bool:
        return self.task in ("biogen-b", "medhopqa")

    @property
    def bioasq(self) -> bool:
        return self.task == "bioasq"

    @cached_property
    def reranks(self) -> bool:
        """Whether ``rerank`` reorders anything (not the ``none`` reranker, which builds to no stage)."""
        return bool(getattr(registry.config_class("rerank", self.settings.rerank.backend), "reranks", True))

    @cached_property
    def variant_reranker(self) -> bool:
        """Whether the reranker reads the question with its variants (MedCPT), not ``retrieve.rerank_query``."""
        backend = registry.load("rerank", self.settings.rerank.backend)
        return hasattr(backend, "rerank_variants")

    @cached_property
    def one_run(self) -> bool:
        """Whether every retrieval of this run is one ranking that RRF fuses to itself: one branch searching the
        question alone, no per-branch rerank, no multi-hop pooling, no Task A contradiction query set."""
        s, r = self.settings, self.settings.retrieve
        alone = [q.backend for q in r.queries] == ["original"] and len(r.branches) == 1 and r.branch_rerank is None
        contradict = (self.read_section("ground") is None and s.ground.contradict_from == "question"
                      and len(s.ground.contradict_queries) > 1)
        return alone and r.fusion == "rrf" and not contradict and not (self.b and s.flow == "multi-hop")

    def read_section(self, section: str) -> str | None:
        """Why the top-level section (or ``flow``) is not read by this task, or None when it is."""
        s = self.settings
        if section == "corpus":
            return "ingest options, read by `medcite ingest`, not by a run"
        engine = registry.load("engine", s.index.backend)
        if section == "index.milvus" and getattr(engine, "options_section", None) != "milvus":  # a plugin: none
            return f"index.backend is {s.index.backend!r}: the Milvus server settings are read only by 'milvus'"
        if section in ("flow", "evidence", "generate", "verify") and not self.b:
            return f"a {self.task} run writes no Task B answer: no evidence selection, generation or verification"
        if section == "hops" and not (self.b and s.flow == "multi-hop"):
            return f"flow is {s.flow!r}: the hops settings are read only by flow=multi-hop"
        if section == "ground" and not (self.a or (self.b and grounds(s))):
            return "no sentence is grounded: read by Task A and the generate-then-ground flow"
        if section == "stance" and (self.bioasq or not uses_stance(s, self.a)):
            return "no stage of this run judges stance (no Task A grounding, citation check or stance gate)"
        if section == "stance" and self.a and s.ground.judge == "listwise":
            return "ground.judge is 'listwise': the LLM picks the citations, no stance stage judges them"
        if section in ("bioasq", "qa") and not self.bioasq:
            return f"BioASQ settings, read by `medcite bioasq`, not by a {self.task} run"
        return None

    @cached_property
    def configs(self) -> list[tuple[str, BaseModel]]:
        """(dotted path, config) of every backend config in a section this run reads."""
        out: list[tuple[str, BaseModel]] = []

        def walk(node: object, path: str) -> None:
            if isinstance(node, BaseModel):
                if isinstance(node, BackendConfig) and path:
                    out.append((path, node))
                for name in type(node).model_fields:
                    walk(getattr(node, name), f"{path}.{name}" if path else name)
            elif isinstance(node, (list, tuple)):
                for i, item in enumerate(node):
                    walk(item, f"{path}.{i}")
            elif isinstance(node, dict):
                for key, item in node.items():
                    walk(item, f"{path}.{key}")

        walk(self.settings, "")
        return [(p, c) for p, c in out if self.unread_path(p, refs=False) is None]

    @cached_property
    def llms(self) -> set[str | None]:
        """The LLMs the read stages call (None: the default ``llm``)."""
        s = self.settings
        names = {n for path, cfg in self.configs if not path.startswith(("llm", "llms."))
                 for n in cfg.llm_names()}  # type: ignore[attr-defined]
        if self.b and (s.verify.sufficiency_rounds or s.flow == "generate-then-ground"):
            names.add(s.verify.llm)
        if self.b and s.flow == "multi-hop":
            names.add(s.hops.llm)
        if self.read_section("ground") is None and s.ground.judge == "listwise":
            names.add(s.ground.llm)
        return names

    @cached_property
    def indexes(self) -> set[str]:
        """The named indexes a read stage searches or reads."""
        used = {b.index for b in self.settings.retrieve.branches}
        used |= {str(cfg.index) for path, cfg in self.configs  # type: ignore[attr-defined]
                 if not path.startswith("indexes.") and isinstance(getattr(cfg, "index", None), str)}
        return used

    def unread_path(self, path: str, refs: bool = True) -> str | None:
        """Why the setting at ``path`` is not read by this run, or None when it is (``refs``: also whether the LLM
        or index it belongs to is one a read stage names; False while those are being worked out)."""
        parts = path.split(".")
        for section in (".".join(parts[:2]), parts[0]):
            why = self.read_section(section)
            if why:
                return why
        if refs and parts == ["llms"]:
            return "no LLM is defined in `llms`"
        if refs and parts[0] == "llm" and None not in self.llms:
            return "no stage of this run calls the default LLM `llm` (they name LLMs of `llms`)"
        if refs and parts[0] == "llms" and len(parts) > 1 and parts[1] not in self.llms:
            return f"no stage of this run calls the LLM {parts[1]!r}"
        if refs and parts[0] == "indexes" and len(parts) > 1 and parts[1] not in self.indexes:
            return f"no branch or stage of this run uses the index {parts[1]!r}"
        for rule in RULES:
            if rule.matches(parts):
                why = rule.unread(self, parts)
                if why:
                    return why
        return None


@dataclass(frozen=True)
class Rule:
    """Leaves matching ``pattern`` (dotted; ``*`` is any one part; a pattern matches every leaf below it) are not
    read when ``unread`` gives a reason."""

    pattern: str
    unread: Callable[[RunView, list[str]], str | None]

    def matches(self, parts: list[str]) -> bool:
        want = self.pattern.split(".")
        return len(parts) >= len(want) and all(w in ("*", p) for w, p in zip(want, parts, strict=False))


def _node(run: RunView, parts: list[str]) -> JSONObject:
    """The config (a dict of the dump) that holds the leaf ``parts``."""
    node: object = run.tree
    for part in parts[:-1]:
        if isinstance(node, list) and part.isdigit():
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return {}
    return node if isinstance(node, dict) else {}


def _at(run: RunView, parts: list[str], depth: int) -> JSONObject:
    """The config at the first ``depth`` parts of the leaf's path."""
    return _node(run, [*parts[:depth], "_"])


def _when(test: Callable[[JSONObject], bool], why: str, depth: int) -> Callable[[RunView, list[str]], str | None]:
    """A rule reading the config ``depth`` parts down the leaf's path: unread (``why``) when ``test`` holds."""
    def check(run: RunView, parts: list[str]) -> str | None:
        cfg = _at(run, parts, depth)
        return why if cfg and test(cfg) else None
    return check


def _faiss(kinds: tuple[str, ...], what: str) -> Rule:
    return Rule(f"indexes.*.{what}", _when(lambda c: c.get("backend") == "faiss" and c.get("index_type") not in kinds,
                                            f"read only by a FAISS index_type {' or '.join(map(repr, kinds))}", 2))


def _generate(field_name: str, test: Callable[[JSONObject], bool], why: str) -> Rule:
    return Rule(f"generate.{field_name}", _when(lambda c: c.get("backend") == "llm" and test(c), why, 1))


def _qa(field_name: str, test: Callable[[JSONObject], bool], why: str) -> Rule:
    return Rule(f"qa.{field_name}", _when(lambda c: c.get("backend") == "llm" and test(c), why, 1))


def _ground(field_name: str, test: Callable[[RunView], bool], why: str) -> Rule:
    return Rule(f"ground.{field_name}", lambda run, _parts: why if test(run) else None)


def _verify(field_name: str, test: Callable[[RunView], bool], why: str) -> Rule:
    return Rule(f"verify.{field_name}", lambda run, _parts: why if test(run) else None)


def _retrieve(field_name: str, test: Callable[[RunView], str | None]) -> Rule:
    return Rule(f"retrieve.{field_name}", lambda run, _parts: test(run))


def _prompt_fields(c: JSONObject) -> set[str]:
    """The placeholders of the prompt an LLM generator's mode renders."""
    from ..llm.prompts import placeholders

    name = c.get("prompt") if c.get("mode") == "cited" else c.get("plain_prompt")
    try:
        return placeholders(str(name))
    except ConfigError:
        return {"max_sentences"}  # a prompt folder of the user's: assume it reads everything


def _no_posthoc(c: JSONObject) -> bool:
    return bool(c.get("mode") != "posthoc")


def _no_judge(c: JSONObject) -> bool:
    return bool(c.get("mode") != "posthoc" or c.get("posthoc_judge") is None)


def _answer_first(keep: str) -> Callable[[RunView, list[str]], str | None]:
    """The generate-then-ground flow reads, of a section, only the field ``keep``."""
    def check(run: RunView, parts: list[str]) -> str | None:
        if run.b and run.settings.flow == "generate-then-ground" and parts[1:2] != [keep]:
            return "flow is 'generate-then-ground': the LLM answers first and each sentence is grounded"
        return None
    return check


def _citation_check(run: RunView) -> bool:
    return run.settings.verify.citations in ("drop", "regenerate")


#: every rule by which a setting is not read (see the module docstring); each follows the code that reads it
RULES: tuple[Rule, ...] = (
    # the generate-then-ground flow (pipeline/loops.py answer_first): the LLM answers with no evidence selection or
    # generator, and each sentence is grounded; of the generation settings only the word limit is read
    *(Rule(section, _answer_first(keep)) for section, keep in (("evidence", ""), ("generate", "max_words"),
                                                                ("verify", "llm"))),
    # the reranker: the `none` reranker builds to no stage, so nothing of it or about it is read
    Rule("rerank", lambda run, parts: None if run.reranks or parts[-1] == "backend"
         else "rerank.backend is 'none': no rerank stage"),
    _retrieve("rerank_per_query", lambda run: None if run.reranks else "rerank.backend is 'none': no rerank stage"),
    _retrieve("rerank_query", lambda run: "rerank.backend is 'none': no rerank stage" if not run.reranks else
              "rerank.backend reads the question with its variants, not retrieve.rerank_query"
              if run.variant_reranker else "retrieve.rerank_per_query: each query is its own candidates' query"
              if run.settings.retrieve.rerank_per_query else None),
    # fusion (RetrievalPipeline.combine): one run fuses to itself under RRF; RRF reads rrf_k, the score fusions read
    # norm (multi-hop pools by RRF)
    *(_retrieve(f, lambda run: "one branch searches one query: there is nothing to fuse" if run.one_run else None)
      for f in ("fusion", "rrf_k")),
    _retrieve("norm", lambda run: None if run.settings.retrieve.fusion in ("wsum", "pool")
              else f"retrieve.fusion is {run.settings.retrieve.fusion!r}: read only by 'wsum' and 'pool'"),
    _retrieve("rrf_k", lambda run: None if run.settings.retrieve.fusion == "rrf" or run.settings.flow == "multi-hop"
              else f"retrieve.fusion is {run.settings.retrieve.fusion!r}: read only by 'rrf'"),
    # FAISS layouts (faiss_index): each reads its own parameters
    *(_faiss(("ivfpq",), f) for f in ("nlist", "pq_m", "pq_nbits", "nprobe", "rerank", "train_size")),
    *(_faiss(("hnsw",), f) for f in ("hnsw_m", "ef_construction", "ef_search")),
    # the LLM generator (generate/llm_generator.py): 'cited' reads `prompt`, 'posthoc' its own options
    *(_generate(f, _no_posthoc, "generate.mode is 'cited': read only by mode=posthoc")
      for f in ("posthoc_judge", "plain_prompt")),
    _generate("posthoc_threshold", lambda c: c.get("mode") != "posthoc" or c.get("posthoc_judge") is not None,
              "read only by mode=posthoc without a posthoc_judge (TF-IDF attribution)"),
    *(_generate(f, _no_judge, "read only by mode=posthoc with a posthoc_judge")
      for f in ("posthoc_candidates", "posthoc_pick", "posthoc_shortlist")),
    _generate("prompt", lambda c: c.get("mode") == "posthoc", "generate.mode is 'posthoc': its prompt is plain_prompt"),
    _generate("max_sentences", lambda c: "max_sentences" not in _prompt_fields(c),
              "the generation prompt asks for no number of sentences (no {max_sentences} in it)"),
    Rule("generate.posthoc_judge", lambda run, parts: None if parts[-1] in ("backend", "llm") or not run.b
         or run.settings.generate.posthoc_pick != "listwise"  # type: ignore[union-attr]
         else "generate.posthoc_pick is 'listwise': the judge's LLM picks; its stance options are not read"),
    _generate("condense_prompt", lambda c: not c.get("condense"), "generate.condense is false"),
    # verification (pipeline/loops.py, pipeline/gate.py)
    _verify("max_rounds", lambda run: run.settings.verify.citations != "regenerate",
            "read only by verify.citations=regenerate"),
    _verify("sufficiency_evidence", lambda run: not run.settings.verify.sufficiency_rounds,
            "verify.sufficiency_rounds is 0: no sufficiency loop"),
    _verify("llm", lambda run: not run.settings.verify.sufficiency_rounds
            and run.settings.flow != "generate-then-ground", "no sufficiency loop and no answer-first flow"),
    _verify("gate", lambda run: _citation_check(run) or run.settings.flow == "generate-then-ground",
            "the stance check (or the answer-first grounding) judges every citation: no support gate"),
    _verify("gate_threshold", lambda run: _citation_check(run) or gate_kind(run.settings) != "overlap",
            "read only by the 'overlap' gate"),
    _verify("min_support", lambda run: run.settings.verify.citations == "off" and gate_kind(run.settings) != "stance"
            and not run.settings.verify.corroborate, "no citation check, stance gate or corroboration"),
    _verify("keep_neutral", lambda run: run.settings.verify.citations == "off" and gate_kind(run.settings) != "stance"
            and not run.settings.verify.corroborate, "no citation check, stance gate or corroboration"),
    # grounding (pipeline/grounding.py, pipeline/loops.py)
    *(_ground(f, lambda run: run.settings.ground.judge == "listwise", "ground.judge is 'listwise': the LLM picks")
      for f in ("min_support", "min_contradict", "anchor", "order")),
    *(_ground(f, lambda run: run.settings.ground.judge != "listwise", "read only by ground.judge=listwise")
      for f in ("llm", "support_prompt", "contradict_prompt")),
    *(_ground(f, lambda run: run.settings.ground.contradict_from != "question",
              "read only by ground.contradict_from=question") for f in ("contradict_queries", "contradict_candidates")),
    *(_ground(f, lambda run: run.a, "read only by the generate-then-ground flow, not by Task A")
      for f in ("persona", "unsupported")),
    # an LLM judges the abstract itself (attribute/llm_stance.py), not the passages a model backend picks
    *(Rule(f"{where}.{f}", _when(lambda c: c.get("backend") == "llm", "an LLM stance judge reads the abstract "
                                 "(abstract_words), not chosen passages", where.count(".") + 1))
      for where in ("stance", "generate.posthoc_judge", "ground.contradict_filter")
      for f in ("whole_text_chars", "sentences")),
    # evidence: one abstract per document selects nothing by MMR (evidence/abstracts.py)
    Rule("evidence.lam", _when(lambda c: c.get("backend") == "abstracts", "evidence.backend 'abstracts' selects "
                                                                           "nothing by MMR", 1)),
    # BioASQ snippets (evidence/bioasq_snippets.py) and LLM answers (qa/llm_qa.py)
    *(Rule(f"design.{f}", lambda run, _parts: None if run.settings.design.prefer_levels
           else "design.prefer_levels is off: no hits are reordered by evidence level")
      for f in ("levels_depth", "equal_within")),
    Rule("bioasq.encoder", _when(lambda c: c.get("scorer") != "embedding", "read only by bioasq.scorer=embedding", 1)),
    Rule("bioasq.reranker", _when(lambda c: c.get("scorer") != "reranker", "read only by bioasq.scorer=reranker", 1)),
    *(_qa(f, lambda c: not c.get("shots"), "qa.shots is 0: no examples") for f in
      ("draw", "examples", "example_snippets")),
    _qa("draw_seed", lambda c: not c.get("shots") or c.get("draw") != "random", "read only by shots > 0, draw=random"),
    _qa("encoder", lambda c: not c.get("shots") or c.get("draw") != "similar", "read only by shots > 0, draw=similar"),
    _qa("style", lambda c: c.get("prompt") != "dsgt", "qa.prompt is 'pjs': the DS@GT prompt styles are not used"),
    _qa("json_instruction", lambda c: c.get("prompt") != "dsgt",
        "qa.prompt is 'pjs': PJs-team's prompt asks for <JSON> itself"),
)


def unread(settings: Settings, task: str) -> dict[str, str]:
    """Every leaf path of ``settings`` (as :func:`leaves` names them) that a run of ``task`` does not read, with
    the reason."""
    run = RunView(settings, task)
    out = {}
    for path, _ in leaves(run.tree):
        why = run.unread_path(path)
        if why:
            out[path] = why
    return out
