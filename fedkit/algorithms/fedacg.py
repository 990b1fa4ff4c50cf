"""FedACG (Kim, Kim, Han, CVPR 2024): broadcast a look-ahead along the server momentum, pull clients toward it.

As in the paper's Algorithm 1 and the authors' code (research/algorithms-baselines.md §6):

  broadcast:  x̃_t = x_t + λ m_t                                  (``broadcast``: clients receive and start from x̃_t)
  client:     min_y f_i(y) + (β/2)‖y − x̃_t‖²  by local SGD from y = x̃_t, upload Δ_i = y_i − x̃_t
  server:     m_{t+1} = λ m_t + η_g Σ_{i∈S_t} p_i Δ_i,   x_{t+1} = x_t + m_{t+1}  (= x̃_t + η_g Σ p_i Δ_i)

The global model that ``run`` keeps, logs and evaluates is x_{t+1} (§0 item 7), never the look-ahead.
``prox="code"`` uses the authors' code's unhalved term β‖y − x̃_t‖² (gradient 2β(y − x̃_t)) instead of the
paper's (β/2)‖·‖². The server learning rate η_g (``server_lr``, default 1 = the paper) scales the averaged
update before it enters the momentum, so x_{t+1} − x_t = m_{t+1} always holds and the next look-ahead
extrapolates the step actually taken. Momentum covers trainable parameters only (BatchNorm statistics are
averaged by ``run`` as for every algorithm). λ = 0 and β = 0 give FedAvg.
"""
from typing import Annotated, Literal

from .base import Algorithm


class FedACG(Algorithm):
    name = "fedacg"

    def __init__(self, run, lam: Annotated[float, "[0, 1)"] = 0.85, beta: Annotated[float, "[0, inf)"] = 0.001,
                 prox: Literal["paper", "code"] = "paper", weighting: Literal["data", "uniform"] = "uniform"):
        super().__init__(run, weighting)  # the authors' code averages uniformly over the sampled clients
        self.lam, self.beta, self.prox = lam, beta, prox

    def init(self, w0, layout):
        return {"m": w0.new_zeros(w0.shape)}  # m_0 = 0

    def broadcast(self, w, state):
        return w + self.lam * state["m"]  # x̃_t = x_t + λ m_t

    def objective(self, data, w, c, batch):
        # c.w0 = x̃_t: (β/2)‖y − x̃_t‖² (paper) or β‖y − x̃_t‖² (code)
        scale = 0.5 * self.beta if self.prox == "paper" else self.beta
        return data + scale * ((w - c.w0) ** 2).sum()

    # upload: the default Δ_i = y_i − c.w0 = y_i − x̃_t

    def aggregate(self, w, state, ups, rnd):
        m = self.lam * state["m"] + self.run.server_lr * (self.weights(rnd.sizes) @ ups["delta"])  # m_{t+1}
        return w + m, {"m": m}, {}  # x_{t+1} = x_t + m_{t+1}
