"""LEAF Shakespeare character LSTM (§20.6), with an LSTM written in plain tensor ops.

``nn.LSTM`` has no torch.func batching rule for its CPU kernel (``aten::mkldnn_rnn_layer``): under ``vmap`` it
warns and runs the clients one by one. ``LSTMStack`` computes the same recurrence with matmuls and gates,
which vmap batches across clients. It holds nn.LSTM's parameters (names, shapes, gate order i, f, g, o,
init), so their state dicts are interchangeable.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fedkit.errors import ConfigError

from ._shapes import as_shape


class LSTMStack(nn.Module):
    """Unidirectional multi-layer LSTM, batch first, zero initial state; returns the last layer's outputs."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.hidden_size, self.num_layers = hidden_size, num_layers
        bound = hidden_size**-0.5
        for layer in range(num_layers):
            n_in = input_size if layer == 0 else hidden_size
            shapes = {"weight_ih": (4 * hidden_size, n_in), "weight_hh": (4 * hidden_size, hidden_size),
                      "bias_ih": (4 * hidden_size,), "bias_hh": (4 * hidden_size,)}
            for name, shape in shapes.items():
                weight = nn.Parameter(torch.empty(shape).uniform_(-bound, bound))
                self.register_parameter(f"{name}_l{layer}", weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, T, input_size] → [B, T, hidden_size]."""
        hid = self.hidden_size
        for layer in range(self.num_layers):
            w_hh = getattr(self, f"weight_hh_l{layer}")
            bias = getattr(self, f"bias_ih_l{layer}") + getattr(self, f"bias_hh_l{layer}")
            # Input projections of all time steps at once; unbind (not x_gates[:, t]) keeps the backward
            # linear in the sequence length: one stack instead of a full-size zero tensor per step.
            x_gates = F.linear(x, getattr(self, f"weight_ih_l{layer}"), bias).unbind(1)
            h = c = x.new_zeros(x.shape[0], hid)
            outputs = []
            for x_gate in x_gates:
                gates = x_gate + F.linear(h, w_hh)
                i, f, _, o = torch.sigmoid(gates).chunk(4, dim=1)
                c = f * c + i * torch.tanh(gates[:, 2 * hid:3 * hid])
                h = o * torch.tanh(c)
                outputs.append(h)
            x = torch.stack(outputs, dim=1)
        return x


class CharLSTM(nn.Module):
    """LEAF Shakespeare model (§20.6): Embedding(vocab, 8) → 2-layer LSTM(hidden) → last step → FC → C.

    Input: int64 token ids [B, L] (LEAF: L = 80, vocabulary 80). ``vocab_size`` defaults to num_classes
    (next-character prediction). 819,920 params for vocabulary 80, 80 classes and LEAF's hidden = 256; a
    smaller ``hidden`` is for CPU-sized runs.
    """

    model_name = "lstm"

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, vocab_size: int | None = None,
                 hidden: int = 256):
        super().__init__()
        if len(as_shape(self.model_name, input_shape)) != 1:
            raise ConfigError(f"model 'lstm' expects input_shape (seq_len,), e.g. (80,); got {input_shape!r}")
        vocab_size = num_classes if vocab_size is None else vocab_size
        if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1:
            raise ConfigError(f"model 'lstm': vocab_size must be a positive int, got {vocab_size!r}")
        if not isinstance(hidden, int) or isinstance(hidden, bool) or hidden < 1:
            raise ConfigError(f"model 'lstm': hidden must be a positive int, got {hidden!r}")
        self.embedding = nn.Embedding(vocab_size, 8)
        self.lstm = LSTMStack(8, hidden, 2)
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.lstm(self.embedding(x))[:, -1])
