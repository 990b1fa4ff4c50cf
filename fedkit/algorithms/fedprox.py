"""FedProx (Li et al. 2020): the local objective gains the proximal term (μ/2)‖w − x_t‖² (FedProx eq. 2)."""
from typing import Annotated, Literal

from .base import Algorithm


class FedProx(Algorithm):
    name = "fedprox"

    def __init__(self, run, mu: Annotated[float, "[0, inf)"] = 0.1, weighting: Literal["data", "uniform"] = "data"):
        super().__init__(run, weighting)
        self.mu = mu

    def objective(self, data, w, c, batch):
        # f_i(w) + (μ/2)‖w − x_t‖²; its gradient adds μ(w − x_t) to every step
        return data + 0.5 * self.mu * ((w - c.w0) ** 2).sum()
