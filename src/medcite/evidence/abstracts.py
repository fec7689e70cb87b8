"""Whole abstracts as evidence: CLaC 2025 runs A, C and D show the generator ``[i] (PMID) text`` with one
abstract per item, in the final ranking's order.

Each item is the article's whole abstract (section ``abstract``, offsets 0 to its length, so a cited PMID
traces to exactly the words shown); an article without an abstract shows its title (section ``title``).
Choice: the title is not prefixed to the abstract, so every item stays one exact span of one section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from ..types import Article, Evidence, Hit, Query
from .base import EvidenceConfig

if TYPE_CHECKING:
    from ..context import BuildContext


class AbstractsConfig(EvidenceConfig):
    """The top ``docs`` abstracts, one evidence item each (at most ``max_items``); no LLM, no selection."""

    backend: Literal["abstracts"] = "abstracts"


@dataclass
class AbstractSelector:
    """One evidence item per ranked article, its whole abstract (CLaC 2025 runs A, C, D)."""

    name: str = "abstracts"
    docs: int = 10
    max_items: int = 10

    Config: ClassVar[type[AbstractsConfig]] = AbstractsConfig

    @classmethod
    def from_config(cls, cfg: AbstractsConfig, ctx: BuildContext) -> AbstractSelector:
        return cls(docs=cfg.docs, max_items=cfg.max_items)

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
            out.append(Evidence(index=len(out) + 1, pmid=hit.pmid, text=text, section=section, start=0,
                                end=len(text), score=hit.score, kind="abstract", branches=hit.branches))
            if len(out) >= self.max_items:
                break
        return out
