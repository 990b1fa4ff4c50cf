"""Analyses behind the papers' figures."""
from .drift import drift_paths
from .gradnorms import client_gradient_norms, layer_gradient_norms, loss_gradient, update_norms
from .landscape import data_subset, filter_normalized_direction, loss_surface_1d, loss_surface_2d, sharpness

__all__ = ["client_gradient_norms", "data_subset", "drift_paths", "filter_normalized_direction",
           "layer_gradient_norms", "loss_gradient", "loss_surface_1d", "loss_surface_2d", "sharpness",
           "update_norms"]
