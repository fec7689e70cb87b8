"""How much of the gold standard a corpus holds: a run over a sample of PubMed cannot retrieve the rest.

BioASQ's gold documents come from all of PubMed; scored against a store that holds a fraction of them, MAP and
recall measure the sample as much as the system and are not comparable with published figures. The report
says how many gold documents (and how many questions' whole gold set) the store lacks, so ``medcite eval``
can warn when the share passes :data:`WARN_SHARE`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

#: the share of missing gold documents from which ``medcite eval`` warns
WARN_SHARE = 0.10


@dataclass(frozen=True)
class GoldCoverage:
    documents: int  # distinct relevant (rel > 0) gold documents
    found: int  # of them in the corpus
    questions: int  # questions with at least one relevant document
    none_found: int  # questions none of whose relevant documents is in the corpus

    @property
    def missing_share(self) -> float:
        return 1.0 - self.found / self.documents if self.documents else 0.0

    def line(self) -> str:
        return (f"{self.found:,} of {self.documents:,} gold documents are in the corpus "
                f"({self.missing_share:.1%} missing); {self.none_found:,} of {self.questions:,} questions have "
                "none of theirs")

    def warning(self, corpus: str) -> str | None:
        if self.missing_share <= WARN_SHARE:
            return None
        return (f"{self.missing_share:.1%} of the gold documents are not in {corpus}: these figures measure the "
                "sample as much as the system and are not comparable with runs over all of PubMed (the "
                "official ones); recall cannot pass the share found")


def gold_coverage(qrels: Mapping[str, Mapping[str, int]],
                  existing: Callable[[Collection[str]], set[str]]) -> GoldCoverage:
    """Count the relevant gold documents ``existing`` (e.g. :meth:`DocumentStore.existing`) finds."""
    relevant = {q: {d for d, rel in docs.items() if rel > 0} for q, docs in qrels.items()}
    relevant = {q: docs for q, docs in relevant.items() if docs}
    every = set().union(*relevant.values()) if relevant else set()
    found = existing(sorted(every)) if every else set()
    none = sum(1 for docs in relevant.values() if not docs & found)
    return GoldCoverage(len(every), len(found & every), len(relevant), none)
