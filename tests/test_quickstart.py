"""The README's main job (examples/quickstart.yaml): both engines give the same trajectory while it is
well-conditioned, for each of the three methods it compares."""
from pathlib import Path

import pytest
import torch

from fedkit import Federation
from fedkit.configfile import load_config

QUICKSTART = Path(__file__).parents[1] / "examples" / "quickstart.yaml"
ROUNDS = 5


@pytest.mark.parametrize("algorithm", ["fedavg", "fedprox", "scaffold"])
def test_quickstart_agrees_on_both_engines_for_its_first_rounds(algorithm):
    cfg = load_config(QUICKSTART).replace(algorithm=algorithm, rounds=ROUNDS)
    runs = [Federation(cfg.replace(engine=engine)) for engine in ("vectorized", "sequential")]
    assert [fed.engine_name for fed in runs] == ["vectorized", "sequential"]
    for vec, seq in zip(*(fed.rounds() for fed in runs), strict=True):
        w_vec, w_seq = vec.after.w, seq.after.w
        gap = (w_vec - w_seq).norm() / w_seq.norm()
        assert gap < 1e-5, f"round {vec.info.t}: the engines' models differ by {gap:.1e} (relative)"
        acc = [runs[0].evaluate(w_vec)[0], runs[1].evaluate(w_seq)[0]]
        assert abs(acc[0] - acc[1]) <= 1 / len(runs[0].y_test), (vec.info.t, acc)  # at most one test sample
    assert torch.isfinite(w_seq).all()
