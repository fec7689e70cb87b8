"""medcite: answers biomedical questions from PubMed abstracts, every sentence cited by PMID."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["Pipeline", "__version__"]


def __getattr__(name: str) -> Any:
    # lazy: `import medcite` stays cheap; the pipeline pulls in the stages only when used
    if name == "Pipeline":
        import importlib

        return importlib.import_module("medcite.pipeline").Pipeline
    raise AttributeError(name)
