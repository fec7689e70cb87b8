"""Streaming reader for JSON Lines corpora (plain or gzip), one article per line, in two shapes.

* **Collection shape** ``{"id": "<PMID>", "contents": "<text>"}``, as in the TREC BioGen 2025
  document collection (a Pyserini ``JsonCollection``, FORMATS.md §3). ``contents`` becomes the
  abstract and the title is empty, unless the line also has a ``title`` field.
* **Article shape** ``{"pmid": ..., "title": ..., "abstract": ..., ...}`` with any of
  :data:`ARTICLE_FIELDS` (the fields of :class:`~medcite.types.Article`).

Policy: a line without a PMID, with an invalid PMID, or with neither title nor abstract text is a bad
record; so are invalid JSON, a line that is not a JSON object, bytes that are not UTF-8, values of the
wrong type, and values Python's ``json`` reads but cannot keep: an integer past the int-string conversion
limit (4,300 digits) and a lone surrogate escape (``"\\ud800"``, not encodable as UTF-8, so not storable).
A field outside the shape's known fields is reported as a :class:`BadRecord` with ``kept=True`` and the
article follows without that field (the caller decides whether that is an error).
Blank lines are ignored. A truncated or corrupt gzip stream raises :class:`InputError`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import IO

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import InputError
from ..types import Article, MeshHeading, Section
from .records import BadRecord, Item
from .streams import GZIP_ERRORS, open_stream

COLLECTION_FIELDS = ("id", "contents", "title")
ARTICLE_FIELDS = (
    "pmid", "title", "abstract", "sections", "version", "journal", "journal_iso", "year", "mesh",
    "publication_types", "keywords", "retracted", "doi", "pmc",
)
_ARTICLE_SET = frozenset(ARTICLE_FIELDS)
_COLLECTION_SET = frozenset(COLLECTION_FIELDS)


class _BadValue(ValueError):
    """A field value of the wrong type or form (becomes a BadRecord)."""


# -- the record schema: types are checked here first, forms (digits, spans) by the helpers below ----------
class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class _QualifierRecord(_Strict):
    name: str
    ui: str | None = None
    major: bool = False


class _MeshRecord(_Strict):
    descriptor: str
    ui: str | None = None
    major: bool = False
    qualifiers: list[str | _QualifierRecord] | None = None


class _SectionRecord(_Strict):
    label: str | None = None
    category: str | None = None
    start: int | str
    end: int | str


class ArticleRecord(_Strict):
    """One JSONL line of the article shape. Unknown fields are allowed here and reported by the reader."""

    model_config = ConfigDict(strict=True, extra="allow")
    pmid: int | str
    title: str | None = None
    abstract: str | None = None
    sections: list[_SectionRecord] | None = None
    version: int | str | None = None
    journal: str | None = None
    journal_iso: str | None = None
    year: int | str | None = None
    mesh: list[str | _MeshRecord] | None = None
    publication_types: list[str] | None = None
    keywords: list[str] | None = None
    retracted: bool | None = None
    doi: str | None = None
    pmc: str | None = None


class CollectionRecord(_Strict):
    """One JSONL line of the collection shape (``id``, ``contents``, ``title``)."""

    model_config = ConfigDict(strict=True, extra="allow")
    id: int | str
    contents: str | None = None
    title: str | None = None


_UNION_TAGS = frozenset({"str", "int", "bool", "float", "list", "dict"})
_MUST = {
    "string_type": "must be a string", "int_type": "must be an integer", "list_type": "must be a list",
    "bool_type": "must be true or false", "model_type": "must be an object", "dict_type": "must be an object",
    "missing": "is missing", "extra_forbidden": "is not a known field", "int_from_float": "must be an integer",
}


def _schema_error(exc: ValidationError) -> str:
    """The first wrong field of a validation error, as one line naming the field (deepest union branch)."""
    errors = exc.errors(include_url=False)
    first = errors[0]["loc"][:1]
    err = max((e for e in errors if e["loc"][:1] == first), key=lambda e: len(e["loc"]))
    loc = ".".join(
        str(p) for p in err["loc"] if not (isinstance(p, str) and (p in _UNION_TAGS or p.startswith("_")))
    )
    fields = {e["loc"][:1] for e in errors}
    more = f" (and {len(fields) - 1} more field(s))" if len(fields) > 1 else ""
    what = _MUST.get(err["type"], err["msg"].lower())
    got = "" if err["type"] in ("missing", "extra_forbidden") else f", got {repr(err.get('input'))[:60]}"
    return f"field {loc!r} {what}{got}{more}"


def validate_record(d: dict[str, object]) -> None:
    """Check the types of one decoded JSONL object against the schema; raise ``_BadValue`` naming the field."""
    model: type[BaseModel] = ArticleRecord if "pmid" in d else CollectionRecord
    try:
        model.model_validate(d)
    except ValidationError as exc:
        raise _BadValue(_schema_error(exc)) from None


def _str(d: dict[str, object], key: str) -> str:
    v = d.get(key)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise _BadValue(f"field {key!r} must be a string, got {type(v).__name__}")
    return v.strip()


def _opt_str(d: dict[str, object], key: str) -> str | None:
    return _str(d, key) or None


def _int(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _BadValue(f"field {key!r} must be an integer, got {value!r}")
    text = str(value).strip()
    if not text.isdigit() or len(text) > 18:
        raise _BadValue(f"field {key!r} must be an integer of at most 18 digits, got {value!r}")
    return int(text)


def _str_list(d: dict[str, object], key: str) -> tuple[str, ...]:
    v = d.get(key)
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _BadValue(f"field {key!r} must be a list of strings")
    return tuple(x for x in (s.strip() for s in v) if x)


def _mesh(value: object) -> tuple[MeshHeading, ...]:
    """MeSH as ``["Asthma", ...]`` or ``[{"descriptor", "ui", "major", "qualifiers": [...]}, ...]``."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _BadValue("field 'mesh' must be a list of descriptor names or objects")
    out = []
    for m in value:
        if isinstance(m, str):
            out.append(MeshHeading(m))
        elif isinstance(m, dict) and isinstance(m.get("descriptor"), str):
            quals = []
            for q in m.get("qualifiers") or ():
                if isinstance(q, str):
                    quals.append((q, None, False))
                elif isinstance(q, dict) and isinstance(q.get("name"), str):
                    quals.append((q["name"], q.get("ui"), bool(q.get("major", False))))
                else:
                    raise _BadValue("a MeSH qualifier must be a name or {'name', 'ui', 'major'}")
            out.append(MeshHeading(m["descriptor"], m.get("ui"), bool(m.get("major", False)), tuple(quals)))
        else:
            raise _BadValue("a MeSH heading must be a name or {'descriptor', 'ui', 'major', 'qualifiers'}")
    return tuple(out)


def _sections(value: object, abstract: str) -> tuple[Section, ...]:
    """Sections as ``[{"label", "category", "start", "end"}, ...]``; spans must lie inside the abstract."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _BadValue("field 'sections' must be a list of {'label', 'category', 'start', 'end'}")
    out = []
    for s in value:
        if not isinstance(s, dict):
            raise _BadValue("a section must be an object {'label', 'category', 'start', 'end'}")
        start, end = _int(s.get("start"), "sections.start"), _int(s.get("end"), "sections.end")
        if not start <= end <= len(abstract):
            raise _BadValue(f"section span {start}:{end} lies outside the abstract ({len(abstract)} characters)")
        out.append(Section(s.get("label"), s.get("category"), start, end))
    return tuple(out)


def article_from_json(d: dict[str, object]) -> tuple[Article, list[str]]:
    """Build an Article from one decoded JSONL object; also return the unknown field names.

    Raises ``ValueError`` (with a message for the user) when the record cannot be stored.
    """
    if "pmid" in d or "id" in d:
        validate_record(d)
    if "pmid" in d:
        unknown = [k for k in d if k not in _ARTICLE_SET]
        pmid = _int(d["pmid"], "pmid")
        abstract = _str(d, "abstract")
        pts = _str_list(d, "publication_types")
        year = d.get("year")
        article = Article(
            pmid=str(pmid), title=_str(d, "title"), abstract=abstract,
            sections=_sections(d.get("sections"), abstract),
            version=_int(d["version"], "version") if d.get("version") is not None else 1,
            journal=_opt_str(d, "journal"), journal_iso=_opt_str(d, "journal_iso"),
            year=_int(year, "year") if year not in (None, "") else None,
            mesh=_mesh(d.get("mesh")), publication_types=pts, keywords=_str_list(d, "keywords"),
            retracted=bool(d.get("retracted", False)) or "Retracted Publication" in pts,
            doi=_opt_str(d, "doi"), pmc=_opt_str(d, "pmc"),
        )
    elif "id" in d:
        unknown = [k for k in d if k not in _COLLECTION_SET]
        pmid = _int(d["id"], "id")
        article = Article(pmid=str(pmid), title=_str(d, "title"), abstract=_str(d, "contents"))
    else:
        raise _BadValue("record has no PMID (no 'pmid' or 'id' field)")
    if not 0 < pmid < 10**18:
        raise _BadValue(f"PMID {pmid} must be a positive integer of at most 18 digits")
    return article, unknown


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(obj: dict[str, object]) -> str | None:
    """The field (``'mesh.0.descriptor'``) of the first string or key holding a lone surrogate, or None.

    ``json`` decodes an escaped UTF-16 pair into one character but keeps a lone ``\\ud800`` as a surrogate,
    which UTF-8 (and so SQLite) cannot encode. Walked with a stack: the object may be nested deep.
    """
    stack: list[tuple[str, object]] = [("", obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return repr(path)
            continue
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in reversed(list(items)):
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _SURROGATE.search(key):
                return repr(where)
            stack.append((where, item))
    return None


def _lines(stream: IO[bytes], name: str) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw bytes) pairs; a damaged gzip stream becomes an InputError."""
    source = open_stream(stream)
    lineno = 0
    lines = iter(source)
    try:
        while True:
            try:
                raw = next(lines)
            except StopIteration:
                return
            except GZIP_ERRORS as exc:
                raise InputError(
                    f"truncated or corrupt gzip data ({exc})", path=name, position=f"after line {lineno}",
                    hint="re-download the file (check it with `gzip -t`), or use --on-error skip to keep the "
                    "lines before the damage",
                ) from None
            lineno += 1
            yield lineno, raw
    finally:
        if source is not stream:
            source.close()


def iter_jsonl(stream: IO[bytes], name: str) -> Iterator[Item]:
    """Yield Articles and BadRecords (with 1-based line numbers) from a JSONL byte stream."""
    for lineno, raw in _lines(stream, name):
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield BadRecord(
                f"line is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                "JSONL files must be UTF-8 encoded", lineno, kind="line is not valid UTF-8")
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            yield BadRecord(f"invalid JSON at column {exc.colno}: {exc.msg}", lineno, kind="invalid JSON")
            continue
        except RecursionError:
            yield BadRecord("JSON nested too deeply to be an article record", lineno)
            continue
        except ValueError:  # an integer past Python's int-string conversion limit (sys.get_int_max_str_digits)
            yield BadRecord(f"a number has more than {sys.get_int_max_str_digits()} digits, too long to read", lineno)
            continue
        if not isinstance(obj, dict):
            yield BadRecord(f"line is a JSON {type(obj).__name__}, expected an object", lineno,
                            kind="line is not a JSON object")
            continue
        if _ESCAPED_SURROGATE.search(text) and (where := _lone_surrogate(obj)):
            yield BadRecord(f"field {where} holds a lone surrogate escape (\\udXXX), which is not text; "
                            "it cannot be stored", lineno, kind="a lone surrogate escape")
            continue
        pmid_hint = obj.get("pmid", obj.get("id"))
        pmid_hint = str(pmid_hint) if isinstance(pmid_hint, int | str) else None
        try:
            article, unknown = article_from_json(obj)
        except _BadValue as exc:
            yield BadRecord(str(exc), lineno, pmid_hint, kind="a field of the wrong type or form")
            continue
        if not article.title and not article.abstract:
            yield BadRecord("record has neither title nor abstract text", lineno, article.pmid)
            continue
        if unknown:
            known = ARTICLE_FIELDS if "pmid" in obj else COLLECTION_FIELDS
            yield BadRecord(
                f"unknown field(s) {', '.join(map(repr, unknown))}; known fields: {', '.join(known)}",
                lineno, article.pmid, kept=True, kind="unknown field(s)",
            )
        yield article
