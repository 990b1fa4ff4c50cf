"""FedAvg (McMahan et al. 2017): K local SGD steps, x_{t+1} = x_t + η_g Σ_i p_i (y_i − x_t)."""
from .base import Algorithm


class FedAvg(Algorithm):
    name = "fedavg"
