"""Sharded dense encoding: `encode --shard I/N` on slices of the store, merged by import into the index a
one-shot build gives."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from _dense_fakes import HashEncoder, fill_store, make_articles
from click.testing import CliRunner

from medcite.cli.main import cli
from medcite.corpus.store import DocumentStore, FileStats
from medcite.errors import IndexMismatchError, InputError
from medcite.index.dense import folder as fo
from medcite.index.dense.build import build_dense_index
from medcite.index.dense.faiss_backend import FaissConfig, FaissIndex
from medcite.index.dense.shards import encode_shard, import_shards, parse_shard
from medcite.types import Article

SETTINGS = FaissConfig(chunk_size=4, threads=1)


def results(index_dir, encoder, queries: list[str], k: int = 40) -> list[list[tuple[str, float]]]:
    """Every document's (PMID, score) per query, best first, ties in PMID order: the two builds store rows in
    different orders, so only a cut inside a tie could differ (k covers the whole corpus)."""
    r = FaissIndex(index_dir, encoder)
    return [sorted(((h.pmid, round(h.score, 5)) for h in hits), key=lambda x: (-x[1], int(x[0])))
            for hits in r.search_many(queries, k)]


def encode_all(store, root, n: int, enc) -> list:
    return [root / f"shard{i}" for i in range(1, n + 1)
            if encode_shard(store, root / f"shard{i}", SETTINGS, (i, n), encoder=enc)]


def test_three_shards_merged_equal_a_one_shot_build(tmp_path) -> None:
    arts = make_articles(30)
    store = fill_store(tmp_path / "store", arts)
    enc = HashEncoder()
    build_dense_index(store, tmp_path / "oneshot", SETTINGS, encoder=enc)
    enc.documents_encoded = 0
    folders = encode_all(store, tmp_path, 3, enc)
    assert enc.documents_encoded == 30  # each article encoded once, in exactly one shard
    for i, folder in enumerate(folders, start=1):
        rec = json.loads((folder / "shard.json").read_text())
        assert rec["shard"] == [i, 3] and rec["rows"] == 10 and rec["seq"] == store.seq
        pmids = [int(p) for f in sorted(folder.glob("pmids_chunk_*.json")) for p in json.loads(f.read_text())]
        assert all(p % 3 == i - 1 for p in pmids) and len(pmids) == 10
        assert not (folder / "state.json").exists()
    # the merge takes the folders in any order
    manifest = import_shards(folders[::-1], tmp_path / "merged", SETTINGS, encoder=enc, store=store)
    assert manifest["counts"] == {"rows": 30, "live": 30, "dim": 16}
    assert manifest["corpus"] == {"store_id": store.store_id, "seq": store.seq, "count": 30}
    assert enc.documents_encoded == 30  # nothing encoded again
    queries = [a.text for a in arts] + ["insulin statin", "malaria vaccine kidney"]
    assert results(tmp_path / "merged", enc, queries) == results(tmp_path / "oneshot", enc, queries)
    # the merged index follows the store like a built one
    with store.transaction() as tx:
        tx.upsert([Article("500", "zebrafish fin regeneration", "zebrafish regrow fins")], FileStats(path="u"))
        tx.delete([arts[0].pmid], FileStats(path="u"))
    assert build_dense_index(store, tmp_path / "merged", SETTINGS, encoder=enc)["counts"]["live"] == 30
    hits = FaissIndex(tmp_path / "merged", enc).search("zebrafish regrow fins", 30)
    assert hits[0].pmid == "500" and arts[0].pmid not in {h.pmid for h in hits}


def test_an_interrupted_shard_resumes_and_a_finished_one_is_kept(tmp_path) -> None:
    store = fill_store(tmp_path / "store", make_articles(30))
    with pytest.raises(KeyboardInterrupt):
        encode_shard(store, tmp_path / "s", SETTINGS, (2, 2), encoder=HashEncoder(fail_after_calls=2))
    assert not (tmp_path / "s" / "shard.json").exists()
    with pytest.raises(InputError, match="unfinished shard"):
        import_shards([tmp_path / "s"], tmp_path / "d", SETTINGS, encoder=HashEncoder())
    enc = HashEncoder()
    rec = encode_shard(store, tmp_path / "s", SETTINGS, (2, 2), encoder=enc)
    assert enc.documents_encoded == 15 - 8 and rec["rows"] == 15  # two chunks of 4 were kept
    again = HashEncoder()
    assert encode_shard(store, tmp_path / "s", SETTINGS, (2, 2), encoder=again) == rec
    assert again.documents_encoded == 0
    with pytest.raises(InputError, match="already holds shard 2/2"):
        encode_shard(store, tmp_path / "s", SETTINGS, (1, 2), encoder=again)


def test_the_merge_refuses_an_incomplete_or_inconsistent_split(tmp_path) -> None:
    store = fill_store(tmp_path / "store", make_articles(30))
    enc = HashEncoder()
    folders = encode_all(store, tmp_path, 3, enc)
    out = tmp_path / "d"
    with pytest.raises(InputError, match="shard\\(s\\) 2/3 missing"):
        import_shards([folders[0], folders[2]], out, SETTINGS, encoder=enc)
    with pytest.raises(InputError, match="are both shard 1/3"):
        import_shards([folders[0], folders[0], folders[1], folders[2]], out, SETTINGS, encoder=enc)
    encode_shard(store, tmp_path / "of2", SETTINGS, (2, 2), encoder=enc)
    with pytest.raises(InputError, match="is shard 2/2 but"):
        import_shards([*folders, tmp_path / "of2"], out, SETTINGS, encoder=enc)
    # another encoder for one shard, or the wrong encoder for the merge
    other = tmp_path / "other3"
    encode_shard(store, other, SETTINGS, (3, 3), encoder=HashEncoder(name="other"))
    with pytest.raises(IndexMismatchError, match="encoded with 'other'"):
        import_shards([folders[0], folders[1], other], out, SETTINGS, encoder=enc)
    with pytest.raises(IndexMismatchError, match="the shards were encoded with 'hash'"):
        import_shards(folders, out, SETTINGS, encoder=HashEncoder(name="x"))
    # a shard encoded after the store changed is from another store state
    late = tmp_path / "late3"
    with store.transaction() as tx:
        tx.upsert([Article("99", "late arrival", "")], FileStats(path="u"))
    encode_shard(store, late, SETTINGS, (3, 3), encoder=enc)
    with pytest.raises(IndexMismatchError, match="at sequence 2"):
        import_shards([folders[0], folders[1], late], out, SETTINGS, encoder=enc)
    # a PMID in the wrong shard (a mislabelled folder)
    bad = tmp_path / "bad"
    shutil.copytree(folders[0], bad)
    first = bad / "pmids_chunk_0.json"
    first.write_text(json.dumps([2] + json.loads(first.read_text())[1:]))
    with pytest.raises(InputError, match="holds PMID 2, which belongs to shard 3/3"):
        import_shards([bad, folders[1], folders[2]], out, SETTINGS, encoder=enc)
    # a store other than the one the shards were encoded from
    with pytest.raises(IndexMismatchError, match="not the store at"):
        import_shards(folders, out, SETTINGS, encoder=enc, store=fill_store(tmp_path / "b", make_articles(3)))
    assert not fo.has_index(out)


def test_the_merge_checks_the_shards_cover_the_store(tmp_path) -> None:
    store = fill_store(tmp_path / "store", make_articles(30))
    enc = HashEncoder()
    folders = encode_all(store, tmp_path, 2, enc)
    # drop one chunk of shard 1 (and say so in its record): the merge no longer covers the store
    last = sorted(folders[0].glob("pmids_chunk_*.json"))[-1]
    n_last = len(json.loads(last.read_text()))
    last.unlink()
    (folders[0] / last.name.replace("pmids", "embeds").replace(".json", ".npy")).unlink()
    rec = json.loads((folders[0] / "shard.json").read_text())
    (folders[0] / "shard.json").write_text(json.dumps(rec | {"rows": rec["rows"] - n_last}))
    with pytest.raises(InputError, match=f"do not cover the store .*: {n_last} of its PMIDs missing"):
        import_shards(folders, tmp_path / "d", SETTINGS, encoder=enc, store=store)
    # without the store, only the split itself is checked
    assert import_shards(folders, tmp_path / "d", SETTINGS, encoder=enc)["counts"]["rows"] == 30 - n_last


def test_shard_numbers_are_checked() -> None:
    assert parse_shard("3/16") == (3, 16) and parse_shard(" 1 / 1 ") == (1, 1)
    for bad in ("0/3", "4/3", "3", "a/b", "-1/3"):
        with pytest.raises(InputError, match="I/N"):
            parse_shard(bad)


def run(*args: str) -> object:
    return CliRunner().invoke(cli, ["-q", "index", "dense", *args], catch_exceptions=False)


def test_encode_shards_then_merge_from_the_command_line(tmp_path) -> None:
    arts = make_articles(25)
    fill_store(tmp_path / "store", arts).close()
    hash_bow = ("--set", "indexes.dense.encoder.backend=hash-bow", "--set", "indexes.dense.threads=1")
    store = str(tmp_path / "store")
    for i in (1, 2, 3):
        res = run("encode", "--store", store, "--shard", f"{i}/3", "--out", str(tmp_path / f"s{i}"),
                  "--chunk-size", "3", *hash_bow)
        assert res.exit_code == 0, res.output
        assert f"shard {i}/3 of {store} (sequence 1): {len([a for a in arts if int(a.pmid) % 3 == i - 1])} " \
               "articles, 32-d, encoder hash-bow" in res.output
    # the store moves on before the merge: the merged index catches up
    with DocumentStore.create(store) as st, st.transaction() as tx:
        tx.upsert([Article("777", "zebrafish fin regeneration", "")], FileStats(path="u"))
    shards = [a for i in (1, 2, 3) for a in ("--from-embeddings", str(tmp_path / f"s{i}"))]
    res = run("--store", store, *shards, "--out", str(tmp_path / "merged"), *hash_bow)
    assert res.exit_code == 0, res.output
    assert "26 documents" in res.output and "encoder hash-bow" in res.output
    built = run("--store", store, "--out", str(tmp_path / "oneshot"), *hash_bow)
    assert built.exit_code == 0, built.output
    from medcite_fakes import HashEncoder as HashBow

    queries = [a.text for a in arts] + ["zebrafish fin"]
    assert results(tmp_path / "merged", HashBow(), queries) == results(tmp_path / "oneshot", HashBow(), queries)
    # clean errors: a missing shard, a bad --shard, plain folders mixed with shards
    res = run("--store", store, *shards[:4], "--out", str(tmp_path / "m2"), *hash_bow)
    assert res.exit_code == 1 and "shard(s) 3/3 missing" in res.output and "hint:" in res.output
    res = run("encode", "--store", store, "--shard", "4/3", "--out", str(tmp_path / "x"), *hash_bow)
    assert res.exit_code == 1 and "--shard must be I/N" in res.output
    plain = tmp_path / "plain"
    plain.mkdir()
    np.save(plain / "embeds_chunk_0.npy", np.eye(32, dtype=np.float32)[:1])
    (plain / "pmids_chunk_0.json").write_text("[1]")
    res = run("--store", store, *shards, "--from-embeddings", str(plain), "--out", str(tmp_path / "m3"), *hash_bow)
    assert res.exit_code == 1 and "is not a shard" in res.output
