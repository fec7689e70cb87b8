"""Rerank stage: cross-encoders, MedCPT, monoT5, embedding similarity, listwise LLM, ensembles."""
