"""Relevance judgements for retrieval evaluation: TREC qrels, or BioASQ golden JSON.

BioASQ gold lists each question's relevant ``documents`` as PubMed URLs
(``http://www.ncbi.nlm.nih.gov/pubmed/<PMID>``); each becomes ``{question id: {PMID: 1}}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from ..errors import InputError
from ..io import open_maybe_gz
from ..trec import Qrels, read_qrels

_PMID_URL = re.compile(r"(?:^|/)(\d+)/?$")


def pmid_from_url(value: str) -> str | None:
    """``http://www.ncbi.nlm.nih.gov/pubmed/123`` (or a bare ``123``) -> ``"123"``; None if no PMID."""
    m = _PMID_URL.search(value.strip())
    return m.group(1) if m else None


def read_gold(path: str | Path) -> Qrels:
    """Read qrels or BioASQ golden JSON (detected by content) into ``{qid: {docid: rel}}``."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such gold file", path=str(path))
    try:
        with open_maybe_gz(path, "rb") as fh:
            head = fh.read(1)
            while head and head.isspace():
                head = fh.read(1)
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read the file ({exc})", path=str(path)) from None
    if head == b"{":
        try:
            with open_maybe_gz(path) as fh:
                data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", path=str(path)) from None
        except (UnicodeDecodeError, RecursionError, OSError, EOFError) as exc:
            raise InputError(f"cannot read the file as JSON ({type(exc).__name__}: {exc})"[:300],
                             path=str(path)) from None
        return _from_bioasq(data, path)
    return read_qrels(path)


def _from_bioasq(data: object, path: Path) -> Qrels:
    if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list):
        raise InputError(
            "a JSON gold file must be BioASQ's {'questions': [{'id', 'documents': [...]}]}",
            hint="or give TREC qrels lines 'qid 0 docid rel'",
            path=str(path),
        )
    out: Qrels = {}
    for i, q in enumerate(data["questions"]):
        where = f"questions[{i}]"
        if not isinstance(q, Mapping) or not isinstance(q.get("id"), str):
            raise InputError("each question needs a string 'id'", path=str(path), position=where)
        docs: dict[str, int] = {}
        for url in q.get("documents") or []:
            pmid = pmid_from_url(str(url))
            if pmid is None:
                raise InputError(f"cannot find a PMID in document {url!r}", path=str(path), position=where)
            docs[pmid] = 1
        out[q["id"]] = docs
    return out
