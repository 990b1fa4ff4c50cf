"""The same config on a GPU gives the same history as on the CPU (to float tolerance), for every algorithm and
both engines, and with compile=True. Skipped where CUDA is not available (CI); run on a GPU machine with ``pytest tests/test_device.py``."""
import numpy as np
import pandas as pd
import pytest
import torch
from test_run import digits_config, results

from fedkit import run
from fedkit.algorithms import ALGORITHMS

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

SPECIAL = {"fedprox": {"mu": 0.1}, "taco": {"detect": False}, "tailored": {"base": "scaffold"},
           "drag_robust": {"root_samples": 100}, "fltrust": {"root_samples": 100}}
METHODS = [(name, SPECIAL.get(name, {})) for name in ALGORITHMS]  # every algorithm


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
@pytest.mark.parametrize("algorithm,args", METHODS)
def test_cuda_history_equals_cpu_history(algorithm, args, engine):
    cfg = digits_config(algorithm=algorithm, algorithm_args=args, engine=engine)
    cpu = run(cfg, cache=False, progress=False)
    gpu = run(cfg.replace(device="cuda"), cache=False, progress=False)
    pd.testing.assert_frame_equal(results(cpu), results(gpu), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(cpu.weights.numpy(), gpu.weights.cpu().numpy(), rtol=1e-3, atol=1e-4)


def test_compiled_cuda_history_equals_cpu_history():
    cfg = digits_config(engine="vectorized")
    cpu = run(cfg, cache=False, progress=False)
    gpu = run(cfg.replace(device="cuda", compile=True), cache=False, progress=False)
    assert gpu.rounds["compile_seconds"][1] > 0
    pd.testing.assert_frame_equal(results(cpu), results(gpu).drop(columns="compile_seconds"), rtol=1e-3, atol=1e-4)
