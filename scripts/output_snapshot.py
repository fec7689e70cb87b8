"""Snapshot every preset's official outputs, to show a refactor changed none of them.

Runs each preset through the CLI (in process, so the same options whatever the code behind them) on a few
held-back BioASQ questions over the store of their gold snippets' articles, through the command of the task each
preset file declares (its ``task`` key; an alias is not run twice): Task B and MedHopQA presets by ``medcite run``
(BioGen 2025 format), Task A presets by ``medcite ground`` (the questions' ideal-answer sentences as the
answer to ground), the BioASQ presets by ``medcite bioasq phase-a``, ``phase-aplus`` and ``phase-b``, search
presets by ``phase-a`` alone. Models that are not on this machine take the presets' documented offline swaps;
every LLM is the oracle server of ``tests/oracle`` (answers from the held-out gold, fixed seed), so the LLM paths
run too. The submission files
(and each Task B answer's generator and sentences) are written to ``OUT/outputs.json``; ``--compare`` prints
every preset whose outputs differ from another snapshot and exits 1 when any does.

    python scripts/output_snapshot.py OUT [--presets a,b] [--compare OTHER/outputs.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: a preset's declared task (its ``task`` key) -> how the snapshot runs it: ``b`` by ``medcite run``, ``a`` by
#: ``medcite ground``, ``bioasq`` by the three ``medcite bioasq`` phases, ``phase-a`` by Phase A alone
MODES = {"biogen-b": "b", "medhopqa": "b", "biogen-a": "a", "bioasq": "bioasq", "search": "phase-a"}


def presets() -> list[str]:
    """Every shipped preset but the aliases (their outputs are those of the preset they rename)."""
    from medcite.config import is_alias, preset_names

    return [n for n in preset_names() if not is_alias(n)]


def task_of(preset: str) -> str:
    from medcite.config import preset_task

    task = preset_task(preset)
    if task not in MODES:
        raise SystemExit(f"preset {preset!r} declares task {task!r}, which the snapshot cannot run "
                         f"(it runs {', '.join(MODES)})")
    return MODES[task]


def invoke(args: list[str]) -> dict[str, Any]:
    from click.testing import CliRunner

    from medcite.cli.main import cli

    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    out: dict[str, Any] = {"exit": result.exit_code}
    if result.exit_code:
        out["output"] = result.output[-1500:]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        out["error"] = f"{type(result.exception).__name__}: {result.exception}"
        out["traceback"] = "".join(traceback.format_exception(result.exception))[-2000:]
    return out


def read_json(path: Path) -> Any:
    if not path.exists():
        return None
    text = path.read_text()
    if path.suffix == ".jsonl":
        return [json.loads(x) for x in text.splitlines() if x.strip()]
    return json.loads(text)


def sets_for(preset: str, url: str) -> list[str]:
    """``--offline`` (the command's own swaps; Task A's stance stage counted by `medcite ground`) and the preset's
    LLMs pointed at the oracle server."""
    from medcite.config import load_settings
    from oracle.server import llm_overrides

    out: list[str] = ["--offline"]
    for s in llm_overrides(url, list(load_settings(preset).llms)):
        out += ["--set", s]
    return out


def main() -> int:
    sys.path.insert(0, str(REPO / "tests"))
    from oracle.answers import sentences
    from oracle.gold import BIOASQ as BIOASQ_FILE
    from oracle.gold import load
    from oracle.harness import questions, snippet_store
    from oracle.server import OracleServer

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--presets", default="", help="comma-separated (default: every preset)")
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--compare", type=Path, default=None)
    args = ap.parse_args()

    qs = questions(args.questions)
    work = args.out
    work.mkdir(parents=True, exist_ok=True)
    store = snippet_store(work / "store", qs)
    ids = {q.id for q in qs}
    with gzip.open(BIOASQ_FILE, "rt", encoding="utf-8") as fh:
        raw = [q for q in json.load(fh)["questions"] if q["id"] in ids]
    qfile = work / "questions.json"
    qfile.write_text(json.dumps({"questions": raw}, indent=1))
    ground = work / "ground.jsonl"
    ground.write_text("".join(json.dumps({"metadata": {"qa_id": q.id, "question": q.body},
                                          "answer": [{"text": s, "existing_supported_citations": []}
                                                     for s in sentences(q.ideal_answers[0])]}) + "\n"
                              for q in qs))
    chosen = [p for p in args.presets.split(",") if p] or presets()
    results: dict[str, Any] = {}
    server = OracleServer(load(qs), seed=0, timeout_s=2.0)
    with server.running() as url:
        for preset in chosen:
            task = task_of(preset)
            runs = work / "runs" / preset
            shutil.rmtree(runs, ignore_errors=True)
            runs.mkdir(parents=True)
            entry: dict[str, Any] = {"task": task}
            print(f"{preset} ({task}) ...", flush=True)
            try:
                if task == "b":
                    out = runs / "run"
                    entry["cli"] = invoke(["run", "--topics", str(qfile), "--corpus", str(store), "--out", str(out),
                                           "--run-id", "snap", "--preset", preset, *sets_for(preset, url)])
                    entry["submission"] = read_json(out / "submission.jsonl")
                    answers = read_json(out / "answers.jsonl") or []
                    entry["answers"] = [{k: a.get(k) for k in ("topic_id", "generator", "sentences", "verdict",
                                                               "abstained")} for a in answers]
                elif task == "a":
                    out = runs / "run"
                    entry["cli"] = invoke(["ground", "--input", str(ground), "--corpus", str(store), "--out",
                                           str(out), "--run-id", "snap", "--preset", preset,
                                           *sets_for(preset, url)])
                    entry["submission"] = read_json(out / "submission.jsonl")
                else:
                    phases = ["phase-a"] if task == "phase-a" else ["phase-a", "phase-aplus", "phase-b"]
                    for phase in phases:
                        sub = runs / f"{phase}.json"
                        extra = [] if phase == "phase-b" else ["--corpus", str(store)]
                        entry[f"{phase}.cli"] = invoke(["bioasq", phase, "--questions", str(qfile), "--output",
                                                        str(sub), "--run-dir", str(runs / phase), "--preset",
                                                        preset, *extra, *sets_for(preset, url)])
                        entry[phase] = read_json(sub)
            except Exception as exc:  # noqa: BLE001 - a preset that cannot be set up is recorded, not fatal
                entry["error"] = f"{type(exc).__name__}: {exc}"
            results[preset] = entry
            status = entry.get("cli", entry.get("phase-a.cli", {})).get("exit", "?")
            print(f"  exit {status} {entry.get('error', '')}", flush=True)
    (work / "outputs.json").write_text(json.dumps(results, indent=1, sort_keys=True))
    if args.compare is None:
        return 0
    other = json.loads(args.compare.read_text())
    differ = []
    for preset in sorted(set(results) | set(other)):
        a, b = results.get(preset), other.get(preset)
        if a is None or b is None:
            continue
        strip = ("traceback",)
        clean = [json.loads(json.dumps(x, sort_keys=True)) for x in (a, b)]
        for c in clean:
            for v in c.values():
                if isinstance(v, dict):
                    for s in strip:
                        v.pop(s, None)
        if clean[0] != clean[1]:
            differ.append(preset)
    print(f"compared {len(set(results) & set(other))} presets: {len(differ)} differ {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
