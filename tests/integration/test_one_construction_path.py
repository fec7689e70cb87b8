"""Every preset builds through the one construction path, with every registered backend of every stage.

For each shipped preset (after its own offline swaps) and each registered backend of each stage, the
settings name that backend (``--set``, as a user would) and :class:`~medcite.pipeline.Pipeline` builds the
whole pipeline from them: nothing is injected by hand. The built component must be the registered class.
Models are tiny ones built here, an LLM server is a local one; a backend whose extra is not installed must
fail with the pip command. medcite's models folder is a temporary one holding a tiny model for each LTR model
presets name (``best``'s ``models:medcite-ltr-bioasq``), so the result never depends on what the user trained;
``best`` then retrieves once with every index and retriever backend (its LTR features on each engine). The
table of variants must cover every registered backend, so a backend added without a way to build it fails here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from medcite import registry
from medcite.config import load_settings, preset_names, with_overrides
from medcite.context import ModelCache
from medcite.corpus.store import DocumentStore
from medcite.errors import ConfigError, MissingExtraError
from medcite.pipeline import Pipeline
from medcite.presets.offline import llm_names, needs_llm, offline_settings, uses_stance
from medcite.trained_models import CATALOGUE
from medcite.trained_models import missing as missing_models
from medcite.types import Article, Topic
from stores import store_of

pytest.importorskip("faiss")
pytest.importorskip("sentence_transformers")

DOCS = [Article(str(100 + i), t, a) for i, (t, a) in enumerate([
    ("Statins and LDL", "Statins lowered LDL cholesterol by 30% in adults."),
    ("Statin myopathy", "Statin myopathy presents as muscle pain."),
    ("Exercise and blood pressure", "Aerobic exercise reduced systolic blood pressure by 5 mmHg."),
    ("Vitamin D and fractures", "Vitamin D supplementation did not prevent fractures in older adults."),
])] + [Article(str(200 + i), f"Unrelated study {i}", f"Zebrafish fin {i} regeneration was imaged.") for i in range(8)]


class _Models(ThreadingHTTPServer):
    """An OpenAI-compatible server that only lists its models (the pipeline checks the server up front)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = _Models()
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from tiny_models import (
        build_tiny_bert,
        build_tiny_colbert,
        build_tiny_cross_encoder,
        build_tiny_ltr,
        build_tiny_monot5,
        build_tiny_st,
        build_tiny_stance,
        build_tiny_t5_nli,
    )

    root = tmp_path_factory.mktemp("tiny")
    query, article = build_tiny_bert(root / "q", seed=1), build_tiny_bert(root / "a", seed=2)
    return {"ce": str(build_tiny_cross_encoder(root / "ce")), "q": str(query), "a": str(article),
            "st": str(build_tiny_st(root / "st", query)), "t5": str(build_tiny_monot5(root / "t5")),
            "stance": str(build_tiny_stance(root / "stance")), "colbert": str(build_tiny_colbert(root / "colbert")),
            "nli": str(build_tiny_stance(root / "nli", ("contradiction", "entailment", "neutral"))),
            "t5nli": str(build_tiny_t5_nli(root / "t5nli")),
            "ltr": str(build_tiny_ltr(root / "ltr"))}


@pytest.fixture(scope="module")
def models_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder (MEDCITE_MODELS_DIR) with a tiny LTR model for each LTR model of the catalogue, reading
    every default feature group (the ``dense`` one with the hash-bow encoder); the other trained models are
    absent, so the presets that need them must stop with the command that makes them."""
    from medcite.rerank.ltr_features import DEFAULT_GROUPS
    from tiny_models import build_tiny_ltr

    folder = tmp_path_factory.mktemp("models")
    for name, model in CATALOGUE.items():
        if model.kind == "ltr":
            build_tiny_ltr(folder / name, DEFAULT_GROUPS, ({"backend": "hash-bow"},))
    return folder


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return store_of(tmp_path_factory.mktemp("one-path") / "store", DOCS)


@pytest.fixture(scope="module")
def models() -> Iterator[ModelCache]:
    cache = ModelCache()
    yield cache
    cache.close()


def _porter(base: Any) -> bool:
    return getattr(base.indexes.get("bm25"), "stemmer", None) == "porter"


def _set(path: str, value: Any) -> str:
    return f"{path}={json.dumps(value)}"


def _with_branch(base: Any, name: str) -> list[str]:
    """A branch searching index ``name`` added when the preset has none (so that index is built)."""
    branches = [b.model_dump(mode="json", exclude_defaults=True) | {"backend": b.backend}
                for b in base.retrieve.branches]
    if not any(b.index == name for b in base.retrieve.branches):
        branches.append({"backend": "bm25" if name == "bm25" else "dense", "index": name})
    return [_set("retrieve.branches", branches)]


def variants(tiny: dict[str, str], server: str, milvus: str | None = None
             ) -> dict[str, dict[str, Callable[[Any], list[str]]]]:
    """stage -> backend -> the overrides that make a preset use that backend (given the preset's settings).
    ``milvus``: the URI of the loopback Milvus server (None: the [milvus] extra is missing here)."""
    at = f"index.milvus.uri={milvus or 'http://127.0.0.1:9'}"
    pair = {"backend": "hf-asymmetric", "model": tiny["a"], "query_model": tiny["q"]}
    members = [f"cross-encoder:{tiny['ce']}", f"embedding:{tiny['st']}"]
    llm = "generate.backend=llm"

    def llm_stage(base: Any) -> list[str]:
        return [] if needs_llm(base) else [llm]

    return {
        "index": {
            # a fresh config: a preset's own BM25 (CLaC 2025: Pyserini's k1/b, Porter) is not tantivy's
            "tantivy": lambda b: ["indexes.bm25=null", _set("indexes.bm25", {"backend": "tantivy"}),
                                  *_with_branch(b, "bm25")],
            "bm25s": lambda b: ["indexes.bm25.backend=bm25s", *_with_branch(b, "bm25")],
            "faiss": lambda b: [_set("indexes.dense", {"backend": "faiss", "encoder": {"backend": "hash-bow"}}),
                                *_with_branch(b, "dense")],
            "milvus-bm25": lambda b: ["indexes.bm25=null", _set("indexes.bm25", {"backend": "milvus-bm25"}), at,
                                      *_with_branch(b, "bm25")],
            "milvus-dense": lambda b: [_set("indexes.dense", {"backend": "milvus-dense",
                                                              "encoder": {"backend": "hash-bow"}}),
                                       at, *_with_branch(b, "dense")],
        },
        "encoder": {
            "sentence-transformers": lambda b: [f"indexes.dense.encoder={tiny['st']}", *_with_branch(b, "dense")],
            "hf-asymmetric": lambda b: [_set("indexes.dense.encoder", pair), *_with_branch(b, "dense")],
            "onnx-minilm": lambda b: ["indexes.dense.encoder=minilm-onnx", *_with_branch(b, "dense")],
            "hash-bow": lambda b: ["indexes.dense.encoder.backend=hash-bow", *_with_branch(b, "dense")],
        },
        "querygen": {name: (lambda n: lambda b: [_set("retrieve.queries", ["original", n])])(name)
                     for name in ("original", "keywords", "topic_narrative", "negation", "llm_reformulate",
                                  "llm_decompose", "llm_stance_queries", "llm_keywords")},
        "retriever": {name: (lambda n: lambda b: [_set("retrieve.branches", [n]), "indexes.dense.encoder.backend"
                                                                                  "=hash-bow"])(name)
                      for name in ("bm25", "bm25+rocchio", "bm25+rm3", "dense")}
        | {"milvus-hybrid": lambda b: ["index.backend=milvus", at, "indexes.dense.encoder.backend=hash-bow",
                                       # Milvus stems by Snowball only (CLaC 2025's Pyserini BM25 is Porter)
                                       *(["indexes.bm25.stemmer=english"] if _porter(b) else []),
                                       _set("retrieve.branches", ["bm25", "dense"]), "retrieve.fusion=rrf"]},
        "rerank": {
            "none": lambda b: ["rerank.backend=none"],
            "cross-encoder": lambda b: [_set("rerank", {"backend": "cross-encoder", "model": tiny["ce"]})],
            "medcpt": lambda b: [_set("rerank", {"backend": "medcpt", "query_model": tiny["q"],
                                                 "article_model": tiny["a"], "cross_model": tiny["ce"]})],
            "monot5": lambda b: [_set("rerank", {"backend": "monot5", "model": tiny["t5"]})],
            "colbert": lambda b: [_set("rerank", {"backend": "colbert", "model": tiny["colbert"], "dim": 8})],
            "embedding": lambda b: [_set("rerank", {"backend": "embedding", "model": tiny["st"]})],
            "ensemble-union": lambda b: [_set("rerank", {"backend": "ensemble-union", "members": members})],
            "ensemble-weighted": lambda b: [_set("rerank", {"backend": "ensemble-weighted", "members": members,
                                                            "weights": [0.5, 0.5]})],
            "llm-listwise": lambda b: ["rerank.backend=llm-listwise"],
            "cascade": lambda b: [_set("rerank", {"backend": "cascade", "stages": [
                {"backend": "cross-encoder", "model": tiny["ce"], "k": 5},
                {"backend": "ensemble-weighted", "members": members, "weights": [0.125, 0.875], "k": 3}]})],
            "ltr": lambda b: [_set("rerank", {"backend": "ltr", "model": tiny["ltr"]})],
            "reader": lambda b: [_set("rerank", {"backend": "reader", "model": "models:medcite-reader", "top_n": 5})],
        },
        "evidence": {"snippets": lambda b: ["evidence.backend=snippets"],
                     "summaries": lambda b: ["evidence.backend=summaries"],
                     "abstracts": lambda b: ["evidence.backend=abstracts"],
                     "answer-sentences": lambda b: ["evidence.backend=answer-sentences"]},
        "generate": {"extractive": lambda b: ["generate.backend=extractive"],
                     "extractive-qa": lambda b: ["generate.backend=extractive-qa"],
                     "llm": lambda b: ["generate.backend=llm"]},
        "design": {"rules": lambda b: ["design.backend=rules", "design.prefer_levels=true", "design.caveat=true"]},
        "qa": {
            "extractive": lambda b: ["qa.backend=extractive"],
            "llm": lambda b: ["qa.backend=llm", "qa.shots=0"],
        },
        "stance": {
            "none": lambda b: ["stance.backend=none"],
            "classifier": lambda b: [_set("stance", {"backend": "classifier", "model": tiny["stance"]}),
                                     "verify.citations=check"],
            "nli": lambda b: [_set("stance", {"backend": "nli", "model": tiny["nli"]}), "verify.citations=drop"],
            "t5-nli": lambda b: [_set("stance", {"backend": "t5-nli", "model": tiny["t5nli"]}),
                                 "verify.citations=drop"],
            "llm": lambda b: ["stance.backend=llm", "verify.citations=check"],
            "words": lambda b: ["stance.backend=words", "flow=generate-then-ground", "llm.backend=rules"],
            "overlap": lambda b: ["stance.backend=overlap", "verify.citations=drop"],
        },
        "llm": {
            "none": lambda b: ["llm.backend=none"],
            "local": lambda b: ["llm.backend=local", "llm.model=null", *llm_stage(b)],
            "llamacpp": lambda b: ["llm.backend=llamacpp", "llm.model=null", *llm_stage(b)],
            "openai": lambda b: [_set("llm", {"backend": "openai", "model": "m", "base_url": server}), *llm_stage(b)],
            "rules": lambda b: ["llm.backend=rules", *llm_stage(b)],
            "replies": lambda b: ["llm.backend=replies", *llm_stage(b)],
        },
    }


@pytest.fixture(scope="module")
def milvus(request: pytest.FixtureRequest) -> str | None:
    """The loopback Milvus server's URI, or None where the [milvus] extra is missing (its backends must then
    fail with the pip command)."""
    try:
        return str(request.getfixturevalue("milvus_server"))
    except pytest.skip.Exception:
        return None


def _build_milvus(settings: Any, store: Path) -> None:
    """Make the Milvus collection the settings' indexes need (as `medcite index milvus` does)."""
    from medcite.index.milvus.collection import MilvusCollection
    from medcite.pipeline.context import Context

    with DocumentStore.open(store) as docs, Context(settings, docs) as ctx:
        MilvusCollection.open(ctx, create=True)


def _qa_models_here(settings: Any) -> bool:
    """The qa backend's trained models (``models:NAME``: trained here or shipped) are on this machine."""
    from medcite.paths import MODELS_PREFIX
    from medcite.trained_models import is_present

    return all(is_present(m) if m.startswith(MODELS_PREFIX) else Path(m).is_dir() for m in settings.qa.model_names())


def built(pipeline: Pipeline, stage: str, backend: str, settings: Any) -> list[Any]:
    """The objects the pipeline built for ``stage`` (to check they are the registered class)."""
    retrieval = pipeline.retrieval
    indexes = pipeline.context.open_indexes()
    return {
        "index": lambda: [indexes["bm25" if registry.config_class("index", backend).kind == "sparse" else "dense"]],
        "encoder": lambda: [indexes["dense"].encoder],
        "querygen": lambda: [retrieval.query_set.generators[-1]],
        "retriever": lambda: list(retrieval.retrievers.values()),
        "rerank": lambda: [retrieval.reranker],
        "evidence": lambda: [pipeline.selector],
        "generate": lambda: [pipeline.generator],
        "llm": lambda: [pipeline.context.llm()] if needs_llm(settings) else [],
        "stance": lambda: [pipeline.stance] if pipeline.stance is not None else [],
        "qa": lambda: [pipeline.context.build("qa", settings.qa)],  # BioASQ Phase A+/B build it beside the pipeline
        "design": lambda: [pipeline.designs.labeller, pipeline.retrieval.labeller],
    }[stage]()


def _retrieves_with_ltr(pipeline: Pipeline, where: str) -> list[str]:
    """``best`` searches once: its LTR reranker reorders the first stage (features read on this engine)."""
    got = pipeline.retrieval.retrieve(Topic("t", "Do statins lower LDL cholesterol?"))
    first, reranked = got.rankings.get("retrieval", []), got.rankings.get("rerank", [])
    if type(pipeline.retrieval.reranker).__name__ != "LTRReranker" or not first or \
            {h.pmid for h in reranked} != {h.pmid for h in first}:
        return [f"{where}: the LTR reranker did not reorder the first stage ({len(first)} -> {len(reranked)})"]
    return []


def test_every_preset_builds_with_every_registered_backend(store: Path, tiny: dict[str, str], server: str,
                                                           models: ModelCache, milvus: str | None,
                                                           models_folder: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDCITE_MODELS_DIR", str(models_folder))
    table = variants(tiny, server, milvus)
    milvus_layouts: set[str] = set()
    for stage in registry.stages():
        # an engine is no built stage: it moves `indexes` when the settings validate
        # (tests/unit/index/test_index_engine.py); its milvus variant is the milvus-hybrid one below
        if stage.name not in ("task", "engine"):
            assert set(table[stage.name]) == set(registry.names(stage.name)), f"stage {stage.name}: add its variant"
    failures: list[str] = []
    builds = 0
    for preset in preset_names():
        base = load_settings(preset)
        offline = offline_settings(base, "local")
        for stage, backends in table.items():
            for backend, make in backends.items():
                extra = make(offline)
                settings = with_overrides(offline, extra)
                late: list[str] = []  # LLMs a variant makes a stage call that the preset itself never calls
                if stage != "llm":  # (dal25-expert's Mistral judges only in Task A): swapped as offline_settings would
                    for n in sorted(llm_names(settings), key=lambda n: n or ""):
                        cfg, path = (settings.llm, "llm") if n is None else (settings.llms[n], f"llms.{n}")
                        if cfg.backend == "openai":
                            late += [f"{path}.backend=local", f"{path}.model=null"]
                if late:
                    settings = with_overrides(offline, [*extra, *late])
                if stage != "llm" and needs_llm(settings) and settings.llm.backend == "none":
                    # the stage needs one
                    settings = with_overrides(offline, [*extra, *late, "llm.backend=rules"])
                where = f"{preset} + {stage}={backend}"
                expect_error = (backend == "llamacpp" or (stage, backend) == ("llm", "none") and needs_llm(settings)
                                or (stage, backend) == ("stance", "none") and uses_stance(settings)
                                or stage == "qa" and not _qa_models_here(settings)
                                # a trained model medcite builds (`medcite models build`) is not here
                                or bool(missing_models(settings)))
                try:
                    layout = json.dumps({n: c.model_dump(mode="json") for n, c in settings.indexes.items()
                                         if c.backend.startswith("milvus")}, sort_keys=True)
                    if milvus and layout != "{}" and layout not in milvus_layouts:
                        _build_milvus(settings, store)
                        milvus_layouts.add(layout)
                    with Pipeline(settings, store, models=models) as pipeline:
                        builds += 1
                        objects = built(pipeline, stage, backend, settings)
                        cls = registry.load(stage, backend)
                        if stage == "retriever" and backend in ("bm25", "dense"):
                            # the index the branch searches: the preset's own sparse backend (clac25-*: bm25s)
                            cls = registry.load("index", settings.indexes["bm25"].backend if backend == "bm25"
                                                else "faiss")
                        wanted = type(None) if (stage, backend) == ("rerank", "none") else cls
                        nothing_to_build = (stage, backend) in (("llm", "none"), ("stance", "none"))
                        if not (objects or nothing_to_build) or not all(isinstance(o, wanted) for o in objects):
                            failures.append(f"{where}: built {[type(o).__name__ for o in objects]}")
                        if expect_error:
                            failures.append(f"{where}: built, but it should have failed")
                        if preset == "best" and stage in ("index", "retriever"):
                            failures += _retrieves_with_ltr(pipeline, where)
                except MissingExtraError as exc:
                    if backend != "llamacpp" and not (milvus is None and "milvus" in backend):
                        failures.append(f"{where}: {exc}")
                    assert "pip install" in (exc.hint or "")
                except ConfigError as exc:
                    if not expect_error:
                        failures.append(f"{where}: {exc.message}")
                    assert exc.hint, where
    assert not failures, "\n".join(failures[:40])
    assert builds > 10 * len(preset_names())
