"""Issue 25: a preset that reproduces a published run says where each of its settings comes from -- a verbatim
quote of the paper (file, section) or medcite's choice where the paper is silent -- and cannot claim what the
paper does not say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from medcite.config import NOTE_KEYS, preset_json, preset_names
from medcite.errors import ConfigError
from medcite.pipeline import provenance

PAPER_PRESETS = [n for n in preset_names() if provenance.paper(n) is not None]


def paper_text(paper: str) -> str:
    path = provenance.papers_dir() / provenance.PAPERS[paper][0]
    assert path.is_file(), f"{path} missing: the papers are in ../shared/papers beside the checkout"
    return path.read_text(encoding="utf-8")


def own_settings(name: str) -> list[str]:
    """The setting paths a preset file sets itself, down to a section's keys (``llms.NAME.key`` for LLMs)."""
    out = []
    for section, value in preset_json(name).items():
        if section in (*NOTE_KEYS, "extends"):
            continue
        if not isinstance(value, dict):
            out.append(section)
        elif section in ("llms", "indexes"):
            out += [f"{section}.{n}.{k}" for n, cfg in value.items() for k in cfg]
        else:
            out += [f"{section}.{k}" for k in value]
    return out


@pytest.mark.parametrize("name", preset_names())
def test_every_source_names_a_setting_and_is_a_paper_quote_or_a_choice(name: str) -> None:
    for row in provenance.rows(name):  # raises for a path that is not a setting or a malformed source
        if row.source.from_paper:
            assert row.source.where, f"{name}: {row.source.path} quotes the paper without a section"
        else:
            assert row.source.choice


@pytest.mark.parametrize("name", [n for n in preset_names() if provenance.sources(n)])
def test_every_quote_is_verbatim_in_its_paper(name: str) -> None:
    for source in provenance.sources(name).values():
        if source.from_paper:
            assert provenance.quote_found(source.quote, paper_text(source.paper)), \
                f"{name}: {source.path} quotes {source.quote!r}, which is not in paper {source.paper}"


@pytest.mark.parametrize("name", PAPER_PRESETS)
def test_a_paper_run_documents_every_setting_it_sets(name: str) -> None:
    documented = list(provenance.sources(name))
    missing = [p for p in own_settings(name)
               if not any(d == p or d.startswith(p + ".") or p.startswith(d + ".") for d in documented)]
    assert not missing, f"{name} sets {missing} without saying where they come from"


def test_a_quote_the_paper_does_not_hold_is_caught(tmp_path: Path) -> None:
    text = paper_text("000")
    assert provenance.quote_found("we keep the top 10 PMIDs as the evidence set", text)
    assert not provenance.quote_found("we keep the top 12 PMIDs as the evidence set", text)
    bad = tmp_path / "bad.json"
    bad.write_text('{"paper": {"file": "000", "run": "A"}, "sources": {"retrieve.kk": {"choice": "x"}}}')
    with pytest.raises(ConfigError, match="not a setting"):
        provenance.rows(str(bad))
    bad.write_text('{"sources": {"retrieve.k": {"paper": "009", "quote": "x"}}}')
    with pytest.raises(ConfigError, match="needs a paper"):
        provenance.sources(str(bad))


def test_docs_presets_md_is_what_the_presets_say() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "presets_doc.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
