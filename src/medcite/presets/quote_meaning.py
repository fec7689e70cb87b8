"""Whether each quote of a preset's ``sources`` means the value of its setting (issue 33).

:mod:`.provenance` checks that a quote is verbatim in its paper; this module checks that it says what the
setting holds. Three rules, over every paper preset, inherited sources included:

1. **Numbers and model names.** Every number and every model name under a quoted setting (its own value, or the
   leaves of a list or object value that no more specific source documents) must be in the quote: the number in
   any form the papers write it ("1,000", "1k", "1000", "top-10", "ten", "0.75") and the model by a recognisable
   part of its name ("MiniLM-L12" for ``cross-encoder/ms-marco-MiniLM-L-12-v2``, "Sonnet 3" for
   ``anthropic.claude-3-sonnet-...`` but not "Sonnet 3.7"). Otherwise the setting is medcite's ``choice``, or
   :data:`EXEMPT` names it with the reason the quote implies the value. Settings that do not change what a run
   computes (:data:`OPERATIONAL`: batch sizes, timeouts, addresses) and a fusion weight of 1 (:data:`NEUTRAL`)
   are not read.
2. **A run's own row.** A quote from a table row that names a run of the paper must be this preset's run's row,
   run name included ("DS@GTBioASQT13b2 Retrieve 2k, FT Cross Encoder (top10)").
3. **Inherited sources.** A preset that ``extends`` another and changes the value of a setting the parent documents
   (by a quote or a choice) must give that setting its own source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..config import load_settings, preset_json
from ..errors import ConfigError
from .provenance import NEUTRAL, OPERATIONAL, PAPERS, Source, normalise, paper, papers_dir, sources, value_at

#: (setting path, quote) where the quote implies a number it does not write, with the reason (keyed by the quote, so
#: a preset that inherits it is covered too). Keep it tiny: a setting the paper does not state is medcite's
#: ``choice``, not an exemption.
EXEMPT: dict[tuple[str, str], str] = {
    ("ground.max_contradicted", "Task B only requires supporting evidence"):
        "0 contradicting citations: Dalhousie's Task B grounding looks for none (001 §III-B1)",
    ("rerank.stages.1.weights", "with weights of 1 and 7 respectively for the two re-rankers"):
        "1 : 7 written as weights that sum to 1 (0.125, 0.875): the same weighted sum up to a constant factor",
    ("indexes.bm25", "Retrieval uses Pyserini over Lucene with Java 21"):
        "k1 = 0.9, b = 0.4: the BM25 parameters of Pyserini's LuceneSearcher (Anserini's defaults), which a run "
        "that sets none uses",
}

_WORDS = {0: "zero", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
          10: "ten", 11: "eleven", 12: "twelve", 15: "fifteen", 20: "twenty", 25: "twenty-five", 30: "thirty",
          40: "forty", 50: "fifty", 60: "sixty", 100: "hundred"}
#: name parts that do not tell one model from another
_GENERIC = frozenset({"base", "large", "small", "tiny", "mini", "instruct", "chat", "encoder", "query", "article",
                      "cross", "english", "embedding", "embed", "model", "awq", "gptq", "int", "marco", "the"})


@dataclass(frozen=True)
class Finding:
    """One quote that does not mean its setting's value."""

    preset: str
    path: str  # the source's setting path
    leaf: str  # the setting (under ``path``) whose value the quote does not give
    problem: str

    def __str__(self) -> str:
        where = self.path if self.leaf == self.path else f"{self.path} (at {self.leaf})"
        return f"{self.preset}: {where}: {self.problem}"


def number_forms(value: float) -> list[str]:
    """The ways a paper may write ``value``: ``1000`` as 1000, 1,000, 1k; ``10`` as 10, ten; ``0.75`` as 0.75."""
    if float(value).is_integer():
        n = int(value)
        forms = [str(n), f"{n:,}"]
        if n and n % 1000 == 0:
            forms.append(f"{n // 1000}k")
        if n in _WORDS:
            forms.append(_WORDS[n])
        return forms
    text = repr(float(value))
    return [text, text.lstrip("0")] if text.startswith("0.") else [text]


#: what a number names rather than counts when it follows these: "System 1", "Table 3", "[16]", "§3", "Llama-3"
_LABEL = re.compile(r"(?:systems?|tables?|fig\.|figures?|sections?|appendix|snippet|config|runs?|batch|step)[\s-]*$"
                    r"|[\[§]\s*$|(?<!top)(?<=[a-z])-$")


def says_number(quote: str, value: float) -> bool:
    """Whether ``quote`` writes ``value`` as a count or a parameter: ``25`` is not in ``250``, ``2.5``, ``7b``,
    "System 25" or "[25]"."""
    text = normalise(quote).lower()
    for form in number_forms(value):
        if form[0].isalpha():
            pattern = rf"(?<![a-z-]){re.escape(form)}(?![a-z]|-(?:one|two|three|four|five|six|seven|eight|nine)\b)"
        else:
            pattern = rf"(?<![\d.,]){re.escape(form)}(?![\da-z]|[.,]\d)"
        if any(not _LABEL.search(text[: m.start()]) for m in re.finditer(pattern, text)):
            return True
    return False


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z]+|\d+", text.lower())


def model_keys(name: str) -> list[str]:
    """Squashed (lower-case letters and digits) parts of a model name that recognise it in a quote.

    A part is a run of the name's words holding a distinctive word (``minilm``, ``sonnet``; not ``base``) and,
    when the name has a version or size number, a number; or a distinctive word followed by the numbers that stand
    together in the name (``sonnet37`` for ``claude-3-7-sonnet``, as papers write "Sonnet 3.7")."""
    base = re.sub(r"^(anthropic|meta|amazon)\.", "", name.rsplit("/", 1)[-1].lower())
    base = re.sub(r"-v\d+(?::\d+)?$", "", base)
    tokens = [t for t in _tokens(base) if not (t.isdigit() and len(t) >= 6)]  # dates
    has_digit = any(t.isdigit() for t in tokens)
    keys = []
    for i in range(len(tokens)):
        for j in range(i + 1, len(tokens) + 1):
            window = tokens[i:j]
            if not any(t.isalpha() and len(t) >= 3 and t not in _GENERIC for t in window):
                continue
            if has_digit and not any(t.isdigit() for t in window):
                continue
            keys.append("".join(window))
    groups = ["".join(g) for g in _digit_groups(tokens)]
    keys += [t + g for t in tokens if t.isalpha() and len(t) >= 3 and t not in _GENERIC for g in groups]
    return keys or ["".join(tokens)]


def _digit_groups(tokens: list[str]) -> list[list[str]]:
    groups: list[list[str]] = []
    run: list[str] = []
    for t in [*tokens, ""]:
        if t.isdigit():
            run.append(t)
        elif run:
            groups.append(run)
            run = []
    return groups


def says_model(quote: str, name: str) -> bool:
    """Whether ``quote`` names the model ``name``: a key of :func:`model_keys` whose number the quote does not
    continue (``sonnet3`` is not in "Sonnet 3.7", ``llama3`` not in "llama-3-70b"; "deepseek-r1 [7]" is fine)."""
    text = normalise(quote).lower()
    squashed, where = "", []
    for i, ch in enumerate(text):
        if ch.isascii() and ch.isalnum():
            squashed += ch
            where.append(i)
    for key in model_keys(name):
        for found in re.finditer(re.escape(key), squashed):
            start, end = where[found.start()], where[found.end() - 1] + 1
            if key[-1].isdigit() and re.match(r"[.\-:]?\d", text[end:]):
                continue
            if key[0].isdigit() and re.search(r"\d[.\-:]?$", text[:start]):
                continue
            return True
    return False


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{path}.{i}")]
    return [(path, value)]


def _is_model_key(key: str) -> bool:
    return key == "model" or key.endswith("_model")


def _covered(leaf: str, path: str, paths: list[str]) -> bool:
    """Whether a source more specific than ``path`` documents ``leaf``."""
    return any(p != path and (p == leaf or leaf.startswith(p + ".")) and p.startswith(path + ".") for p in paths)


def _not_claimed(name: str) -> set[str]:
    """Leaves of a preset's settings that no quote claims anything about: those its run does not read (a preset of
    no paper: no task reads them) and those of how it runs (a backend's ``runtime_fields``)."""
    from .coverage import runtime_setting
    from .provenance import task
    from .reads import TASKS, leaves, unread

    settings = load_settings(name)
    try:
        tasks = [task(name)]
    except ConfigError:  # medcite's own preset, or a paper run that names no task: what no task reads
        tasks = list(TASKS)
    skipped = set.intersection(*(set(unread(settings, t)) for t in tasks))
    return {*skipped, *(p for p, _ in leaves(settings.model_dump(mode="json")) if runtime_setting(settings, p))}


def value_findings(name: str, found: dict[str, Source], tree: dict[str, Any]) -> list[Finding]:
    """Rule 1: numbers and model names under each quoted setting that its quote does not give (settings the run
    does not read, or that say how it runs, are no claim)."""
    out = []
    paths = list(found)
    skip = _not_claimed(name)
    for path, source in found.items():
        if not source.from_paper or (path, source.quote) in EXEMPT:
            continue
        try:
            value = value_at(tree, path)
        except KeyError:
            continue
        for leaf, v in _leaves(value, path):
            key = leaf.rsplit(".", 1)[-1]
            parent = leaf.rsplit(".", 2)[-2] if leaf.count(".") >= 1 else ""
            if key in OPERATIONAL or (key.isdigit() and parent in OPERATIONAL) or _covered(leaf, path, paths):
                continue
            if leaf in skip or leaf.rsplit(".", 1)[0] in skip:  # a list of values is one setting
                continue
            if isinstance(v, bool) or v is None or (key, v) in NEUTRAL:
                continue
            if isinstance(v, (int, float)):
                if not says_number(source.quote, v):
                    out.append(Finding(name, path, leaf, f"the value {v} is not in the quote {source.quote!r}"))
            elif isinstance(v, str) and (_is_model_key(key) or (key.isdigit() and _is_model_key(parent))):
                if not says_model(source.quote, v):
                    out.append(Finding(name, path, leaf, f"the model {v!r} is not named in the quote "
                                                         f"{source.quote!r}"))
    return out


def run_names(run: str) -> list[str]:
    """The names a table row may give a run: ``"afmmd (System 3)"`` -> afmmd, System 3; ``"A"`` -> Run A."""
    parts = [p.strip() for p in re.split(r"[()]", run) if p.strip()]
    out = []
    for p in parts:
        if p.startswith("Task ") or " " in p and not re.fullmatch(r"System \d+", p):
            continue
        out.append(f"Run {p}" if re.fullmatch(r"[A-Z]", p) else p)
    return out


def _names(text: str, run: str) -> bool:
    return re.search(rf"(?<![\w@.-]){re.escape(run.lower())}(?![\w])", text.lower()) is not None


def row_findings(name: str, found: dict[str, Source]) -> list[Finding]:
    """Rule 2: a quote from a table row that names a run of the paper must be this preset's run's row, and say so
    (name the run), so that a reader sees whose row it is."""
    own = paper(name)
    if own is None:
        return []
    mine = run_names(own.get("run", ""))
    runs = {r for n in _paper_presets(own.get("file", "")) for r in run_names((paper(n) or {}).get("run", ""))}
    out = []
    for path, source in found.items():
        if not source.from_paper or "table" not in source.where.lower():
            continue
        quote = normalise(source.quote)
        rows = [line for line in map(normalise, _paper_lines(source.paper or "")) if quote in line]
        named = sorted({r for line in rows for r in runs if _names(line, r)})
        if not named or any(_names(quote, r) for r in mine):
            continue
        if any(r in mine for r in named):
            problem = f"quotes {own.get('run')}'s table row without the run's name: quote the row with its name"
        else:
            problem = f"quotes the table row of {', '.join(named)}, not of {own.get('run')}: quote its own row"
        out.append(Finding(name, path, path, problem))
    return out


def inherited_findings(name: str, found: dict[str, Source], tree: dict[str, Any]) -> list[Finding]:
    """Rule 3: a setting whose source is inherited from the parent preset but whose value this preset changed."""
    parent = preset_json(name).get("extends")
    if not isinstance(parent, str):
        return []
    own = set(preset_json(name).get("sources") or {})
    theirs = load_settings(parent).model_dump(mode="json")
    out = []
    for path, source in found.items():
        if path in own:
            continue
        try:
            mine_value = value_at(tree, path)
        except KeyError:
            continue
        try:
            changed = value_at(theirs, path) != mine_value
        except KeyError:
            changed = True
        if changed:
            said = repr(source.quote) if source.from_paper else f"choice {source.choice!r}"
            out.append(Finding(name, path, path, f"inherits {parent}'s {said} but sets another value: give it its "
                                                 "own source"))
    return out


def findings(name: str) -> list[Finding]:
    """Every quote of preset ``name`` (its own and inherited) that does not mean its setting's value."""
    found = sources(name)
    if not found:
        return []
    tree = load_settings(name).model_dump(mode="json")
    return [*value_findings(name, found, tree), *row_findings(name, found), *inherited_findings(name, found, tree)]


_LINES: dict[str, list[str]] = {}


def _paper_lines(file: str) -> list[str]:
    if file not in _LINES:
        _LINES[file] = (papers_dir() / PAPERS[file][0]).read_text(encoding="utf-8").splitlines()
    return _LINES[file]


def _paper_presets(file: str) -> list[str]:
    from ..config import preset_names

    return [n for n in preset_names() if (paper(n) or {}).get("file") == file]
