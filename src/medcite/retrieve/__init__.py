"""Retrieve stage: query sets, expansion, first-stage search, fusion and pooling by PMID."""
