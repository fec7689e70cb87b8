"""Encoders carry their family's query/document prefixes: e5, nomic, BGE (issue 15, PJs and DS@GT)."""

from __future__ import annotations

import numpy as np
import pytest

from medcite.config import load_settings
from medcite.index.dense.st_encoder import SentenceTransformerEncoder, known_prefixes
from medcite.types import Article


@pytest.mark.parametrize(("model", "query", "document"), [
    ("intfloat/e5-base-v2", "query: ", "passage: "),               # PJs' first stage
    ("intfloat/multilingual-e5-large", "query: ", "passage: "),
    ("nomic-ai/modernbert-embed-base", "search_query: ", "search_document: "),  # a PJs reranker
    ("nomic-ai/nomic-embed-text-v1.5", "search_query: ", "search_document: "),
    ("BAAI/bge-large-en", "Represent this sentence for searching relevant passages: ", ""),  # DS@GT
    ("BAAI/bge-base-en-v1.5", "Represent this sentence for searching relevant passages: ", ""),
    ("thenlper/gte-large", "", ""),
    ("ibm-granite/granite-embedding-125m-english", "", ""),
    ("minilm", "", ""),
    ("BAAI/bge-m3", "", ""),  # no instruction for m3
])
def test_family_prefixes(model: str, query: str, document: str) -> None:
    assert known_prefixes(model) == (query, document)


def test_the_encoder_puts_the_prefixes_on_what_it_encodes() -> None:
    enc = SentenceTransformerEncoder("minilm", query_prefix="query: ", document_prefix="passage: ")
    plain = SentenceTransformerEncoder("minilm")
    assert plain.query_prefix == plain.document_prefix == ""
    q = enc.encode_queries(["statins lower LDL"])
    assert np.allclose(q, plain.encode_queries(["query: statins lower LDL"]), atol=1e-5)
    assert not np.allclose(q, plain.encode_queries(["statins lower LDL"]), atol=1e-3)
    art = Article("1", "Statins", "Statins lower LDL.")
    d = enc.encode_documents([art])
    assert np.allclose(d, plain._encode(["passage: " + art.text]), atol=1e-5)
    assert enc.fingerprint != plain.fingerprint  # another vector space, another index


def test_presets_name_encoders_whose_prefixes_apply() -> None:
    pjs = load_settings("pjs-ensemble")
    assert known_prefixes(pjs.indexes["dense"].encoder.model) == ("query: ", "passage: ")
    dsgt = load_settings("dsgt-ensemble")
    assert known_prefixes(dsgt.indexes["dense"].encoder.model)[0].startswith("Represent this sentence")


def test_unset_prefixes_leave_existing_index_folders_where_they_were() -> None:
    from medcite.index.dense.st_encoder import STEncoderConfig

    assert "query_prefix" not in STEncoderConfig(model="minilm").identity()
    assert STEncoderConfig(model="minilm", query_prefix="q: ").identity()["query_prefix"] == "q: "


def test_no_query_instruction_searches_the_index_built_with_the_family_one() -> None:
    """DS@GT embeds the query 'similarly' to the abstracts (004 §3.1.3: query_prefix ''): the stored vectors are the
    same, so the index folder is the one a bge-large-en index built with BGE's instruction already has."""
    from medcite.index.dense.st_encoder import STEncoderConfig

    bge = "BAAI/bge-large-en"
    assert STEncoderConfig(model=bge, query_prefix="").identity() == STEncoderConfig(model=bge).identity()
    assert STEncoderConfig(model=bge, query_prefix="").identity() != STEncoderConfig(model="minilm").identity()
    e5 = "intfloat/e5-base"  # a document prefix changes the vectors stored: a folder of its own
    assert STEncoderConfig(model=e5, document_prefix="").identity() != STEncoderConfig(model=e5).identity()
    assert load_settings("dsgt-b1").indexes["dense"].encoder.query_prefix == ""
