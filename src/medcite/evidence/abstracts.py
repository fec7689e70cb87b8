"""Whole abstracts as evidence: CLaC 2025 runs A, C and D show the generator ``[i] (PMID) text`` with one
abstract per item, in the final ranking's order.

Each item is the article's whole abstract (section ``abstract``, offsets 0 to its length, so a cited PMID
traces to exactly the words shown); an article without an abstract shows its title (section ``title``).
By default the title is not prefixed to the abstract, so every item stays one exact span of one section;
``title=True`` shows "title abstract" as CLaC 2025 §6.1 does (the item is then no span: section None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..types import Article, Evidence, Hit, Query
from .base import EvidenceConfig

if TYPE_CHECKING:
    from ..context import BuildContext


class AbstractsConfig(EvidenceConfig):
    """The top ``docs`` abstracts, one evidence item each (at most ``max_items``); no LLM, no selection."""

    backend: Literal["abstracts"] = "abstracts"
    title: bool = Field(
        False, description="Show the title before the abstract in one item (CLaC 2025 §6.1: \"text concatenates "
        "the title and abstract\"); the item is then no single span of one section (section None). False: the "
        "abstract alone, one exact span."
    )


@dataclass
class AbstractSelector:
    """One evidence item per ranked article, its whole abstract (CLaC 2025 runs A, C, D)."""

    name: str = "abstracts"
    docs: int = 10
    max_items: int = 10
    title: bool = False

    Config: ClassVar[type[AbstractsConfig]] = AbstractsConfig

    @classmethod
    def from_config(cls, cfg: AbstractsConfig, ctx: BuildContext) -> AbstractSelector:
        return cls(docs=cfg.docs, max_items=cfg.max_items, title=cfg.title)

    def select(
        self, queries: Sequence[Query], hits: Sequence[Hit], articles: Mapping[str, Article]
    ) -> list[Evidence]:
        out: list[Evidence] = []
        for hit in hits[: self.docs]:
            article = articles.get(hit.pmid)
            if article is None:
                continue
            section, text = ("abstract", article.abstract) if article.abstract.strip() else ("title", article.title)
            if not text.strip():
                continue
            if self.title and section == "abstract" and article.title.strip():
                text = f"{article.title.strip()} {text}"
                out.append(Evidence(index=len(out) + 1, pmid=hit.pmid, text=text, score=hit.score, kind="abstract",
                                    branches=hit.branches))
                if len(out) >= self.max_items:
                    break
                continue
            out.append(Evidence(index=len(out) + 1, pmid=hit.pmid, text=text, section=section, start=0,
                                end=len(text), score=hit.score, kind="abstract", branches=hit.branches))
            if len(out) >= self.max_items:
                break
        return out
