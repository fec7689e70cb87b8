"""The presets room: the shipped preset files (``*.json``, package data) and what reasons about presets without
running a question -- the offline swaps (:mod:`.offline`), which resolved settings a run reads (:mod:`.reads`),
where each comes from (:mod:`.provenance`, :mod:`.coverage`, :mod:`.quote_meaning`), the models they name
(:mod:`.inventory`), why an index is built (:mod:`.index_purpose`), which support gate runs (:mod:`.gates`) and
the per-paper tables of the docs (:mod:`.tables`). It sits below ``pipeline/`` and imports only the settings,
the registry and the stages' settings modules (``pyproject.toml``, ``tests/unit/test_architecture.py``)."""
