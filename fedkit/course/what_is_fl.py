"""Lesson 00 (what federated learning is): FedAvg from scratch in plain PyTorch, and the checkers of the lesson's two
exercises (``check_exercise`` and ``check_exercise_2``, each with the notebook's Config).

Exercise 1 (read off the lesson): how many local SGD steps do all clients take together during the run?
Solution: every round the server samples m = clients_per_round clients and each takes K local steps, so the run takes
T·m·K steps: 30 · 5 · 10 = 1,500 at the default scale (5 · 5 · 10 = 250 at ci), not T·N·K; the check sums fedkit's
per-client records (History.clients["steps"]).

Exercise 2 (a small experiment): weigh the sampled clients equally (p_i = 1/m instead of n_i / Σ n_j) in the
from-scratch loop and report its final test accuracy; the check runs fedkit with
``algorithm_args={"weighting": "uniform"}`` and compares.
Solution: in ``fedavg_from_scratch`` replace ``p = sizes / sizes.sum()`` by ``p = torch.full((len(clients),),
1 / len(clients))`` — the m sampled clients, not all N — and read the last accuracy (``uniform_accuracy`` below is that
loop). fedkit's FedAvg with weighting "uniform" gives the same weights to float tolerance, so the two agree to a test
image or better. Equal weights give a small client (client 5: 188 samples) as much say as a large one: fairer to
small clients, noisier when their data are few or odd.
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from ..config import Config
from ..federation import Federation
from ..runner import run
from . import WrongAnswer, check, is_number, is_whole, need_config, require, shown

TOLERANCE = 0.002  # exercise 2: |your accuracy − fedkit's| (two test images of mnist_5k's 1,000)
TASKS = {1: "how many local SGD steps do all clients take together during the run above (every round, every "
            "sampled client)?",
         2: "weigh the sampled clients equally (p_i = 1/m instead of n_i / Σ n_j) in fedavg_from_scratch, run it with "
            "the settings above and report its final test accuracy; the check runs fedkit with "
            "algorithm_args={'weighting': 'uniform'} and compares."}
HINTS = {1: "read the Config: who trains in a round, and how many steps does each take?",
         2: "only the line that sets p changes; m is the number of clients sampled in the round, not N."}
REFERENCE = object()  # exercise 2's reference answer stands for uniform_accuracy(cfg), computed when judged
FORMS = {1: "your number of steps (a whole number)", 2: "your final test accuracy (a number in [0, 1])"}


def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Test accuracy of a plain module."""
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def local_sgd(model: torch.nn.Module, plan, x: torch.Tensor, y: torch.Tensor, lr: float) -> torch.nn.Module:
    """A copy of ``model`` after one client's local SGD steps, one per row of its minibatch ``plan``."""
    model = copy.deepcopy(model)
    for rows, real in zip(plan.indices, plan.mask.bool()):
        loss = F.cross_entropy(model(x[rows[real]]), y[rows[real]])
        grads = torch.autograd.grad(loss, list(model.parameters()))
        with torch.no_grad():
            for w, g in zip(model.parameters(), grads):
                w -= lr * g
    return model


def uniform_accuracy(cfg: Config) -> float:
    """The reference answer of exercise 2: the lesson's from-scratch FedAvg with p_i = 1/m, its final accuracy."""
    fed = Federation(cfg)
    model = copy.deepcopy(fed.fm.module)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # its many tiny steps gain nothing from threads, and lose much on a busy CPU
    try:
        for t in range(1, cfg.rounds + 1):
            clients = fed.sample(t, None)
            trained = [local_sgd(model, plan, fed.x_train, fed.y_train, cfg.lr) for plan in fed.plans(t, clients)]
            p = torch.full((len(clients),), 1 / len(clients))
            with torch.no_grad():
                for name, q in model.named_parameters():
                    q.copy_(sum(p_i * dict(m.named_parameters())[name] for p_i, m in zip(p, trained)))
    finally:
        torch.set_num_threads(threads)
    return accuracy(model, fed.x_test, fed.y_test)


def steps_taken(cfg: Config) -> int:
    """Local steps of all clients in ``cfg``'s run, summed from fedkit's per-client records."""
    return int(run(cfg, progress=False).clients["steps"].sum())


def final_accuracy(cfg: Config) -> float:
    """fedkit's final test accuracy of ``cfg``."""
    return float(run(cfg, progress=False).rounds["test_accuracy"].iloc[-1])


def need_fedavg(cfg: Config) -> None:
    """ValueError unless ``cfg`` is a FedAvg Config with a fixed K and SGD (the lesson's)."""
    need_config("cfg", cfg)
    if cfg.algorithm != "fedavg" or cfg.local_steps is None or cfg.optimizer not in (None, "sgd"):
        raise ValueError(f"cfg must be the lesson's FedAvg with a fixed number of local steps and SGD, got algorithm "
                         f"{cfg.algorithm!r}, local_steps {cfg.local_steps!r}, optimizer {cfg.optimizer!r}")


def check_exercise(steps, cfg: Config) -> None:
    """Exercise 1 (see :func:`fedkit.course.check`): the local SGD steps of all clients together in ``cfg``'s run
    (the notebook's FedAvg)."""
    need_fedavg(cfg)
    most = cfg.rounds * cfg.num_clients * cfg.local_steps  # every client in every round

    def judge(n) -> str:
        require(is_whole(n) and 0 <= n <= most, f"the number of steps must be a whole number in [0, {most}] (T·N·K: "
                                                f"every client in every round), got {shown(n)}")
        taken = steps_taken(cfg)
        require(n == taken, f"{n} is not the number of local steps fedkit's clients took: it counted "
                            f"{'more' if taken > n else 'fewer'}. Count the clients sampled per round (not all "
                            "N), the steps each takes, and the rounds.")
        return f"the clients took {taken} local steps together ({cfg.rounds} rounds × {cfg.sampled_per_round()} " \
               f"clients × K = {cfg.local_steps})"

    check(steps, cfg.rounds * cfg.sampled_per_round() * cfg.local_steps, judge, TASKS[1], HINTS[1], FORMS[1])


def check_exercise_2(accuracy_: float | None, cfg: Config) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): the final test accuracy of the from-scratch loop with uniform
    weights p_i = 1/m on ``cfg`` (the notebook's FedAvg), compared with fedkit's FedAvg with weighting "uniform"."""
    need_fedavg(cfg)

    def judge(acc) -> str:
        if acc is REFERENCE:  # the hidden reference: computed here, after the task is printed (it trains)
            acc = uniform_accuracy(cfg)
        require(is_number(acc) and 0 <= acc <= 1, f"the accuracy must be a number in [0, 1], got {shown(acc)}")
        measured = final_accuracy(cfg.replace(algorithm_args={**cfg.algorithm_args, "weighting": "uniform"}))
        if abs(acc - measured) <= TOLERANCE:
            return f"fedkit's FedAvg with uniform weights ends at {measured:.3f} test accuracy, as your loop does"
        if cfg.algorithm_args.get("weighting", "data") == "data":  # the notebook's run: read from the cache
            require(abs(acc - final_accuracy(cfg)) > TOLERANCE, f"{acc} is the final accuracy with data-size weights "
                    "p_i = n_i / Σ n_j (the loop as written): change the line that sets p.")
        raise WrongAnswer(f"fedkit with uniform weights ends {'higher' if measured > acc else 'lower'} than {acc}: "
                          "set p_i = 1/m for the m clients sampled in the round, change nothing else, and report the "
                          "accuracy after the last round.")

    check(accuracy_, REFERENCE, judge, TASKS[2], HINTS[2], FORMS[2])
