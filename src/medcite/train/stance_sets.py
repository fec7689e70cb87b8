"""More claim-evidence stance data beside HealthVer: Check-COVID, Citation-Integrity and COVID-Fact, read from the
folder layout of ``../shared/data/stance`` (its SOURCE.md: repositories, commits and licences).

Each set is split by claim, never by row, into train / valid / test:

- **Check-COVID** (Wang et al., 2023; MIT): its own ``train`` / ``dev`` / ``test_composed`` + ``test_extracted``
  files; a claim's evidence is the abstract sentences its ``evidence_set`` points at. The three claims written
  from one news sentence (ids ``X_0``, ``X_1``, ``X_2``) are one claim group, and its files keep groups apart.
- **Citation-Integrity** (Sarol et al., 2024; research use): its own ``train`` / ``dev`` / ``test`` files of
  citing sentences; SUPPORT (accurate citation) -> supports, REFUTE (inaccurate) -> contradicts, and a citing
  sentence with no labelled evidence -> neutral towards the cited abstract's two sentences that share most
  words with it.
- **COVID-Fact** (Saakyan et al., ACL 2021; research use): 4,086 claims, most REFUTED ones machine-written
  counter-claims of a real claim (one word swapped, often into a non-word: "chs-cov-2"). Claims are grouped by
  their source article (a real claim and its counter-claims share it) and the groups split 70/10/20 by a seeded
  shuffle. At most ``covidfact_counter`` counter-claims of each group are kept for training, each with weight
  ``covidfact_weight``: they teach word swaps more than refutation.

Labels are HealthVer's: 0 supports, 1 contradicts, 2 neutral (:data:`medcite.train.stance_data.LABELS`).
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import InputError
from ..io import JSONObject
from .stance_data import StancePair

SETS = ("check_covid", "citation_integrity", "covidfact")
_LABEL = {"SUPPORT": 0, "SUPPORTED": 0, "REFUTE": 1, "REFUTED": 1, "NOTENOUGHINFO": 2, "NEI": 2}
_CITE = re.compile(r"\[\s*<\|[a-z_]+\|>[^\]]*\]|<\|[a-z_]+\|>")
_WORD = re.compile(r"[^\W_]{3,}")


@dataclass
class StanceSplits:
    """One set's pairs per side."""

    name: str
    train: list[StancePair] = field(default_factory=list)
    valid: list[StancePair] = field(default_factory=list)
    test: list[StancePair] = field(default_factory=list)

    def counts(self) -> dict[str, object]:
        def c(rows: list[StancePair]) -> dict[str, int]:
            return {"claims": len({p.claim for p in rows}), "pairs": len(rows),
                    **{lab: sum(p.label == i for p in rows) for i, lab in enumerate(("supports", "contradicts",
                                                                                    "neutral"))}}

        return {"train": c(self.train), "valid": c(self.valid), "test": c(self.test)}


def _jsonl(path: Path) -> Iterator[JSONObject]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise InputError(f"line {n} is not JSON ({exc.msg})", path=str(path)) from None
    except FileNotFoundError:
        raise InputError("missing", path=str(path),
                         hint="the stance folder holds check_covid/, citation_integrity/ and covidfact/ as in "
                              "../shared/data/stance (its SOURCE.md)") from None


def _clean(text: str) -> str:
    return " ".join(_CITE.sub("", text).split())


def check_covid(folder: Path) -> StanceSplits:
    corpus = {str(d["cord_id"]): list(d["abstract"]) for d in _jsonl(folder / "corpus.jsonl")}
    out = StanceSplits("check_covid")
    for side, files in (("train", ("train",)), ("valid", ("dev",)), ("test", ("test_composed", "test_extracted"))):
        rows: list[StancePair] = getattr(out, side)
        for d in (d for f in files for d in _jsonl(folder / f"{f}.jsonl")):
            sentences = corpus.get(str(d["cord_id"]), [])
            idx = sorted({int(e["sent_index"]) for e in d.get("evidence_set") or []
                          if 0 <= int(e["sent_index"]) < len(sentences)})
            label = _LABEL.get(str(d.get("label")))
            if not idx or label is None:
                continue
            evidence = " ".join(" ".join(sentences[i].split()) for i in idx)
            out_claim = " ".join(str(d["claim"]).split())
            rows.append(StancePair(out_claim, evidence, label, "check_covid"))
    return out


def _overlap_sentences(claim: str, sentences: list[str], k: int = 2) -> list[str]:
    words = {w.lower() for w in _WORD.findall(claim)}
    ranked = sorted(range(len(sentences)), key=lambda i: -len(words & {w.lower() for w in _WORD.findall(sentences[i])}))
    return [sentences[i] for i in sorted(ranked[:k])]


def citation_integrity(folder: Path) -> StanceSplits:
    corpus = {str(d["doc_id"]): list(d["abstract"]) for d in _jsonl(folder / "corpus.jsonl.gz")}
    out = StanceSplits("citation_integrity")
    for side, name in (("train", "train"), ("valid", "dev"), ("test", "test")):
        rows: list[StancePair] = getattr(out, side)
        for d in _jsonl(folder / f"claims_{name}.jsonl"):
            claim = _clean(str(d["claim"]))
            if not claim:
                continue
            evidence: dict[str, list[JSONObject]] = d.get("evidence") or {}
            if not evidence:
                for doc in d.get("cited_doc_ids") or []:
                    sentences = corpus.get(str(doc), [])
                    if sentences:
                        rows.append(StancePair(claim, " ".join(_overlap_sentences(claim, sentences)), 2,
                                               "citation_integrity"))
                        break
                continue
            for doc, sets in evidence.items():
                sentences = corpus.get(str(doc), [])
                for e in sets:
                    label = _LABEL.get(str(e.get("label")))
                    idx = [int(i) for i in e.get("sentences") or [] if 0 <= int(i) < len(sentences)]
                    if label is not None and idx:
                        rows.append(StancePair(claim, " ".join(" ".join(sentences[i].split()) for i in idx), label,
                                               "citation_integrity"))
    return out


def covidfact(folder: Path, seed: int = 13, counter: int = 1, weight: float = 0.5) -> StanceSplits:
    groups: dict[str, list[StancePair]] = {}
    for d in _jsonl(folder / "COVIDFACT_dataset.jsonl.gz"):
        label = _LABEL.get(str(d.get("label")))
        evidence = " ".join(" ".join(str(e).split()) for e in d.get("evidence") or [])
        if label is None or not evidence:
            continue
        groups.setdefault(str(d.get("gold_source") or d["claim"]), []).append(
            StancePair(" ".join(str(d["claim"]).split()), evidence, label, "covidfact"))
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    n_test, n_valid = round(0.2 * len(keys)), round(0.1 * len(keys))
    out = StanceSplits("covidfact")
    rng = random.Random(seed)
    for k, key in enumerate(keys):
        rows = groups[key]
        if k < n_test:
            out.test += rows
        elif k < n_test + n_valid:
            out.valid += rows
        else:
            real = [p for p in rows if p.label == 0]
            counters = [p for p in rows if p.label != 0]
            out.train += real + [replace(p, weight=weight) for p in rng.sample(counters, min(counter, len(counters)))]
    return out


READERS = {"check_covid": check_covid, "citation_integrity": citation_integrity}


def read_sets(folder: str | Path, names: tuple[str, ...] = SETS, seed: int = 13, covidfact_counter: int = 1,
              covidfact_weight: float = 0.5) -> dict[str, StanceSplits]:
    """Every named set under ``folder`` (``../shared/data/stance``), split by claim."""
    folder = Path(folder)
    unknown = [n for n in names if n not in SETS]
    if unknown:
        raise InputError(f"unknown stance sets {unknown}", hint=f"known: {', '.join(SETS)}")
    out = {}
    for name in names:
        if name == "covidfact":
            split = covidfact(folder / name, seed, covidfact_counter, covidfact_weight)
        else:
            split = READERS[name](folder / name)
        # a claim is on one side only: a published split that repeats a claim (a sentence cited twice) keeps it
        # on the held-back side
        held = {p.claim for p in split.test}
        split.valid = [p for p in split.valid if p.claim not in held]
        seen = held | {p.claim for p in split.valid}
        split.train = [p for p in split.train if p.claim not in seen]
        out[name] = split
    return out
