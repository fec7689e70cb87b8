"""medcite evidence stage."""
