"""Federated algorithms by name. Each module implements one method against ``Algorithm``'s hooks."""
from ..registry import build
from .adabest import AdaBest
from .base import Algorithm, RoundInfo, Settings
from .dp import DP
from .drag import Drag, DragRobust
from .fadamgc import FANT, FAdamGC, LocalAdam
from .fedacg import FedACG
from .fedavg import FedAvg
from .fedavgm import FedAvgM
from .fedbn import FedBN
from .feddual import FedDual
from .feddyn import FedDyn
from .fednova import FedNova
from .fedopt import FedAdam, FedAMS
from .fedprox import FedProx
from .fedpvr import FedPVR
from .fltrust import FLTrust
from .foolsgold import FoolsGold
from .moon import Moon
from .scaffold import Scaffold
from .scaffold_m import ScaffoldM
from .stem import Stem
from .taco import Taco
from .tailored import Tailored

ALGORITHMS: dict[str, type[Algorithm]] = {cls.name: cls for cls in (FedAvg, FedProx, Scaffold, Taco, FoolsGold,
                                                                    FedACG, Stem, Tailored, FedDyn,
                                                                    FedNova, Moon, FedPVR, FedDual, FedBN,
                                                                    FAdamGC, FANT, LocalAdam, FedAdam, FedAMS, FedAvgM,
                                                                    ScaffoldM, Drag, DragRobust, FLTrust, AdaBest, DP)}


def make_algorithm(name: str, run: Settings | None = None, **hyper) -> Algorithm:
    """Algorithm ``name`` built with the run's settings (default: ``Settings()``) and its hyper-parameters."""
    return build("algorithm", ALGORITHMS, name, fixed={"run": run or Settings()}, **hyper)


__all__ = ["ALGORITHMS", "Algorithm", "RoundInfo", "Settings", "make_algorithm"]
