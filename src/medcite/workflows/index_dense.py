"""Build, resume, update or import a dense (embedding) index, and encode one shard of a store
(``medcite index dense`` and ``medcite index dense encode``).

The command's options pick the path: ``--from-embeddings`` imports NCBI's MedCPT chunk layout or merges the
shards of ``encode``; otherwise the store's articles are encoded into ``--out`` (resumed after an interruption,
updated to the store, re-laid out when ``--index-type`` is given, or rebuilt). The index folder is any folder the
user names, so this goes through the index builders, not ``ctx.index(name)`` (which only manages the folder under
the store that presets use, and always re-lays it out to the settings).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import load_settings
from ..errors import ConfigError, InputError
from ..io import JSONObject
from ..set_option import set_line

if TYPE_CHECKING:
    from ..index.dense.faiss_backend import FaissConfig


def dense_settings(
    name: str, preset: str, overrides: Sequence[str], encoder: str | None, query_encoder: str | None,
    index_type: str | None = None, chunk_size: int | None = None, batch_size: int | None = None,
) -> FaissConfig:
    """The FAISS settings of index ``name`` with the command's encoder and layout options applied.

    The options merge into the settings they name, after the user's ``--set`` values: ``--encoder`` /
    ``--query-encoder`` replace the encoder's model (and backend) but keep where and how it runs (``--set
    indexes.NAME.encoder.device=cuda``, its dtype and batch size) and any other field the user set on it;
    ``--batch-size``, ``--index-type`` and ``--chunk-size`` set one field each and leave the rest.
    """
    from ..config import replacing
    from ..index.dense.faiss_backend import FaissConfig

    extra: list[str] = []
    named: object = None
    if query_encoder is not None:
        named = {"backend": "hf-asymmetric", "model": encoder or "ncbi/MedCPT-Article-Encoder",
                 "query_model": query_encoder}
    elif encoder is not None:
        named = _encoder_value(encoder)
    if named is not None:
        extra += replacing(preset, overrides, f"indexes.{name}.encoder", named)
    for field, value in (("index_type", index_type), ("chunk_size", chunk_size), ("encoder.batch_size", batch_size)):
        if value is not None:
            extra.append(f"indexes.{name}.{field}={json.dumps(value)}")
    settings = load_settings(preset, [*overrides, *extra]).indexes.get(name)
    if not isinstance(settings, FaissConfig):
        raise ConfigError(f"the settings have no FAISS index named {name!r}",
                          hint="use --index dense, or define it: " + set_line("indexes.NAME.backend", "faiss"))
    return settings


def _encoder_value(text: str) -> object:
    """``--encoder``'s value: a JSON object (a full encoder config) or a shorthand / model name or folder."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--encoder {text[:80]!r} is not a valid JSON object ({exc.msg})",
                              hint='e.g. --encoder \'{"backend": "sentence-transformers", "model": "DIR"}\'') from None
    return text


def build_dense(settings: FaissConfig, store: Path | None, out: Path | None, *,
                from_embeddings: Sequence[Path] = (), rebuild: bool = False, relayout: bool = False,
                new_encoder: bool = False) -> tuple[Path, JSONObject]:
    """Build, update or import the dense index ``settings`` describes into ``out`` (None: the folder under
    ``store/indexes/`` that presets use); returns the folder and its manifest.

    ``relayout``: the layout was asked for (re-lay out an existing index); ``new_encoder``: the encoder was named
    (load it even when the index exists, so a changed encoder is noticed).
    """
    from ..corpus.store import DocumentStore
    from ..index.base import index_folder
    from ..index.dense import folder as fo
    from ..index.dense.build import build_dense_index, update_dense_index
    from ..index.dense.encoders import load_encoder
    from ..index.dense.importer import import_embeddings
    from ..index.dense.shards import import_shards, is_shard

    if out is None:
        if store is None:
            raise InputError("give --out DIR (there is no --store to put the index under)")
        out = index_folder(store, settings)
    docs = DocumentStore.open(store) if store is not None else None
    try:
        if from_embeddings:
            if fo.has_index(out) and not rebuild:
                raise InputError(f"{out} already holds a dense index",
                                 hint="pass --rebuild to replace it, or choose another --out")
            sharded = [is_shard(f) for f in from_embeddings]
            if any(sharded):
                if not all(sharded):
                    plain = from_embeddings[sharded.index(False)]
                    raise InputError(f"{plain} is not a shard of `medcite index dense encode`, the other folders are",
                                     hint="merge shard folders together, or import one NCBI folder at a time")
                manifest = import_shards(from_embeddings, out, settings, store=docs)
                if docs is not None and docs.seq != manifest["corpus"]["seq"]:  # ingested since: catch up
                    manifest = update_dense_index(docs, out, settings)
            elif len(from_embeddings) > 1:
                raise InputError("several --from-embeddings folders are merged only when they are the shards of "
                                 "`medcite index dense encode`",
                                 hint="give one folder of embeds_chunk_N.npy / pmids_chunk_N.json files")
            else:
                manifest = import_embeddings(from_embeddings[0], out, settings, store=docs)
        elif docs is None:
            raise InputError("give --store (to encode its articles) or --from-embeddings DIR (to import vectors)",
                             hint="e.g. medcite index dense --store corpus/ --out indexes/dense")
        else:
            fresh = rebuild or not fo.has_index(out)
            enc = load_encoder(settings.encoder) if (fresh or new_encoder) else None
            manifest = build_dense_index(docs, out, settings, encoder=enc, rebuild=rebuild, relayout=relayout)
    finally:
        if docs is not None:
            docs.close()
    return out, manifest


def encode_store_shard(settings: FaissConfig, store: Path, shard_text: str, out: Path, *,
                       rebuild: bool = False) -> tuple[tuple[int, int], JSONObject]:
    """Encode shard ``I/N`` (``shard_text``) of ``store``'s articles into ``out``; returns (I, N) and the
    shard's record."""
    from ..corpus.store import DocumentStore
    from ..index.dense.shards import encode_shard, parse_shard

    shard = parse_shard(shard_text)
    with DocumentStore.open(store) as docs:
        record = encode_shard(docs, out, settings, shard, rebuild=rebuild)
    return shard, record
