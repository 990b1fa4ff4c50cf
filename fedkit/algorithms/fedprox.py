"""FedProx (Li et al. 2020): the local objective gains the proximal term (μ/2)‖w − x_t‖².

``tailored=True`` is TACO's FedProx variant (TACO Fig. 6): client i's coefficient becomes μ(1 − α_i^t), with
α_i^t TACO's eq. 7 computed from this method's own uploads (algorithms-seed §1.8).
"""
from ..errors import ConfigError
from .base import Algorithm
from .taco import tailored_coefficients


class FedProx(Algorithm):
    name = "fedprox"

    def __init__(self, mu: float = 0.1, weighting: str = "data", tailored: bool = False, alpha0: float = 0.1):
        super().__init__(weighting)
        if not mu >= 0:
            raise ConfigError(f"fedprox: mu must be ≥ 0, got {mu}")
        self.mu, self.tailored, self.alpha0 = mu, tailored, alpha0

    def init(self, w0):
        return {"alpha": w0.new_full((self.num_clients,), self.alpha0)} if self.tailored else {}

    def message(self, w, state, clients):
        return {"alpha": state["alpha"][clients]} if self.tailored else {}

    def objective(self, w, w0, recv):
        # f_i(w) + (μ/2)‖w − x_t‖²  (FedProx eq. 2); its gradient adds μ(w − x_t) to every step
        mu = self.mu * (1 - recv["alpha"]) if self.tailored else self.mu
        return 0.5 * mu * ((w - w0) ** 2).sum()

    def aggregate(self, w, state, ups, clients, sizes):
        w_new, _, _ = super().aggregate(w, state, ups, clients, sizes)
        if not self.tailored:
            return w_new, state, {}
        alpha = tailored_coefficients(-ups["delta"])
        return w_new, {"alpha": state["alpha"].index_copy(0, clients, alpha)}, {"alpha": alpha}
