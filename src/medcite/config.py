"""The settings tree, JSON presets that override only what they change, and dotted overrides.

Each stage's settings hold the config of one registered backend (:func:`medcite.registry.stage_field`):
``rerank``, ``evidence``, ``generate``, ``llm`` (and named extra LLMs in ``llms``), the named ``indexes``,
and the lists ``retrieve.queries`` / ``retrieve.branches``. ``--set a.b=value`` overrides any field. When a
preset or an override switches a section to another backend, the keys that backend does not have are
dropped (``--set rerank.backend=none`` on a preset with a cross-encoder leaves no ``model`` behind).
The fully resolved settings and their hash are written into every run directory.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from . import registry
from .errors import ConfigError
from .io import JSONObject
from .milvus_settings import MilvusSettings
from .registry import stage_field
from .set_option import set_line
from .settings_base import BackendConfig, Section
from .settings_sections import (
    BioASQSettings,
    CorpusSettings,
    GroundSettings,
    HopSettings,
    IndexSettings,
    RetrieveSettings,
    VerifySettings,
)

log = logging.getLogger(__name__)

__all__ = [
    "Settings",
    "CorpusSettings",
    "RetrieveSettings",
    "VerifySettings",
    "GroundSettings",
    "HopSettings",
    "BioASQSettings",
    "IndexSettings",
    "MilvusSettings",
    "load_settings",
    "parse_override",
    "preset_names",
    "preset_description",
    "preset_task",
    "preset_tasks",
    "PRESET_TASKS",
    "replacing",
    "settings_data",
    "settings_hash",
    "DEFAULT_INDEXES",
]

#: indexes every settings tree has unless it replaces them: BM25 and a dense index with the packaged MiniLM
DEFAULT_INDEXES: dict[str, dict[str, str]] = {"bm25": {"backend": "tantivy"}, "dense": {"backend": "faiss"}}

# where in the settings tree a backend config of which stage sits ("*": any name)
_STAGE_PATHS: dict[tuple[str, ...], str] = {
    ("rerank",): "rerank",
    ("evidence",): "evidence",
    ("generate",): "generate",
    ("llm",): "llm",
    ("stance",): "stance",
    ("qa",): "qa",
    ("design",): "design",
    ("llms", "*"): "llm",
    ("indexes", "*"): "index",
    ("indexes", "*", "encoder"): "encoder",
    ("bioasq", "encoder"): "encoder",
    ("bioasq", "reranker"): "rerank",
}


class Settings(Section):
    """The whole configuration of one medcite run."""

    preset: str = Field("offline", description="Name of the preset these settings started from.")
    corpus: CorpusSettings = Field(default_factory=CorpusSettings, description="Ingest behaviour.")
    indexes: dict[str, stage_field("index")] = Field(  # type: ignore[valid-type]
        default_factory=lambda: {n: registry.default_config("index", **v) for n, v in DEFAULT_INDEXES.items()},
        description="Named indexes of the document store (registry stage 'index'); retrieval branches refer "
        "to them by name. Defaults: 'bm25' (tantivy) and 'dense' (FAISS with the packaged MiniLM).",
    )
    index: IndexSettings = Field(
        default_factory=IndexSettings, description="The engine that serves `indexes` (embedded or a Milvus server)."
    )
    retrieve: RetrieveSettings = Field(default_factory=RetrieveSettings, description="First-stage retrieval.")
    rerank: stage_field("rerank") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("rerank"), description="Reranking of retrieved hits."
    )
    flow: Literal["retrieve-then-generate", "generate-then-ground", "multi-hop"] = Field(
        "retrieve-then-generate", description="'generate-then-ground' (Dalhousie 2025 expd/empd): the LLM answers "
        "with no retrieval, then each sentence is grounded like a Task A sentence (support side only). "
        "'multi-hop' (CLaC 2024 MedHopQA): the retrieval runs once per LLM-written sub-question, hop after hop "
        "(settings `hops`), and the hops' hits are pooled before evidence selection."
    )
    evidence: stage_field("evidence") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("evidence"), description="Evidence selection."
    )
    generate: stage_field("generate") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("generate"), description="Answer generation."
    )
    stance: stage_field("stance") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("stance"),
        description="Judges whether an abstract supports or contradicts a sentence: Task A grounding, the "
        "citation-validation loop and citation metrics ('none', 'classifier', 'nli', 't5-nli', 'llm').",
    )
    qa: stage_field("qa") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("qa"),
        description="BioASQ Phase A+ / B answers (registry stage 'qa'): 'extractive' (offline: trained yes/no "
        "head, snippet entities, learned extractive ideal answer) or 'llm' (DS@GT / PJs prompting).",
    )
    design: stage_field("design") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("design"),
        description="Study-design labels of the articles (registry stage 'design': 'rules', PubMed's indexing where "
        "a record has it, else rules on the title and abstract), and medcite's own uses of them: the --design / "
        "--humans filter, the evidence-level tie-break and the caveat line (both off in every paper preset).",
    )
    verify: VerifySettings = Field(default_factory=VerifySettings, description="Citation checks and loops.")
    ground: GroundSettings = Field(
        default_factory=GroundSettings, description="Grounding sentences with citations (Task A, answer-first)."
    )
    hops: HopSettings = Field(
        default_factory=HopSettings, description="The multi-hop flow (flow=multi-hop, CLaC 2024 MedHopQA)."
    )
    bioasq: BioASQSettings = Field(
        default_factory=BioASQSettings, description="BioASQ Task b: Phase A documents and snippets."
    )
    llm: stage_field("llm") = Field(  # type: ignore[valid-type]
        default_factory=lambda: registry.default_config("llm"),
        description="The language model every LLM stage uses unless it names another in `llms`.",
    )
    llms: dict[str, stage_field("llm")] = Field(  # type: ignore[valid-type]
        default_factory=dict,
        description="More language models by name, for stages that name one (e.g. a reasoning model for "
        "query rewrites and another for generation, as Dalhousie 2025 ran).",
    )

    @field_validator("indexes", mode="before")
    @classmethod
    def _with_default_indexes(cls, value: Any) -> Any:
        """Keep the default indexes a preset does not mention; an entry without a backend keeps its default."""
        if not isinstance(value, dict):
            return value
        out: JSONObject = dict(DEFAULT_INDEXES)
        for name, entry in value.items():
            if isinstance(entry, dict) and name in DEFAULT_INDEXES and "backend" not in entry:
                entry = {**DEFAULT_INDEXES[name], **entry}
            out[name] = entry
        return out

    @model_validator(mode="after")
    def _served_by_engine(self) -> Settings:
        """The engine ``index.backend`` names (registry stage 'engine') serves the named indexes and branches:
        ``milvus`` moves every one to the Milvus server (:mod:`medcite.index.milvus.engine`)."""
        # an IndexEngine (medcite.index.engine), found by name: the settings tree imports no engine
        indexes, branches = registry.load("engine", self.index.backend).serve(self)
        # set without re-validation: the values are validated configs, and assignment would run this again
        object.__setattr__(self, "indexes", indexes)
        object.__setattr__(self.retrieve, "branches", branches)
        return self

    def hash(self) -> str:
        return settings_hash(self)


def settings_hash(settings: BaseModel) -> str:
    blob = json.dumps(settings.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: top-level keys of a preset file that document it and are not settings: its description, the task it answers
#: (:data:`PRESET_TASKS`), the published run it reproduces and where each of its settings comes from
#: (:mod:`medcite.presets.provenance`)
NOTE_KEYS = ("description", "task", "paper", "sources")

#: what a preset answers (the ``task`` key of its file) -> what that is and the command that runs it. The name of a
#: registered task backend (registry stage ``task``) is a task too, so a new task needs no line here.
PRESET_TASKS: dict[str, str] = {
    "biogen-a": "TREC BioGen Task A: the sentences of a given answer grounded in PubMed (`medcite ground`)",
    "biogen-b": "TREC BioGen Task B: an answer whose every sentence cites PubMed (`medcite run`, `medcite ask`)",
    "medhopqa": "MedHopQA multi-hop questions, answered and cited as BioGen Task B (`medcite run`)",
    "bioasq": "BioASQ Task b: documents and snippets (phase A), then answers (phases A+ and B) (`medcite bioasq`)",
    "search": "search: a ranking of PubMed articles, no answer (`medcite search`, `medcite bioasq phase-a`)",
}


def preset_tasks() -> dict[str, str]:
    """Every task a preset can declare (:data:`PRESET_TASKS`, then each registered task backend not among them)."""
    out = dict(PRESET_TASKS)
    for name in registry.names("task"):
        out.setdefault(name, f"the registered task `{name}`")
    return out


def preset_task(name: str) -> str:
    """The task a preset answers: its own ``task`` key, else that of the preset it extends."""
    data = _preset_json(name)
    chain = [name]
    while "task" not in data and isinstance(data.get("extends"), str) and data["extends"] not in chain:
        chain.append(data["extends"])
        data = _preset_json(chain[-1])
    if "task" not in data:
        raise ConfigError(f"preset {name!r} declares no task",
                          hint=f'add "task": one of {", ".join(preset_tasks())} to the preset file')
    return _checked_task(name, data["task"])


def _checked_task(name: str, task: object) -> str:
    known = preset_tasks()
    if not isinstance(task, str) or task not in known:
        raise ConfigError(f"preset {name!r}: unknown task {task!r}",
                          hint=f'"task" names what the preset answers: one of {", ".join(known)}')
    return task


def is_alias(name: str) -> bool:
    """Whether a preset only renames another: its file holds an ``extends`` and notes, no setting of its own."""
    data = _preset_json(name)
    return isinstance(data.get("extends"), str) and set(data) <= {*NOTE_KEYS, "extends"} - {"paper", "sources"}


def preset_json(name: str) -> JSONObject:
    """The preset file as written (its own keys only, ``extends`` not followed)."""
    return _preset_json(name)


def presets_dir() -> Traversable:
    """The folder of the shipped presets (package data: ``medcite/presets/*.json``)."""
    return resources.files("medcite") / "presets"


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in presets_dir().iterdir() if p.name.endswith(".json"))


def _preset_text(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"a preset is a name or a path to a .json file, not {name!r}",
                          hint=f"choose one of: {', '.join(preset_names())}")
    path = Path(name)
    if path.exists() and not path.is_file():
        raise ConfigError(f"preset {name!r} is a folder, not a .json preset file",
                          hint="give a preset name or the path to one .json preset file")
    if path.suffix == ".json" and path.is_file():
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read preset file {name}: {exc}") from None
    res = presets_dir() / f"{name}.json"
    if not res.is_file():
        raise ConfigError(
            f"unknown preset {name!r}",
            hint=f"choose one of: {', '.join(preset_names())} (or give a path to a .json preset file)",
        )
    return res.read_text(encoding="utf-8")


def _preset_json(name: str) -> JSONObject:
    try:
        data = json.loads(_preset_text(name))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"preset {name!r} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"preset {name!r} is not a JSON object")
    return data


def preset_description(name: str) -> str:
    """The preset's own description (empty when it has none)."""
    return str(_preset_json(name).get("description", ""))


def preset_sections(name: str) -> set[str]:
    """The top-level settings sections the preset (with the presets it extends) sets itself."""
    return set(_read_preset(name))


def _read_preset(name: str, chain: tuple[str, ...] = ()) -> JSONObject:
    if name in chain:
        raise ConfigError(f"preset {name!r} extends itself through {' -> '.join(chain)}")
    data = _preset_json(name)
    parent = data.pop("extends", None)
    if "task" in data:
        _checked_task(name, data["task"])
    for note in NOTE_KEYS:  # what the preset says about itself, not settings (medcite.provenance reads them)
        data.pop(note, None)
    if parent is not None and not isinstance(parent, str):
        raise ConfigError(f"preset {name!r}: 'extends' must be one preset name, got {parent!r}",
                          hint='e.g. "extends": "offline"')
    if parent:
        return merge(_read_preset(parent, (*chain, name)), data)
    return data


def _stage_at(path: Sequence[str]) -> str | None:
    for pattern, stage in _STAGE_PATHS.items():
        if len(pattern) == len(path) and all(p in ("*", q) for p, q in zip(pattern, path, strict=True)):
            return stage
    return None


def merge(base: JSONObject, over: JSONObject, path: tuple[str, ...] = ()) -> JSONObject:
    """Deep-merge ``over`` into ``base``. A stage section whose ``backend`` changes keeps only the keys
    its new backend has (see the module docstring)."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        where = (*path, key)
        stage = _stage_at(where)
        if isinstance(value, dict) and isinstance(old, str) and stage:
            old = registry.shorthand(stage, old)
        if isinstance(value, dict) and isinstance(old, dict):
            out[key] = merge(_for_backend(old, value, where), value, where)
        elif isinstance(value, dict) and old is not None and not isinstance(old, dict):
            raise ConfigError(f"{'.'.join(where)} is {old!r}, not a section: it has no {', '.join(value)}",
                              hint=f"set {'.'.join(where)} itself, e.g. {set_line('.'.join(where), 'VALUE')}")
        else:
            out[key] = value
    return out


def _for_backend(old: JSONObject, new: JSONObject, path: tuple[str, ...]) -> JSONObject:
    stage = _stage_at(path)
    backend = new.get("backend")
    if stage is None or not isinstance(backend, str) or backend == old.get("backend"):
        return old
    try:
        fields = registry.config_class(stage, backend).model_fields
    except ConfigError:
        return old  # an unknown backend: validation says so, naming the choices
    dropped = sorted(k for k in old if k not in fields)
    if dropped:
        log.info("%s: backend %r has no %s; dropped", ".".join(path), backend, ", ".join(dropped))
    return {k: v for k, v in old.items() if k in fields}


MAX_OVERRIDE_INT = 2**63 - 1


def _check_numbers(value: object, item: str) -> None:
    """Integers past 64 bits (``retrieve.k=1e30`` as digits) would overflow later, deep in a backend."""
    if isinstance(value, bool):
        return
    if isinstance(value, int) and abs(value) > MAX_OVERRIDE_INT:
        text = str(value) if len(str(value)) <= 30 else str(value)[:30] + "..."
        raise ConfigError(f"override {item[:80]!r}: {text} is too large",
                          hint=f"integers are at most {MAX_OVERRIDE_INT}")
    if isinstance(value, list):
        for v in value:
            _check_numbers(v, item)
    elif isinstance(value, dict):
        for v in value.values():
            _check_numbers(v, item)


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"rerank.top_k=30"`` -> (["rerank", "top_k"], 30). Values are JSON when they parse, else strings."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"cannot read override {item!r}", hint="write it as section.field=value, e.g. retrieve.k=50")
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ConfigError(f"cannot read override {item[:80]!r}: the value is nested too deeply") from None
    except ValueError:  # not JSON (a plain string), or an integer past Python's digit limit
        if raw.strip().lstrip("-").isdigit():
            raise ConfigError(f"override {key.strip()[:80]}: the number {raw.strip()[:30]}... is too large",
                              hint=f"integers are at most {MAX_OVERRIDE_INT}") from None
        value = raw
    _check_numbers(value, item)
    path = key.strip().split(".")
    if any(not p for p in path):
        raise ConfigError(f"cannot read override {item!r}: empty name in {key!r}", hint="e.g. rerank.k=30")
    return path, value


def settings_data(preset: str = "offline", overrides: Sequence[str] = ()) -> JSONObject:
    """The preset (with its ``extends`` chain) and dotted overrides merged, not yet validated."""
    data = _read_preset(preset)
    data["preset"] = preset
    for item in overrides:
        path, value = parse_override(item)
        nested: Any = value
        for part in reversed(path):
            nested = {part: nested}
        try:
            data = merge(data, nested)
        except ConfigError as exc:
            raise ConfigError(f"override {item!r}: {exc.message}", hint=exc.hint) from None
    return data


def replacing(preset: str, overrides: Sequence[str], where: str, value: object) -> list[str]:
    """Overrides that put the backend config ``value`` (a dict or a shorthand string) at the dotted path ``where``
    (``indexes.dense.encoder``) in place of the one there, for a command option such as ``--encoder DIR``.

    What the option names replaces the model's own settings (a preset's prefixes for another model do not follow
    it); what says where and how the model runs (the old config's ``runtime_fields``: device, dtype, batch size)
    and every field the user set under ``where`` with ``--set`` are kept, where the new backend has them and
    ``value`` does not set them. Append the result after the user's overrides.
    """
    path = tuple(where.split("."))
    stage = _stage_at(path)
    if stage is None:
        raise ConfigError(f"{where} holds no backend config",
                          hint="name a stage's settings, e.g. indexes.dense.encoder")
    old: Any = settings_data(preset, overrides)
    for part in path:
        old = old.get(part) if isinstance(old, dict) else None
    if isinstance(old, str):
        old = registry.shorthand(stage, old)
    user: list[str] = []  # the fields the user set under ``where``
    for item in overrides:
        keys, given = parse_override(item)
        if tuple(keys[: len(path)]) == path:
            user += [keys[len(path)]] if len(keys) > len(path) else list(given) if isinstance(given, dict) else []
    spec = registry.runtime_kept(stage, value, old if isinstance(old, dict) else None, also=user)
    return [f"{where}=null", f"{where}={json.dumps(spec)}"]


def load_settings(preset: str = "offline", overrides: Sequence[str] = ()) -> Settings:
    """Resolve a preset (with its ``extends`` chain) and dotted overrides into validated Settings."""
    data = settings_data(preset, overrides)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        given = [set_line(".".join(path), value) for path, value in map(parse_override, overrides)]
        origin = f"preset {preset!r}" + (f" with {' '.join(given)}" if given else "")
        raise ConfigError(
            f"invalid settings ({origin[:300]}): {problems}",
            hint="run `medcite config show` to see every field with its description",
        ) from None


def apply_swaps(settings: Settings, swaps: Sequence[tuple[str, object]]) -> Settings:
    """``settings`` with each (dotted path, JSON value) merged in, in order, as a preset or ``--set`` would merge
    it (a section whose ``backend`` changes keeps only the keys of its new backend), validated again."""
    data: JSONObject = settings.model_dump(mode="json", exclude_unset=True)
    for where, value in swaps:
        nested: JSONObject = {}
        for i, part in enumerate(reversed(where.split("."))):
            nested = {part: value if i == 0 else nested}
        data = merge(data, nested)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise ConfigError(f"invalid settings (preset {settings.preset!r}, changed at "
                          f"{', '.join(w for w, _ in swaps)[:300]}): {problems}",
                          hint="run `medcite config show` to see every field with its description") from None


def with_overrides(settings: Settings, overrides: Sequence[str]) -> Settings:
    """``settings`` with the user's dotted overrides (``a.b=value``, as given to ``--set``) applied last."""
    return apply_swaps(settings, [(".".join(path), value) for path, value in map(parse_override, overrides)])


def set_lines(before: Settings, after: Settings) -> list[str]:
    """The ``--set`` options that turn ``before`` into ``after``, printed from their difference (the one place
    that writes them): a changed value by its dotted path, a config whose backend changed or a changed list as a
    whole (JSON; a config by its backend and the fields that differ from their defaults, after a ``null`` that
    clears the config it replaces)."""
    return [set_line(where, value) for where, value in _changes(before, after, "")]


def _plain(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _changes(a: object, b: object, where: str) -> list[tuple[str, object]]:
    if _plain(a) == _plain(b):
        return []
    # a config below a stage's (an encoder inside a reranker's) may be a shorthand string in the preset: written whole
    nested = isinstance(b, BackendConfig) and _stage_at(tuple(where.split("."))) is None
    if isinstance(a, BaseModel) and type(a) is type(b) and not nested:
        return [c for name in type(b).model_fields
                for c in _changes(getattr(a, name), getattr(b, name), f"{where}.{name}" if where else name)]
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
        return [c for key in b for c in _changes(a[key], b[key], f"{where}.{key}")]
    if isinstance(a, BaseModel) and isinstance(b, BaseModel):
        return _backend_changes(a, b, where)
    return [(where, _compact(b))]


def _backend_changes(a: BaseModel, b: BaseModel, where: str) -> list[tuple[str, object]]:
    """A config that another backend's replaces: its ``backend`` (a stage section then keeps the fields the new
    backend shares with the old one, :func:`merge`) and what still differs; elsewhere cleared and written whole."""
    backend = getattr(b, "backend", None)
    if _stage_at(tuple(where.split("."))) is not None and isinstance(backend, str):
        fields = type(b).model_fields
        kept = {k: v for k, v in a.model_dump(mode="json", exclude_unset=True).items() if k in fields}
        try:
            middle = type(b).model_validate(kept | {"backend": backend})
        except ValidationError:
            pass
        else:
            return [(f"{where}.backend", backend), *_changes(middle, b, where)]
    return [(where, None), (where, _compact(b))]


def _compact(value: object) -> object:
    """JSON of ``value`` with what its defaults give left out (a config keeps its ``backend``)."""
    if isinstance(value, list | tuple):
        return [_compact(v) for v in value]
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if not isinstance(value, BaseModel):
        return _plain(value)
    out: dict[str, object] = {}
    for name, field in type(value).model_fields.items():
        v = getattr(value, name)
        default = field.get_default(call_default_factory=True)
        if name == "backend" or _plain(v) != _plain(default):
            out[name] = _compact(v)
    return out
