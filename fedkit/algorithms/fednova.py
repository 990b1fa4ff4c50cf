"""FedNova (Wang et al., NeurIPS 2020): each client's update normalised by its own effective step count.

Client i takes τ_i local steps and reports its cumulative update Δ_i = y_i − x_t and a_i, the ℓ1 norm of its
solver's step-weight vector (FedNova eqs. 6–7, the closed forms of its Appendix / algorithms-baselines §7):
  plain SGD                      a_i = τ_i
  SGD with momentum ρ            a_i = [τ_i − ρ(1 − ρ^τ_i)/(1 − ρ)] / (1 − ρ)
  proximal SGD (μ > 0)           a_i = [1 − (1 − η_l μ)^τ_i] / (η_l μ)
Server (p_i = n_i / Σ_S n_j):    x_{t+1} = x_t + η_g τ_eff Σ p_i Δ_i / a_i,  τ_eff = Σ p_i a_i   (eq. 8)
(``tau_eff="steps"``: τ_eff = Σ p_i τ_i, what the original code does when μ ≠ 0). With equal τ_i, FedNova is FedAvg.
Adam (FedDUAL runs every baseline with it) has no step-weight vector: a_i = τ_i, every step weighing one
[assumption]. Weight decay, or μ with momentum, has no closed form and is refused.
"""
from typing import Annotated, Literal

from ..errors import ConfigError
from ..optim import SGD, Adam
from .base import Algorithm


class FedNova(Algorithm):
    name = "fednova"

    def __init__(self, run, mu: Annotated[float, "[0, inf)"] = 0.0,
                 tau_eff: Literal["a", "steps"] = "a", weighting: Literal["data", "uniform"] = "data"):
        super().__init__(run, weighting)
        opt = run.optimizer
        if opt.weight_decay if isinstance(opt, SGD) else not isinstance(opt, Adam):
            raise ConfigError(f"fednova: the normaliser a_i is defined for plain, momentum or proximal SGD and for "
                              f"Adam (a_i = τ_i), got optimizer {opt!r}")
        if mu and isinstance(opt, SGD) and opt.momentum:
            raise ConfigError(f"fednova: a_i has no closed form for proximal SGD with momentum, got mu={mu} and "
                              f"{opt!r}")
        self.mu, self.tau_eff = mu, tau_eff

    def objective(self, data, w, c, batch):
        return data + 0.5 * self.mu * (w - c.w0).pow(2).sum() if self.mu else data

    def normaliser(self, steps, lr):
        """a_i for τ_i = ``steps`` local steps at learning rate ``lr``."""
        if isinstance(self.optimizer, Adam):
            return steps
        rho = self.optimizer.momentum
        if self.mu:
            return (1 - (1 - lr * self.mu) ** steps) / (lr * self.mu)
        if rho:
            return (steps - rho * (1 - rho**steps) / (1 - rho)) / (1 - rho)
        return steps

    def upload(self, w, local, c):
        return {"delta": w - c.w0, "a": self.normaliser(c.steps, c.lr)}

    def aggregate(self, w, state, ups, rnd):
        p = self.weights(rnd.sizes)
        a = ups["a"]
        tau_eff = p @ (a if self.tau_eff == "a" else rnd.steps.to(a.dtype))
        direction = p @ (ups["delta"] / a[:, None])
        return w + self.run.server_lr * tau_eff * direction, state, {"a": a}
