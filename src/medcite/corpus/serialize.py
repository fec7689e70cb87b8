"""Article <-> compact JSON for the store's ``data`` column."""

from __future__ import annotations

import json

from ..types import Article, MeshHeading, Section


def article_meta(a: Article) -> str:
    data: dict[str, object] = {}
    if a.sections:
        data["sections"] = [[s.label, s.category, s.start, s.end] for s in a.sections]
    if a.journal:
        data["journal"] = a.journal
    if a.journal_iso:
        data["journal_iso"] = a.journal_iso
    if a.year is not None:
        data["year"] = a.year
    if a.mesh:
        data["mesh"] = [[m.descriptor, m.ui, m.major, [list(q) for q in m.qualifiers]] for m in a.mesh]
    if a.publication_types:
        data["pt"] = list(a.publication_types)
    if a.keywords:
        data["kw"] = list(a.keywords)
    if a.retracted:
        data["retracted"] = True
    if a.doi:
        data["doi"] = a.doi
    if a.pmc:
        data["pmc"] = a.pmc
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def article_from_row(pmid: int, version: int, title: str, abstract: str, meta: str) -> Article:
    d = json.loads(meta) if meta else {}
    return Article(
        pmid=str(pmid),
        title=title,
        abstract=abstract,
        version=version,
        sections=tuple(Section(s[0], s[1], s[2], s[3]) for s in d.get("sections", ())),
        journal=d.get("journal"),
        journal_iso=d.get("journal_iso"),
        year=d.get("year"),
        mesh=tuple(
            MeshHeading(m[0], m[1], bool(m[2]), tuple((q[0], q[1], bool(q[2])) for q in m[3]))
            for m in d.get("mesh", ())
        ),
        publication_types=tuple(d.get("pt", ())),
        keywords=tuple(d.get("kw", ())),
        retracted=bool(d.get("retracted", False)),
        doi=d.get("doi"),
        pmc=d.get("pmc"),
    )
