"""GPU speed of medcite's model stages (issue 32): medcite's own encode and rerank paths against
sentence-transformers called directly, on the same model and device, in float32 and in half precision.

Models: random weights in the real shapes, built from ``transformers`` configs alone (no download), each saved to
a temporary folder with the tokenizer of the packaged offline all-MiniLM-L6-v2 (``base_model_dir("minilm")``):

- MiniLM-L6 (BertConfig hidden 384, 6 layers, 12 heads, intermediate 1536): all-MiniLM-L6-v2 and the ms-marco
  MiniLM-L6 cross-encoder; MiniLM-L12 (12 layers): the ms-marco MiniLM-L12 cross-encoder;
- BERT-base (768, 12 layers, 12 heads, 3072): MedCPT's article encoder and cross-encoder;
- T5-base (d_model 768, 12 + 12 layers, 12 heads, d_ff 3072): monoT5-base (its vocabulary is the MiniLM tokenizer's,
  whose "true" and "false" are single tokens, as monoT5 needs).

Text: real abstracts (title + abstract) of the NLM baseline file ``pubmed20n0014.xml.gz`` in the shared data
(``pubmed_xml/SOURCE.md``), and a real BioASQ question as the query of the rerankers.

Measured (abstracts or pairs per second, after a warm-up batch; CUDA synchronised):
- encoding: medcite's encoder classes through ``load_encoder`` (sentence-transformers backend for MiniLM,
  hf-asymmetric [CLS] at 512 tokens for BERT-base, as MedCPT) against ``SentenceTransformer.encode`` on the same
  weights and device (batch 32, its default, and medcite's batch size); float32, float16, and ``auto``;
- reranking: medcite's cross-encoder (``CrossEncoderReranker``) and monoT5 (``MonoT5Reranker``) pairs per second at
  512 tokens; float32 and ``auto``;
- the PJs-sized configuration: 10,000 candidates per question scored by four models (the MiniLM-L6, MiniLM-L12 and
  BERT-base cross-encoders and monoT5-base): seconds per question, measured on all 10,000 on a GPU, projected from
  the measured pair rates with ``--cpu``.

It refuses to run without a CUDA device unless ``--cpu`` is given; ``--cpu`` runs a small version on the CPU (a
few abstracts per model, float32 only: the CPU reference, ~2-3 minutes on 2 cores). Results: ``results/gpu.json``
(CUDA) or ``results/gpu_cpu.json`` (``--cpu``); both feed the ``## GPU`` section of ``docs/SCALE.md``.

    python benchmarks/bench_gpu.py            # on a machine with a CUDA GPU (about 5 minutes)
    python benchmarks/bench_gpu.py --cpu      # the CPU reference
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

NAME = "gpu"
SCALE_MD = common.REPO / "docs" / "SCALE.md"
PUBMED_ABSTRACTS = 36_000_000
PJS_CANDIDATES = 10_000
#: what the issue's reporter measured on one H200 (issue 32), not measured by medcite: abstracts per second
REPORTED_H200 = {
    "medcite_minilm_cpu_fallback": 150.0,  # `medcite index dense encode ... --set ...device=cuda` before the fix
    "st_minilm_fp32": 2831.0,  # sentence-transformers directly, all-MiniLM-L6-v2, float32
    "bert_base_fp32": 1251.0,  # a BERT-base encoder (MedCPT's size), float32
    "bert_base_fp16": 2381.0,  # the same in float16
}
SHAPES: dict[str, dict[str, Any]] = {
    "minilm-l6": {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536},
    "minilm-l12": {"hidden_size": 384, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 1536},
    "bert-base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
}
#: how much each run measures: (abstracts for MiniLM, for BERT-base, pairs per cross-encoder, pairs for monoT5)
SIZES = {"cuda": (8192, 4096, 2048, 1024), "cpu": (32, 8, 8, 4)}


# -- inputs -----------------------------------------------------------------------------------------------------
def read_abstracts(n: int) -> list[Any]:
    """The first ``n`` articles with an abstract of the shared NLM baseline file."""
    from medcite.paths import shared_data_dir

    return common.read_articles(shared_data_dir() / "pubmed_xml" / "pubmed20n0014.xml.gz", n)


def read_question() -> str:
    from medcite.paths import shared_data_dir

    path = shared_data_dir() / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz"
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return str(json.load(fh)["questions"][0]["body"])
    except (OSError, KeyError, IndexError, ValueError):
        return "Do statins lower LDL cholesterol in adults with diabetes?"


# -- models -----------------------------------------------------------------------------------------------------
def _tokenizer() -> Any:
    from transformers import AutoTokenizer

    from medcite.train.common import base_model_dir

    return AutoTokenizer.from_pretrained(base_model_dir("minilm"), local_files_only=True)


def _bert_config(shape: str, **extra: Any) -> Any:
    from transformers import BertConfig

    return BertConfig(vocab_size=30522, max_position_embeddings=512, **SHAPES[shape], **extra)


def build_models(root: Path) -> dict[str, Path]:
    """Random-weight models of the real shapes, saved as ordinary folders medcite loads by path."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertForSequenceClassification, BertModel, T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    tok = _tokenizer()
    out: dict[str, Path] = {}

    def save(name: str, model: Any) -> Path:
        folder = root / name
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        out[name] = folder
        return folder

    minilm = save("minilm-l6-bert", BertModel(_bert_config("minilm-l6")))
    st = SentenceTransformer(modules=[Transformer(str(minilm), max_seq_length=256), Pooling(384, "mean"),
                                      Normalize()], device="cpu")
    st.save(str(root / "minilm-l6-st"))
    out["minilm-l6-st"] = root / "minilm-l6-st"
    save("bert-base", BertModel(_bert_config("bert-base")))
    for shape in SHAPES:
        save(f"ce-{shape}", BertForSequenceClassification(_bert_config(shape, num_labels=1)))
    t5_base: dict[str, Any] = {"vocab_size": tok.vocab_size, "d_model": 768, "d_kv": 64, "d_ff": 3072, "num_layers": 12,
                               "num_decoder_layers": 12, "num_heads": 12, "pad_token_id": 0,
                               "eos_token_id": tok.sep_token_id, "decoder_start_token_id": 0}
    t5 = T5Config(**t5_base)
    save("monot5-base", T5ForConditionalGeneration(t5))
    return out


# -- timing -------------------------------------------------------------------------------------------------------
def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def rates(runs: dict[str, Callable[[Sequence[Any]], object]], items: Sequence[Any], device: str, warm: int,
          reps: int = 2) -> dict[str, dict[str, float]]:
    """Per run: items per second of ``run(items)``, the best of ``reps`` passes taken in turn with the other runs
    (a shared machine's noise hits them alike), after ``run(items[:warm])`` (CUDA kernels, allocator, caches; a
    few items on the CPU, where there is little to warm). ``per_s``: wall clock; ``per_cpu_s`` (CPU only): per
    second of this process's CPU time, the steadier figure on a busy machine."""
    for run in runs.values():
        run(items[: warm if device != "cpu" else min(warm, 4)])
    _sync(device)
    best: dict[str, dict[str, float]] = {name: {"per_s": 0.0, "per_cpu_s": 0.0} for name in runs}
    for _ in range(reps):
        for name, run in runs.items():
            t0, c0 = time.perf_counter(), time.process_time()
            run(items)
            _sync(device)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            best[name]["per_s"] = max(best[name]["per_s"], len(items) / wall)
            best[name]["per_cpu_s"] = max(best[name]["per_cpu_s"], len(items) / max(cpu, 1e-9))
    for b in best.values():
        b["per_s"] = round(b["per_s"], 2)
        if device == "cpu":
            b["per_cpu_s"] = round(b["per_cpu_s"], 2)
        else:
            del b["per_cpu_s"]
    return best


def _free(device: str) -> None:
    import gc

    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


# -- measurements ---------------------------------------------------------------------------------------------------
def _medcite_run(encoder: Any) -> Callable[[Sequence[Any]], object]:
    def run(items: Sequence[Any]) -> object:
        return encoder.encode_documents(list(items))
    return run


def _st_run(model: Any, batch: int) -> Callable[[Sequence[Any]], object]:
    def run(items: Sequence[Any]) -> object:
        return model.encode([a.text for a in items], batch_size=batch, show_progress_bar=False)
    return run


def _score_run(model: Any, query: str) -> Callable[[Sequence[Any]], object]:
    def run(items: Sequence[Any]) -> object:
        return model.score_texts(query, list(items))
    return run


def encoding(models: dict[str, Path], articles: list[Any], device: str, dtypes: list[str], n_minilm: int,
             n_bert: int) -> list[dict[str, Any]]:
    """medcite's encoders (through load_encoder) against SentenceTransformer.encode on the same weights."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    from medcite.devices import resolve_dtype, torch_dtype
    from medcite.index.dense.encoders import load_encoder

    rows: list[dict[str, Any]] = []
    for shape, n in (("minilm-l6", n_minilm), ("bert-base", n_bert)):
        docs = (articles * (n // max(len(articles), 1) + 1))[:n]
        for dtype in dtypes:
            resolved = resolve_dtype(dtype, device)
            if shape == "minilm-l6":
                spec: dict[str, Any] = {"backend": "sentence-transformers", "model": str(models["minilm-l6-st"])}
                st = SentenceTransformer(str(models["minilm-l6-st"]), device=device)
            else:  # MedCPT's article side: [title, abstract] pairs, [CLS], 512 tokens
                spec = {"backend": "hf-asymmetric", "model": str(models["bert-base"]),
                        "query_model": str(models["bert-base"]), "normalize": False}
                st = SentenceTransformer(modules=[Transformer(str(models["bert-base"]), max_seq_length=512),
                                                  Pooling(768, "cls")], device=device)
            st.to(torch_dtype(resolved))
            enc: Any = load_encoder({**spec, "device": device, "dtype": dtype})
            batch = int(enc.batch_size)
            row: dict[str, Any] = {"model": shape, "dtype": dtype, "resolved_dtype": resolved, "n": n,
                                   "medcite_batch": batch}
            # the same texts either way: medcite's ``Article.text`` is what sentence-transformers reads here
            runs: dict[str, Callable[[Sequence[Any]], object]] = {
                "medcite": _medcite_run(enc), "st_batch32": _st_run(st, 32)}
            if batch != 32:
                runs["st_same_batch"] = _st_run(st, batch)
            for name, measured in rates(runs, docs, device, warm=batch).items():
                row.update({f"{name}_{k}": v for k, v in measured.items()})
            row["medcite_vs_st"] = round(_ratio(row), 3)
            rows.append(row)
            print(json.dumps(row), flush=True)
            del enc, st
            _free(device)
    return rows


def reranking(models: dict[str, Path], articles: list[Any], query: str, device: str, dtypes: list[str],
              n_pairs: int, n_t5: int) -> list[dict[str, Any]]:
    """medcite's cross-encoder and monoT5 rerankers: pairs per second at 512 tokens."""
    from medcite.rerank.cross_encoder import CrossEncoderReranker
    from medcite.rerank.monot5 import MonoT5Reranker
    from medcite.rerank.scoring import document_text

    rows: list[dict[str, Any]] = []
    for name in ("ce-minilm-l6", "ce-minilm-l12", "ce-bert-base", "monot5-base"):
        n = n_t5 if name.startswith("monot5") else n_pairs
        texts = [document_text(a) for a in (articles * (n // max(len(articles), 1) + 1))[:n]]
        for dtype in dtypes:
            model: Any
            if name.startswith("monot5"):
                model = MonoT5Reranker(str(models[name]), max_length=512, device=device, dtype=dtype)
            else:
                model = CrossEncoderReranker(str(models[name]), max_length=512, activation="raw", device=device,
                                             dtype=dtype)
            batch = int(model.batch_size)
            measured = rates({"m": _score_run(model, query)}, texts, device, warm=batch)["m"]
            row = {"model": name, "dtype": dtype, "resolved_dtype": model.placement.dtype, "n": n, "batch": batch,
                   "pairs_per_s": measured["per_s"],
                   **({"pairs_per_cpu_s": measured["per_cpu_s"]} if "per_cpu_s" in measured else {})}
            rows.append(row)
            print(json.dumps(row), flush=True)
            del model
            _free(device)
    return rows


def pjs(models: dict[str, Path], articles: list[Any], query: str, device: str, rerank_rows: list[dict[str, Any]],
        measure: bool) -> dict[str, Any]:
    """Seconds per question to score 10,000 candidates with the four reranker models (dtype auto)."""
    from medcite.rerank.cross_encoder import CrossEncoderReranker
    from medcite.rerank.monot5 import MonoT5Reranker
    from medcite.rerank.scoring import document_text

    names = ("ce-minilm-l6", "ce-minilm-l12", "ce-bert-base", "monot5-base")
    auto = {r["model"]: r["pairs_per_s"] for r in rerank_rows if r["dtype"] == "auto"}
    projected = {n: PJS_CANDIDATES / auto[n] for n in names}
    out: dict[str, Any] = {"candidates": PJS_CANDIDATES, "models": list(names),
                           "projected_s": {n: round(s, 2) for n, s in projected.items()},
                           "projected_total_s": round(sum(projected.values()), 2)}
    if not measure:
        return out
    texts = [document_text(a) for a in (articles * (PJS_CANDIDATES // max(len(articles), 1) + 1))[:PJS_CANDIDATES]]
    measured: dict[str, float] = {}
    for name in names:
        model: Any = (MonoT5Reranker(str(models[name]), max_length=512, device=device) if name.startswith("monot5")
                      else CrossEncoderReranker(str(models[name]), max_length=512, activation="raw", device=device))
        model.score_texts(query, texts[: model.batch_size])
        _sync(device)
        t0 = time.perf_counter()
        model.score_texts(query, texts)
        _sync(device)
        measured[name] = round(time.perf_counter() - t0, 2)
        print(json.dumps({"pjs": name, "seconds": measured[name]}), flush=True)
        del model
        _free(device)
    out.update(measured_s=measured, measured_total_s=round(sum(measured.values()), 2))
    return out


# -- docs -------------------------------------------------------------------------------------------------------------
def _load(name: str) -> dict[str, Any] | None:
    path = common.RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _hours(per_s: float) -> str:
    hours = PUBMED_ABSTRACTS / per_s / 3600
    return f"{hours:,.1f} h" if hours < 48 else f"{hours / 24:,.1f} days"


def _fmt(row: dict[str, Any], key: str) -> str | None:
    """``"12.3"``, or ``"12.3 (40.1)"`` with the rate per CPU-second (CPU runs), or None when not measured."""
    wall, cpu = row.get(f"{key}_per_s"), row.get(f"{key}_per_cpu_s")
    if wall is None:
        return None
    return f"{wall:,.1f}" + (f" ({cpu:,.1f})" if cpu is not None else "")


def _ratio(row: dict[str, Any]) -> float:
    """medcite's rate over sentence-transformers' at batch 32: per CPU-second when measured (a CPU run: steadier
    on a busy machine), else wall clock."""
    key = "per_cpu_s" if "medcite_per_cpu_s" in row else "per_s"
    return float(row[f"medcite_{key}"]) / float(row[f"st_batch32_{key}"])


def _enc_table(res: dict[str, Any]) -> str:
    rows = [[r["model"], f"{r['dtype']} ({r['resolved_dtype']})", f"{r['n']:,}", _fmt(r, "medcite"), r["medcite_batch"],
             _fmt(r, "st_batch32"), _fmt(r, "st_same_batch"), f"{_ratio(r):.2f}"] for r in res["encoding"]]
    return common.markdown_table(["encoder shape", "dtype (resolved)", "abstracts", "medcite /s", "medcite batch",
                                  "ST direct /s (batch 32)", "ST direct /s (medcite's batch)", "medcite / ST"], rows)


def _rerank_table(res: dict[str, Any]) -> str:
    rows = [[r["model"], f"{r['dtype']} ({r['resolved_dtype']})", r["n"], r["batch"], _fmt(r, "pairs")]
            for r in res["reranking"]]
    return common.markdown_table(["reranker shape (512 tokens)", "dtype (resolved)", "pairs", "batch", "pairs /s"],
                                 rows)


def _bert_rate(res: dict[str, Any], dtype: str, key: str = "per_s") -> float | None:
    for r in res["encoding"]:
        if r["model"] == "bert-base" and r["dtype"] == dtype and f"medcite_{key}" in r:
            return float(r[f"medcite_{key}"])
    return None


def _cpu_pjs(cpu: dict[str, Any]) -> str:
    """The PJs-sized rerank on the CPU, projected from the pair rates per CPU-second (steadier than wall clock on a
    busy machine): CPU-seconds of one core per question."""
    per_cpu = {r["model"]: r.get("pairs_per_cpu_s") for r in cpu["reranking"] if r["dtype"] == "float32"}
    if not all(per_cpu.values()):
        return (f"PJs-sized rerank on this CPU, projected from the pair rates above: "
                f"{cpu['pjs']['projected_total_s']:,.0f} s per question.")
    seconds = {k: PJS_CANDIDATES / float(v) for k, v in per_cpu.items() if v}
    return (f"PJs-sized rerank on this CPU, projected from the pair rates per CPU-second above: "
            f"{sum(seconds.values()):,.0f} CPU-seconds of one core per question "
            f"({', '.join(f'{k} {v:,.0f} s' for k, v in seconds.items())}), i.e. "
            f"{sum(seconds.values()) / 3600:,.1f} core-hours: a GPU's job.")


def docs_section(gpu: dict[str, Any] | None, cpu: dict[str, Any] | None) -> str:
    """The ``## GPU`` section of docs/SCALE.md from whichever results exist."""
    rep = REPORTED_H200
    lines = [
        "Every torch stage (dense encoders, cross-encoders, MedCPT, monoT5, ColBERT, the reader, the stance models, "
        "the local LLM, training) takes `device` (default `auto`: a CUDA GPU, then Apple MPS, else the CPU) and "
        "`dtype` (default `auto`: bfloat16 on a GPU that has it, else float16 there, float32 on the CPU); an "
        "explicit device the machine lacks is an error when the stage is built; a `batch_size` of null is the "
        "former default on the CPU (32 for most stages) and larger on a GPU. `medcite config show` prints what "
        "`auto` resolves to, every run directory records it (`devices.json`), and `medcite index dense encode "
        "--encoder DIR` keeps `--set indexes.dense.encoder.device=...`, dtype and batch size.",
        "",
        "**Measured by the issue's reporter on one H200 (issue 32; not measured by medcite):** "
        f"`medcite index dense encode --encoder DIR --set indexes.dense.encoder.device=cuda` ran on the CPU at "
        f"{rep['medcite_minilm_cpu_fallback']:,.0f} abstracts/s (the `--encoder` option replaced the encoder settings "
        f"and dropped the device) against {rep['st_minilm_fp32']:,.0f}/s for sentence-transformers directly "
        f"(all-MiniLM-L6-v2, fp32); a BERT-base encoder (MedCPT's size) ran at {rep['bert_base_fp32']:,.0f}/s in fp32 "
        f"and {rep['bert_base_fp16']:,.0f}/s in fp16. These replace the GPU rates *assumed* in \"Encoding cost\" "
        "above (3,000/s for MiniLM, 600/s for MedCPT).",
        "",
        "The PJs-sized rerank is a heavy stand-in for PJs-team's 10,000-candidate reranking (their config-4 scores "
        "all 10,000 candidates with three bi-encoder rerankers): four models that read every (question, abstract) "
        "pair at up to 512 tokens, the ms-marco MiniLM-L6 and -L12 and a BERT-base cross-encoder (MedCPT's size) "
        "and monoT5-base.",
        "",
    ]
    proj = [["issue reporter, H200, BERT-base fp32", f"{rep['bert_base_fp32']:,.0f}", _hours(rep["bert_base_fp32"])],
            ["issue reporter, H200, BERT-base fp16", f"{rep['bert_base_fp16']:,.0f}", _hours(rep["bert_base_fp16"])],
            ["issue reporter, H200, all-MiniLM-L6-v2 fp32 (ST)", f"{rep['st_minilm_fp32']:,.0f}",
             _hours(rep["st_minilm_fp32"])]]
    if gpu is None:
        lines += [
            "**medcite's own GPU run of `bench_gpu.py` has not been done yet**: no GPU was available in the session "
            "that wrote this, so no GPU figure below comes from medcite. Run on a machine with a CUDA GPU "
            "(about 5 minutes; it refuses to run without one):",
            "",
            "```bash",
            ".venv/bin/python benchmarks/bench_gpu.py",
            "```",
            "",
            "It rewrites this section with medcite's encode path against sentence-transformers on the same weights "
            "(fp32, fp16, bf16), the rerankers' pairs per second, and the PJs-sized rerank measured on 10,000 "
            "candidates.",
            "",
        ]
    else:
        g = gpu["device_name"]
        lines += [f"### medcite on a GPU ({g}; `bench_gpu.py`, {gpu['measured_at']})", "",
                  "Random-weight models of the real shapes (see the script); real abstracts.", "",
                  _enc_table(gpu), "", _rerank_table(gpu), "",
                  f"PJs-sized rerank (10,000 candidates per question, four models, dtype auto): "
                  f"{gpu['pjs']['measured_total_s']:,.1f} s per question measured "
                  f"({', '.join(f'{k} {v:.1f} s' for k, v in gpu['pjs']['measured_s'].items())}).", ""]
        for dtype in ("float32", "float16", "auto"):
            per_s = _bert_rate(gpu, dtype)
            if per_s:
                proj.append([f"medcite on {g}, BERT-base {dtype}", f"{per_s:,.0f}", _hours(per_s)])
    if cpu is not None:
        c = cpu["machine"]
        lines += [f"### CPU reference (`bench_gpu.py --cpu`, {cpu['measured_at']})", "",
                  f"Measured here, on {c.get('cpus')} shared CPU cores ({cpu['threads']} torch threads; other sessions "
                  "running), float32 (what `auto` is on a CPU), a few abstracts or pairs per model (best of two "
                  "passes): read the rates to one significant figure. In brackets: per second of the process's CPU "
                  "time, the steadier figure on a busy machine (medcite / ST compares those).", "",
                  _enc_table(cpu), "", _rerank_table(cpu), "",
                  _cpu_pjs(cpu), ""]
        per_cpu_s = _bert_rate(cpu, "float32", "per_cpu_s")
        if per_cpu_s:
            proj.append(["medcite on this CPU (bench_gpu.py --cpu), BERT-base fp32, per CPU core (CPU time)",
                         f"{per_cpu_s:,.1f}", _hours(per_cpu_s) + " of one core"])
    lines += ["### All of PubMed (36M abstracts) with a BERT-base-size encoder (MiniLM for comparison)", "",
              "36,000,000 abstracts divided by the rate, one device (shards split it across devices: "
              "`medcite index dense encode --shard I/N`, above):", "",
              common.markdown_table(["rate from", "abstracts /s", "time"], proj)]
    return "\n".join(lines)


def write_docs() -> None:
    body = docs_section(_load(NAME), _load(f"{NAME}_cpu"))
    text = SCALE_MD.read_text(encoding="utf-8")
    if "\n## GPU\n" not in text:  # the heading sits outside the markers, which bench_gpu owns
        SCALE_MD.write_text(text.rstrip("\n") + "\n\n## GPU\n\n", encoding="utf-8")
    common.update_markdown_section(NAME, body, path=SCALE_MD)


# -- main ---------------------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", action="store_true", help="run the small CPU version (no GPU needed)")
    ap.add_argument("--docs-only", action="store_true", help="rewrite the docs section from the saved results")
    ap.add_argument("--no-docs", action="store_true", help="do not touch docs/SCALE.md")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default benchmarks/results)")
    args = ap.parse_args(argv)
    if args.docs_only:
        write_docs()
        return 0
    try:
        import torch
    except ImportError:
        print("bench_gpu: torch is not installed (pip install 'medcite[dense]')", file=sys.stderr)
        return 2
    if not args.cpu and not torch.cuda.is_available():
        from medcite.devices import machine

        print(f"bench_gpu: no CUDA device here ({machine().describe()}); run it on a machine with a CUDA GPU, "
              "or pass --cpu for the small CPU version", file=sys.stderr)
        return 2
    device = "cpu" if args.cpu else "cuda"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    n_minilm, n_bert, n_pairs, n_t5 = SIZES[device]
    dtypes = ["float32"] if args.cpu else ["float32", "float16", "auto"]
    started = time.perf_counter()
    articles = read_abstracts(min(max(n_minilm, n_pairs), 4096))
    query = read_question()
    with tempfile.TemporaryDirectory(prefix="medcite-bench-gpu-") as tmp:
        models = build_models(Path(tmp))
        enc = encoding(models, articles, device, dtypes, n_minilm, n_bert)
        rerank_dtypes = ["float32"] if args.cpu else ["float32", "auto"]
        rer = reranking(models, articles, query, device, rerank_dtypes, n_pairs, n_t5)
        if args.cpu:  # the CPU measured float32, which is what auto is there
            rer += [{**r, "dtype": "auto"} for r in rer if r["dtype"] == "float32"]
        pj = pjs(models, articles, query, device, rer, measure=not args.cpu)
    result = {"device": device, "device_name": torch.cuda.get_device_name(0) if device == "cuda" else "CPU",
              "torch": torch.__version__, "threads": torch.get_num_threads(), "abstracts_read": len(articles),
              "query": query, "encoding": enc, "reranking": [r for r in rer if not (args.cpu and r["dtype"] == "auto")],
              "pjs": pj, "reported_h200": REPORTED_H200, "seconds": round(time.perf_counter() - started, 1)}
    path = common.write_result(NAME if device == "cuda" else f"{NAME}_cpu", result, args.out)
    print(f"results: {path}")
    if not args.no_docs and args.out is None:
        write_docs()
        print(f"docs: {SCALE_MD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
