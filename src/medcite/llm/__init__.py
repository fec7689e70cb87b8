"""medcite llm stage."""
