"""Verify and attribute: the stance of a sentence toward an abstract, and what is built on it (Task A
grounding, citation validation, citation metrics)."""
