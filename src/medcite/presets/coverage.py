"""Every resolved setting of a paper preset and its one source (issue 43): a quote of the paper, medcite's choice
where the paper is silent, or "not used by this run" (:mod:`.reads`).

:mod:`.provenance` reads the ``sources`` a preset file declares. A source documents the setting at its path and,
below a config it names, the leaves :func:`covers` allows (what the config is, values that claim nothing or defer to
another setting, and the numbers and model names a quote gives, which :mod:`.quote_meaning` checks). Every other
leaf -- a flag, a prompt, a prefix, a number under a choice -- needs its own source, so a setting that gains a
default is undocumented in every paper preset that reads it until each says where its value comes from
(tests/unit/test_preset_sources.py). Two sources are worked out here rather than declared: a value that defers to
another setting (:data:`DEFERS`, an unset ``llm``) and a setting of how the run executes (:data:`RUNTIME_CHOICE`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import is_alias, load_settings, preset_json, preset_task, preset_tasks
from .provenance import (
    NEUTRAL,
    OPERATIONAL,
    PAPERS,
    Source,
    offline_tree,
    paper,
    rows,
    short,
    sources,
    task,
    value_at,
)

if TYPE_CHECKING:
    from ..config import Settings

#: the source of an :data:`OPERATIONAL` setting (or a backend's ``runtime_fields``) that a preset leaves unsaid
RUNTIME_CHOICE = ("how the run executes (batch size, device, threads, timeouts, caches, addresses), not what it "
                  "computes; medcite's defaults unless the preset sets it")
#: keys that name what a quoted or chosen config is (its backend, the index it searches, the LLM of ``llms`` it calls,
#: its label): documented by the source of the config that holds them
STRUCTURAL = frozenset({"backend", "index", "label", "llm"})
#: leaf pattern -> (value, what it defers to): a value that defers to another setting with its own source
DEFERS: dict[str, tuple[object, str]] = {
    "retrieve.branches.*.k": (None, "the branch searches retrieve.k documents per query (its own source)"),
    "retrieve.branches.*.queries": (None, "the branch searches every query of retrieve.queries (its own source)"),
    # MedCPT's offline stand-ins, unset: the MedCPT models themselves (query/article/cross_model)
    **{f"{where}.{key}": (None, "the MedCPT models (query_model, article_model, cross_model: their own sources)")
       for where in ("rerank", "rerank.stages.*") for key in ("encoder", "cross")},
    **{f"{where}.{key}": (None, f"the model's own {what} (its configuration), as the model's source names it")
       for where in ("indexes.*.encoder", "bioasq.encoder", "qa.encoder", "rerank.model", "rerank.members.*.model")
       for key, what in (("normalize", "normalisation"), ("query_max_length", "length limit"),
                         ("doc_max_length", "length limit"))},
}

_LABELS = ("the paper does not say; medcite labels the study design of the top hits for the run folder and the "
           "viewer (issue 44), which changes no answer while design.only, design.prefer_levels and design.caveat "
           "are off")
#: medcite's own options that a paper run leaves at their default (leaf pattern -> (value, source)): off, or
#: what only medcite's labels beside the evidence read; a preset that sets one gives its own source
OWN_DEFAULTS: dict[str, tuple[object, str]] = {
    "design.backend": ("rules", _LABELS),
    "design.depth": (10, _LABELS),
    "design.humans": (False, _LABELS),
    "design.only": ([], "the paper does not say; medcite's own filter by study design (issue 44) is off: no hit is "
                        "dropped for its design"),
    "design.prefer_levels": (False, "the paper does not say; medcite's own reordering by evidence level (issue 44) "
                                    "is off: the paper's ranking is kept"),
    "design.caveat": (False, "the paper does not say; medcite's own caveat line (issue 44) is off"),
}


def _own_default(path: str, value: object) -> str | None:
    for pattern, (default, text) in OWN_DEFAULTS.items():
        if value == default and _matches(pattern, path):
            return text
    return None


@dataclass(frozen=True)
class Resolved:
    """One resolved setting (a leaf of the settings tree) of a paper preset: its value, its source, and the path
    of the source that documents it (itself, a config that holds it, or '' for a source worked out here)."""

    path: str
    value: object
    source: Source
    by: str


def _matches(pattern: str, path: str) -> bool:
    want, parts = pattern.split("."), path.split(".")
    return len(want) == len(parts) and all(w in ("*", p) for w, p in zip(want, parts, strict=True))


def _is_model(parts: list[str]) -> bool:
    return parts[-1] == "model" or parts[-1].endswith("_model")


def _neutral(key: str, value: object) -> bool:
    return not isinstance(value, (list, dict)) and (key, value) in NEUTRAL


def covers(source: Source, ancestor: str, path: str, value: object) -> bool:
    """Whether the source of the config at ``ancestor`` documents the leaf ``path`` below it: the leaf names what
    the config is (:data:`STRUCTURAL`), claims nothing (:data:`NEUTRAL`, :data:`DEFERS`), or is a number or a
    model name under a quote (which :mod:`.quote_meaning` checks is in the quote). Any other leaf -- a flag, a
    prompt, a prefix, a number under a choice -- needs its own source."""
    parts = path.split(".")
    key = parts[-1]
    if key in STRUCTURAL or _neutral(key, value) or _defers(path, value) is not None:
        return True
    if _matches("retrieve.branches.*.queries", path):
        return True  # the query stages a branch searches: what the branch is
    if not source.from_paper:
        return False
    items = value if isinstance(value, list) and value else [value]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        return True
    return all(isinstance(v, str) for v in items) and _is_model(parts)


def runtime_setting(settings: Settings, path: str) -> bool:
    """Whether the leaf is an :data:`OPERATIONAL` key or one of its backend config's ``runtime_fields``."""
    from pydantic import BaseModel

    parts = path.split(".")
    if parts[-1] in OPERATIONAL or (parts[-1].isdigit() and len(parts) > 1 and parts[-2] in OPERATIONAL):
        return True
    node: object = settings
    for part in parts[:-1]:
        if isinstance(node, BaseModel):
            node = getattr(node, part, None)
        elif isinstance(node, (list, tuple)) and part.isdigit():
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return False
    return parts[-1] in getattr(type(node), "runtime_fields", frozenset())


def _defers(path: str, value: object) -> str | None:
    """What a leaf whose value defers to another setting (with a source of its own) defers to, or None."""
    parts = path.split(".")
    if parts[-1] == "llm" and value is None:
        return "the default LLM, `llm`, with its own sources"
    for pattern, (default, text) in DEFERS.items():
        if value == default and _matches(pattern, path):
            return text
    return None


def resolved(preset: str, settings: Settings | None = None) -> tuple[list[Resolved], list[str], set[str]]:
    """Every resolved setting of a paper preset with its one source; the problems (a setting the run reads that
    no source documents); and the paths of the sources whose settings the run reads.

    A leaf's source is, in order: the run does not read it (:func:`.reads.unread`: "not used by this run", even
    where a source of a preset it extends documents it); a source at its own path; the source of a config above
    it that :func:`covers` it; for a value that defers to another setting or a setting of how the run executes, a
    source worked out here. ``settings`` (default: the preset's) lets a test add a setting."""
    from .reads import leaves, unread

    settings = settings or load_settings(preset)
    tree = settings.model_dump(mode="json")
    skipped = unread(settings, task(preset))
    found = sources(preset)
    out: list[Resolved] = []
    problems: list[str] = []
    used: set[str] = set()
    for path, value in leaves(tree):
        if path in skipped:
            out.append(Resolved(path, value, Source(path, unused=skipped[path]), ""))
            continue
        owners = [p for p in found if p == path or path.startswith(p + ".")]
        used.update(owners)
        own = found.get(path)
        above = next((p for p in sorted(owners, key=len, reverse=True) if covers(found[p], p, path, value)), None)
        defers = _defers(path, value)
        if own is not None:
            out.append(Resolved(path, value, own, path))
        elif defers is not None:
            out.append(Resolved(path, value, Source(path, choice=defers, derived=True), ""))
        elif above is not None:
            out.append(Resolved(path, value, found[above], above))
        elif (own_default := _own_default(path, value)) is not None:
            out.append(Resolved(path, value, Source(path, choice=own_default, derived=True), ""))
        elif runtime_setting(settings, path):
            out.append(Resolved(path, value, Source(path, choice=RUNTIME_CHOICE, derived=True), ""))
        else:
            problems.append(f"{preset}: {path} = {json.dumps(value)} has no source: quote the paper, or say "
                            "'the paper does not say' and medcite's choice")
    return out, problems, used


def declared_by(preset: str, path: str) -> str:
    """The preset of ``preset``'s ``extends`` chain whose own file declares the source of ``path``."""
    name = preset
    while path not in (preset_json(name).get("sources") or {}):
        parent = preset_json(name).get("extends")
        if not isinstance(parent, str):
            raise KeyError(path)
        name = parent
    return name


def dead_sources(names: list[str]) -> list[str]:
    """Sources that no paper preset among ``names`` (which has them, its own or inherited) reads a setting of."""
    declared: dict[tuple[str, str], bool] = {}
    for name in names:
        if paper(name) is None:
            continue
        _, _, used = resolved(name)
        for path in sources(name):
            key = (declared_by(name, path), path)
            declared[key] = declared.get(key, False) or path in used
    return [f"{origin}: sources[{path!r}] documents a setting that no paper preset having it reads: remove it"
            for (origin, path), read in sorted(declared.items()) if not read and not _sets(origin, path)]


def _sets(preset: str, path: str) -> bool:
    """Whether the preset's own file sets the setting at ``path`` (its source then says why it is set, even where
    the run does not read it: a switch that turns a stage off)."""
    from ..config import NOTE_KEYS
    from .reads import leaves

    data = {k: v for k, v in preset_json(preset).items() if k not in (*NOTE_KEYS, "extends")}
    return any(p == path or p.startswith(path + ".") or path.startswith(p + ".") for p, _ in leaves(data))


@dataclass
class Table:
    """A paper preset's resolved settings as docs and ``config presets --long`` show them: every setting the run
    reads with its source (those of how it runs left out: :data:`RUNTIME_CHOICE`), and the settings it does not
    read, by reason, each group as the shortest paths that hold only them."""

    rows: list[Resolved]
    unused: dict[str, list[str]]


def table(preset: str, settings: Settings | None = None) -> Table:
    from .reads import leaves

    settings = settings or load_settings(preset)
    found, _, _ = resolved(preset, settings)
    every = [p for p, _ in leaves(settings.model_dump(mode="json"))]
    groups: dict[str, set[str]] = {}
    for r in found:
        if r.source.unused:
            groups.setdefault(r.source.unused, set()).add(r.path)
    unused = {why: _collapse(paths, every) for why, paths in groups.items()}
    rows = [r for r in found if not r.source.unused and r.source.choice != RUNTIME_CHOICE]
    return Table(rows, unused)


def _collapse(paths: set[str], every: list[str]) -> list[str]:
    """The shortest dotted prefixes whose leaves (of ``every``) are all in ``paths``, in tree order."""
    out: list[str] = []
    for path in every:
        if path not in paths or any(path == o or path.startswith(o + ".") for o in out):
            continue
        parts = path.split(".")
        for n in range(1, len(parts) + 1):
            prefix = ".".join(parts[:n])
            if all(p in paths for p in every if p == prefix or p.startswith(prefix + ".")):
                out.append(prefix)
                break
    return out


def markdown(names: list[str]) -> str:
    """docs/PRESETS.md: per preset, its run and a table of setting, value, source and offline swap -- for a paper
    preset every setting its run reads, then those it does not read."""
    lines = ["# Presets and where each setting comes from", "",
             "Generated by `python scripts/presets_doc.py` from the presets' `task`, `paper` and `sources` keys "
             "(`medcite config presets --long` prints the same). A quote is verbatim from the paper text in "
             "`../shared/papers/` (checked by tests/unit/test_preset_sources.py); where a paper is silent the "
             "row says so and names medcite's choice. A paper preset lists every setting its run reads, defaults "
             "included, each with exactly one source (a row `as X` shares the source of the config `X` that holds "
             "it); settings of how a run executes (batch sizes, devices, timeouts, caches, server addresses) are "
             "medcite's defaults unless a row names them, and the settings a run does not read are listed after "
             "the table. `offline` is the value on a machine without the paper's models or server "
             "(`offline_settings`).", "", *by_task(names)]
    for name in names:
        found = paper(name)
        if found is None and not sources(name):
            continue
        lines += [f"## `{name}`", ""]
        if found is not None:
            title = PAPERS.get(found.get("file", ""), ("", ""))[1]
            lines += [f"Paper {found.get('file')} ({title}), run {found.get('run', '-')}, task "
                      f"{preset_task(name)}.", ""]
        else:
            lines += [f"medcite's own preset (not a paper run), task {preset_task(name)}.", ""]
        lines += ["| setting | value | source | offline |", "|---|---|---|---|"]
        for path, value, source, offline in setting_rows(name):
            lines.append(f"| `{path}` | `{_cell(short(value))}` | {_cell(source)} | {_cell(offline or '')} |")
        lines.append("")
        if found is not None:
            lines += [f"- not used by this run ({why}): {', '.join(f'`{p}`' for p in paths)}"
                      for why, paths in unused_settings(name).items()]
            lines.append("")
    return "\n".join(lines)


def by_task(names: list[str]) -> list[str]:
    """The presets grouped by the task each declares (its ``task`` key, ``config.PRESET_TASKS``): a heading per
    task, a line per preset (an alias names the preset it renames)."""
    tasks = preset_tasks()
    grouped: dict[str, list[str]] = {}
    for name in names:
        grouped.setdefault(preset_task(name), []).append(name)
    lines = ["## Presets by task", ""]
    for kind in [*(t for t in tasks if t in grouped), *sorted(set(grouped) - set(tasks))]:
        lines += [f"### `{kind}`: {tasks.get(kind, kind)}", ""]
        for name in grouped[kind]:
            found = paper(name)
            what = (f"paper {found.get('file')}, run {found.get('run', '-')}" if found is not None
                    else f"alias of `{preset_json(name)['extends']}`" if is_alias(name) else "medcite's own")
            lines.append(f"- `{name}` ({what})")
        lines.append("")
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def setting_rows(name: str) -> list[tuple[str, object, str, str | None]]:
    """(setting, value, source, offline value when it differs) of every documented setting of a preset: for a paper
    preset every setting its run reads (:func:`table`), for medcite's own the settings it documents."""
    if paper(name) is None:
        return [(r.source.path, r.value, r.source.text(), r.offline) for r in rows(name)]
    settings = load_settings(name)
    offline = offline_tree(settings)
    out = []
    for r in table(name, settings).rows:
        text = r.source.text() if r.by in ("", r.path) else f"as `{r.by}`"
        try:
            there = short(value_at(offline, r.path))
        except KeyError:  # the offline stack's backend has no such setting
            there = None
        out.append((r.path, r.value, text, None if there in (None, short(r.value)) else there))
    return out


def unused_settings(name: str) -> dict[str, list[str]]:
    """The settings a paper preset's run does not read, by reason (:func:`table`)."""
    return table(name).unused
