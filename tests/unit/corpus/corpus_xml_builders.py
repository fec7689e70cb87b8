"""Tiny PubMed XML builders for the corpus tests (imported by the test modules)."""

from __future__ import annotations

HEADER = '<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n'
FOOTER = "</PubmedArticleSet>\n"


def article_xml(
    pmid: str | None = "1001",
    title: str = "A title.",
    abstract: str | None = "An abstract.",
    *,
    version: int = 1,
    pubdate: str = "<Year>2001</Year>",
    extra_mc: str = "",
    extra_article: str = "",
    pubmed_data: str = "",
) -> str:
    pmid_el = f'<PMID Version="{version}">{pmid}</PMID>' if pmid is not None else ""
    abstract_el = f"<Abstract><AbstractText>{abstract}</AbstractText></Abstract>" if abstract is not None else ""
    return (
        f"<PubmedArticle><MedlineCitation>{pmid_el}<Article><Journal><JournalIssue><PubDate>{pubdate}</PubDate>"
        f"</JournalIssue><Title>J Test</Title><ISOAbbreviation>J Tst</ISOAbbreviation></Journal>"
        f"<ArticleTitle>{title}</ArticleTitle>{abstract_el}{extra_article}</Article>{extra_mc}</MedlineCitation>"
        f"<PubmedData>{pubmed_data}</PubmedData></PubmedArticle>\n"
    )


def xml_file(*records: str) -> str:
    return HEADER + "".join(records) + FOOTER
