"""STEM (Khanduri et al., NeurIPS 2021): STORM momentum at the clients; server averages models AND momenta.

The paper's Algorithm 1, per worker, for iteration t (algorithms-baselines §5; see below on where it comes from):
  x_{t+1} = x_t − η d_t                                                (step along the momentum)
  d_{t+1} = ∇f(x_{t+1}; ξ_{t+1}) + (1 − a)(d_t − ∇f(x_t; ξ_{t+1}))     (ONE fresh minibatch, at both points)
  every I iterations: x ← mean of the workers' x, d ← d̄ = mean of the workers' d (the "two sides")
fedkit runs it as follows. Round t, client i: y_0 = x_t, d_0 = d̄_t (sent). Local step call k = 0, …, K−1 gets
its own fresh minibatch through ``grad_at``; that minibatch plays the part of the paper's ξ_{t+1}:
  y_{k+1} = y_k − η_l d_k                                                    (the step first)
  d_{k+1} = ∇f_i(y_{k+1}; ξ_{k+1}) + (1 − a)(d_k − ∇f_i(y_k; ξ_{k+1}))       (then the momentum)
After K calls the client holds (y_K, d_K), which is exactly the pair the paper averages at a synchronisation,
so the recursion across rounds is the paper's too. It uploads Δ_i = y_K − x_t and d_K (twice FedAvg's upload);
  x_{t+1} = x_t + η_g Σ_i p_i Δ_i,     d̄_{t+1} = Σ_i p_i d_K^{(i)}
(η_g = server_lr = 1 gives the paper's plain average; p_i uniform by default, as in the paper.)
Every step costs two gradient evaluations on one minibatch (TACO Alg. 1 line 6 and Table I rest on this).
This does NOT follow TACO's Alg. 1 server line, Δ_{t+1} = Σ(Δ_i + v_{i,K−1})/(KNη_l): that mixes a model
displacement with an unscaled momentum and is treated as a transcription error (baselines §5, §22 item 2).

Source: the STEM paper could not be opened here; the step/momentum/averaging order above is
algorithms-baselines §5 (marked "as remembered"). It agrees with TACO's transcription (algorithms-seed
§1.9), which writes the same recursion as "momentum first, then step".

Starting momentum d̄_0. The paper starts from a minibatch gradient at x_0, averaged over the workers. No hook
can compute that before round 1, so the server state starts at d̄_0 = 0, and
the FIRST local call of round 1 becomes the initialisation. Its step y_1 = y_0 − η·0 does not move, and it
drops the correction, so d_1 = ∇f_i(x_0; ξ_1): each client's own minibatch gradient at x_0 (not the average
over clients, which would need one more exchange before round 1). Round 1 therefore moves the model K − 1
times. Without the marker (plain d̄_0 = 0) that same call would still not move, but it would set
d_1 = a·∇f_i(x_0; ξ_1), a momentum shrunk by a at the start. The marker is the round index c.t, which every
client knows anyway: it is not payload and is not counted in bytes.

a = 1 makes the momentum memoryless, d_{k+1} = ∇f_i(y_{k+1}; ξ_{k+1}), so steps 2…K of a round are local
SGD. The first step of every round, though, follows d̄_t: the average of the clients' LAST gradients, taken at
their own y_K and not at x_t. So a = 1 is NOT FedAvg when K ≥ 2. With K = 1 and server_lr = 1 every
client's y_1 equals x_{t+1}, and a = 1 is exactly FedAvg (minibatch SGD) one round late, because round 1 is
the initialisation. The tests check both statements.

The local step is STEM's own: plain SGD along d. A client optimizer with momentum, or Adam, has no meaning
here and raises ConfigError when the algorithm is built (the run's settings carry the client optimizer). SGD
weight_decay λ is accepted and read as the L2 term (λ/2)‖w‖² of the local objective: λ·v is added to the
gradient at both points, so the recursion stays exact.

BatchNorm limitation: under the sequential engine each ``grad_at`` call is a training-mode forward, and it
updates the client's running statistics. STEM's two evaluations per step therefore update them twice (at
y_k, then at y_{k+1}), seeing every batch twice. Gradients are unaffected, since training-mode BN normalises
with batch statistics, but the evaluation-time statistics differ from a single-pass run. The hook cannot
restore the buffers because they live inside ``grad_at``. The vectorized engine rejects BN models anyway.
Use models without BN (TACO's CNN/MLP/LSTM) or ResNet-18 with GroupNorm. Of TACO's runs only the CIFAR-100
ResNet-18 could be affected, and only if it is run with BN.
"""
from __future__ import annotations

from typing import Annotated, Literal

import torch

from ..errors import ConfigError
from ..optim import SGD
from .base import Algorithm


class Stem(Algorithm):
    name = "stem"

    def __init__(self, run, a: Annotated[float, "(0, 1]"] = 0.2, weighting: Literal["data", "uniform"] = "uniform"):
        super().__init__(run, weighting)
        if not isinstance(self.optimizer, SGD) or self.optimizer.momentum:
            raise ConfigError("stem takes its own local step (plain SGD along its momentum d); the client "
                              f"optimizer must be 'sgd' with momentum 0, got {self.optimizer!r}")
        self.a = a  # 1 − a weighs the old momentum

    # ---- server
    def init(self, w0, layout):
        return {"d_bar": torch.zeros_like(w0)}

    def message(self, w, state, rnd):
        return {"d_bar": state["d_bar"].expand(len(rnd.clients), -1)}  # d_0 = d̄_t, counted as bytes down

    # ---- one client
    def local_init(self, c):
        return c.w0, {"d": c.recv["d_bar"], "init": c.w0.new_tensor(float(c.t == 1))}  # round 1 initialises d

    def local_step(self, w, local, c, grad_at):
        d, init = local["d"], local["init"]
        w_new = w - c.lr * d  # y_{k+1} = y_k − η_l d_k
        # this call's minibatch ξ_{k+1} at both points; the old point first, so that BN statistics (sequential
        # engine) get their last update from the new iterate y_{k+1}
        g_old, loss = grad_at(w)  # ∇f_i(y_k; ξ_{k+1}); its data loss is the step's logged loss (at the input w)
        g_new, _ = grad_at(w_new)  # ∇f_i(y_{k+1}; ξ_{k+1})
        decay = self.optimizer.weight_decay
        if decay:
            g_old, g_new = g_old + decay * w, g_new + decay * w_new
        # d_{k+1} = ∇f_i(y_{k+1}; ξ) + (1 − a)(d_k − ∇f_i(y_k; ξ)); the initialisation call drops the correction
        d_new = g_new + (1 - self.a) * (1 - init) * (d - g_old)
        return w_new, {"d": d_new, "init": torch.zeros_like(init)}, loss

    def upload(self, w, local, c):
        return {"delta": w - c.w0, "d": local["d"]}  # Δ_i = y_K − x_t and d_K

    # ---- server
    def aggregate(self, w, state, ups, rnd):
        p = self.weights(rnd.sizes)
        w_new = w + self.run.server_lr * (p @ ups["delta"])
        return w_new, {"d_bar": p @ ups["d"]}, {}
