"""fedkit: a small, exact, fast PyTorch kit for federated learning on non-IID data."""
__version__ = "0.2.0"

import os  # noqa: E402
import time  # noqa: E402

# OpenMP's threads spin between parallel regions by default: beside other jobs on a 2-core CPU a 2-thread round then
# took 3.3x a 1-thread one, and sleeping instead cost 2 % on the idle machine (benchmarks/results/2026-11-28-threads/).
# OpenMP reads it when its runtime starts, so it holds for this process if that has not happened yet, and for the
# processes it starts (precompute workers, notebook kernels); a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

IMPORTED_AT = time.time()  # a figure's provenance gives the seconds since, about its notebook's wall time

from .config import Config  # noqa: E402
from .errors import ConfigError, DataNotFoundError, FedkitError  # noqa: E402
from .federation import Federation  # noqa: E402
from .history import History  # noqa: E402
from .runner import run  # noqa: E402


def explore(*args, **kwargs):
    """The interactive explorer (an ipywidgets panel); see ``fedkit.explorer.explore``. Imported on first use, so
    ``import fedkit`` stays light."""
    from .explorer import explore as _explore

    return _explore(*args, **kwargs)


__all__ = ["Config", "ConfigError", "DataNotFoundError", "FedkitError", "Federation", "History", "explore", "run",
           "__version__"]
