"""`medcite models build` on a store without the BioASQ gold articles: it trains on medcite's own store of the
training file's gold snippets (built once, beside the models folder), and the documents rebuilt from snippets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.train.bioasq_docs import MARKER, snippet_articles, snippet_documents, snippet_store
from medcite.types import Article
from medcite.workflows.model_builds import BuildData, build_models, training_store_folder

pytest.importorskip("lightgbm")

URL = "http://www.ncbi.nlm.nih.gov/pubmed/"
TOPICS = [("asthma", "salbutamol"), ("malaria", "artemisinin"), ("gout", "allopurinol"), ("migraine", "sumatriptan"),
          ("psoriasis", "methotrexate"), ("epilepsy", "valproate"), ("glaucoma", "latanoprost"),
          ("tuberculosis", "isoniazid"), ("hypertension", "amlodipine"), ("diabetes", "metformin"),
          ("anemia", "iron"), ("acne", "isotretinoin")]
#: the LTR options of the fast tests: bm25 first stage features only, few trees
FAST = {"encoders": (), "groups": ("first_stage", "bm25", "prf", "terms"), "min_questions": 3, "trees": 30}


def _snip(pmid: str, text: str, section: str = "abstract", start: int = 0) -> dict[str, object]:
    return {"document": f"{URL}{pmid}", "text": text, "beginSection": section, "endSection": section,
            "offsetInBeginSection": start, "offsetInEndSection": start + len(text)}


def test_snippet_documents_dedupe_drop_contained_order_by_offset_and_title() -> None:
    questions = [
        {"snippets": [_snip("7", "Second part.", start=50), _snip("7", "First  part.", start=0),
                      _snip("7", "Short title", "title")]},
        {"snippets": [_snip("7", "Second part.", start=50), _snip("7", "part", start=6),
                      _snip("7", "Short title, longer", "title"), _snip("0012", "Only one.", start=3),
                      _snip("13", "  ")]},
    ]
    docs = snippet_documents(questions)
    assert list(docs) == ["7", "12"]  # PMID order; a blank snippet makes no document
    assert docs["7"] == {"pmid": "7", "title": "Short title, longer", "abstract": "First part. Second part."}
    assert docs["12"] == {"pmid": "12", "title": "", "abstract": "Only one."}
    assert snippet_articles(questions) == [Article("7", "Short title, longer", "First part. Second part."),
                                           Article("12", "", "Only one.")]


@pytest.fixture
def snippet_data(tmp_path: Path) -> Path:
    """12 questions, 2 gold documents each, known only by their gold snippets."""
    questions, pmid = [], 5000
    for i, (disease, drug) in enumerate(TOPICS):
        gold = [pmid + 1, pmid + 2]
        pmid += 2
        snippets = [s for j, p in enumerate(gold) for s in (
            _snip(str(p), f"{drug} for {disease} trial {j}", "title"),
            _snip(str(p), f"{drug} treats {disease}.", start=0),
            _snip(str(p), f"Patients with {disease} improved on {drug}.", start=40))]
        questions.append({"id": f"q{i:02d}", "type": "summary", "body": f"Which drug treats {disease}?",
                          "documents": [f"{URL}{p}" for p in gold], "snippets": snippets,
                          "source_batch": f"{1 + i // 4}B{1 + i % 2}"})
    path = tmp_path / "bioasq.json"
    path.write_text(json.dumps({"questions": questions}))
    return path


@pytest.fixture
def other_store(tmp_path: Path) -> Path:
    """A store that holds none of the training file's gold articles."""
    folder = tmp_path / "user-store"
    with DocumentStore.create(folder) as store, store.transaction() as tx:
        tx.upsert([Article(str(90 + i), f"Unrelated record {i}", "Weather and traffic.") for i in range(5)],
                  FileStats("synthetic"))
    return folder


@pytest.fixture
def bm25_ltr_preset(tmp_path: Path) -> Path:
    """``best``'s reranker over the bm25 first stage (no dense index to build: seconds)."""
    path = tmp_path / "bm25-ltr.json"
    path.write_text(json.dumps({"extends": "bm25", "rerank": {"backend": "ltr", "model": "models:medcite-ltr-bioasq",
                                                                "top_n": 20, "k": 10}}))
    return path


def test_a_store_without_gold_trains_on_the_snippet_store_once(snippet_data: Path, other_store: Path,
                                                               bm25_ltr_preset: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    models = tmp_path / "cache" / "models"
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(models))
    said: list[str] = []
    records = build_models([str(bm25_ltr_preset)], BuildData({"bioasq": snippet_data}, other_store, 3, FAST),
                           echo=said.append)
    target = training_store_folder(snippet_data)
    assert target.parent == tmp_path / "cache" / "training" and target.name.startswith("bioasq-")
    assert (target / MARKER).is_file()
    with DocumentStore.open(target) as store:
        assert len(store) == 24
        doc = store.get("5001")
        assert doc is not None and doc.title == "salbutamol for asthma trial 0"
        assert doc.abstract == "salbutamol treats asthma. Patients with asthma improved on salbutamol."
    assert any("holds gold for 0 of 12 training questions" in m and str(target) in m and "24 documents" in m
               for m in said), said
    assert [(r["model"], r["status"], r["store"]) for r in records] == [("medcite-ltr-bioasq", "built", str(target))]
    report = json.loads((models / "medcite-ltr-bioasq" / "training.json").read_text())
    assert report["store"] == str(target) and report["questions"]["train"] >= 3
    with DocumentStore.open(other_store) as store:
        assert len(store) == 5  # the user's store is left as it was
    # a second run skips the model; a training store stopped half way (no marker) is built again
    again = build_models([str(bm25_ltr_preset)], BuildData({"bioasq": snippet_data}, other_store, 3, FAST),
                           echo=said.append)
    assert again[0]["status"] == "present"
    (target / MARKER).unlink()
    (target / "stray").write_text("left by a stopped build")
    folder, n = snippet_store(snippet_data, target)
    assert n == 24 and (folder / MARKER).is_file() and not (folder / "stray").exists()


def test_a_store_with_gold_is_trained_on(snippet_data: Path, bm25_ltr_preset: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(tmp_path / "models"))
    own = tmp_path / "own"
    with DocumentStore.create(own) as store, store.transaction() as tx:
        tx.upsert(snippet_articles(json.loads(snippet_data.read_text())["questions"]), FileStats("synthetic"))
    records = build_models([str(bm25_ltr_preset)], BuildData({"bioasq": snippet_data}, own, 3, FAST),
                           echo=lambda m: None)
    assert records[0]["store"] == str(own)
    assert not training_store_folder(snippet_data).exists()


def test_cli_corpus_is_optional(snippet_data: Path, bm25_ltr_preset: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(tmp_path / "models"))
    # --min-questions above the file's 12 questions: the cli reaches the trainer, which refuses (fast, no model)
    result = CliRunner().invoke(cli, ["models", "build", str(bm25_ltr_preset), "--data", str(snippet_data),
                                      "--min-questions", "50"])
    assert "no store given: training on medcite's BioASQ snippet store" in result.output
    assert result.exit_code != 0 and "would rest on too few questions" in result.output
