"""Is FedDUAL's active-barycenter run a function of its config alone? eps=1e-2 seed 0 of fig9, 40 rounds.
Usage (repository root, FEDKIT_DATA set): python active_eps_1e-2.py stack|auto|sequential"""
import sys
import time

import torch

from fedkit import Config, archive
from fedkit.runner import run, run_together

torch.set_num_threads(1)
a = archive.read("figures/feddual/runs/fig9_fig12_eps_iterations.parquet")
mode = sys.argv[1]
cfg = Config.from_dict(a["4b6afe7f26f8809c"].config)
assert cfg.key() == "4b6afe7f26f8809c", cfg.key()
t = time.time()
if mode == "stack":  # seeds 0-2 stacked, as fedkit figures trains them
    mates = [Config.from_dict(a[k].config) for k in ["4b6afe7f26f8809c", "54d4f827a1589597", "b25e73ec93dd2ab8"]]
    hs = run_together(mates, cache=False, progress=False, archive=False)
    print(mode, [round(h.final_accuracy, 4) for h in hs], round(time.time() - t), flush=True)
else:
    if mode != "auto":
        cfg = cfg.replace(engine=mode)
    h = run(cfg, cache=False, progress=False, archive=False)
    print(mode, round(h.final_accuracy, 4), list(h.rounds["test_accuracy"].round(4))[::5], round(time.time() - t),
          flush=True)
