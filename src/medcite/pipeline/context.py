"""The build context: the only factory of medcite's backends; what the stages of one run share, closed together.

Implements :class:`medcite.context.BuildContext`. Every backend is built here, with
``registry.load(stage, cfg.backend).from_config(cfg, ctx)``, and nowhere else:

- ``ctx.build(stage, cfg)``: a backend of ``stage``, typed by stage (``ctx.build("stance", cfg)`` is a
  ``StanceClassifier | None``);
- ``ctx.llm(name)``: the LLM ``settings.llm`` (None) or ``settings.llms[name]``, made once, with its cache;
- ``ctx.encoder(spec)``: an encoder, loaded once per identity into the model cache;
- ``ctx.index(name)``: the index ``settings.indexes[name]``, built or synced with the store, opened once.

``Context(settings)`` needs no document store: a command that only needs an LLM, an encoder or a stance
judge makes one without it (asking it for an index then says a store is needed). :meth:`Context.close`
closes everything the context made (LLMs, indexes, built stages that hold resources, and the model cache it
owns); ``with Context(settings) as ctx:`` does it at the end.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal, cast

from .. import registry
from ..announce import purpose
from ..context import BuildContext, Closeable, ModelCache
from ..errors import ConfigError, LLMError, MedciteError
from ..presets.index_purpose import index_purpose
from ..set_option import set_line

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..config import IndexSettings, Settings
    from ..context import EncoderSpec, Index
    from ..corpus.store import DocumentStore
    from ..index.base import IndexConfig
    from ..index.dense.encoders import Encoder
    from ..llm.base import LLM, LLMConfig
    from ..settings_base import BackendConfig

log = logging.getLogger(__name__)


class Context(BuildContext):
    """Shared resources of the stages built from one :class:`~medcite.config.Settings`."""

    def __init__(self, settings: Settings, store: DocumentStore | None = None, *, models: ModelCache | None = None,
                 llm: LLM | None = None, grounding: bool = False) -> None:
        """``models``: share a model cache between contexts (the caller closes it); ``llm``: use this object
        as the default LLM instead of making one from ``settings.llm`` (the caller keeps owning it);
        ``grounding``: a Task A run (its error hints name the overrides of the stance stage too)."""
        self.settings = settings
        self.grounding = grounding
        self.store = store
        self.models = models if models is not None else ModelCache()
        self._own_models = models is None
        self._llms: dict[str | None, LLM] = {} if llm is None else {None: llm}
        self._owned: list[Closeable] = []  # LLMs, indexes, stages holding models
        self._indexes: dict[str, Index] = {}

    # -- BuildContext --------------------------------------------------------------------------------
    def llm(self, name: str | None = None, *, purpose: str = "") -> LLM:
        if name in self._llms:
            return self._llms[name]
        from ..llm.base import llm_enabled

        where = "llm" if name is None else f"llms.{name}"
        cfg: LLMConfig | None = self.settings.llm if name is None else self.settings.llms.get(name)
        if cfg is None:
            known = ", ".join(self.settings.llms) or "(none)"
            raise ConfigError(f"{purpose or 'a stage'} names the LLM {name!r}, which `llms` does not define",
                              hint=f"define it ({set_line(f'llms.{name}.backend', '...')}) or use one of: {known}")
        if cfg.calls_nothing:
            bare = " ".join(self._offline_lines("none"))
            raise ConfigError(
                f"{purpose or f'preset {self.settings.preset!r}'} needs a language model, but {where}.backend "
                f"is {cfg.backend!r}",
                hint=f"use the packaged local model: {self._local_hint(name)}"
                + (f"; or run without LLM stages: {bare}" if bare else ""),
            )
        try:
            cfg.check_reachable()  # the backend's own check (a server that answers, a model file here) and hint
            llm = self._make_llm(cfg)
        except (ConfigError, LLMError) as exc:
            local = self._local_hint(name)
            if not local:
                raise
            raise type(exc)(exc.message, hint=f"{exc.hint + '; or ' if exc.hint else ''}run offline: {local}") from exc
        if not llm_enabled(llm):  # a plugin backend that declares itself disabled
            raise ConfigError(f"{purpose or 'a stage'} needs a language model, but {where} is disabled")
        self._llms[name] = llm
        if isinstance(llm, Closeable):
            self._owned.append(llm)
        return llm

    def _offline_lines(self, llm: Literal["local", "none"]) -> list[str]:
        """The ``--set`` options of the whole offline stack, for an error hint; none where some stage has no
        offline stand-in (that stage's own build says so, not the LLM's error)."""
        from ..presets.offline import offline_lines

        try:
            return offline_lines(self.settings, llm, self.grounding)
        except ConfigError:
            return []

    def _local_hint(self, name: str | None) -> str:
        """How to run with the packaged local model, worked out only when an error hint needs it: the offline
        stack's options, else those of the LLM ``name``'s own stand-in."""
        from ..presets.offline import local_llm_lines

        return " ".join(self._offline_lines("local") or local_llm_lines(self.settings, name))

    def encoder(self, spec: EncoderSpec) -> Encoder:
        from ..index.dense.encoders import encoder_config, encoder_key

        cfg = encoder_config(spec)
        return self.models.get(encoder_key(cfg), lambda: self._encoder(cfg))

    def index(self, name: str) -> Index:
        if name in self._indexes:
            return self._indexes[name]
        cfg = self.settings.indexes.get(name)
        if cfg is None:
            raise ConfigError(f"no index named {name!r} in the settings",
                              hint=f"indexes: {', '.join(self.settings.indexes)} (define more under `indexes`)")
        store = self.store.path if self.store is not None else None
        # a long build or sync on first use announces itself with this purpose (medcite.announce)
        with purpose(lambda: index_purpose(self.settings, name, grounding=self.grounding, store=store)):
            index = cast("Index", self._build("index", cfg))  # an index backend implements one of the two
        self._indexes[name] = index
        return index

    def open_indexes(self) -> dict[str, Index]:
        return dict(self._indexes)

    def index_config(self, name: str) -> IndexConfig | None:
        return self.settings.indexes.get(name)

    def reranker_config(self) -> BackendConfig:
        return self.settings.rerank

    def index_configs(self) -> Mapping[str, IndexConfig]:
        return self.settings.indexes

    def index_engine(self) -> IndexSettings:
        return self.settings.index

    def build_any(self, stage: str, cfg: BackendConfig) -> object:
        if stage == "llm":  # an LLM config outside settings.llm/llms: made as ctx.llm makes them, owned here
            from ..llm.base import LLMConfig

            if not isinstance(cfg, LLMConfig):
                raise ConfigError(f"an llm config is an LLMConfig, got {type(cfg).__name__}")
            llm = self._make_llm(cfg)
            if isinstance(llm, Closeable):
                self._owned.append(llm)
            return llm
        if stage == "encoder":
            from ..index.dense.encoders import EncoderConfig

            if not isinstance(cfg, EncoderConfig):
                raise ConfigError(f"an encoder config is an EncoderConfig, got {type(cfg).__name__}")
            return self.encoder(cfg)
        return self._build(stage, cfg)

    # -- own -----------------------------------------------------------------------------------------
    def _build(self, stage: str, cfg: BackendConfig) -> object:
        """``registry.load(stage, cfg.backend).from_config(cfg, self)``: the one construction path."""
        try:
            built: object = registry.load(stage, cfg.backend).from_config(cfg, self)
        except MedciteError:
            raise
        except (ImportError, OSError) as exc:  # a model or library that cannot be loaded here
            raise ConfigError(
                f"the {stage} backend {cfg.backend!r} is not available here: {type(exc).__name__}: {exc}",
                hint="install its extra and model, or choose another backend (medcite config show lists them)",
            ) from exc
        if isinstance(built, Closeable) and built not in self._owned:
            self._owned.append(built)
        return built

    def _encoder(self, cfg: BackendConfig) -> Encoder:
        """An encoder, owned by the model cache (which closes it), not by this context."""
        encoder: Encoder = registry.load("encoder", cfg.backend).from_config(cfg, self)
        return encoder

    def _make_llm(self, cfg: LLMConfig) -> LLM:
        """The backend ``cfg.backend`` names, with its persistent cache opened from ``cfg.cache_dir`` (unless
        ``cfg.cache`` is false); the caller owns the LLM, which closes its cache."""
        cache = None
        if cfg.cache and not cfg.calls_nothing:
            from ..llm.cache import LLMCache

            cache = LLMCache.in_folder(cfg.cache_dir)
        try:
            llm: LLM = registry.load("llm", cfg.backend).from_config(cfg, self, cache=cache)
        except BaseException:
            if cache is not None:
                cache.close()
            raise
        log.debug("LLM backend %s, model %s", cfg.backend, llm.model)
        return llm

    def close(self) -> None:
        """Close what this context made, newest first; a failing close is logged, the others still run."""
        owned, self._owned = self._owned[::-1], []
        for item in owned:
            try:
                item.close()
            except Exception as exc:  # noqa: BLE001 - one failed close must not keep the others open
                log.warning("closing %r failed: %s", item, exc)
        self._llms.clear()
        self._indexes.clear()
        if self._own_models:
            self.models.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_stage(stage: str, config: object, *, settings: Settings | None = None,
                store: DocumentStore | None = None, models: ModelCache | None = None) -> Any:
    """Build one backend of ``stage`` from a config (object, dict or shorthand) through the one path.

    The context holds ``settings`` (default: the ``offline`` preset, for the LLMs and indexes a backend may
    ask for) and ``store``; what the backend holds is closed with it (``close()`` where it has one).
    """
    from ..config import load_settings

    cfg = registry.validate_config(stage, config)
    return Context(settings or load_settings("offline"), store, models=models).build(stage, cfg)
