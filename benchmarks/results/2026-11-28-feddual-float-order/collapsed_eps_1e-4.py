"""Is FedDUAL's active-barycenter run a function of its config alone? eps=1e-2 seed 0 of fig9, 40 rounds."""
import sys, time, torch
torch.set_num_threads(1)
from pathlib import Path
from fedkit import archive, Config
from fedkit.runner import run, run_together
a = archive.read(Path("figures/feddual/runs/fig9_fig12_eps_iterations.parquet"))
mode = sys.argv[1]
cfg = Config.from_dict(a["39ea319adceffed5"].config)
assert cfg.key() == "39ea319adceffed5", cfg.key()
t = time.time()
if mode == "stack":
    mates = []
    hs = run_together(mates, cache=False, progress=False, archive=False)
    print(mode, [round(h.final_accuracy, 4) for h in hs], list(hs[0].rounds["test_accuracy"].round(4))[::5], round(time.time() - t), flush=True)
else:
    if mode != "auto":
        cfg = cfg.replace(engine=mode)
    h = run(cfg, cache=False, progress=False, archive=False)
    print(mode, round(h.final_accuracy, 4), list(h.rounds["test_accuracy"].round(4))[::5], round(time.time() - t), flush=True)
