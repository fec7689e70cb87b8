"""medcite: answers biomedical questions from PubMed abstracts, every sentence cited by PMID."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
