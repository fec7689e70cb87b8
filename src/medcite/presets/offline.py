"""What a preset needs that this machine may lack, and the settings that run it on the local stack.

:func:`offline_settings` is the one function from a preset's settings to the settings that run on this machine.
Each swap is read from the configs themselves (:class:`~medcite.settings_base.BackendConfig`: ``llm_names``,
``no_llm``, ``model_names``; a reranker's ``offline_swap``; an LLM's ``offline_stand_in``), so a new backend
declares its stand-in in its own file and no list here names it. The ``--set`` lines a user is shown are printed
from the difference of the two settings (:func:`medcite.config.set_lines`), never parsed back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from ..errors import ConfigError
from .gates import gate_kind

if TYPE_CHECKING:
    from ..config import Settings
    from ..io import JSONObject
    from ..rerank.base import RerankConfig
    from ..settings_base import BackendConfig

#: ``local``: LLMs served elsewhere become the packaged SmolLM2, in process; ``none``: no LLM stage at all
Stack = Literal["local", "none"]
#: one swap: a dotted settings path and what is put there (a config, or JSON merged as a preset would be)
Swap = tuple[str, object]

#: what searches in place of the LLM query generators with no LLM: the question's keywords
KEYWORD_QUERIES = {"backend": "keywords"}
#: the LLM settings of a run with no LLM at all
NO_LLM = {"backend": "none"}


def _used_indexes(settings: Settings) -> list[str]:
    return list(dict.fromkeys(b.index for b in settings.retrieve.branches))


def stage_configs(settings: Settings, grounding: bool = False) -> Iterator[tuple[str, BackendConfig]]:
    """(settings path, config) of every backend config a pipeline of these settings builds (``grounding``:
    a Task A run, which always judges stance)."""
    for i, q in enumerate(settings.retrieve.queries):
        yield f"retrieve.queries[{i}]", q
    for i, b in enumerate(settings.retrieve.branches):
        yield f"retrieve.branches[{i}]", b
    for name in _used_indexes(settings):
        if name in settings.indexes:
            yield f"indexes.{name}", settings.indexes[name]
    if settings.retrieve.branch_rerank is not None:
        yield "retrieve.branch_rerank", settings.retrieve.branch_rerank
    yield "rerank", settings.rerank
    yield "evidence", settings.evidence
    yield "generate", settings.generate
    if uses_stance(settings, grounding):
        yield "stance", settings.stance
    if grounds(settings, grounding):
        g = settings.ground
        if g.contradict_from == "question":
            for i, q in enumerate(g.contradict_queries):
                yield f"ground.contradict_queries[{i}]", q
        if g.contradict_filter is not None:
            yield "ground.contradict_filter", g.contradict_filter
    if settings.qa.llm_names():  # BioASQ answers by an LLM (the offline 'extractive' backend calls none)
        yield "qa", settings.qa


def uses_stance(settings: Settings, grounding: bool = False) -> bool:
    """Whether the stance stage will be called: by Task A (``grounding``), a verification step or the
    answer-first flow."""
    v = settings.verify
    return (grounding or v.citations != "off" or v.corroborate or settings.flow == "generate-then-ground"
            or gate_kind(settings) == "stance")


def grounds(settings: Settings, grounding: bool = False) -> bool:
    """Whether sentences are grounded (Task A, or the answer-first flow), so the ``ground`` settings' stages run."""
    return grounding or settings.flow == "generate-then-ground"


def llm_names(settings: Settings, grounding: bool = False) -> set[str | None]:
    """The LLMs the stages (and loops) of these settings call (None: the default ``llm``)."""
    names = {name for _, cfg in stage_configs(settings, grounding) for name in cfg.llm_names()}
    if settings.verify.sufficiency_rounds or settings.flow == "generate-then-ground":
        names.add(settings.verify.llm)
    if settings.flow == "multi-hop":
        names.add(settings.hops.llm)
    if grounds(settings, grounding) and settings.ground.judge == "listwise":
        names.add(settings.ground.llm)
    return names


def needs_llm(settings: Settings, grounding: bool = False) -> bool:
    """Whether any stage of these settings calls a language model."""
    return bool(llm_names(settings, grounding))


def is_local_model(name: str) -> bool:
    """True for a model folder on this machine (a path, or ``models:NAME`` trained by medcite)."""
    from ..trained_models import resolve

    try:
        return Path(resolve(name, "medcite train")).expanduser().is_dir()
    except ConfigError:
        return False


def offline_settings(settings: Settings, llm: Stack = "local", grounding: bool = False) -> Settings:
    """These settings as they run on this machine's local stack: the one function behind ``--offline``,
    ``--no-llm``, the provenance tables and the hints of a missing model or server.

    ``llm="local"`` swaps a server LLM for its ``offline_stand_in`` (the packaged SmolLM2, in-process), a
    reranker whose models are not on this machine for its stand-in of the same shape (``offline_swap``;
    ConfigError when it has none), and an index encoder that is not here for the packaged MiniLM;
    ``llm="none"`` also replaces every LLM stage by its no-LLM counterpart (LLM query generators by keyword
    queries, summaries by sentence snippets, LLM answers by extractive ones, listwise reranking by none, an LLM
    stance judge by medcite's trained classifier). A stance model that is not here (a hub NLI cross-encoder) is
    replaced by medcite's trained classifier in both modes. ``grounding``: for a Task A run (the stance stage is
    used).
    """
    from ..config import apply_swaps

    swaps = _swaps(settings, llm, grounding)
    return apply_swaps(settings, [item for path, value in swaps for item in _json(path, value)]) if swaps else settings


def offline_lines(settings: Settings, llm: Stack = "local", grounding: bool = False) -> list[str]:
    """The ``--set`` options of :func:`offline_settings`, printed from the difference (for hints and docs)."""
    from ..config import set_lines

    return set_lines(settings, offline_settings(settings, llm, grounding))


def local_llm_lines(settings: Settings, name: str | None) -> list[str]:
    """The ``--set`` options that run the LLM ``name`` (None: the default ``llm``) in process (its
    ``offline_stand_in``), for a hint where the swaps of the whole settings name none."""
    from ..config import apply_swaps, set_lines

    cfg = settings.llm if name is None else settings.llms.get(name)
    stand_in = cfg.offline_stand_in if cfg is not None else None
    if stand_in is None:
        return []
    return set_lines(settings, apply_swaps(settings, [("llm" if name is None else f"llms.{name}", dict(stand_in))]))


def _json(path: str, value: object) -> list[Swap]:
    """A swap as JSON merged the way a preset's is: a config replaces what is there (all its fields), other
    values are merged over it."""
    if isinstance(value, BaseModel):
        return [(path, None), (path, value.model_dump(mode="json"))]
    return [(path, value)]


def _swaps(settings: Settings, llm: Stack, grounding: bool) -> list[Swap]:
    out: list[Swap] = []
    names = llm_names(settings, grounding)
    for name in sorted(names, key=lambda n: n or ""):
        cfg = settings.llm if name is None else settings.llms.get(name)
        if llm == "local" and cfg is not None and cfg.offline_stand_in is not None:
            out.append(("llm" if name is None else f"llms.{name}", dict(cfg.offline_stand_in)))
    out += _rerank_swaps(settings)
    out += _shortlist_swap(settings)
    for name in _used_indexes(settings):
        index = settings.indexes.get(name)
        encoder = getattr(index, "encoder", None)  # an index that loads a model encodes with it
        if index is not None and encoder is not None and any(not is_local_model(m) for m in index.model_names()):
            out.append((f"indexes.{name}.encoder", encoder.offline_stand_in))
    out += _bioasq_swaps(settings, llm)
    stance = settings.stance
    if uses_stance(settings, grounding) and any(not is_local_model(m) for m in stance.model_names()):
        # an NLI cross-encoder from the hub (CLaC 2024 System 2) is not here: medcite's trained stance model judges
        out.append(("stance", dict(stance.offline_stand_in)))
    out += _ground_swaps(settings, llm, grounding)
    if llm == "none":
        out += _no_llm_swaps(settings, grounding)
    return out


def _no_llm_swaps(settings: Settings, grounding: bool) -> list[Swap]:
    """Every LLM stage replaced by its no-LLM counterpart (the config's ``no_llm``)."""
    out: list[Swap] = []
    if not settings.llm.calls_nothing:
        out.append(("llm", dict(NO_LLM)))
    queries = [q for q in settings.retrieve.queries if not q.llm_names()]
    if len(queries) != len(settings.retrieve.queries):
        kept: list[JSONObject] = [_dumped(q) for q in queries]
        if not any(q.backend == KEYWORD_QUERIES["backend"] for q in queries):
            kept.append(dict(KEYWORD_QUERIES))
        out.append(("retrieve.queries", kept))
    if any(b.llm_names() for b in settings.retrieve.branches):  # an LLM clean-up of the expansion: searched as is
        branches = []
        for b in settings.retrieve.branches:
            dumped = _dumped(b)
            if b.llm_names():
                dumped.pop("clean", None)
                dumped.pop("llm", None)
            branches.append(dumped)
        out.append(("retrieve.branches", branches))
    sections = ("evidence", "generate", "rerank") + (("stance",) if uses_stance(settings, grounding) else ()) \
        + (("qa",) if settings.qa.llm_names() else ())
    for section in sections:
        cfg = getattr(settings, section)
        if cfg.llm_names() and isinstance(cfg.no_llm, dict):
            out.append((section, {"backend": cfg.no_llm["backend"]}))
    return out


def _dumped(cfg: BackendConfig) -> JSONObject:
    """A list entry as a preset would write it: the fields that differ from the defaults, and its backend."""
    return cfg.model_dump(mode="json", exclude_defaults=True) | {"backend": cfg.backend}


def _stand_in(cfg: RerankConfig, where: str) -> RerankConfig:
    """The reranker's offline stand-in; ConfigError, before any work, when it has none."""
    stand_in = cfg.offline_swap(is_local_model)
    if stand_in is None:
        missing = [m for m in cfg.model_names() if not is_local_model(m)]
        raise ConfigError(
            f"the {where} ({cfg.backend}) loads {', '.join(missing)}, which this machine does not have, and it has "
            "no offline stand-in",
            hint="on a machine with internet: " + "; ".join(f"`hf download {m} --local-dir DIR`" for m in missing)
            + ", copy DIR here and name it in the settings; or train one offline with `medcite train reranker`",
        )
    return stand_in


def _rerank_swaps(settings: Settings) -> list[Swap]:
    """The reranker's and ``retrieve.branch_rerank``'s offline stand-ins (``RerankConfig.offline_swap``: same
    stages, same budgets, the packaged MiniLM for hub-only models); nothing when their models are here."""
    from ..rerank.base import swapped

    out: list[Swap] = []
    branch = settings.retrieve.branch_rerank
    if branch is not None and not all(is_local_model(m) for m in branch.model_names()):
        # the whole config replaced, with the same k
        out.append(("retrieve.branch_rerank",
                    swapped(_stand_in(branch, "per-branch reranker (retrieve.branch_rerank)"), {"k": branch.k})))
    cfg = settings.rerank
    if any(not is_local_model(m) for m in cfg.model_names()):
        out.append(("rerank", _stand_in(cfg, "reranker")))
    return out


def _shortlist_swap(settings: Settings) -> list[Swap]:
    """``generate.posthoc_shortlist``'s offline stand-in (CLaC 2024's ColBERT: MiniLM), the whole config."""
    from ..rerank.base import swapped

    cfg = getattr(settings.generate, "posthoc_shortlist", None)
    if cfg is None or getattr(settings.generate, "posthoc_judge", None) is None or \
            all(is_local_model(m) for m in cfg.model_names()):
        return []
    stand_in = _stand_in(cfg, "post-hoc shortlist reranker (generate.posthoc_shortlist)")
    return [("generate.posthoc_shortlist", swapped(stand_in, {"k": cfg.k}))]


def _ground_swaps(settings: Settings, llm: Stack, grounding: bool) -> list[Swap]:
    """Task A's own stages on this machine: a contradiction filter whose model is not here (SciFive-MedNLI) becomes
    medcite's trained stance classifier reading the same sentences; with ``llm="none"`` the listwise LLM judge
    becomes the stance stage and the question's LLM decomposition is left out (the question alone is searched)."""
    g, out = settings.ground, list[Swap]()
    f = g.contradict_filter
    # swapped even where nothing grounds (a Task B run of a Task A preset): a --set that switches the flow to
    # generate-then-ground must not reach for a model that is not here
    if f is not None and any(not is_local_model(m) for m in f.model_names()):
        # the stand-in reads the same sentences
        out.append(("ground.contradict_filter", dict(f.offline_stand_in) | {"whole_text_chars": f.whole_text_chars,
                                                                             "sentences": f.sentences}))
    if not grounds(settings, grounding):
        return out
    if llm == "none":
        if g.judge == "listwise":
            out.append(("ground.judge", "stance"))
        if g.contradict_from == "question" and any(q.llm_names() for q in g.contradict_queries):
            kept = [_dumped(q) for q in g.contradict_queries if not q.llm_names()] or [{"backend": "original"}]
            out.append(("ground.contradict_queries", kept))
    return out


def _bioasq_swaps(settings: Settings, llm: Stack) -> list[Swap]:
    """BioASQ Phase A snippet scoring on this machine: an encoder that is not here becomes the packaged MiniLM,
    and a reranker scorer whose models are not here (or that calls an LLM, with ``llm="none"``) becomes the
    MiniLM embedding scorer. An LLM answerer asked for few-shot examples without a training file to draw them
    from answers zero-shot (``qa.shots`` 0; ``qa.examples`` FILE gives the paper's few-shot prompts)."""
    out: list[Swap] = []
    qa = settings.qa
    if llm != "none" and qa.llm_names() and getattr(qa, "shots", 0) and not getattr(qa, "examples", None):
        out = [("qa.shots", 0)]  # the few-shot examples come from a training file the user names
    bioasq = settings.bioasq
    if bioasq.scorer == "embedding" and any(not is_local_model(m) for m in bioasq.encoder.model_names()):
        return out + [("bioasq.encoder", bioasq.encoder.offline_stand_in)]
    if bioasq.scorer == "reranker":
        scorer = bioasq.reranker if bioasq.reranker is not None else settings.rerank
        if any(not is_local_model(m) for m in scorer.model_names()) or (llm == "none" and scorer.llm_names()):
            return out + [("bioasq.scorer", "embedding"), ("bioasq.encoder", bioasq.encoder.offline_stand_in)]
    return out
