"""`medcite index dense`: build, resume, update or import a dense (embedding) index."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import InputError
from .options import resolve, settings_options


@click.command("dense")
@click.option("--store", type=click.Path(path_type=Path), default=None,
              help="Document store folder to index (optional with --from-embeddings).")
@click.option("--out", default=None, type=click.Path(path_type=Path),
              help="Index folder: created, resumed after an interruption, or updated to the store (default: the "
                   "folder under STORE/indexes/ that presets use for this encoder).")
@click.option("--index", "name", default="dense", show_default=True,
              help="Which entry of the settings' `indexes` to build (a vector one).")
@click.option("--encoder", default=None,
              help="Article/symmetric encoder: minilm (default, offline), minilm-onnx, medcpt, a Hugging Face "
                   "name or a local model folder.")
@click.option("--query-encoder", default=None, help="Separate query encoder of an asymmetric pair.")
@click.option("--index-type", type=click.Choice(["flat", "hnsw", "ivfpq"]), default=None,
              help="FAISS layout (default from settings: flat). On an existing index: re-layout it.")
@click.option("--from-embeddings", "from_embeddings", type=click.Path(path_type=Path), default=None,
              help="Import precomputed embeddings: a folder of embeds_chunk_N.npy + pmids_chunk_N.json.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="Texts per encoder batch.")
@click.option("--chunk-size", type=click.IntRange(min=1), default=None,
              help="Articles per build chunk (memory bound and resume unit).")
@click.option("--rebuild", is_flag=True, help="Discard what --out holds and build from scratch.")
@settings_options
def dense(
    store: Path | None,
    out: Path | None,
    name: str,
    encoder: str | None,
    query_encoder: str | None,
    index_type: str | None,
    from_embeddings: Path | None,
    batch_size: int | None,
    chunk_size: int | None,
    rebuild: bool,
    preset: str,
    overrides: tuple[str, ...],
) -> None:
    """Build or update the dense index of a document store, or import precomputed embeddings."""
    import json

    from ..corpus.store import DocumentStore
    from ..errors import ConfigError
    from ..index.base import index_folder
    from ..index.dense import folder as fo
    from ..index.dense.build import build_dense_index
    from ..index.dense.encoders import load_encoder
    from ..index.dense.faiss_backend import FaissConfig
    from ..index.dense.importer import import_embeddings

    extra: list[str] = []
    if query_encoder is not None:
        pair = {"backend": "hf-asymmetric", "model": encoder or "ncbi/MedCPT-Article-Encoder",
                "query_model": query_encoder}
        extra.append(f"indexes.{name}.encoder={json.dumps(pair)}")
    elif encoder is not None:
        extra.append(f"indexes.{name}.encoder={encoder}")
    for field, value in (("index_type", index_type), ("chunk_size", chunk_size), ("encoder.batch_size", batch_size)):
        if value is not None:
            extra.append(f"indexes.{name}.{field}={value}")
    settings = resolve(preset, (*overrides, *extra)).indexes.get(name)
    if not isinstance(settings, FaissConfig):
        raise ConfigError(f"the settings have no FAISS index named {name!r}",
                          hint="use --index dense, or define it: --set indexes.NAME.backend=faiss")
    if out is None:
        if store is None:
            raise InputError("give --out DIR (there is no --store to put the index under)")
        out = index_folder(store, settings)
    docs = DocumentStore.open(store) if store is not None else None
    try:
        if from_embeddings is not None:
            if fo.has_index(out) and not rebuild:
                raise InputError(f"{out} already holds a dense index",
                                 hint="pass --rebuild to replace it, or choose another --out")
            manifest = import_embeddings(from_embeddings, out, settings, store=docs)
        elif docs is None:
            raise InputError("give --store (to encode its articles) or --from-embeddings DIR (to import vectors)",
                             hint="e.g. medcite index dense --store corpus/ --out indexes/dense")
        else:
            fresh = rebuild or not fo.has_index(out)
            enc = load_encoder(settings.encoder) if (fresh or encoder or query_encoder) else None
            manifest = build_dense_index(docs, out, settings, encoder=enc, rebuild=rebuild,
                                         relayout=index_type is not None)
    finally:
        if docs is not None:
            docs.close()
    counts, idx = manifest["counts"], manifest["index"]
    click.echo(
        f"dense index {out}: {counts['live']} documents ({counts['rows']} rows), {counts['dim']}-d, "
        f"{idx['type']}, encoder {manifest['encoder']['name']}, "
        f"{manifest['bytes_per_doc_in_ram']} bytes/document in RAM"
    )
