"""The same for a collapsed-barycenter run: eps=1e-4 seed 0 of fig9, 40 rounds (its stacked run is the archived one).
Usage (repository root, FEDKIT_DATA set): python collapsed_eps_1e-4.py auto|sequential"""
import sys
import time

import torch

from fedkit import Config, archive
from fedkit.runner import run

torch.set_num_threads(1)
a = archive.read("figures/feddual/runs/fig9_fig12_eps_iterations.parquet")
mode = sys.argv[1]
cfg = Config.from_dict(a["39ea319adceffed5"].config)
assert cfg.key() == "39ea319adceffed5", cfg.key()
t = time.time()
if mode != "auto":
    cfg = cfg.replace(engine=mode)
h = run(cfg, cache=False, progress=False, archive=False)
print(mode, round(h.final_accuracy, 4), list(h.rounds["test_accuracy"].round(4))[::5], round(time.time() - t),
      flush=True)
