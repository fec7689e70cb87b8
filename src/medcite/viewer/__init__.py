"""medcite viewer stage."""
