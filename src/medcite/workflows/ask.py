"""Answer one question from a document store into a run directory (``medcite ask``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..paths import runs_dir
from ..rundir import check_run_target, is_run_dir, new_run_dir
from ..types import Topic

if TYPE_CHECKING:
    from ..config import Settings
    from ..pipeline import TopicResult


def check_question(question: str, corpus: Path) -> None:
    """Refuse an empty question (before anything starts)."""
    if not question.strip():
        raise InputError("the question is empty",
                         hint=f'medcite ask "Do statins lower LDL cholesterol?" --corpus {corpus}')


def check_out(out: Path | None) -> None:
    """Refuse an ``out`` that is a file or already holds a run (None: a new folder is made)."""
    if out is not None and out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is an existing file, not a folder",
                         hint="give a new folder for --out (it is created), or omit it")
    if out is not None and is_run_dir(out):
        raise InputError(f"{out} already holds a run", hint="choose a new --out folder (or omit it)")
    if out is not None:
        check_run_target(out)


def ask(settings: Settings, corpus: Path, question: str, out: Path | None) -> tuple[TopicResult, Path]:
    """Answer ``question`` with the pipeline of ``settings`` over ``corpus`` into ``out`` (None: a new
    ``ask-<time>`` folder in medcite's runs folder, claimed once the pipeline has started and removed again if
    the run fails before writing to it); returns the result and the run directory."""
    from ..pipeline import Pipeline

    pipeline = Pipeline(settings, corpus)
    topic = Topic("q1", question)
    claimed = out is None
    try:
        # claimed only now, so that a failed start leaves no folder behind; never shared with another ask
        out = out or new_run_dir(runs_dir(), "ask")
        result = pipeline.run([topic], out, command=f"medcite ask {question!r}")[0]
    except BaseException:
        if claimed and out is not None and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise
    finally:
        pipeline.close()
    return result, out
