"""The same config on a GPU gives the same history as on the CPU (to float tolerance), for every algorithm and
both engines. Skipped where CUDA is not available (CI); run on a GPU machine with ``pytest tests/test_device.py``."""
import numpy as np
import pandas as pd
import pytest
import torch
from test_run import digits_config, results

from fedkit import run

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

METHODS = [("fedavg", {}), ("fedprox", {"mu": 0.1}), ("scaffold", {}), ("taco", {"detect": False}),
           ("foolsgold", {}), ("fedacg", {}), ("stem", {}), ("tailored", {"base": "scaffold"})]


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
@pytest.mark.parametrize("algorithm,args", METHODS)
def test_cuda_history_equals_cpu_history(algorithm, args, engine):
    cfg = digits_config(algorithm=algorithm, algorithm_args=args, engine=engine)
    cpu = run(cfg, cache=False, progress=False)
    gpu = run(cfg.replace(device="cuda"), cache=False, progress=False)
    pd.testing.assert_frame_equal(results(cpu), results(gpu), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(cpu.weights.numpy(), gpu.weights.cpu().numpy(), rtol=1e-3, atol=1e-4)
