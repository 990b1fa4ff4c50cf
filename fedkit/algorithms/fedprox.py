"""FedProx (Li et al. 2020): the local objective gains the proximal term (μ/2)‖w − x_t‖²."""
from ..errors import ConfigError
from .base import Algorithm


class FedProx(Algorithm):
    name = "fedprox"

    def __init__(self, mu: float = 0.1, weighting: str = "data"):
        super().__init__(weighting)
        if not mu >= 0:
            raise ConfigError(f"fedprox: mu must be ≥ 0, got {mu}")
        self.mu = mu

    def objective(self, w, w0, recv):
        # f_i(w) + (μ/2)‖w − x_t‖²  (FedProx eq. 2); its gradient adds μ(w − x_t) to every step
        return 0.5 * self.mu * ((w - w0) ** 2).sum()
