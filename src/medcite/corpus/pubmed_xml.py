"""Streaming reader for PubMed/MEDLINE XML (baseline and update files, efetch responses).

Follows NLM's "MEDLINE/PubMed XML Element Descriptions" as summarised in FORMATS.md §7. The file is
read with :func:`lxml.etree.iterparse` filtered to the three record tags; each record element is
cleared after use and its already-processed preceding siblings are removed from the tree, so memory
stays bounded by one record whatever the file size.

Policy, applied per record:

* The PMID is ``MedlineCitation/PMID`` (or ``BookDocument/PMID``) and its ``Version`` attribute. PMIDs
  inside ``CommentsCorrectionsList`` (cited, corrected or retracting records) are never read as the
  record's id. A record without a top-level PMID is a bad record.
* The title is ``ArticleTitle`` with inline markup (``<i>``, ``<sup>``, ``<sub>``...) flattened by
  ``itertext``. Leading/trailing whitespace is stripped and pretty-printing line breaks (a run of
  whitespace containing a newline, as in efetch output) become one space; other text is kept exactly.
  When ``ArticleTitle`` is empty (some non-English records), ``VernacularTitle`` is the title.
* The abstract is the ``Abstract/AbstractText`` parts, each flattened the same way, joined with a
  single space. Every part becomes a :class:`Section` (``Label``, ``NlmCategory``, start, end) whose
  span satisfies ``abstract[start:end] == part text`` (needed for BioASQ snippet offsets); a plain
  abstract of one unlabelled part gets no sections (its span would be the whole abstract).
  ``CopyrightInformation`` is excluded and ``OtherAbstract`` is ignored.
* A record with neither title nor abstract text is a bad record (there is nothing to index); an empty
  abstract alone is normal (many 1970s records) and accepted.
* Year: ``PubDate/Year``, else the first 4-digit year in ``PubDate/MedlineDate`` ("1998 Dec-1999 Jan"
  gives 1998), else ``ArticleDate/Year``.
* Retracted: a ``PublicationType`` "Retracted Publication", or a ``CommentsCorrections`` with
  ``RefType="RetractionIn"``.
* ``DeleteCitation/PMID`` elements are yielded as one :class:`Deletion` in document order, so the
  caller applies them after the records before them.

``PubmedBookArticle`` records (NCBI Bookshelf) are read the same way from ``BookDocument``.

Speed: about 3,000 records/s on one busy core for baseline files (libxml2 tree building and freeing
is about half of it; lxml ``find`` paths are avoided in favour of one walk over each parent's children).

Malformed or truncated XML/gzip raises :class:`~medcite.errors.InputError` naming the file and the
line/column; the records yielded before the break are valid and complete.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import IO, Protocol

from ..errors import InputError
from ..types import Article, MeshHeading, Section
from .records import BadRecord, Deletion, Item, UnreadableFileError
from .streams import GZIP_ERRORS, open_stream

_RECORD_TAGS = ("PubmedArticle", "PubmedBookArticle", "DeleteCitation")
# root elements of PubMed files and efetch replies; any other root with no record is not PubMed XML
PUBMED_ROOTS = frozenset({"PubmedArticleSet", "PubmedBookArticleSet", "PubmedArticle", "PubmedBookArticle"})
_YEAR = re.compile(r"\b(1[89]\d\d|2\d\d\d)\b")
_LINEBREAK_WS = re.compile(r"[ \t\r]*\n\s*")


class XmlElement(Protocol):
    """The parts of an ``lxml.etree._Element`` read here (lxml ships no type hints)."""

    @property
    def tag(self) -> str: ...
    @property
    def text(self) -> str | None: ...
    @property
    def sourceline(self) -> int | None: ...
    def __iter__(self) -> Iterator[XmlElement]: ...
    def __len__(self) -> int: ...
    def get(self, key: str) -> str | None: ...
    def find(self, path: str) -> XmlElement | None: ...
    def iterfind(self, path: str) -> Iterator[XmlElement]: ...
    def iter(self, *tags: str) -> Iterator[XmlElement]: ...
    def iterchildren(self, tag: str) -> Iterator[XmlElement]: ...
    def itertext(self) -> Iterator[str]: ...


def _flat(el: XmlElement | None) -> str:
    """Text of an element with inline markup flattened (itertext), pretty-printing breaks removed."""
    if el is None:
        return ""
    text = "".join(el.itertext()) if len(el) else (el.text or "")
    if "\n" in text:
        text = _LINEBREAK_WS.sub(" ", text)
    return text.strip()


def _child_text(el: XmlElement, tag: str) -> str | None:
    for child in el:
        if child.tag == tag:
            return child.text
    return None


def _year(pubdate: XmlElement | None, article_date: XmlElement | None) -> int | None:
    if pubdate is not None:
        for child in pubdate:
            tag = child.tag
            if tag == "Year":
                y = (child.text or "").strip()
                if y.isdigit():
                    return int(y)
            elif tag == "MedlineDate":
                m = _YEAR.search(child.text or "")
                if m:
                    return int(m.group(1))
    if article_date is not None:
        y = (_child_text(article_date, "Year") or "").strip()
        if y.isdigit():
            return int(y)
    return None


def _abstract(abstract_el: XmlElement | None) -> tuple[str, tuple[Section, ...]]:
    if abstract_el is None:
        return "", ()
    texts: list[str] = []
    sections: list[Section] = []
    pos = 0
    for part in abstract_el.iterchildren("AbstractText"):
        text = _flat(part)
        if not text:
            continue
        if texts:
            pos += 1  # the joining space
        texts.append(text)
        sections.append(Section(part.get("Label") or None, part.get("NlmCategory") or None, pos, pos + len(text)))
        pos += len(text)
    if len(sections) == 1 and sections[0].label is None and sections[0].category is None:
        return texts[0], ()  # plain unstructured abstract: no span list needed
    return " ".join(texts), tuple(sections)


def _mesh(lst: XmlElement) -> tuple[MeshHeading, ...]:
    # one filtered descendant walk: much cheaper in lxml than a find() per heading
    out = []
    desc: tuple[str, str | None, bool] | None = None
    quals: list[tuple[str, str | None, bool]] = []
    for el in lst.iter("DescriptorName", "QualifierName"):
        entry = ((el.text or "").strip(), el.get("UI"), el.get("MajorTopicYN") == "Y")
        if el.tag == "DescriptorName":
            if desc is not None:
                out.append(MeshHeading(*desc, tuple(quals)))
                quals = []
            desc = entry
        elif desc is not None:
            quals.append(entry)
    if desc is not None:
        out.append(MeshHeading(*desc, tuple(quals)))
    return tuple(out)


def _ids(pubmed_data: XmlElement | None) -> tuple[str | None, str | None]:
    doi = pmc = None
    if pubmed_data is not None:
        lst = pubmed_data.find("ArticleIdList")  # direct child only: not the ReferenceList ids
        if lst is not None:
            for aid in lst.iterchildren("ArticleId"):
                kind = aid.get("IdType")
                if kind == "doi" and doi is None:
                    doi = (aid.text or "").strip() or None
                elif kind == "pmc" and pmc is None:
                    pmc = (aid.text or "").strip() or None
    return doi, pmc


def _pmid(pmid_el: XmlElement | None) -> tuple[str | None, int]:
    if pmid_el is None:
        return None, 1
    text = (pmid_el.text or "").strip()
    version = pmid_el.get("Version") or "1"
    return (text if _valid_pmid(text) else None), int(version) if version.isdigit() and len(version) < 9 else 1


def _valid_pmid(text: str) -> bool:
    """A positive integer that fits the store's INTEGER key (PubMed ids have at most 8-9 digits)."""
    return text.isdigit() and len(text) <= 18 and int(text) > 0


def _by_tag(elem: XmlElement) -> dict[str, list[XmlElement]]:
    """The direct children of ``elem`` by tag, each tag's in document order: one pass, and nested elements (the
    PMIDs inside CommentsCorrectionsList) are never looked at."""
    out: dict[str, list[XmlElement]] = {}
    for child in elem:
        out.setdefault(child.tag, []).append(child)
    return out


def _last(children: Mapping[str, list[XmlElement]], tag: str) -> XmlElement | None:
    found = children.get(tag)
    return found[-1] if found else None


def _journal(journal_el: XmlElement | None, journal_info: XmlElement | None
             ) -> tuple[str | None, str | None, XmlElement | None]:
    """The journal's title, its ISO abbreviation (MedlineTA where the Journal has none) and the issue's PubDate."""
    journal = journal_iso = pubdate = None
    if journal_el is not None:
        parts = _by_tag(journal_el)
        title, iso = _last(parts, "Title"), _last(parts, "ISOAbbreviation")
        journal = None if title is None else title.text or None
        journal_iso = None if iso is None else iso.text or None
        dates = [p for issue in parts.get("JournalIssue", []) for p in issue if p.tag == "PubDate"]
        pubdate = dates[-1] if dates else None
    if journal_iso is None and journal_info is not None:
        journal_iso = _child_text(journal_info, "MedlineTA") or None
    return journal, journal_iso, pubdate


def parse_article(elem: XmlElement) -> Article | BadRecord:
    """Turn one ``<PubmedArticle>`` or ``<PubmedBookArticle>`` element into an Article (or a BadRecord)."""
    if elem.tag == "PubmedBookArticle":
        return _parse_book(elem)
    line = elem.sourceline
    record = _by_tag(elem)
    mc, pubmed_data = _last(record, "MedlineCitation"), _last(record, "PubmedData")
    if mc is None:
        return BadRecord("record has no MedlineCitation", line)
    citation = _by_tag(mc)
    pmid_el, art = _last(citation, "PMID"), _last(citation, "Article")
    corrections = _last(citation, "CommentsCorrectionsList")
    retraction_in = corrections is not None and any(c.get("RefType") == "RetractionIn" for c in corrections)
    pmid, version = _pmid(pmid_el)
    if pmid is None:
        raw = None if pmid_el is None else (pmid_el.text or "").strip()
        why = "record has no top-level MedlineCitation/PMID" if not raw else f"record has an invalid PMID {raw!r}"
        return BadRecord(why, line, kind="no or an invalid PMID")
    if art is None:
        return BadRecord("record has no Article element", line, pmid)
    article = _by_tag(art)
    # an empty ArticleTitle with a VernacularTitle (a non-English record) keeps the original-language title
    title = _flat(_last(article, "ArticleTitle")) or _flat(_last(article, "VernacularTitle"))
    abstract, sections = _abstract(_last(article, "Abstract"))
    if not title and not abstract:
        return BadRecord("record has neither title nor abstract text", line, pmid)
    journal, journal_iso, pubdate = _journal(_last(article, "Journal"), _last(citation, "MedlineJournalInfo"))
    pt_list = _last(article, "PublicationTypeList")
    pts = () if pt_list is None else tuple((p.text or "").strip() for p in pt_list)
    keywords = tuple(k for kl in citation.get("KeywordList", []) for k in (_flat(k) for k in kl) if k)
    mesh_list = _last(citation, "MeshHeadingList")
    doi, pmc = _ids(pubmed_data)
    return Article(
        pmid=pmid, title=title, abstract=abstract, sections=sections, version=version,
        journal=journal, journal_iso=journal_iso, year=_year(pubdate, article.get("ArticleDate", [None])[0]),
        mesh=() if mesh_list is None else _mesh(mesh_list), publication_types=pts, keywords=keywords,
        retracted=retraction_in or "Retracted Publication" in pts, doi=doi, pmc=pmc,
    )


def _parse_book(elem: XmlElement) -> Article | BadRecord:
    line = elem.sourceline
    doc = elem.find("BookDocument")
    if doc is None:
        return BadRecord("book record has no BookDocument", line)
    pmid, version = _pmid(doc.find("PMID"))
    if pmid is None:
        return BadRecord("book record has no top-level BookDocument/PMID", line)
    title = _flat(doc.find("ArticleTitle")) or _flat(doc.find("Book/BookTitle"))
    abstract, sections = _abstract(doc.find("Abstract"))
    if not title and not abstract:
        return BadRecord("record has neither title nor abstract text", line, pmid)
    pts = tuple(_flat(p) for p in doc.iterfind("PublicationType"))
    doi, pmc = _ids(elem.find("PubmedBookData"))
    return Article(
        pmid=pmid, title=title, abstract=abstract, sections=sections, version=version,
        journal=_flat(doc.find("Book/BookTitle")) or None, year=_year(doc.find("Book/PubDate"), None),
        publication_types=pts, retracted="Retracted Publication" in pts, doi=doi, pmc=pmc,
        keywords=tuple(k for k in (_flat(k) for k in doc.iterfind("KeywordList/Keyword")) if k),
    )


def iter_pubmed_xml(stream: IO[bytes], name: str) -> Iterator[Item]:
    """Yield Articles, Deletions and BadRecords from a PubMed XML byte stream (plain or gzip).

    ``stream`` must be opened in binary mode; gzip is detected from the magic bytes. ``name`` is used
    in error messages. Raises :class:`InputError` with the line/column on malformed XML, bad
    encoding, or a truncated/corrupt gzip stream.
    """
    from lxml import etree

    source = open_stream(stream)
    parser = etree.iterparse(
        source, events=("end",), tag=_RECORD_TAGS, load_dtd=False, no_network=True,
        resolve_entities=False, remove_comments=True,
    )
    last_line = 0
    records = 0
    try:
        for _event, elem in parser:
            records += 1
            last_line = elem.sourceline or last_line
            if elem.tag == "DeleteCitation":
                yield from _deletion(elem)
            else:
                yield parse_article(elem)
            # bounded memory: drop this record and every finished sibling before it
            elem.clear(keep_tail=False)
            parent = elem.getparent()
            if parent is not None:
                while elem.getprevious() is not None:
                    del parent[0]
        if not records:
            root = parser.root
            tag = root.tag if root is not None and isinstance(root.tag, str) else None
            if tag not in PUBMED_ROOTS:
                raise UnreadableFileError(
                    f"not PubMed XML: the root element is <{tag}> and there is no PubmedArticle, "
                    "PubmedBookArticle or DeleteCitation in it", path=name,
                    hint="give PubMed/MEDLINE XML (root <PubmedArticleSet>), e.g. a baseline or update file "
                    "or an efetch reply",
                )
    except etree.XMLSyntaxError as exc:
        line, col = exc.position if exc.position else (exc.lineno, 0)
        msg = exc.msg
        if "encoding" in msg.lower() or "utf-8" in msg.lower():
            msg += " (bytes that are not valid in the declared encoding, UTF-8 unless stated otherwise)"
        raise InputError(
            f"malformed XML: {msg}", path=name, position=f"line {line}, column {col}",
            hint="the file is damaged or not PubMed XML; re-download it, or use --on-error skip to keep "
            "the records before the damage",
        ) from None
    except GZIP_ERRORS as exc:
        raise InputError(
            f"truncated or corrupt gzip data ({exc})", path=name,
            position=f"after the record at line {last_line}" if last_line else "before the first record",
            hint="re-download the file (check it with `gzip -t`), or use --on-error skip to keep the records "
            "before the damage",
        ) from None
    finally:
        if source is not stream:
            source.close()


def _deletion(elem: XmlElement) -> Iterator[Item]:
    pmids = []
    for e in elem.iterchildren("PMID"):
        text = (e.text or "").strip()
        if _valid_pmid(text):
            pmids.append(text)
        else:
            yield BadRecord(f"DeleteCitation lists an invalid PMID {text!r}", e.sourceline,
                            kind="DeleteCitation lists an invalid PMID")
    yield Deletion(tuple(pmids), elem.sourceline)
