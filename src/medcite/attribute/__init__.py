"""medcite attribute stage."""
