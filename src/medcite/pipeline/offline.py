"""What a preset needs that this machine may lack, and the ``--set`` options that run it on the local stack.

Read from the configs themselves (:class:`~medcite.settings_base.BackendConfig`: ``llm_names``,
``no_llm``, ``model_names``), so a new backend declares its needs in its own file and no list here
names it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .gate import gate_kind

if TYPE_CHECKING:
    from ..config import Settings
    from ..settings_base import BackendConfig


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


def rerank_swap(settings: Settings) -> list[str]:
    """The ``--set`` options of the reranker's offline stand-in (``RerankConfig.offline_swap``: same stages,
    same budgets, the packaged MiniLM for hub-only models); nothing when its models are here.

    Raises ConfigError, before any work, when a model is missing and the reranker has no stand-in.
    """
    out = _branch_rerank_swap(settings)
    cfg = settings.rerank
    missing = [m for m in cfg.model_names() if not is_local_model(m)]
    if not missing:
        return out
    pairs = cfg.offline_swap(is_local_model)  # type: ignore[attr-defined]
    if pairs is None:
        raise ConfigError(
            f"the {cfg.backend} reranker loads {', '.join(missing)}, which this machine does not have, and it has "
            "no offline stand-in",
            hint="on a machine with internet: " + "; ".join(f"`hf download {m} --local-dir DIR`" for m in missing)
            + ", copy DIR here and name it in the rerank settings (e.g. --set rerank.model=DIR); or train one "
            "offline with `medcite train reranker`; or skip reranking explicitly with --set rerank.backend=none",
        )
    return out + [x for pair in pairs for x in ("--set", f"rerank.{pair}")]


def _branch_rerank_swap(settings: Settings) -> list[str]:
    """The ``--set`` option of ``retrieve.branch_rerank``'s offline stand-in (the whole config, same ``k``)."""
    from ..rerank.base import swapped

    cfg = settings.retrieve.branch_rerank
    if cfg is None or all(is_local_model(m) for m in cfg.model_names()):
        return []
    pairs = cfg.offline_swap(is_local_model)
    if pairs is None:
        raise ConfigError(f"the per-branch {cfg.backend} reranker (retrieve.branch_rerank) loads "
                          f"{', '.join(cfg.model_names())}, which this machine does not have, and it has no "
                          "offline stand-in", hint="name a local model: --set retrieve.branch_rerank.model=DIR")
    return ["--set", "retrieve.branch_rerank=" + json.dumps(swapped(cfg, pairs) | {"k": cfg.k},
                                                            separators=(",", ":"))]


def offline_overrides(settings: Settings, llm: str = "local", grounding: bool = False) -> list[str]:
    """The ``--set`` options that run these settings on this machine's local stack.

    ``llm="local"`` swaps a server LLM for the packaged SmolLM2 (in-process), a reranker whose models are
    not on this machine for its stand-in of the same shape (:func:`rerank_swap`; ConfigError when it has
    none), and an index encoder that is not for the packaged MiniLM; ``llm="none"``
    also replaces every LLM stage by its no-LLM counterpart (LLM query generators by keyword queries,
    summaries by sentence snippets, LLM answers by extractive ones, listwise reranking by none, an LLM stance
    judge by medcite's trained classifier). A stance model that is not here (a hub NLI cross-encoder) is
    replaced by medcite's trained classifier in both modes. ``grounding``: for a Task A run (the stance stage is
    used).
    """
    out: list[str] = []
    names = llm_names(settings, grounding)
    for name in sorted(names, key=lambda n: n or ""):
        cfg = settings.llm if name is None else settings.llms.get(name)
        path = "llm" if name is None else f"llms.{name}"
        if llm == "local" and cfg is not None and cfg.backend not in ("local", "llamacpp"):
            out += ["--set", f"{path}.backend=local", "--set", f"{path}.model=null"]
    out += rerank_swap(settings)
    out += _shortlist_swap(settings)
    for name in _used_indexes(settings):
        index = settings.indexes.get(name)
        if index is not None and any(not is_local_model(m) for m in index.model_names()):
            out += ["--set", f"indexes.{name}.encoder=minilm"]
    out += _bioasq_overrides(settings, llm)
    stance = settings.stance
    if uses_stance(settings, grounding) and any(not is_local_model(m) for m in stance.model_names()):
        # an NLI cross-encoder from the hub (CLaC 2024 System 2) is not here: medcite's trained stance model judges
        out += ["--set", "stance.backend=classifier", "--set", "stance.model=models:medcite-reader"]
    out += _ground_overrides(settings, llm, grounding)
    if llm == "none":
        if settings.llm.backend != "none":
            out += ["--set", "llm.backend=none"]
        queries = [q.model_dump(mode="json", exclude_defaults=True) | {"backend": q.backend}
                   for q in settings.retrieve.queries if not q.llm_names()]
        if len(queries) != len(settings.retrieve.queries):
            if not any(q["backend"] == "keywords" for q in queries):
                queries.append({"backend": "keywords"})
            plain = [q["backend"] if len(q) == 1 else q for q in queries]
            out += ["--set", "retrieve.queries=" + json.dumps(plain, separators=(",", ":"))]
        branches = [b.model_dump(mode="json", exclude_defaults=True) | {"backend": b.backend}
                    for b in settings.retrieve.branches]
        if any(b.llm_names() for b in settings.retrieve.branches):  # an LLM clean-up of the expansion: searched as is
            for dumped, b in zip(branches, settings.retrieve.branches, strict=True):
                if b.llm_names():
                    dumped.pop("clean", None)
                    dumped.pop("llm", None)
            out += ["--set", "retrieve.branches=" + json.dumps(branches, separators=(",", ":"))]
        sections = ("evidence", "generate", "rerank") + (("stance",) if uses_stance(settings, grounding) else ()) \
            + (("qa",) if settings.qa.llm_names() else ())
        for section in sections:
            cfg = getattr(settings, section)
            if cfg.llm_names() and isinstance(cfg.no_llm, dict) and f"{section}.backend=none" not in out:
                swap = f"{section}.backend={cfg.no_llm['backend']}"
                if swap not in out:
                    out += ["--set", swap]
    return out


def _shortlist_swap(settings: Settings) -> list[str]:
    """The ``--set`` option of ``generate.posthoc_shortlist``'s offline stand-in (CLaC 2024's ColBERT: MiniLM)."""
    from ..rerank.base import swapped

    cfg = getattr(settings.generate, "posthoc_shortlist", None)
    if cfg is None or getattr(settings.generate, "posthoc_judge", None) is None or \
            all(is_local_model(m) for m in cfg.model_names()):
        return []
    pairs = cfg.offline_swap(is_local_model)
    if pairs is None:
        raise ConfigError(f"the post-hoc shortlist reranker ({cfg.backend}) loads {', '.join(cfg.model_names())}, "
                          "which this machine does not have, and it has no offline stand-in",
                          hint="name a local model: --set generate.posthoc_shortlist.model=DIR")
    return ["--set", "generate.posthoc_shortlist=" + json.dumps(swapped(cfg, pairs) | {"k": cfg.k},
                                                                separators=(",", ":"))]


def _ground_overrides(settings: Settings, llm: str, grounding: bool) -> list[str]:
    """Task A's own stages on this machine: a contradiction filter whose model is not here (SciFive-MedNLI) becomes
    medcite's trained stance classifier reading the same sentences; with ``llm="none"`` the listwise LLM judge
    becomes the stance stage and the question's LLM decomposition is left out (the question alone is searched)."""
    g, out = settings.ground, []
    f = g.contradict_filter
    # swapped even where nothing grounds (a Task B run of a Task A preset): a --set that switches the flow to
    # generate-then-ground must not reach for a model that is not here
    if f is not None and any(not is_local_model(m) for m in f.model_names()):
        swap = {"backend": "classifier", "model": "models:medcite-reader",
                "whole_text_chars": f.whole_text_chars, "sentences": f.sentences}
        out += ["--set", "ground.contradict_filter=" + json.dumps(swap, separators=(",", ":"))]
    if not grounds(settings, grounding):
        return out
    if llm == "none":
        if g.judge == "listwise":
            out += ["--set", "ground.judge=stance"]
        if g.contradict_from == "question" and any(q.llm_names() for q in g.contradict_queries):
            kept = [q.model_dump(mode="json", exclude_defaults=True) | {"backend": q.backend}
                    for q in g.contradict_queries if not q.llm_names()] or [{"backend": "original"}]
            out += ["--set", "ground.contradict_queries=" + json.dumps(kept, separators=(",", ":"))]
    return out


def _bioasq_overrides(settings: Settings, llm: str) -> list[str]:
    """BioASQ Phase A snippet scoring on this machine: an encoder that is not here becomes the packaged MiniLM,
    and a reranker scorer whose models are not here (or that calls an LLM, with ``llm="none"``) becomes the
    MiniLM embedding scorer. An LLM answerer asked for few-shot examples without a training file to draw them
    from answers zero-shot (``qa.shots=0``; ``--set qa.examples=FILE`` gives the paper's few-shot prompts)."""
    out: list[str] = []
    qa = settings.qa
    if llm != "none" and qa.llm_names() and getattr(qa, "shots", 0) and not getattr(qa, "examples", None):
        out = ["--set", "qa.shots=0"]  # the few-shot examples come from a training file the user names
    bioasq = settings.bioasq
    if bioasq.scorer == "embedding" and any(not is_local_model(m) for m in bioasq.encoder.model_names()):
        return out + ["--set", "bioasq.encoder=minilm"]
    if bioasq.scorer == "reranker":
        scorer = bioasq.reranker if bioasq.reranker is not None else settings.rerank
        if any(not is_local_model(m) for m in scorer.model_names()) or (llm == "none" and scorer.llm_names()):
            return out + ["--set", "bioasq.scorer=embedding", "--set", "bioasq.encoder=minilm"]
    return out
