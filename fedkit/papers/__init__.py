"""Per-paper experimental settings and the analyses behind their figures and tables."""
