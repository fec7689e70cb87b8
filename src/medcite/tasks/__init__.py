"""medcite tasks stage."""
