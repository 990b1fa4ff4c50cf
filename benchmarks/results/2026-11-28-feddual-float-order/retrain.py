"""Re-train one fig9 FedDUAL run (40 rounds, no cache) in one of fedkit's float orders, to see whether its result is
a function of its config alone. Usage (repository root, FEDKIT_DATA set):
    python retrain.py KEY auto|sequential          the seed alone, on the vectorized / sequential engine
    python retrain.py KEY stack MATE_KEY...        stacked with its other seeds, as `fedkit figures` trains them"""
import sys
import time

import torch

from fedkit import Config, archive
from fedkit.runner import run, run_together

torch.set_num_threads(1)
runs = archive.read("figures/feddual/runs/fig9_fig12_eps_iterations.parquet")
key, mode, mates = sys.argv[1], sys.argv[2], sys.argv[3:]
cfg = Config.from_dict(runs[key].config)
assert cfg.key() == key, cfg.key()
start = time.time()
if mode == "stack":
    histories = run_together([cfg, *(Config.from_dict(runs[k].config) for k in mates)], cache=False, progress=False,
                             archive=False)
    print(mode, [round(h.final_accuracy, 4) for h in histories], round(time.time() - start), flush=True)
else:
    h = run(cfg if mode == "auto" else cfg.replace(engine=mode), cache=False, progress=False, archive=False)
    print(mode, round(h.final_accuracy, 4), list(h.rounds["test_accuracy"].round(4))[::5], round(time.time() - start),
          flush=True)
