"""Corpus stage: PubMed XML / JSONL readers, the SQLite document store, updates and deletions."""
