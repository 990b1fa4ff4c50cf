"""Freeloader-detection diagnostics of fedkit.analysis.detection on hand-made client records."""
import numpy as np
import pandas as pd
import pytest

from fedkit.analysis import detection
from fedkit.history import History


def history(clients: dict, final_accuracy: float = 0.5) -> History:
    """A History whose per-(round, client) frame holds ``clients`` and whose last test accuracy is given."""
    rounds = pd.DataFrame({"round": [0, 1], "test_accuracy": [0.1, final_accuracy]})
    return History({}, rounds, pd.DataFrame(clients))


# clients 0..3 over two rounds: 0 is expelled in round 2, 2 in round 1; 3 never took part
RECORD = {"round": [1, 1, 1, 2, 2], "client": [0, 1, 2, 0, 1], "expelled": [0.0, 0.0, 1.0, 1.0, 0.0],
          "alpha": [0.9, 0.2, 0.4, 0.7, 0.3]}


def test_detection_rates_by_hand():
    freeloaders = np.array([True, True, False, False])  # 0 expelled, 1 not; 2 expelled, 3 absent
    assert detection.detection_rates(history(RECORD), freeloaders) == (0.5, 0.5)


def test_alpha_by_group_by_hand():
    groups, freeloaders = np.array([0, 1, 0, 2]), np.array([True, False, False, False])
    means = detection.alpha_by_group(history(RECORD), groups, freeloaders)
    assert list(means.index) == ["A", "B", "C", "Freeloaders"]
    assert means["A"] == pytest.approx(0.4) and means["B"] == pytest.approx(0.25)  # client 2; client 1
    assert np.isnan(means["C"]) and means["Freeloaders"] == pytest.approx(0.8)  # nobody; client 0


def test_expulsions_rerun_only_where_anyone_was_expelled():
    calls = []

    def detection_off(name):
        calls.append(name)
        return history(RECORD, 0.6)

    nobody = {**RECORD, "expelled": [0.0] * 5}
    frame = detection.expulsions({"x": history(RECORD, 0.4), "y": history(nobody)}, detection_off, str.upper)
    assert calls == ["x"]
    assert list(frame.columns) == ["dataset", "data used", "benign clients expelled", "of", "TACO",
                                   "TACO, detection off"]
    x, y = frame.to_dict("records")
    assert (x["data used"], x["benign clients expelled"], x["of"], x["TACO"]) == ("X", 2, 3, 40.0)
    assert x["TACO, detection off"] == 60.0 and np.isnan(y["TACO, detection off"])
