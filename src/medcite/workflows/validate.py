"""Check a submission file: the official validators of a BioGen task (``medcite validate KIND FILE``) and the
citation support of the run that wrote it, judged by the ``overlap`` stance backend built through a context."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from .. import registry
from ..corpus.store import DocumentStore
from ..io import JSONObject
from ..tasks.base import Validating
from ..tasks.biogen_b_validate import Report, evidence_by_topic
from ..tasks.biogen_b_validate import write_errlog as write_errlog  # re-exported: the CLI writes the .errlog
from .tasks import task_names

if TYPE_CHECKING:
    from ..attribute.validation import SupportSummary
    from ..tasks.bioasq_format import BioASQReport


def kinds() -> dict[str, str]:
    """Validation KIND -> task name (each BioGen task says which KIND its validator answers to)."""
    return {_validator(name).validate_kind: name for name in task_names("biogen")}


def _validator(name: str) -> type[Validating]:
    return cast("type[Validating]", registry.load("task", name))


def validate_submission(kind: str, path: Path, corpus: Path | None, topics: Path | None,
                        run_dir: Path | None) -> Report:
    """The KIND task's checks on ``path``: every PMID in ``corpus``, every topic of ``topics`` answered, every
    citation in that topic's evidence in ``run_dir`` (each check only when its folder or file is given)."""
    store = DocumentStore.open(corpus) if corpus else None
    expected = None
    if topics is not None:
        from ..tasks.topics import read_topics

        expected = [t.id for t in read_topics(topics)]
    evidence = evidence_by_topic(run_dir) if run_dir is not None else None
    try:
        return _validator(kinds()[kind]).validate(path, in_corpus=store.existing if store is not None else None,
                                                  expected_topics=expected, evidence=evidence)
    finally:
        if store is not None:
            store.close()


def citation_support(run_dir: Path) -> SupportSummary:
    """Every citation of the run in ``run_dir`` checked against the abstract it cites by the ``overlap`` stance
    backend (a lexical entailment proxy, no model), built through a build context."""
    from ..attribute.validation import support_summary
    from ..config import load_settings
    from ..pipeline import Context
    from ..rundir import read_answers, read_articles

    with Context(load_settings("offline")) as ctx:
        judge = ctx.build("stance", registry.validate_config("stance", "overlap"))
        if judge is None:  # the overlap backend always builds a judge
            raise RuntimeError("the overlap stance backend built no judge")
        return support_summary(read_answers(run_dir), read_articles(run_dir), judge)


def support_report(summary: SupportSummary) -> JSONObject:
    """The ``FILE.support.json`` record of the citations ``summary`` found unsupported."""
    return {"judge": "overlap", "rate": round(summary.rate, 4), "failures": [
        {"topic_id": t, "sentence": s, "pmid": p, "reason": r} for t, s, p, r in summary.failures]}


def validate_bioasq_file(phase: str, file: Path, questions: Path | None) -> BioASQReport:
    """Check a BioASQ Task b submission: phase ``A`` (documents and snippets), ``B`` or ``A+`` (answers, with
    optional documents and snippets); ``questions``: the input every question of which must be answered once."""
    from ..tasks.bioasq_format import validate_phase_a, validate_phase_b

    check = validate_phase_a if phase == "A" else validate_phase_b
    return check(file, inputs=questions)
