"""Small hand-made run directories for the viewer tests (written with the real RunWriter).

A plain module with a unique name (not conftest) so test files can import it safely."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medcite.config import Settings
from medcite.rundir import RunWriter
from medcite.types import Answer, AnswerSentence, Article, Dropped, Evidence, Hit, Section, Stance, Topic

ABSTRACT = "Statins lower LDL cholesterol. They reduce cardiovascular events in adults."
#           0         1         2         3         4         5         6         7
#           0123456789012345678901234567890123456789012345678901234567890123456789012345
SECOND = "They reduce cardiovascular events in adults."  # ABSTRACT[31:75]


def write_run(path: Path, *, preset: str = "offline", pmids: tuple[str, str] = ("111", "222"),
              question: str = "Do statins prevent heart attacks?", extra_text: str = "",
              retracted: bool = False) -> Path:
    """One topic "t1" citing pmids[0] (sentence 1) and both (sentence 2); topic "t2" unanswered-free."""
    w = RunWriter(path, Settings(preset=preset), command="medcite run test", resume=False)
    a1 = Article(pmids[0], f"Statin trial{extra_text}", ABSTRACT,
                 (Section("BACKGROUND", None, 0, 30), Section("RESULTS", None, 31, 75)),
                 journal=f"Lancet{extra_text}", year=2020, doi=f"10.1/x{extra_text}")
    a2 = Article(pmids[1], "Second paper", "Another abstract about LDL.", journal="BMJ", year=2019, retracted=retracted)
    ev = [Evidence(1, pmids[0], SECOND + extra_text, "abstract", 31, 75, score=0.9, branches=frozenset({"q0", "q1"})),
          Evidence(2, pmids[1], "Second paper", "title", 0, 12, score=0.5, branches=frozenset({"q1"}))]
    answer = Answer("t1", [
        AnswerSentence(f"Statins lower LDL{extra_text}.", (pmids[0],), (1,), ((pmids[0], Stance.SUPPORTS),)),
        AnswerSentence("They reduce events.", (pmids[0], pmids[1]), (1, 2), ((pmids[1], Stance.CONTRADICTS),)),
    ], [Dropped("citation", f"[9]{extra_text}", f"index not in evidence{extra_text}")], generator="extractive")
    w.write_topic(Topic("t1", question + extra_text, narrative=f"A patient asks.{extra_text}", topic="statins"),
                  queries=[{"id": "q0", "text": "statins heart", "stage": "original"},
                           {"id": "q1", "text": f"statin LDL{extra_text}", "stage": "reformulation"}],
                  rankings={"rerank": [Hit(pmids[1], 2.0), Hit(pmids[0], 1.0)]},
                  evidence=ev, answer=answer, articles=[a1, a2], timings={"generate_s": 0.25})
    w.append("trace.jsonl", {"topic_id": "t1", "stage": "generate", "attempt": 2, "backend": "openai", "model": "m",
                             "messages": [{"role": "user", "content": f"Answer please{extra_text}"}],
                             "params": {"temperature": 0}, "output": f"LLM said{extra_text}",
                             "latency_s": 1.5, "cache_hit": False})
    w.write_topic(Topic("t2", "Second question?"), queries=[], rankings={}, evidence=[],
                  answer=Answer("t2", [AnswerSentence("Short.", (pmids[1],), (), ())], [], "extractive"),
                  articles=[], timings={})
    return path


def write_json_file(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data), encoding="utf-8")
