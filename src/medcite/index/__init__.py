"""Index stage: sparse (BM25) and dense (embedding) indexes, each a folder with a manifest.json."""
