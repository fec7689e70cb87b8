"""medcite's readers: a small transformer fine-tuned end to end that reads a question (or claim) and a passage
together, with one head per judgement (relevance, yes/no, stance, answer spans). See :mod:`.model`."""
