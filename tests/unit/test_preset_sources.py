"""Issue 25: a preset that reproduces a published run says where each of its settings comes from -- a verbatim
quote of the paper (file, section) or medcite's choice where the paper is silent -- and cannot claim what the
paper does not say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from medcite.config import NOTE_KEYS, preset_json, preset_names
from medcite.errors import ConfigError
from medcite.presets import coverage, provenance

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


# -- issue 43: every resolved setting, defaults included ----------------------------------------------
@pytest.mark.parametrize("name", PAPER_PRESETS)
def test_every_resolved_setting_of_a_paper_run_has_exactly_one_source(name: str) -> None:
    rows, problems, _ = coverage.resolved(name)
    assert not problems, "\n".join(problems)
    kinds = {r.path: r.source.kind for r in rows}
    assert len(kinds) == len(rows)  # one source per setting
    assert set(kinds.values()) <= {"paper", "choice", "unused"}


def test_a_new_setting_with_a_default_has_no_source_until_each_paper_preset_gives_one() -> None:
    from pydantic import Field, create_model

    from medcite.config import load_settings
    from medcite.qa.llm_qa import LLMQAConfig

    grown = create_model("GrownQA", __base__=LLMQAConfig,
                         new_option=(int, Field(7, description="A setting a later change adds.")))
    for name, read in (("dsgt-b-gpt4-style1", True), ("pjs-config-2", True), ("clac25-a", False)):
        settings = load_settings(name)
        if settings.qa.backend != "llm":
            settings = settings.model_copy(update={"qa": LLMQAConfig()})
        settings = settings.model_copy(update={"qa": grown(**settings.qa.model_dump())})
        _, problems, _ = coverage.resolved(name, settings)
        flagged = [p for p in problems if "qa.new_option = 7 has no source" in p]
        assert bool(flagged) is read, (name, problems)  # a Task B run reads no qa settings


def test_no_source_documents_settings_that_no_run_having_it_reads() -> None:
    assert coverage.dead_sources(preset_names()) == []


def test_a_paper_preset_is_listed_in_the_doc_table_of_its_task() -> None:
    from medcite.presets import tables as preset_tables

    listed = {n: kind for kind in preset_tables.TABLE_TASKS for n in preset_tables.presets_of(kind)}
    for name in PAPER_PRESETS:
        assert provenance.task(name) in preset_tables.TABLE_TASKS[listed[name]], name


def test_a_quote_never_covers_a_flag_or_a_prefix_under_it(tmp_path: Path) -> None:
    """A source on a config documents its backend and the numbers and model names its quote gives, not the flags,
    prompts and prefixes below it (the BGE query instruction hid under 'We selected the bge-large-en model')."""
    bad = tmp_path / "bad.json"
    data = json.loads((Path(provenance.__file__).parents[1] / "presets" / "dsgt-b1.json").read_text("utf-8"))
    del data["sources"]["indexes.dense.encoder.query_prefix"]
    data["sources"]["indexes.dense.encoder"] = {"paper": "004", "where": "§3.1.2",
                                                "quote": "We selected the bge-large-en model"}
    bad.write_text(json.dumps(data), encoding="utf-8")
    _, problems, _ = coverage.resolved(str(bad))
    assert any('indexes.dense.encoder.query_prefix = "" has no source' in p for p in problems), problems
    assert not any("indexes.dense.encoder.model" in p for p in problems)  # the quote names the model
