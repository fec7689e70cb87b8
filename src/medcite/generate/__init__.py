"""medcite generate stage."""
