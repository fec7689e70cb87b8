"""Training medcite's own models: a cross-encoder reranker and a bi-encoder, from BioASQ questions."""
