"""Where every model stage runs: one resolver of the torch device, dtype and batch size.

Every torch-using stage has a ``device`` setting (default ``"auto"``) and, where it runs a network in
inference, a ``dtype`` setting (default ``"auto"``):

- ``device``: an explicit ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"`` wins; ``"auto"`` is CUDA when
  ``torch.cuda.is_available()``, then Apple's MPS when ``torch.backends.mps.is_available()``, else the CPU.
  An explicit device the machine lacks is a :class:`~medcite.errors.ConfigError` when the stage is built
  (never a silent fall back to the CPU), saying what was asked, what the machine has, and the fix.
- ``dtype``: an explicit ``"float32"``, ``"float16"`` or ``"bfloat16"`` wins; ``"auto"`` is bfloat16 on a
  CUDA GPU that supports it (``torch.cuda.is_bf16_supported()``), else float16 there (float32 for T5
  models, whose activations overflow float16), and float32 on the CPU and MPS.
- a ``batch_size`` of ``None`` means "by device": the CPU keeps the stage's former default, a GPU gets a
  larger one (:func:`default_batch_size`).

:func:`place` resolves a stage's settings once, logs the result once per stage ("rerank cross-encoder:
device cuda, dtype bfloat16") and records it; :func:`placements` is what run directories store
(``devices.json``) and ``medcite config show`` prints. torch is imported only when a resolution needs it.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from .errors import ConfigError
from .set_option import set_line

log = logging.getLogger(__name__)

__all__ = ["DTYPES", "Device", "Dtype", "Machine", "Placement", "auto_summary", "check_device", "default_batch_size",
           "device_field", "dtype_field", "explain", "forget_placements", "machine", "peek_device", "place",
           "placements", "resolve_device", "resolve_dtype", "torch_dtype"]

#: the explicit dtypes a stage may be asked to run in
DTYPES = ("float32", "float16", "bfloat16")
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_INSTALL_CUDA = "install a CUDA build of torch (https://pytorch.org/get-started/locally/)"


def check_device(value: str) -> str:
    """``value`` as a device setting (``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``), lower-cased; a
    ValueError (a settings validation error) for anything else."""
    text = str(value).strip().lower()
    if not _DEVICE.match(text):
        raise ValueError(f"unknown device {value!r}: use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'")
    return text


#: a device setting, checked for its form when the settings are read (availability: when the stage is built)
Device = Annotated[str, AfterValidator(check_device)]
Dtype = Literal["auto", "float32", "float16", "bfloat16"]


def device_field(what: str) -> Any:
    """The ``device`` field of a stage's settings (``what``: the model it places, e.g. "the cross-encoder")."""
    return Field("auto", description=f"Torch device of {what}: 'auto' (a CUDA GPU when there is one, then Apple "
                 "MPS, else the CPU), 'cpu', 'cuda', 'cuda:N' or 'mps'; an explicit device this machine lacks is "
                 "an error when the stage is built.")


def dtype_field(what: str) -> Any:
    """The ``dtype`` field of a stage's settings."""
    return Field("auto", description=f"Number format of {what}'s weights and activations: 'auto' (bfloat16 on a "
                 "CUDA GPU that supports it, else float16 there; float32 on the CPU and MPS), 'float32', "
                 "'float16' or 'bfloat16'.")


@dataclass(frozen=True)
class Machine:
    """What torch sees on this machine."""

    torch: str | None  # torch's version; None: torch is not installed
    cuda_build: str | None  # the CUDA version torch was built with; None: a CPU build
    cuda_devices: tuple[str, ...]  # names of the visible CUDA devices (empty: no CUDA)
    bf16: bool  # the first CUDA device computes in bfloat16
    mps: bool

    @property
    def cuda(self) -> bool:
        return bool(self.cuda_devices)

    def describe(self) -> str:
        """``"no CUDA (torch 2.13.0+cpu is a CPU build), no MPS"``, ``"CUDA: 1 x NVIDIA H200, no MPS"``."""
        if self.torch is None:
            return "no torch installed"
        if self.cuda:
            names = sorted(set(self.cuda_devices))
            cuda = f"CUDA: {len(self.cuda_devices)} x {', '.join(names)}"
        elif self.cuda_build is None:
            cuda = f"no CUDA (torch {self.torch} is a CPU build)"
        else:
            cuda = f"no CUDA device visible to torch {self.torch} (built for CUDA {self.cuda_build})"
        return f"{cuda}, {'MPS' if self.mps else 'no MPS'}"


def machine() -> Machine:
    """What torch sees now (read each time, so a test may patch ``torch.cuda.is_available``)."""
    try:
        import torch
    except ImportError:
        return Machine(None, None, (), False, False)
    names: tuple[str, ...] = ()
    bf16 = False
    if torch.cuda.is_available():
        try:
            names = tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        except (RuntimeError, AssertionError, AttributeError):
            names = ()
        names = names or ("a CUDA device",)
        try:
            bf16 = bool(torch.cuda.is_bf16_supported())
        except (RuntimeError, AssertionError, AttributeError):
            bf16 = False
    mps_backend = getattr(torch.backends, "mps", None)
    mps = bool(mps_backend is not None and mps_backend.is_available())
    return Machine(str(torch.__version__), getattr(torch.version, "cuda", None), names, bf16, mps)


def resolve_device(setting: str, *, setting_path: str = "device", stage: str = "") -> str:
    """The device ``setting`` means on this machine: an explicit one when the machine has it, else a
    ConfigError; ``auto``: ``cuda``, then ``mps``, else ``cpu``. ``setting_path`` (``rerank.device``) names the
    setting in the error's fix."""
    try:
        asked = check_device(setting)
    except ValueError as exc:
        raise ConfigError(f"{setting_path}: {exc}", hint=set_line(setting_path, "auto")) from None
    if asked == "cpu":
        return "cpu"
    m = machine()
    if asked == "auto":
        return "cuda" if m.cuda else "mps" if m.mps else "cpu"
    who = f"{stage}: " if stage else ""
    if asked.startswith("cuda"):
        if not m.cuda:
            raise ConfigError(
                f"{who}device {asked!r} was asked for ({setting_path}), but this machine has {m.describe()}",
                hint=f"{set_line(setting_path, 'auto')} (the best device here) or {set_line(setting_path, 'cpu')}; "
                f"or {_INSTALL_CUDA}",
            )
        index = int(asked.partition(":")[2] or 0)
        if index >= len(m.cuda_devices):
            raise ConfigError(
                f"{who}device {asked!r} was asked for ({setting_path}), but torch sees {len(m.cuda_devices)} CUDA "
                f"device(s) (cuda:0 to cuda:{len(m.cuda_devices) - 1})",
                hint=f"{set_line(setting_path, 'cuda')} (the first GPU) or auto; check CUDA_VISIBLE_DEVICES",
            )
        return asked
    if not m.mps:  # asked == "mps"
        raise ConfigError(
            f"{who}device 'mps' was asked for ({setting_path}), but this machine has {m.describe()}",
            hint=f"{set_line(setting_path, 'auto')} or {set_line(setting_path, 'cpu')} (MPS needs Apple silicon and "
            "a torch build with MPS)",
        )
    return "mps"


def resolve_dtype(setting: str, device: str, *, half: bool = True, setting_path: str = "dtype",
                  stage: str = "") -> str:
    """The dtype ``setting`` means on the resolved ``device``: an explicit one wins (bfloat16 on a GPU without it
    is a ConfigError); ``auto``: bfloat16 on a CUDA GPU that has it, else float16 there (float32 when ``half`` is
    False: a model that overflows float16), float32 on the CPU and MPS."""
    if setting != "auto" and setting not in DTYPES:
        raise ConfigError(f"{setting_path}: unknown dtype {setting!r}", hint=set_line(setting_path, "auto"))
    cuda = device.startswith("cuda")
    if setting == "auto":
        if not cuda:
            return "float32"
        if machine().bf16:
            return "bfloat16"
        return "float16" if half else "float32"
    if setting == "bfloat16" and cuda and not machine().bf16:
        who = f"{stage}: " if stage else ""
        raise ConfigError(f"{who}dtype 'bfloat16' was asked for ({setting_path}), but this GPU does not compute in "
                          "bfloat16", hint=f"{set_line(setting_path, 'auto')} (float16 here) or float32")
    return setting


def torch_dtype(name: str) -> Any:
    """The ``torch.dtype`` called ``name`` (``"float16"`` -> ``torch.float16``)."""
    import torch

    if name not in DTYPES:
        raise ConfigError(f"unknown dtype {name!r}", hint=f"use one of {', '.join(DTYPES)}")
    return getattr(torch, name)


def default_batch_size(device: str, cpu_default: int, gpu_default: int) -> int:
    """A stage's batch size when its setting is None: ``cpu_default`` (its former default) on the CPU,
    ``gpu_default`` on a GPU (CUDA or MPS), where larger batches keep the device busy."""
    return cpu_default if device == "cpu" else gpu_default


@dataclass(frozen=True)
class Placement:
    """Where one stage runs: the resolved device, dtype and batch size, and what the settings asked for."""

    stage: str
    device: str
    dtype: str
    asked_device: str = "auto"
    asked_dtype: str = "auto"
    batch_size: int | None = None
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if k != "stage" and v not in (None, "")}

    def line(self) -> str:
        batch = f", batch {self.batch_size}" if self.batch_size is not None else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.stage}: device {self.device}, dtype {self.dtype}{batch}{note}"

    def to(self, model: Any) -> Any:
        """``model`` moved to this device and cast to this dtype (a checkpoint saved in float16 runs in float32 on
        the CPU too); a model kept on the CPU for int8 (``note``) is moved only, its int8 layers left as they are."""
        model.to(self.device)
        if not self.note:
            model.to(torch_dtype(self.dtype))
        return model


_PLACED: dict[str, Placement] = {}
_LOCK = threading.Lock()


def place(stage: str, device: str = "auto", dtype: str = "auto", *, setting: str = "", half: bool = True,
          batch_size: int | None = None, batch_defaults: tuple[int, int] | None = None,
          cpu_only: str = "") -> Placement:
    """Resolve the device, dtype and batch size of ``stage`` (``"rerank cross-encoder"``) from its settings;
    log it once per stage and record it (:func:`placements`).

    ``setting``: the settings path of the stage (``rerank``), for the fix in an error; ``half``: the model runs
    in float16 (False for T5, which overflows it); ``batch_defaults``: (CPU, GPU) batch sizes when
    ``batch_size`` is None; ``cpu_only``: why the stage runs on the CPU only (int8 quantisation): ``auto`` then
    means the CPU and an explicit other device is a ConfigError.
    """
    prefix = f"{setting}." if setting else ""
    try:
        asked = check_device(device)
    except ValueError as exc:
        raise ConfigError(f"{stage}: {exc}", hint=set_line(f"{prefix}device", "auto")) from None
    if cpu_only and asked not in ("auto", "cpu"):
        raise ConfigError(f"{stage}: {cpu_only} runs on the CPU only, not on device {device!r}",
                          hint=f"{set_line(prefix + 'device', 'cpu')} (or auto), or turn off what needs the CPU")
    resolved = "cpu" if cpu_only else resolve_device(device, setting_path=f"{prefix}device", stage=stage)
    dt = resolve_dtype(dtype, resolved, half=half, setting_path=f"{prefix}dtype", stage=stage)
    if cpu_only and dt != "float32":
        raise ConfigError(f"{stage}: {cpu_only} needs float32 weights, not {dt}",
                          hint=set_line(f"{prefix}dtype", "auto"))
    batch = batch_size
    if batch is None and batch_defaults is not None:
        batch = default_batch_size(resolved, *batch_defaults)
    placed = Placement(stage, resolved, dt, device, dtype, batch, cpu_only)
    with _LOCK:
        seen = _PLACED.get(stage) == placed
        _PLACED[stage] = placed
    if not seen:
        log.info("%s", placed.line())
    return placed


def placements() -> dict[str, dict[str, object]]:
    """Stage -> where it ran (:meth:`Placement.as_dict`), for every stage placed in this process so far."""
    with _LOCK:
        return {stage: p.as_dict() for stage, p in sorted(_PLACED.items())}


def forget_placements() -> None:
    """Clear the record of :func:`placements` (a test, or a long-lived process between runs)."""
    with _LOCK:
        _PLACED.clear()


def peek_device(setting: str) -> str:
    """The device ``setting`` resolves to here, or ``setting`` itself when it cannot (never raises: for
    descriptions and estimates made before a stage is built)."""
    try:
        return resolve_device(setting)
    except ConfigError:
        return setting


def auto_summary(m: Machine | None = None) -> str:
    """What ``auto`` resolves to here: ``"device auto -> cpu, dtype auto -> float32 (no CUDA ..., no MPS)"``."""
    m = m or machine()
    device = "cuda" if m.cuda else "mps" if m.mps else "cpu"
    dtype = "float32" if device != "cuda" else "bfloat16" if m.bf16 else "float16 (float32 for T5 models)"
    return f"device auto -> {device}, dtype auto -> {dtype} ({m.describe()})"


def explain(device: str, dtype: str | None = None, *, half: bool = True) -> str:
    """A settings pair as it resolves here, never raising: ``"device auto -> cpu, dtype auto -> float32"`` or
    ``"device cuda -> not available (no CUDA ...)"``."""
    try:
        resolved = resolve_device(device)
    except ConfigError:
        return f"device {device} -> not available here ({machine().describe()})"
    text = f"device {device} -> {resolved}"
    if dtype is not None:
        try:
            text += f", dtype {dtype} -> {resolve_dtype(dtype, resolved, half=half)}"
        except ConfigError:
            text += f", dtype {dtype} -> not available here"
    return text
