"""Faults around the run cache: messages that say what was done, killed precomputes, concurrent and extended runs."""
import warnings

import pytest

from fedkit import Config, run
from fedkit.errors import FedkitError
from fedkit.history import History


def tiny(**changes) -> Config:
    base = dict(dataset="digits", partition="dirichlet", partition_args={"phi": 0.3, "min_size": 5}, num_clients=6,
                clients_per_round=3, model="mlp", model_args={"hidden": [16]}, rounds=2, local_steps=2,
                batch_size=16, lr=0.3, seed=1)
    return Config(**{**base, **changes})


def test_a_corrupt_cached_run_warning_says_where_it_was_moved_not_what_to_do(tmp_path):
    cfg = tiny()
    run(cfg, cache=tmp_path, progress=False)
    entry = tmp_path / cfg.key()
    (entry / "meta.json").write_text("{not json")
    with pytest.raises(FedkitError) as raised:
        History.load(entry)
    assert "delete" not in str(raised.value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(cfg, cache=tmp_path, progress=False)
    [aside] = tmp_path.glob(f"{cfg.key()}.corrupt-*")
    [message] = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert message.startswith(f"saved history file {entry / 'meta.json'} is unreadable (")
    assert message.endswith(f"; moved the cached run aside to {aside}")
    assert "delete" not in message and (entry / "meta.json").exists()
