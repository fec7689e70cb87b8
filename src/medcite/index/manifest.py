"""manifest.json of an index folder: format version, kind, settings hash, corpus fingerprint, counts.

Loading checks it and refuses a mismatch with a clear message (never a silent use of a wrong index).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import CorruptIndexError, IndexMismatchError, InputError
from ..io import JSONObject, write_json

MANIFEST = "manifest.json"


def write_manifest(folder: str | Path, *, kind: str, format_version: int, settings: JSONObject,
                   corpus: JSONObject, counts: JSONObject, **extra: Any) -> JSONObject:
    data = {
        "kind": kind,
        "format_version": format_version,
        "settings": settings,
        "corpus": corpus,
        "counts": counts,
        "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }
    write_json(Path(folder) / MANIFEST, data)
    return data


def read_manifest(folder: str | Path, *, kind: str, format_version: int) -> JSONObject:
    """Read and check a manifest; raises InputError / CorruptIndexError / IndexMismatchError."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not folder.exists():
        raise InputError(f"no index at {folder}", hint="build it first (see `medcite index --help`)")
    if not path.exists():
        raise CorruptIndexError(
            f"{folder} has no {MANIFEST}: it is not a medcite index or its build did not finish",
            hint="rebuild the index into this folder",
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptIndexError(f"{path} is damaged ({exc})", hint="rebuild the index") from None
    if data.get("kind") != kind:
        raise IndexMismatchError(
            f"{folder} holds a {data.get('kind')!r} index, not a {kind!r} one",
            hint="point at the right folder",
        )
    if data.get("format_version") != format_version:
        raise IndexMismatchError(
            f"{folder} has format version {data.get('format_version')}, this medcite reads {format_version}",
            hint="rebuild the index with this medcite version",
        )
    return data  # type: ignore[no-any-return]
