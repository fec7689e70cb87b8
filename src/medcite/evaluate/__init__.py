"""medcite evaluate stage."""
