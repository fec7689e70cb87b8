"""The frozen bottom's output for every training example, computed once and kept on disk.

A reader trains only the layers above its split (:mod:`medcite.reader.trunk`), so what the frozen bottom makes
of an example never changes: it is computed once per (base, split layer, head length, example texts) and kept
as float16 token states, with the span head's per-token targets. Every epoch, every branch and every variant
trained on the same data then reads the states from disk instead of running the bottom again: on 2 CPU cores
that is most of the cost of a step for a 110M-parameter base split at layer 8.

A cache folder (``<cache>/reader-states/<key>/<head>``) is written in parts of ``PART`` examples, each part
whole or absent (written to a temporary name, then renamed), so an interrupted build resumes where it stopped;
``done.json`` marks a finished head. The key digests the base's word embeddings, the split layer, whether the
bottom ran as int8 (on a CPU: as the shipped reader runs), the head's max length and the examples' texts, so a
cache is never read for other data or another base.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..io import write_json
from ..paths import cache_dir

if TYPE_CHECKING:
    from ..reader.trunk import Module, SplitTrunk, Tensor
    from .reader_data import Example

log = logging.getLogger(__name__)

PART = 1024
FORMAT = "medcite-reader-states/1"


def states_dir() -> Path:
    return cache_dir() / "reader-states"


def example_hash(e: Example) -> str:
    """What the bottom reads of an example: its texts (and answer spans, whose token targets the cache holds)."""
    return hashlib.sha1(e.first.encode("utf-8", "surrogatepass") + b"\x00" + e.second.encode("utf-8", "surrogatepass")
                        + b"\x01" + repr(e.spans).encode()).hexdigest()


def cache_key(base_digest: str, at: int, quantized: bool, head: str, length: int,
              examples: Sequence[Example]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([FORMAT, base_digest, at, quantized, head, length]).encode())
    for e in examples:
        h.update(e.first.encode("utf-8", "surrogatepass") + b"\x00" + e.second.encode("utf-8", "surrogatepass")
                 + b"\x01" + repr(e.spans).encode() + b"\x02")
    return h.hexdigest()[:24]


def _donors(root: Path, own: Path, meta: dict[str, object]) -> dict[str, tuple[Path, int, int]]:
    """Example hash -> (part file, first token, tokens) over the finished caches of the same base, split, head,
    length and quantisation whose parts record their examples' hashes: an example already computed for another
    list of examples (a data set changed by a few pairs) is copied, not computed again."""
    out: dict[str, tuple[Path, int, int]] = {}
    for done in root.glob(f"*/{meta['head']}/done.json"):
        folder = done.parent
        if folder == own:
            continue
        try:
            info = json.loads(done.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if any(info.get(k) != v for k, v in meta.items()):
            continue
        for part in sorted(folder.glob("part-*.npz")):
            with np.load(part) as z:
                if "hashes" not in z:
                    break
                lens = z["lengths"]
                offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
                for h, o, n in zip(z["hashes"], offs, lens, strict=True):
                    out.setdefault(str(h), (part.with_suffix(".npy"), int(o), int(n)))
    return out


@dataclass
class HeadStates:
    """The cached bottom states of one head's examples (in the order given)."""

    parts: list[np.ndarray]  # (tokens, hidden) float16 per part, memory-mapped
    part_of: np.ndarray  # (n,) the part of each example
    offset: np.ndarray  # (n,) its first token in its part
    length: np.ndarray  # (n,) its tokens
    start: list[np.ndarray]  # span targets per part, (tokens,) float32 (empty for other heads)
    end: list[np.ndarray]
    passage: list[np.ndarray]  # 1 for the passage's tokens (span head)

    def __len__(self) -> int:
        return len(self.length)

    def batch(self, idx: Sequence[int]) -> tuple[Tensor, Tensor]:
        """(states (b, L, hidden) float32, attention mask (b, L)) of examples ``idx``, padded to the longest."""
        import torch

        top = int(max(self.length[i] for i in idx))
        hidden = self.parts[0].shape[1]
        states = np.zeros((len(idx), top, hidden), dtype=np.float32)
        mask = np.zeros((len(idx), top), dtype=np.int64)
        for row, i in enumerate(idx):
            p, o, n = int(self.part_of[i]), int(self.offset[i]), int(self.length[i])
            states[row, :n] = self.parts[p][o: o + n]
            mask[row, :n] = 1
        return torch.from_numpy(states), torch.from_numpy(mask)

    def span_targets(self, idx: Sequence[int]) -> tuple[Tensor, Tensor, Tensor]:
        """(start, end, passage mask), each (b, L), of span examples ``idx`` (padded like :meth:`batch`)."""
        import torch

        top = int(max(self.length[i] for i in idx))
        out = [np.zeros((len(idx), top), dtype=np.float32) for _ in range(3)]
        for row, i in enumerate(idx):
            p, o, n = int(self.part_of[i]), int(self.offset[i]), int(self.length[i])
            for arr, src in zip(out, (self.start, self.end, self.passage), strict=True):
                arr[row, :n] = src[p][o: o + n]
        return tuple(torch.from_numpy(a) for a in out)  # type: ignore[return-value]


def _span_arrays(enc: Any, row: int, example: Example, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    start = np.zeros(n, dtype=np.float32)
    end = np.zeros(n, dtype=np.float32)
    passage = np.zeros(n, dtype=np.float32)
    for t, sid in enumerate(enc.sequence_ids(row)[:n]):
        if sid == 1:
            passage[t] = 1.0
    for a, b in example.spans:
        ts = enc.char_to_token(row, a, sequence_index=1)
        te = enc.char_to_token(row, b - 1, sequence_index=1)
        if ts is None or te is None or ts >= n or te >= n:  # cut off by truncation
            continue
        start[ts] = 1.0
        end[te] = 1.0
    return start, end, passage


def build_states(trunk: SplitTrunk, tokenizer: Any, head: str, examples: Sequence[Example], length: int, *,
                 base_digest: str, quantized: bool, device: str = "cpu", batch_size: int = 32,
                 folder: Path | None = None, progress: bool = True) -> HeadStates:
    """The bottom states of ``examples`` (cached; see the module doc), computing only the missing parts."""
    import torch

    from ..progress import progress as bar
    from ..reader.infer import encode_pairs

    key = cache_key(base_digest, trunk.at, quantized, head, length, examples)
    root = folder or states_dir()
    folder = root / key / head
    folder.mkdir(parents=True, exist_ok=True)
    n_parts = (len(examples) + PART - 1) // PART
    todo = [p for p in range(n_parts) if not (folder / f"part-{p:05d}.npz").is_file()]
    meta = {"head": head, "length": length, "split": trunk.at, "quantized": quantized, "base": base_digest}
    donors = _donors(root, folder, meta) if todo else {}
    if todo:
        log.info("reader states of %d %s examples (%d of %d parts to compute; %d examples already cached for other "
                 "data) in %s", len(examples), head, len(todo), n_parts,
                 sum(example_hash(e) in donors for e in examples), folder)
    with bar(total=sum(min(PART, len(examples) - p * PART) for p in todo), desc=f"bottom states ({head})",
             unit="pair", disable=not progress or not todo) as pbar, torch.inference_mode():
        for p in todo:
            rows = list(examples[p * PART: (p + 1) * PART])
            hashes = [example_hash(e) for e in rows]
            states: list[np.ndarray | None] = [None] * len(rows)
            spans: list[tuple[np.ndarray, np.ndarray, np.ndarray] | None] = [None] * len(rows)
            for i, h in enumerate(hashes):
                if h in donors and head != "span":  # span targets are not kept by donors: those are recomputed
                    path, o, n = donors[h]
                    states[i] = np.asarray(np.load(path, mmap_mode="r")[o: o + n])
            pbar.update(sum(s is not None for s in states))
            order = sorted((i for i in range(len(rows)) if states[i] is None),
                           key=lambda i: len(rows[i].first) + len(rows[i].second))
            for b in range(0, len(order), batch_size):
                idx = order[b: b + batch_size]
                enc = encode_pairs(tokenizer, [rows[i].first for i in idx], [rows[i].second for i in idx], length,
                                   offsets=head == "span")
                moved = {k: v.to(device) for k, v in enc.items() if k != "offset_mapping"}
                out = trunk.bottom_states(moved).float().cpu().numpy()
                for r, i in enumerate(idx):
                    n = int(enc["attention_mask"][r].sum())
                    states[i] = out[r, :n].astype(np.float16)
                    if head == "span":
                        spans[i] = _span_arrays(enc, r, rows[i], n)
                pbar.update(len(idx))
            lengths = np.asarray([s.shape[0] for s in states if s is not None], dtype=np.int64)
            flat = np.concatenate([s for s in states if s is not None], axis=0)
            extra: dict[str, np.ndarray] = {}
            if head == "span":
                for j, name in enumerate(("start", "end", "passage")):
                    extra[name] = np.concatenate([s[j] for s in spans if s is not None])
            tmp = folder / f".part-{p:05d}.{os.getpid()}.npy"
            np.save(tmp, flat)
            os.replace(tmp, folder / f"part-{p:05d}.npy")
            tmp_meta = folder / f".part-{p:05d}.{os.getpid()}.npz"
            with open(tmp_meta, "wb") as fh:
                np.savez(fh, lengths=lengths, hashes=np.asarray(hashes), **extra)  # type: ignore[arg-type]
            os.replace(tmp_meta, folder / f"part-{p:05d}.npz")  # the meta file marks the part done
    write_json(folder / "done.json", {"format": FORMAT, "examples": len(examples), "parts": n_parts, **meta})
    return load_states(folder, n_parts, head)


def derive_states(source: HeadStates, trunk: SplitTrunk, layers: Module, head: str, examples: Sequence[Example],
                  length: int, *, at: int, base_digest: str, quantized: bool, device: str = "cpu",
                  batch_size: int = 32, folder: Path | None = None, progress: bool = True) -> HeadStates:
    """The states after ``layers`` (the frozen layers from ``source``'s split up to ``at``), computed once from the
    cached ``source`` and cached as the states at layer ``at`` of the same examples (what :func:`build_states`
    would compute from the texts, without running the layers below again)."""
    import torch

    from ..progress import progress as bar

    key = cache_key(base_digest, at, quantized, head, length, examples)
    folder = (folder or states_dir()) / key / head
    folder.mkdir(parents=True, exist_ok=True)
    n_parts = len(source.parts)
    todo = [p for p in range(n_parts) if not (folder / f"part-{p:05d}.npz").is_file()]
    if todo:
        log.info("reader states of %d %s examples at layer %d from the cached ones (%d of %d parts) in %s",
                 len(examples), head, at, len(todo), n_parts, folder)
    with bar(total=len(todo), desc=f"states at layer {at} ({head})", unit="part",
             disable=not progress or not todo) as pbar, torch.inference_mode():
        for p in todo:
            idx = [int(i) for i in np.flatnonzero(source.part_of == p)]
            idx.sort(key=lambda i: int(source.length[i]))
            out: dict[int, np.ndarray] = {}
            for b in range(0, len(idx), batch_size):
                chunk = idx[b: b + batch_size]
                states, mask = source.batch(chunk)
                states = trunk.run(layers, states.to(device), mask.to(device)).float().cpu().numpy()
                for r, i in enumerate(chunk):
                    out[i] = states[r, : int(source.length[i])].astype(np.float16)
            order = sorted(out)  # the part's examples in their own order, as the source part holds them
            flat = np.concatenate([out[i] for i in order], axis=0)
            tmp = folder / f".part-{p:05d}.{os.getpid()}.npy"
            np.save(tmp, flat)
            os.replace(tmp, folder / f"part-{p:05d}.npy")
            extra: dict[str, np.ndarray] = {}
            if head == "span":
                extra = {"start": source.start[p], "end": source.end[p], "passage": source.passage[p]}
            tmp_meta = folder / f".part-{p:05d}.{os.getpid()}.npz"
            with open(tmp_meta, "wb") as fh:
                np.savez(fh, lengths=np.asarray([int(source.length[i]) for i in order], dtype=np.int64),
                         hashes=np.asarray([example_hash(examples[i]) for i in order]), **extra)  # type: ignore[arg-type]
            os.replace(tmp_meta, folder / f"part-{p:05d}.npz")
            pbar.update(1)
    write_json(folder / "done.json", {"format": FORMAT, "examples": len(examples), "parts": n_parts, "head": head,
                                      "length": length, "split": at, "quantized": quantized, "base": base_digest,
                                      "derived": True})
    return load_states(folder, n_parts, head)


def load_states(folder: Path, n_parts: int, head: str) -> HeadStates:
    parts, part_of, offset, length, start, end, passage = [], [], [], [], [], [], []
    for p in range(n_parts):
        parts.append(np.load(folder / f"part-{p:05d}.npy", mmap_mode="r"))
        meta = np.load(folder / f"part-{p:05d}.npz")
        lens = meta["lengths"]
        offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
        part_of.append(np.full(len(lens), p))
        offset.append(offs)
        length.append(lens)
        if head == "span":
            start.append(meta["start"])
            end.append(meta["end"])
            passage.append(meta["passage"])
    return HeadStates(parts, np.concatenate(part_of), np.concatenate(offset), np.concatenate(length), start, end,
                      passage)
