"""Analyses behind the papers' figures."""
from .drift import drift_paths

__all__ = ["drift_paths"]
