"""`medcite index dense`: build, resume, update or import a dense (embedding) index; `medcite index dense
encode --shard I/N`: encode one shard of the store, for a merge by `--from-embeddings`."""

from __future__ import annotations

from pathlib import Path

import click

from ..set_option import set_line
from ..workflows.index_dense import build_dense, dense_settings, encode_store_shard
from .numbers import Count
from .options import workflow_options


@click.group("dense", invoke_without_command=True)
@click.option("--store", type=click.Path(path_type=Path), default=None,
              help="Document store folder to index (optional with --from-embeddings).")
@click.option("--out", default=None, type=click.Path(path_type=Path),
              help="Index folder: created, resumed after an interruption, or updated to the store (default: the "
                   "folder under STORE/indexes/ that presets use for this encoder).")
@click.option("--index", "name", default="dense", show_default=True,
              help="Which entry of the settings' `indexes` to build (a vector one).")
@click.option("--encoder", default=None,
              help="Article/symmetric encoder: minilm (default, offline), minilm-onnx, medcpt, a Hugging Face "
                   "name or a local model folder. It replaces only the model: "
                   f"{set_line('indexes.NAME.encoder.device', '...')}, dtype and batch_size stay (device default: "
                   "auto, a GPU when there is one).")
@click.option("--query-encoder", default=None, help="Separate query encoder of an asymmetric pair.")
@click.option("--index-type", type=click.Choice(["flat", "hnsw", "ivfpq"]), default=None,
              help="FAISS layout (default from settings: flat). On an existing index: re-layout it.")
@click.option("--from-embeddings", "from_embeddings", type=click.Path(path_type=Path), multiple=True,
              help="Import precomputed embeddings: a folder of embeds_chunk_N.npy + pmids_chunk_N.json (NCBI's "
                   "MedCPT layout). Repeat it to merge the N shard folders of `medcite index dense encode`: all "
                   "N must be there, from one store state and one encoder, each PMID once.")
@click.option("--batch-size", type=Count(1), default=None,
              help="Texts per encoder batch (default: by device, 32 on the CPU, 128 on a GPU).")
@click.option("--chunk-size", type=Count(1), default=None,
              help="Articles per build chunk (memory bound and resume unit).")
@click.option("--rebuild", is_flag=True, help="Discard what --out holds and build from scratch.")
@workflow_options
@click.pass_context
def dense(
    ctx: click.Context,
    store: Path | None,
    out: Path | None,
    name: str,
    encoder: str | None,
    query_encoder: str | None,
    index_type: str | None,
    from_embeddings: tuple[Path, ...],
    batch_size: int | None,
    chunk_size: int | None,
    rebuild: bool,
    preset: str,
    overrides: tuple[str, ...],
) -> None:
    """Build or update the dense index of a document store, or import precomputed embeddings.

    `encode --shard I/N` encodes one Nth of a store (on any machine); --from-embeddings, repeated, merges the
    N shard folders into the index.
    """
    if ctx.invoked_subcommand is not None:
        return
    settings = dense_settings(name, preset, overrides, encoder, query_encoder, index_type, chunk_size, batch_size)
    out, manifest = build_dense(settings, store, out, from_embeddings=from_embeddings, rebuild=rebuild,
                                relayout=index_type is not None, new_encoder=bool(encoder or query_encoder))
    counts, idx = manifest["counts"], manifest["index"]
    click.echo(
        f"dense index {out}: {counts['live']} documents ({counts['rows']} rows), {counts['dim']}-d, "
        f"{idx['type']}, encoder {manifest['encoder']['name']}, "
        f"{manifest['bytes_per_doc_in_ram']} bytes/document in RAM"
    )


@dense.command("encode")
@click.option("--store", type=click.Path(path_type=Path), required=True, help="Document store folder to encode.")
@click.option("--shard", "shard_text", required=True, metavar="I/N",
              help="Which part: shard I of N takes the articles with PMID % N == I-1 (e.g. 3/16; a Slurm array "
                   "passes $((SLURM_ARRAY_TASK_ID+1))/N).")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="Folder for this shard's embeds_chunk_K.npy + pmids_chunk_K.json (resumed after an "
                   "interruption); merge the N folders with `medcite index dense --from-embeddings DIR ...`.")
@click.option("--index", "name", default="dense", show_default=True,
              help="Which entry of the settings' `indexes` gives the encoder and chunk size.")
@click.option("--encoder", default=None, help="Article/symmetric encoder (as for `medcite index dense`).")
@click.option("--query-encoder", default=None, help="Separate query encoder of an asymmetric pair.")
@click.option("--batch-size", type=Count(1), default=None,
              help="Texts per encoder batch (default: by device, 32 on the CPU, 128 on a GPU).")
@click.option("--chunk-size", type=Count(1), default=None,
              help="Articles per chunk file (memory bound and resume unit).")
@click.option("--rebuild", is_flag=True, help="Discard what --out holds and encode the shard from scratch.")
@workflow_options
def encode(
    store: Path, shard_text: str, out: Path, name: str, encoder: str | None, query_encoder: str | None,
    batch_size: int | None, chunk_size: int | None, rebuild: bool, preset: str, overrides: tuple[str, ...],
) -> None:
    """Encode shard I/N of a store's articles into a folder of embedding chunks (no index is built).

    Run the N shards anywhere (each needs a copy of the same store), then merge them:

    \b
    medcite index dense --store STORE --out INDEX \\
        --from-embeddings SHARD1 ... --from-embeddings SHARDN
    """
    settings = dense_settings(name, preset, overrides, encoder, query_encoder, chunk_size=chunk_size,
                              batch_size=batch_size)
    shard, record = encode_store_shard(settings, store, shard_text, out, rebuild=rebuild)
    enc = record["encoder"]
    click.echo(f"shard {shard[0]}/{shard[1]} of {store} (sequence {record['seq']}): {record['rows']} articles, "
               f"{enc['dim']}-d, encoder {enc['name']}, in {out}")
