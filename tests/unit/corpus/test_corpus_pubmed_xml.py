"""PubMed XML reader: field extraction on real files and tiny inline records."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from corpus_xml_builders import article_xml, xml_file

from medcite.corpus import pubmed_xml
from medcite.corpus.pubmed_xml import iter_pubmed_xml
from medcite.corpus.records import BadRecord, Deletion
from medcite.errors import InputError
from medcite.types import Article, Section


def parse(text: str | bytes) -> list[object]:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return list(iter_pubmed_xml(io.BufferedReader(io.BytesIO(data)), "inline.xml"))  # type: ignore[arg-type]


def parse_file(path: Path) -> list[object]:
    with open(path, "rb") as fh:
        return list(iter_pubmed_xml(fh, str(path)))


def one(text: str) -> Article:
    items = parse(xml_file(text))
    assert len(items) == 1 and isinstance(items[0], Article), items
    return items[0]


# -- real files ---------------------------------------------------------------------------------
def test_first200_sample_counts_and_hand_checked_fields(shared_data: Path) -> None:
    items = parse_file(shared_data / "pubmed_xml" / "pubmed20n0014_first200.xml.gz")
    arts = [a for a in items if isinstance(a, Article)]
    assert len(items) == len(arts) == 200
    assert sum(1 for a in arts if a.abstract) == 79  # SOURCE.md: 79 of the 200 have an <Abstract>
    by = {a.pmid: a for a in arts}
    first = by["399296"]
    assert first.title.startswith("Monitoring of bacteriological contamination and assessment of carcase")
    assert first.abstract.startswith("Two hundred and sixty nine beef, 230 sheep and 165 pig carcase")
    assert first.abstract.endswith("against which bacteriological monitoring assessments could be measured.")
    assert first.sections == ()  # one unlabelled part: no span list
    assert (first.journal, first.journal_iso, first.year) == (
        "Journal of the South African Veterinary Association", "J S Afr Vet Assoc", 1979)
    assert [m.descriptor for m in first.mesh][:3] == ["Abattoirs", "Animals", "Bacteriological Techniques"]
    assert len(first.mesh) == 8 and first.mesh[2].ui == "D001431" and first.mesh[2].major
    assert not first.mesh[0].major
    assert first.publication_types == ("Journal Article",) and not first.retracted
    pineal = by["399297"]
    assert pineal.title == "[The pineal body]." and pineal.abstract == ""  # no abstract: still a record
    assert by["399319"].year == 1979  # <MedlineDate>1979 Jul-Sep</MedlineDate>
    assert arts[-1].pmid == "399495"


def test_efetch_structured_abstract_labels_and_spans(shared_data: Path) -> None:
    (art,) = parse_file(shared_data / "pubmed_xml" / "pubmed-29768149.xml")
    assert isinstance(art, Article)
    assert art.pmid == "29768149" and art.version == 1
    assert art.title == "Inhaled Combined Budesonide-Formoterol as Needed in Mild Asthma."
    assert [s.label for s in art.sections] == ["BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS"]
    parts = [art.abstract[s.start : s.end] for s in art.sections]
    assert parts[1].startswith("We conducted a 52-week, double-blind trial")
    assert parts[3].endswith("NCT02149199 .).")
    assert " ".join(parts) == art.abstract  # parts joined by exactly one space
    assert art.sections[0].start == 0 and art.sections[-1].end == len(art.abstract)
    assert "\n" not in art.abstract and "\t" not in art.abstract
    assert art.doi == "10.1056/NEJMoa1715274" and art.year == 2018
    assert art.journal_iso == "N Engl J Med"
    asthma = next(m for m in art.mesh if m.descriptor == "Asthma")
    assert asthma.qualifiers == (("drug therapy", "Q000188", True),)
    # CommentsCorrections list PMIDs 29768146 and 30242404: never the record's own id
    assert art.pmid not in ("29768146", "30242404")


def test_update_file_versions_deletions_markup_and_comments(shared_data: Path) -> None:
    items = parse_file(shared_data / "pubmed_xml" / "pubmed21n1298_first300_plus_deletecitation.xml.gz")
    arts = [a for a in items if isinstance(a, Article)]
    dels = [d for d in items if isinstance(d, Deletion)]
    assert len(arts) == 300 and len(dels) == 1 and items[-1] is dels[0]
    assert len(dels[0].pmids) == 20 and dels[0].pmids[0] == "31688362" and dels[0].pmids[-1] == "34096142"
    # 29744390 cites 30271887 (Versions 3 and 4) in CommentsCorrections; only its own PMID counts
    assert [a.version for a in arts if a.pmid == "30271887"] == [1, 2]
    assert sum(1 for a in arts if a.pmid == "29744390") == 1
    millet = next(a for a in arts if a.title.startswith("Effects of water availability and UV radiation"))
    assert millet.title == ("Effects of water availability and UV radiation on silicon accumulation in the "
                            "C4 crop proso millet.")
    cat = next(a for a in arts if a.pmid == "10704411")
    assert [(s.label, s.category) for s in cat.sections] == [
        ("BACKGROUND", "BACKGROUND"), ("RESULTS", "RESULTS"), ("CONCLUSIONS", "CONCLUSIONS")]


# -- inline records -----------------------------------------------------------------------------
def test_title_markup_flattened_and_copyright_and_other_abstract_excluded() -> None:
    a = one(article_xml(
        title="Role of <i>TP53</i> in Ca<sup>2+</sup> and H<sub>2</sub>O",
        abstract=None,
        extra_article=(
            '<Abstract><AbstractText Label="AIM" NlmCategory="OBJECTIVE">Find <i>x</i>.</AbstractText>'
            '<AbstractText Label="RESULTS" NlmCategory="RESULTS">It was y.</AbstractText>'
            "<CopyrightInformation>Copyright 2001 Someone.</CopyrightInformation></Abstract>"
        ),
        extra_mc='<OtherAbstract Type="Publisher"><AbstractText>Other text.</AbstractText></OtherAbstract>',
    ))
    assert a.title == "Role of TP53 in Ca2+ and H2O"
    assert a.abstract == "Find x. It was y."
    assert a.sections == (Section("AIM", "OBJECTIVE", 0, 7), Section("RESULTS", "RESULTS", 8, 17))


def test_empty_article_title_falls_back_to_vernacular_title() -> None:
    a = one(article_xml(title="", abstract=None, extra_article="<VernacularTitle>Briefsammlung.</VernacularTitle>"))
    assert a.title == "Briefsammlung."
    items = parse(xml_file(article_xml(title="", abstract=None)))
    assert isinstance(items[0], BadRecord) and "neither title nor abstract" in items[0].reason


def test_comments_corrections_pmids_are_not_the_record_pmid() -> None:
    comments = (
        '<CommentsCorrectionsList><CommentsCorrections RefType="ErratumIn"><RefSource>x</RefSource>'
        '<PMID Version="1">999</PMID></CommentsCorrections></CommentsCorrectionsList>'
    )
    # the record's own PMID missing: must be a bad record, not PMID 999
    items = parse(xml_file(article_xml(pmid=None, extra_mc=comments)))
    assert len(items) == 1 and isinstance(items[0], BadRecord)
    assert "PMID" in items[0].reason and items[0].pmid is None and items[0].line == 3
    huge = parse(xml_file(article_xml(pmid="12345678901234567890")))
    assert isinstance(huge[0], BadRecord) and "invalid PMID" in huge[0].reason
    a = one(article_xml(pmid="1234", extra_mc=comments))
    assert a.pmid == "1234" and not a.retracted


def test_year_fallbacks() -> None:
    assert one(article_xml(pubdate="<MedlineDate>1998 Dec-1999 Jan</MedlineDate>")).year == 1998
    assert one(article_xml(pubdate="<MedlineDate>Winter 1975-1976</MedlineDate>")).year == 1975
    dated = article_xml(pubdate="<Season>Spring</Season>",
                        extra_article='<ArticleDate DateType="Electronic"><Year>2015</Year></ArticleDate>')
    assert one(dated).year == 2015
    assert one(article_xml(pubdate="<MedlineDate>undated</MedlineDate>")).year is None


def test_retraction_flags_ids_and_keywords() -> None:
    pt = ('<PublicationTypeList><PublicationType UI="D016441">Retracted Publication</PublicationType>'
          "</PublicationTypeList>")
    a = one(article_xml(extra_article=pt))
    assert a.retracted and a.publication_types == ("Retracted Publication",)
    ri = ('<CommentsCorrectionsList><CommentsCorrections RefType="RetractionIn"><RefSource>r</RefSource>'
          '<PMID Version="1">77</PMID></CommentsCorrections></CommentsCorrectionsList>')
    assert one(article_xml(extra_mc=ri)).retracted
    ids = ('<ArticleIdList><ArticleId IdType="pubmed">1001</ArticleId><ArticleId IdType="doi">10.1/x</ArticleId>'
           '<ArticleId IdType="pmc">PMC42</ArticleId></ArticleIdList>'
           '<ReferenceList><Reference><ArticleIdList><ArticleId IdType="doi">10.9/ref</ArticleId>'
           "</ArticleIdList></Reference></ReferenceList>")
    b = one(article_xml(pubmed_data=ids, extra_mc=(
        '<KeywordList Owner="NOTNLM"><Keyword>alpha</Keyword></KeywordList>'
        '<KeywordList Owner="NASA"><Keyword>beta <i>b</i></Keyword></KeywordList>')))
    assert (b.doi, b.pmc) == ("10.1/x", "PMC42")
    assert b.keywords == ("alpha", "beta b")


def test_empty_title_and_abstract_is_bad_but_empty_abstract_alone_is_fine() -> None:
    items = parse(xml_file(article_xml(pmid="5", title="", abstract=None), article_xml(pmid="6", abstract=None)))
    assert isinstance(items[0], BadRecord) and items[0].pmid == "5" and "neither title nor abstract" in items[0].reason
    assert isinstance(items[1], Article) and items[1].pmid == "6" and items[1].abstract == ""
    only_abstract = one(article_xml(pmid="7", title="", abstract="Just text."))
    assert only_abstract.title == "" and only_abstract.abstract == "Just text."


def test_book_article() -> None:
    book = (
        '<PubmedBookArticle><BookDocument><PMID Version="1">20301295</PMID><Book><BookTitle>GeneReviews'
        "</BookTitle><PubDate><Year>1993</Year></PubDate></Book><ArticleTitle>Cystic Fibrosis</ArticleTitle>"
        '<Abstract><AbstractText Label="SUMMARY">CF affects the lungs.</AbstractText></Abstract>'
        "<PublicationType>Review</PublicationType></BookDocument><PubmedBookData><ArticleIdList>"
        '<ArticleId IdType="bookaccession">NBK1250</ArticleId></ArticleIdList></PubmedBookData></PubmedBookArticle>'
    )
    (a,) = parse(xml_file(book))
    assert isinstance(a, Article)
    assert (a.pmid, a.title, a.abstract, a.journal, a.year) == (
        "20301295", "Cystic Fibrosis", "CF affects the lungs.", "GeneReviews", 1993)
    assert a.sections == (Section("SUMMARY", None, 0, 21),) and a.publication_types == ("Review",)


def test_delete_citation_in_document_order_and_invalid_pmids() -> None:
    text = xml_file(article_xml(pmid="1"), "<DeleteCitation><PMID>1</PMID><PMID>abc</PMID></DeleteCitation>\n",
                    article_xml(pmid="1", version=2))
    items = parse(text)
    assert [type(i).__name__ for i in items] == ["Article", "BadRecord", "Deletion", "Article"]
    assert items[2] == Deletion(("1",), 4)
    assert "abc" in items[1].reason  # type: ignore[union-attr]


def test_malformed_xml_reports_line_and_column_after_yielding_good_records() -> None:
    text = xml_file(article_xml(pmid="1"), "<PubmedArticle><MedlineCitation><PMID>2</PMID></Oops>\n")
    got: list[object] = []
    with pytest.raises(InputError) as err:
        for item in iter_pubmed_xml(io.BufferedReader(io.BytesIO(text.encode())), "bad.xml"):  # type: ignore[arg-type]
            got.append(item)
    assert len(got) == 1 and got[0].pmid == "1"  # type: ignore[attr-defined]
    assert err.value.path == "bad.xml" and "line 4, column" in str(err.value.position)
    assert "malformed XML" in str(err.value)


def test_latin1_bytes_in_utf8_declared_file_are_an_encoding_error() -> None:
    data = xml_file(article_xml(pmid="1"), article_xml(pmid="2", title="Caf\u00e9")).encode("latin-1")
    with pytest.raises(InputError) as err:
        parse(data)
    assert "line 4" in str(err.value.position) and "UTF-8" in str(err.value)


def test_memory_is_bounded_finished_records_are_removed_from_the_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = pubmed_xml.parse_article

    def spy(elem):  # type: ignore[no-untyped-def]
        seen.append(len(elem.getparent()))  # records still attached to the root (incl. parsed ahead)
        return real(elem)

    monkeypatch.setattr(pubmed_xml, "parse_article", spy)
    items = parse(xml_file(*(article_xml(pmid=str(i)) for i in range(1, 3001))))
    # only what lxml parsed ahead from one 32 KiB read stays in the tree (~370 bytes a record here),
    # never the finished records: the bound does not grow with the file
    assert len(items) == 3000 and max(seen) < 150 and max(seen[-500:]) < 150
