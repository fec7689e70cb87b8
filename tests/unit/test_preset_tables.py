"""Issue 33: the per-paper preset tables of docs/TASK_A.md, docs/TASK_B.md and docs/BIOASQ.md are generated from the
presets' settings (medcite.presets.tables, scripts/presets_doc.py), so the docs cannot say what a preset
does not set."""

from __future__ import annotations

from pathlib import Path

import pytest

from medcite.presets import tables as preset_tables

DOCS = Path(__file__).resolve().parents[2] / "docs"
WHERE = {"task_a": "TASK_A.md", "task_b": "TASK_B.md", "bioasq": "BIOASQ.md"}


@pytest.mark.parametrize(("kind", "doc"), list(WHERE.items()))
def test_each_doc_holds_its_generated_table_as_the_presets_say(kind: str, doc: str) -> None:
    text = (DOCS / doc).read_text(encoding="utf-8")
    assert f"<!-- presets:begin {kind} -->" in text
    assert preset_tables.regenerate(text) == text, f"docs/{doc} is stale: run python scripts/presets_doc.py"
    for name in preset_tables.presets_of(kind):
        assert f"| `{name}` |" in text


def test_a_hand_edited_table_is_rewritten_and_an_unknown_one_refused() -> None:
    text = (DOCS / "TASK_B.md").read_text(encoding="utf-8")
    edited = text.replace("(`clac25_generate`)", "(`generate_topic`)", 1)
    assert edited != text and preset_tables.regenerate(edited) == text
    with pytest.raises(KeyError, match="unknown preset table"):
        preset_tables.regenerate("<!-- presets:begin nope -->\n<!-- presets:end -->")


def _row(kind: str, name: str) -> list[str]:
    (line,) = [x for x in preset_tables.table(kind).splitlines() if x.startswith(f"| `{name}` |")]
    return [c.strip() for c in line.strip("|").split(" | ")]


def test_the_rows_say_what_the_audit_found_the_prose_got_wrong() -> None:
    # clac25-a's answer prompt is clac25_generate (not generate_topic)
    assert "`clac25_generate`" in _row("task_b", "clac25-a")[6]
    # CLaC 2024 System 6 searches BM25 top 30 and dense top 30, not "top 60 per (sub-)question"
    assert _row("task_b", "clac24-medhopqa-hybrid")[3].startswith("BM25 (k1 1.2, b 0.75) top 30; dense `minilm` top 30")
    # Dalhousie's Task A takes each stance's citations from its own rewrite's top 30
    assert _row("task_a", "dal25-expert")[4].startswith("top 30 of each side's own search (`per_side`)")
    # PJs config-5 answers Phase A+ with Claude 3 Sonnet alone
    assert _row("bioasq", "pjs-config-5")[4].endswith("Phase A+ alone")
    # CLaC 2024 Task A: listwise LLM picks, the question's decomposition, the NLI filter
    judge, candidates = _row("task_a", "clac24-llm-nli")[5], _row("task_a", "clac24-llm-nli")[4]
    assert "picks listwise" in judge and "sub-queries" in candidates and "`t5-nli`" in candidates


def test_the_rows_show_the_defaults_that_matter() -> None:
    """Issue 43: the settings no preset used to set but every run reads (BM25's k1/b, the passage's snippets, the
    repair retry, DS@GT's query instruction) are in the tables."""
    assert _row("task_b", "clac25-a")[3].startswith("BM25 (k1 0.9, b 0.4) top 25")  # Pyserini's, 000 §3.2
    assert _row("task_b", "dal25-rrf")[3].startswith("each query: BM25 (k1 1.2, b 0.75) + Rocchio")
    documents, _, answers = _row("bioasq", "dsgt-b-gpt4-style1")[2:5]
    assert "query embedded as the articles" in documents
    assert "passage: all snippets" in answers and "no repair retry" in answers
    assert "trimmed to 200,000 tokens" in _row("bioasq", "pjs-config-1")[4]
