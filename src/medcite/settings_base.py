"""The building blocks of every settings model: sections, backend configs and stage fields.

A *stage* (``rerank``, ``index``, ``encoder``, ``retriever``, ``querygen``, ``evidence``, ``generate``,
``llm``, ``task``) has backends registered by name in :mod:`medcite.registry`. Each backend's file defines
its own settings model, a subclass of the stage's base config (itself a :class:`BackendConfig`) with a
``backend: Literal["name"]`` discriminator, so a backend's options live with it. A settings field typed
:func:`medcite.registry.stage_field` holds the config of *one* backend of a stage.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

#: most hits one search may ask for: far above any ranking's depth, far below what an engine can allocate
#: (tantivy panics near 10**18; a FAISS search allocates k results per query)
MAX_HITS = 1_000_000


class Section(BaseModel):
    """A settings section: unknown keys are errors, assignments are validated, and floats are finite.

    ``allow_inf_nan=False`` holds for every float field of every section and backend config (all derive from
    this class), in any container: ``inf``, ``nan`` (as JSON ``Infinity``/``NaN``, as strings, or ``1e999``)
    compare false with every bound and would reach a backend as a number.
    """

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, protected_namespaces=(), allow_inf_nan=False
    )


class BackendConfig(Section):
    """Base of every backend's settings. ``backend`` names the registered backend it configures.

    Class attributes say what a backend needs, so tools can reason about a preset without building it:
    ``runtime_fields`` change speed or resources, not results (left out of index identities);
    :meth:`llm_names` lists the LLMs it calls (``None`` = the default ``settings.llm``) and ``no_llm`` is
    the config that replaces it when no LLM is wanted (``"drop"``: leave it out); :meth:`model_names`
    lists the models it loads by name or folder.
    """

    backend: str

    runtime_fields: ClassVar[frozenset[str]] = frozenset()
    no_llm: ClassVar[dict[str, Any] | str | None] = None

    def llm_names(self) -> set[str | None]:
        """The LLMs this backend calls (None: the default one); empty when it needs none."""
        return set()

    def model_names(self) -> list[str]:
        """Model names or folders this backend loads (for offline checks); packaged models are left out."""
        return []


class UsesLLM(BaseModel):
    """Mixin of the settings of a backend that calls an LLM: which one (``llm``) and its no-LLM stand-in."""

    llm: str | None = Field(None, description="Name of the LLM in `llms` (None: the default `llm`).")

    def llm_names(self) -> set[str | None]:
        return {self.llm}
