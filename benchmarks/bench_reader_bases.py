"""Which base and split learns the sentence reader fastest at equal CPU time: MiniLM-L6 against all-mpnet-base-v2.

Each variant trains the ``verdict`` branch (the yes/no sentence reader) of :class:`medcite.train.reader.Trainer`
on the same seeded order of the same training pairs (the shipped recipe's data: BioASQ 7b-11b + 12B yes/no
snippets, PubMedQA conclusions and sections, counterfactual pairs), batch 16, AdamW with a 20-batch warm-up, for
``--batches`` batches, from the cached bottom states each variant's split reads. Every batch is new data, so the
mean training loss over each block of 40 batches is a progressive held-out loss; the trivial baseline is the
class-balanced cross-entropy of the uniform guess, ln 3 = 1.0986. Seconds per batch are measured in the same
run (the cached bottom states excluded: they are computed, or read from the cache, before the clock starts), so
the loss each variant reaches in the same CPU time can be read off (``loss_at_equal_time``).

    python benchmarks/bench_reader_bases.py [--batches 160] [--variants minilm2 mpnet8 mpnet10lora]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

NAME = "reader_bases"
SHARED = common.REPO.parent / "shared" / "data"
#: name -> (base, trained_from, cache_from, lora_rank, learning rate)
VARIANTS: dict[str, tuple[str, int, int | None, int, float]] = {
    "minilm2": ("minilm", 2, None, 0, 1e-4),
    "minilm0": ("minilm", 0, None, 0, 5e-5),
    "mpnet8": ("mpnet", 8, 8, 0, 5e-5),
    "mpnet10lora": ("mpnet", 10, 8, 32, 5e-4),
}
BLOCK = 40


def run_variant(name: str, data: Any, batches: int, threads: int) -> dict[str, Any]:
    import numpy as np
    import torch

    from medcite.train.reader import Trainer, shipped_options

    torch.set_num_threads(threads)
    base, trained_from, cache_from, rank, lr = VARIANTS[name]
    opts = replace(shipped_options(), base=base, trained_from=trained_from, cache_from=cache_from,
                   lora_rank=rank, lr=lr, heads=("yesno",), branches={"verdict": ("yesno",)}, device="cpu")
    trainer = Trainer(opts, data, progress=False)
    net = trainer.net
    net.train()
    net.trunk.eval()
    opt = torch.optim.AdamW(trainer.params, lr=lr, weight_decay=0.01)
    rows = list(range(len(data.train.examples["yesno"])))
    random.Random(0).shuffle(rows)
    losses: list[float] = []
    blocks: list[dict[str, float]] = []
    t0 = time.perf_counter()
    for step in range(min(batches, len(rows) // opts.batch_size)):
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / 20)
        loss = trainer.loss("yesno", rows[step * opts.batch_size:(step + 1) * opts.batch_size])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainer.params, 1.0)
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.item()))
        if (step + 1) % BLOCK == 0:
            blocks.append({"batches": step + 1, "loss": round(float(np.mean(losses[-BLOCK:])), 4),
                           "seconds": round(time.perf_counter() - t0, 1)})
            print(name, blocks[-1], flush=True)
    seconds = time.perf_counter() - t0
    trained = sum(p.numel() for p in trainer.params)
    return {"base": base, "trained_from": trained_from, "lora_rank": rank, "lr": lr,
            "trained_parameters": trained, "batches": len(losses),
            "seconds_per_batch": round(seconds / max(1, len(losses)), 3), "blocks": blocks}


def loss_at(blocks: list[dict[str, float]], seconds: float) -> float | None:
    """The last block loss a variant had reached within ``seconds`` of training."""
    done = [b["loss"] for b in blocks if b["seconds"] <= seconds]
    return done[-1] if done else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=160)
    ap.add_argument("--variants", nargs="+", default=["minilm2", "mpnet8"], choices=sorted(VARIANTS))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    from medcite.train.reader import shipped_options
    from medcite.train.reader_data import build_data

    # the same training pairs for every variant (the recipe's data options; no head is capped, so no trainer
    # changes them), read once
    data = build_data(SHARED / "bioasq" / "bioasq_taskb_golden_7b-11b_dev.json.gz",
                      SHARED / "pubmedqa" / "pqal_dev.json", None, shipped_options().data,
                      bioasq_extra=[SHARED / "bioasq" / "bioasq_taskb_golden_12b.json.gz"])
    results = {v: run_variant(v, data, args.batches, args.threads) for v in args.variants}
    # equal CPU time: the training time of the variant that finished its batches first
    budget = min((r["blocks"][-1]["seconds"] for r in results.values() if r["blocks"]), default=0.0)
    for r in results.values():
        r["loss_at_equal_time"] = loss_at(r["blocks"], budget)
    trivial = round(math.log(3), 4)
    common.write_result(NAME, {"what": "the yes/no sentence reader trained from each base and split on the same "
                                       "batches: progressive held-out loss per 40 batches and seconds per batch",
                               "trivial_loss": trivial, "equal_time_seconds": budget, "variants": results})
    rows = [[v, r["base"], r["trained_from"], r["lora_rank"] or "full", f"{r['trained_parameters'] / 1e6:.1f} M",
             r["seconds_per_batch"], *(b["loss"] for b in r["blocks"][:4]), r["loss_at_equal_time"]]
            for v, r in results.items()]
    table = common.markdown_table(
        ["variant", "base", "trained from", "LoRA rank", "trained params", "s / batch", "loss @40", "@80", "@120",
         "@160", f"loss at {budget:.0f} s"], rows)
    common.update_markdown_section(NAME, "## The readers' base at equal CPU time (`bench_reader_bases.py`)\n\n"
                                   "The yes/no sentence reader trained on the same batches from each base and split; "
                                   "every batch is new data, so the block loss is a progressive held-out loss. "
                                   f"Trivial baseline (uniform guess): {trivial}.\n\n" + table)


if __name__ == "__main__":
    main()
