"""Generate stage: evidence-constrained answers, citation parsing and mapping, caps, retry, extractive."""
