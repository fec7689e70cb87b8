"""Training data of the stance classifier: HealthVer pairs split by claim, plus more supervision.

- HealthVer-style CSV (``claim``, ``evidence``, ``label`` in Supports / Refutes / Neutral; Sarrouti et al.,
  EMNLP 2021 Findings): the claims are split (never the rows), so no held-back claim is seen in training.
- Negation-rewritten claims (:func:`medcite.retrieve.negation.negate`): a Supports pair becomes a Refutes pair
  and the other way round, a Neutral one stays Neutral — contradiction is the class with the fewest examples,
  and the one a similarity-trained encoder tells apart worst.
- BioASQ yes/no questions with their gold snippets (yes -> supports, no -> contradicts) and PubMedQA
  question + context (yes / no / maybe -> supports / contradicts / neutral): questions are not claims, but a
  question answered yes by a passage reads the way a claim supported by it does.
"""

from __future__ import annotations

import csv
import gzip
import json
import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..retrieve.negation import negate

LABELS = ("supports", "contradicts", "neutral")
_HEALTHVER = {"supports": 0, "support": 0, "supported": 0, "refutes": 1, "refute": 1, "refuted": 1,
              "contradicts": 1, "neutral": 2, "not enough info": 2, "nei": 2}
_FLIP = {0: 1, 1: 0, 2: 2}


@dataclass(frozen=True)
class StancePair:
    claim: str
    evidence: str
    label: int  # index into LABELS
    source: str = "healthver"
    weight: float = 1.0  # its weight in the training loss (a machine-written counter-claim counts less)


def read_stance_csv(path: str | Path) -> list[StancePair]:
    """Rows of a HealthVer-style CSV; a missing column, an empty text or an unknown label names the row."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in ("claim", "evidence", "label") if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"no column {', '.join(repr(c) for c in missing)}", path=str(path),
                                 hint="a HealthVer-style CSV has claim, evidence and label columns")
            out = []
            for n, row in enumerate(reader, start=2):
                claim, evidence = (row["claim"] or "").strip(), (row["evidence"] or "").strip()
                label = _HEALTHVER.get((row["label"] or "").strip().lower())
                if not claim or not evidence:
                    raise InputError(f"row {n} has an empty {'claim' if not claim else 'evidence'}", path=str(path))
                if label is None:
                    raise InputError(f"row {n} has the label {row['label']!r}", path=str(path),
                                     hint="labels are Supports, Refutes or Neutral")
                out.append(StancePair(claim, evidence, label))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"not a readable UTF-8 CSV ({exc})", path=str(path)) from None
    if not out:
        raise InputError("no rows", path=str(path))
    return out


def split_by_claim(pairs: Sequence[StancePair], dev_fraction: float, seed: int
                   ) -> tuple[list[StancePair], list[StancePair]]:
    """(train, held back): a seeded share of the distinct claims, with all their rows, is held back."""
    claims = sorted({p.claim for p in pairs})
    random.Random(seed).shuffle(claims)
    held = set(claims[: max(1, round(dev_fraction * len(claims)))])
    return [p for p in pairs if p.claim not in held], [p for p in pairs if p.claim in held]


def negated(pairs: Iterable[StancePair]) -> list[StancePair]:
    """Each pair with its claim negated and the label flipped (supports <-> contradicts)."""
    return [StancePair(negate(p.claim), p.evidence, _FLIP[p.label], "negation") for p in pairs]


def bioasq_yesno(path: str | Path, exclude: Collection[str] = (), snippets: int = 3) -> list[StancePair]:
    """BioASQ yes/no questions (not in ``exclude``) with up to ``snippets`` gold snippets each."""
    with gzip.open(path, "rt", encoding="utf-8") if str(path).endswith(".gz") else open(path, encoding="utf-8") as fh:
        questions = json.load(fh)["questions"]
    out = []
    for q in questions:
        if q.get("type") != "yesno" or q.get("id") in exclude:
            continue
        answer = q.get("exact_answer")
        answer = answer[0] if isinstance(answer, list) and answer else answer
        if not isinstance(answer, str) or answer.strip().lower() not in ("yes", "no"):
            continue
        label = 0 if answer.strip().lower() == "yes" else 1
        for s in (q.get("snippets") or [])[:snippets]:
            if s.get("text", "").strip():
                out.append(StancePair(q["body"].strip(), s["text"].strip(), label, "bioasq"))
    return out


def pubmedqa(path: str | Path) -> list[StancePair]:
    """PubMedQA labelled questions with their contexts (yes / no / maybe)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    m = {"yes": 0, "no": 1, "maybe": 2}
    return [StancePair(v["QUESTION"].strip(), " ".join(v["CONTEXTS"]).strip(), m[v["final_decision"]], "pubmedqa")
            for v in data.values() if v.get("final_decision") in m]


def balanced(pairs: Sequence[StancePair], seed: int) -> list[StancePair]:
    """Oversample the smaller classes (seeded) until every class is as large as the largest."""
    by_label: dict[int, list[StancePair]] = {}
    for p in pairs:
        by_label.setdefault(p.label, []).append(p)
    top = max((len(v) for v in by_label.values()), default=0)
    rng = random.Random(seed)
    out = []
    for label in sorted(by_label):
        rows = by_label[label]
        out.extend(rows)
        out.extend(rng.choices(rows, k=top - len(rows)))
    rng.shuffle(out)
    return out
