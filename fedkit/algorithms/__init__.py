"""Federated algorithms by name. Each module implements one method against ``Algorithm``'s hooks."""
from ..registry import build
from .base import Algorithm
from .fedacg import FedACG
from .fedavg import FedAvg
from .fedprox import FedProx
from .foolsgold import FoolsGold
from .scaffold import Scaffold
from .stem import Stem
from .taco import Taco

ALGORITHMS: dict[str, type[Algorithm]] = {cls.name: cls for cls in (FedAvg, FedProx, Scaffold, Taco, FoolsGold,
                                                                    FedACG, Stem)}


def make_algorithm(name: str, **hyper) -> Algorithm:
    return build("algorithm", ALGORITHMS, name, **hyper)


__all__ = ["ALGORITHMS", "Algorithm", "make_algorithm"]
