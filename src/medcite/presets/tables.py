"""The per-paper preset tables of docs/TASK_A.md, docs/TASK_B.md and docs/BIOASQ.md, written from the presets'
resolved settings, their ``task`` and their ``paper`` key, so that what the docs say a preset does cannot drift
from what it sets (issue 33), and a new preset is in the table of its task (issue 45). ``scripts/presets_doc.py``
puts each table between ``<!-- presets:begin NAME -->`` and ``<!-- presets:end -->`` in its doc; ``--check``
fails when one is stale.

Every cell is read from the settings (``medcite config show --preset NAME`` prints them all): numbers, models
and prompt names as set, backends by their registry names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .. import registry
from ..config import is_alias, load_settings, preset_names, preset_task
from ..settings_base import UsesLLM
from .provenance import PAPERS, paper

Tree = dict[str, Any]

#: table name -> the preset tasks (``config.PRESET_TASKS``) whose presets it lists, one row each: every shipped
#: preset that declares one of them, its aliases aside
TABLE_TASKS: dict[str, tuple[str, ...]] = {"task_a": ("biogen-a",), "task_b": ("biogen-b", "medhopqa"),
                                           "bioasq": ("bioasq",)}


def presets_of(kind: str) -> list[str]:
    """The presets table ``kind`` lists: the papers' runs (by paper, then name), then medcite's own."""
    names = [n for n in preset_names() if preset_task(n) in TABLE_TASKS[kind] and not is_alias(n)]

    def order(name: str) -> tuple[bool, str, str]:
        found = paper(name)
        return found is None, str((found or {}).get("file", "")), name

    return sorted(names, key=order)


def _n(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _model(cfg: object) -> str:
    """A model config (or its shorthand string) as its name."""
    if isinstance(cfg, dict):
        cfg = cfg.get("model") or cfg.get("backend")
    return f"`{cfg}`"


def _reranks(r: Tree) -> bool:
    """Whether the reranker ``r`` reorders anything (``reranks``; not the ``none`` reranker)."""
    return bool(getattr(registry.config_class("rerank", r["backend"]), "reranks", True))


def _calls_llm(stage: str, cfg: Tree) -> bool:
    """Whether the ``stage`` backend ``cfg`` calls an LLM (its settings are :class:`UsesLLM`)."""
    return issubclass(registry.config_class(stage, cfg["backend"]), UsesLLM)


def llm_name(d: Tree, name: str | None) -> str:
    """The model of the LLM ``name`` of ``llms`` (None: the default ``llm``)."""
    cfg = d["llms"].get(name, {}) if name else d["llm"]
    return f"`{cfg['model']}`" if cfg.get("model") else f"the {cfg.get('backend', '?')} LLM"


def query(d: Tree, q: Tree) -> str:
    """One query generator of a query set."""
    b, by = q["backend"], (f" by {llm_name(d, q.get('llm'))}" if "llm" in q else "")
    prompt = f" (`{q['prompt']}`)" if q.get("prompt") else ""
    if b == "original":
        return "the question"
    if b == "llm_reformulate":
        return f"{q.get('n')} reformulations{by}{prompt}"
    if b == "llm_decompose":
        return f"≤ {q.get('max_queries')} sub-queries{by}{prompt}"
    if b == "llm_keywords":
        return f"a keyword rewrite{by}"
    if b == "llm_stance_queries":
        sides = " and ".join(f"a {s}" for s in q.get("sides", ()))
        return f"{sides} rewrite{by}, persona `{q.get('persona')}`{prompt}"
    if b == "topic_narrative":
        return "topic and narrative" + (" word for word" if q.get("verbatim") else
                                        f" ({q.get('narrative_terms')} narrative terms)")
    if b == "negation":
        return "a rule-based negation"
    return f"`{b}`"


def queries(d: Tree, qs: Sequence[Tree] | None = None) -> str:
    return " + ".join(query(d, q) for q in (d["retrieve"]["queries"] if qs is None else qs))


def branch(d: Tree, b: Tree) -> str:
    """One first-stage branch and its depth."""
    kind = b["backend"]
    index = d["indexes"].get(b.get("index", ""), {})
    if kind == "dense":
        encoder = index["encoder"]
        name = f"dense {_model(encoder)}"
        prefix = encoder.get("query_prefix") if isinstance(encoder, dict) else None
        if prefix is not None:
            name += f" (query prefix '{prefix}')" if prefix else " (query embedded as the articles, no instruction)"
    elif kind.startswith("bm25+"):
        name = f"BM25{_bm25(index)} + {kind[5:].upper() if kind.endswith('rm3') else 'Rocchio'}"
        if b.get("clean"):
            name += f" (expansion cleaned by {llm_name(d, b.get('llm'))})"
    elif kind == "bm25":
        name = f"BM25{_bm25(index)}"
    else:
        name = f"`{kind}`"
    only = f" on {', '.join(f'`{q}`' for q in b['queries'])}" if b.get("queries") else ""
    return f"{name} top {_n(b.get('k') or d['retrieve']['k'])}{only}"


def _bm25(index: Tree) -> str:
    """BM25's parameters, as the index scores them."""
    return f" (k1 {index['k1']}, b {index['b']})" if "k1" in index else ""


#: query generators that write several queries
_SEVERAL = {"llm_reformulate", "llm_decompose"}


def several_queries(d: Tree) -> bool:
    """Whether the query set searches more than one query."""
    qs = d["retrieve"]["queries"]
    return len(qs) > 1 or any(q["backend"] in _SEVERAL or len(q.get("sides", ())) > 1 or q.get("verbatim")
                              for q in qs)


def first_stage(d: Tree) -> str:
    r, many = d["retrieve"], several_queries(d)
    parts = [("each query: " if many else "") + "; ".join(branch(d, b) for b in r["branches"])]
    runs = len(r["branches"]) * (2 if many else 1)
    per_query = r.get("rerank_per_query") and _reranks(d["rerank"])
    if r.get("branch_rerank"):
        parts.append(f"each query's hits reranked by {rerank(d, r['branch_rerank'])}, pooled by PMID (best score)")
    elif runs > 1 and not (per_query and len(r["branches"]) == 1):
        fused = {"rrf": f"RRF (k {_n(r['rrf_k'])})", "pool": "pooled by PMID (best score)",
                 "wsum": "weighted sum"}.get(r["fusion"], f"`{r['fusion']}`")
        parts.append(fused + (" per query" if per_query else ""))
    return ", ".join(parts)


def rerank(d: Tree, r: Tree, member: bool = False) -> str:
    """A reranker and its budget (an ensemble's ``member`` ranks every candidate: no cut of its own)."""
    b = r["backend"]
    if b == "none":
        return "none"
    over = f" over {_n(r['top_n'])}" if r.get("top_n") else ""
    keep = f", keep {r['k']}" if r.get("k") is not None and not member else ""
    if b == "medcpt":
        return (f"MedCPT{over}: bi-encoder cosine top {r.get('bi_top')} → cross-encoder top {r.get('cross_top')}"
                f"{keep}")
    if b == "cascade":
        return " → ".join(rerank(d, s) for s in r["stages"])
    if b == "ensemble-union":
        members = "; ".join(rerank(d, m, member=True) for m in r["members"])
        return f"union of each member's top {r.get('member_k')} ({members}) ordered by `{r.get('order')}`{keep}"
    if b == "ensemble-weighted":
        members = "; ".join(rerank(d, m, member=True) for m in r["members"])
        return f"weighted sum {r.get('weights')} ({r.get('normalize')}-normalised) of ({members}){keep}"
    if b == "llm-listwise":
        return f"{llm_name(d, r.get('llm'))} listwise, window {r.get('window')}{over}{keep}"
    model = f" {_model(r['model'])}" if r.get("model") else ""
    return f"{b}{model}{over}{keep}"


def reranking(d: Tree) -> str:
    """The reranker, and the final cut (``retrieve.keep``) when it is not the reranker's own."""
    r = d["retrieve"]
    text = rerank(d, d["rerank"])
    if _reranks(d["rerank"]):
        if r.get("rerank_per_query") and several_queries(d):
            text += ", per query, pooled by PMID (best score)"
        elif r.get("rerank_query", "question") != "question":
            text += f" against `{r['rerank_query']}`"
    if r.get("keep") and (not _reranks(d["rerank"]) or r["keep"] != d["rerank"].get("k")):
        text += f"; {r['keep']} kept"
    return text


def evidence(d: Tree) -> str:
    e, b = d["evidence"], d["evidence"]["backend"]
    if b == "abstracts":
        return f"{e['max_items']} abstracts{' with titles' if e.get('title') else ''}"
    if b == "snippets":
        return f"{e['max_items']} sentences of the top {e['docs']} abstracts, scored by `{e.get('scorer')}`"
    if b == "summaries":
        return (f"LLM summaries (`{e.get('prompt')}`, ≤ {e.get('summary_words')} words) of ≤ {e['docs']} abstracts → "
                f"bullets ≤ {e.get('bullet_words')} words, ≤ {e.get('bullets_per_doc')} per abstract → "
                f"{e['max_items']} by TF-IDF + MMR λ {e.get('lam')}")
    return f"`{b}` ({e.get('max_items')} items)"


def generation(d: Tree) -> str:
    g = d["generate"]
    if d.get("flow") == "generate-then-ground":
        return f"{llm_name(d, d['verify'].get('llm'))} answers first, persona `{d['ground'].get('persona')}`"
    if not _calls_llm("generate", g):
        return f"`{g['backend']}`"
    mode = g.get("mode")
    prompt = g.get("prompt") if mode == "cited" else g.get("plain_prompt")
    parts = [f"{llm_name(d, g.get('llm'))} (`{prompt}`)"]
    if g.get("condense"):
        parts.append(f"condensed over {g['max_words']} words")
    if mode == "posthoc":
        judge = g.get("posthoc_judge") or {}
        short = g.get("posthoc_shortlist")
        pick = f"{g.get('posthoc_candidates')} candidates" + (f" shortlisted by {rerank(d, short)}" if short else "")
        parts.append(f"cited post hoc: {llm_name(d, judge.get('llm'))} picks `{g.get('posthoc_pick')}` among {pick}")
    attempts = g.get("max_attempts", 1)
    parts.append("one generation" if attempts == 1 else f"≤ {attempts} generations (retry on `{g.get('retry_on')}`)")
    if g.get("dedupe"):
        parts.append(f"fuzzy de-dup {g['dedupe']}")
    return ", ".join(parts)


def verification(d: Tree) -> str:
    v, parts = d["verify"], []
    if d.get("flow") == "generate-then-ground":
        gr = d["ground"]
        parts.append(f"each sentence grounded: ≤ {gr['max_supported']} supporting of {gr['candidates']} candidates "
                     f"judged by {stance(d)}, unsupported `{gr.get('unsupported')}`")
    if d.get("flow") == "multi-hop":
        h = d["hops"]
        parts.append(f"multi-hop (`{h.get('classify')}`): ≤ {h.get('max_hops')} hops, ≤ {h.get('max_subquestions')} "
                     f"sub-questions from each hop's top {h.get('hop_docs')}, {h.get('docs')} abstracts pooled")
    if v.get("sufficiency_rounds"):
        parts.append(f"sufficiency loop by {llm_name(d, v.get('llm'))}: ≤ {v['sufficiency_rounds']} rounds, evidence "
                     f"`{v.get('sufficiency_evidence')}`")
    if v.get("citations", "off") != "off":
        parts.append(f"citations `{v['citations']}` by {stance(d)}, ≤ {v.get('max_rounds')} generations")
    parts.append(f"gate `{v.get('gate')}`")
    return "; ".join(parts)


def stance(d: Tree) -> str:
    s = d["stance"]
    b = s["backend"]
    if b == "llm":
        framing = f", framed `{s['framing']}`" if s.get("framing") else ""
        return f"{llm_name(d, s.get('llm'))} (`{s.get('prompt')}`{framing})"
    if b == "none":
        return "none"
    return f"`{b}` {_model(s['model'])}" if s.get("model") else f"`{b}`"


def ground_candidates(d: Tree) -> str:
    g = d["ground"]
    lists = ("each side's own search (`per_side`)" if g.get("candidate_lists") == "per_side"
             else "the one ranking (`fused`)")
    text = f"top {g['candidates']} of {lists}"
    if g.get("contradict_from") == "question":
        text += (f"; contradicting: the question + {queries(d, g['contradict_queries'][1:]) or 'nothing else'}, "
                 f"reranked against the question, top {g.get('contradict_candidates')}")
    if g.get("contradict_filter"):
        f = g["contradict_filter"]
        text += f", kept if `{f['backend']}` {_model(f.get('model'))} finds a contradicting sentence"
    return text


def ground_judge(d: Tree) -> str:
    g = d["ground"]
    if g.get("judge") == "listwise":
        return (f"{llm_name(d, g.get('llm'))} picks listwise (`{g.get('support_prompt')}`, "
                f"`{g.get('contradict_prompt')}`)")
    return stance(d)


def ground_selection(d: Tree) -> str:
    g = d["ground"]
    text = f"≤ {g['max_supported']} supporting, ≤ {g['max_contradicted']} contradicting, `{g.get('order')}` order"
    if g.get("judge") != "listwise":
        text += f", P ≥ {g.get('min_support')} / {g.get('min_contradict')}"
    if g.get("anchor"):
        text += f", top {g['anchor']} anchored"
    return text


def documents(d: Tree) -> str:
    return f"{first_stage(d)} → {reranking(d)}"


def snippets(d: Tree) -> str:
    b = d["bioasq"]
    scorer = b.get("scorer")
    by = f"`{scorer}` {_model(b['encoder'])}" if scorer == "embedding" else f"`{scorer}`"
    return (f"≤ {b.get('per_document')} per document of the top {b.get('snippet_documents')}, best "
            f"{b.get('snippets')} by {by}" + ("" if b.get("include_titles", True) else ", titles not candidates"))


def answers(d: Tree) -> str:
    q = d["qa"]
    if not _calls_llm("qa", q):
        return f"`{q['backend']}`"
    text = f"{llm_name(d, q.get('llm'))}, prompt `{q.get('prompt')}`"
    if q.get("prompt") == "dsgt":
        text += f" style {q.get('style')}"
    text += f", {q.get('shots')} shots" + (f" (`{q.get('draw')}`)" if q.get("shots") else "")
    shown = "all snippets" if q.get("passage_snippets") is None else f"the first {q.get('passage_snippets')} snippets"
    text += f", passage: {shown}" + (" (a repeated one once)" if q.get("dedupe_snippets") else "")
    if q.get("context_tokens"):
        text += f", trimmed to {_n(q['context_tokens'])} tokens"
    text += ", repair retry" if q.get("repair") else ", no repair retry"
    if q.get("prompt") == "dsgt" and q.get("json_instruction"):
        text += ", JSON requested"
    temperature = (d["llms"].get(q["llm"], {}) if q.get("llm") else d["llm"]).get("temperature")
    text += f", temperature {temperature}"
    if q.get("ensemble"):
        others = ", ".join(llm_name(d, n) for n in q["ensemble"])
        aplus = q.get("aplus_ensemble")
        text += f"; Phase B ensemble with {others}"
        text += ("" if aplus is None else "; Phase A+ " + (", ".join(llm_name(d, n) for n in aplus) or "alone"))
    return text


def run_of(name: str) -> str:
    """The paper and run a preset reproduces, or medcite's own."""
    found = paper(name)
    if found is None:
        return "medcite's own"
    return f"{found.get('file')} {found.get('run')}"


COLUMNS: dict[str, list[tuple[str, Callable[[Tree], str]]]] = {
    "task_a": [("queries", queries), ("retrieval", lambda d: f"{first_stage(d)} → {reranking(d)}"),
               ("candidates", ground_candidates), ("judge", ground_judge), ("selection", ground_selection)],
    "task_b": [("query set", queries), ("first stage", first_stage), ("rerank", reranking), ("evidence", evidence),
               ("generation", generation), ("verification", verification)],
    "bioasq": [("documents", documents), ("snippets", snippets), ("answers (Phase A+ / B)", answers)],
}
def table(kind: str) -> str:
    """The Markdown table ``kind`` (task_a, task_b, bioasq) of its presets, one row each."""
    columns = COLUMNS[kind]
    head = ["preset", "paper, run", *(c[0] for c in columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in presets_of(kind):
        d = load_settings(name).model_dump(mode="json")
        cells = [f"`{name}`", run_of(name), *(render(d) for _, render in columns)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


BEGIN = re.compile(r"<!-- presets:begin (\w+) -->\n.*?<!-- presets:end -->", re.S)


def regenerate(text: str) -> str:
    """``text`` with every region between ``<!-- presets:begin NAME -->`` and ``<!-- presets:end -->`` rewritten as
    table NAME."""
    def fill(m: re.Match[str]) -> str:
        kind = m.group(1)
        if kind not in TABLE_TASKS:
            raise KeyError(f"unknown preset table {kind!r} (known: {', '.join(TABLE_TASKS)})")
        note = ("<!-- generated by scripts/presets_doc.py from the presets' settings; edit the presets, not this "
                "table -->")
        return f"<!-- presets:begin {kind} -->\n{note}\n\n{table(kind)}\n\n<!-- presets:end -->"
    return BEGIN.sub(fill, text)


__all__ = ["COLUMNS", "PAPERS", "TABLE_TASKS", "presets_of", "regenerate", "table"]
