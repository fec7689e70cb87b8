"""The oracle: a local OpenAI-compatible server that answers every prompt medcite sends as a capable model
would, from held-out gold data, in the shapes real models write, with faults planted on purpose (issue 23).
Used by tests/integration/test_llm_oracle.py and benchmarks/bench_llm_oracle.py; nothing is trained on it."""

from .gold import Gold, load
from .server import OracleServer, llm_overrides

__all__ = ["Gold", "OracleServer", "llm_overrides", "load"]
