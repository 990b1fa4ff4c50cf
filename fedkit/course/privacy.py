"""Lesson 11 (client-level differential privacy, DP-FedAvg): the checkers of its two exercises.

Exercise 1 (read off the lesson): DP-FedAvg adds Gaussian noise N(0, σ²) to each coordinate of the round's average of
clipped updates, σ = z·C/m. Give σ for the lesson's run with z = 2.
Solution: σ = z·C/m = 2 × 1.0 / 40 = 0.05 (m = 40 sampled clients, not N = 200; z·C alone is the noise on the sum).

Exercise 2 (an experiment): within a privacy budget ε ≤ 2 at δ = 10⁻⁵ over the lesson's rounds, find a noise multiplier
z and a clip norm C whose run reaches a target accuracy that the lesson's C = 1 does not reach at any z in the budget.
Solution: (z, C) = (3.1, 0.5). ε depends on z, q and T only, never on C: z = 3 spends ε = 2.02, z = 3.1 spends 1.94.
Then C: the updates' median norm is about 0.45, so C = 1 clips nothing while σ = zC/m doubles that of C = 0.5;
C = 0.5 clips about a third of the updates and halves the noise (late accuracy 0.843 vs 0.748 at the default scale;
C = 0.35: 0.838, C = 0.7: 0.806). At the ci scale (12 rounds, target 0.5) the same pair reaches 0.571.
"""
from __future__ import annotations

import math

import numpy as np

from ..config import Config
from ..privacy import config_epsilon
from ..seeds import run_seeds
from . import check, is_number, need_config, require, seed_list, shown

REFERENCE = (3.1, 0.5)  # exercise 2: ε = 1.94 ≤ 2 over 40 rounds at q = 0.2; late accuracy 0.843 (target 0.80)
LAST = 5  # rounds averaged at the end of a run
TASK_1 = ("give the standard deviation σ of the Gaussian noise that the server adds to each coordinate of the round's "
          "average in the run with z = {z:g} above.")
HINT_1 = "the noise is added to an average over the clients of one round: which clients, and how many?"
TASK_2 = ("find a noise multiplier z and a clip norm C whose run spends ε ≤ {budget:g} at δ = {delta:g} over its "
          "{rounds} rounds and ends with a test accuracy of at least {target:.2f} (mean of the last 5 rounds"
          "{over_seeds}).")
HINT_2 = ("ε is set by z (with q and T), the noise σ = zC/m by z and C: how long are the clients' updates, and what "
          "does a C far above them cost?")


def noise_std(private: Config) -> float:
    """σ of the noise the kit's DP-FedAvg adds to each coordinate of the average in ``private``'s rounds."""
    return private.build_algorithm().noise_std(private.sampled_per_round())


def late_accuracy(history, last: int = LAST) -> float:
    """Mean test accuracy over the last ``last`` evaluated rounds of a run."""
    return float(history.rounds["test_accuracy"].dropna().iloc[-last:].mean())


def dp_config(z: float, clip: float, private: Config) -> Config:
    """``private`` with noise multiplier ``z`` and clip norm ``clip``."""
    return private.replace(algorithm_args={**private.algorithm_args, "noise_multiplier": float(z), "clip": float(clip)})


def measure(z: float, clip: float, private: Config, seeds, delta: float) -> dict[str, float]:
    """ε at ``delta`` after all of ``private``'s rounds, and the late accuracy averaged over ``seeds``, with noise
    multiplier ``z`` and clip norm ``clip``."""
    cfg = dp_config(z, clip, private)
    runs = run_seeds({"DP-FedAvg": cfg}, list(seeds))
    return {"epsilon": config_epsilon(cfg, delta),
            "accuracy": float(np.mean([late_accuracy(runs["DP-FedAvg", s]) for s in seeds]))}


def median_norm(private: Config, seeds) -> float:
    """The median norm ‖Δ_i‖ of the clients' updates in ``private``'s own runs (the lesson's table)."""
    runs = run_seeds({"DP-FedAvg": private}, list(seeds))
    return float(np.median(np.concatenate([runs["DP-FedAvg", s].clients["update_norm"].to_numpy() for s in seeds])))


def need_private(private) -> None:
    """ValueError unless ``private`` is a DP-FedAvg config with a finite clip norm and noise."""
    need_config("private", private)
    if private.algorithm != "dp":
        raise ValueError(f"private must be a DP-FedAvg config (algorithm='dp'), got algorithm {private.algorithm!r}")
    alg = private.build_algorithm()
    if not (math.isfinite(alg.clip) and alg.noise_multiplier > 0):
        raise ValueError(f"private must clip and add noise, got clip={alg.clip} and z={alg.noise_multiplier}")


def need_number(name: str, value, low: float, high: float) -> float:
    """``value`` as a float, or ValueError naming the setting unless it is a finite number in (low, high]."""
    if not (is_number(value) and low < value <= high):  # NaN and ±inf fail the comparison
        raise ValueError(f"{name} must be a number in ({low:g}, {high:g}], got {shown(value)}")
    return float(value)


def check_exercise(sigma: float | None, private: Config) -> None:
    """Exercise 1 (see :func:`fedkit.course.check`): σ, the standard deviation of the noise on each coordinate of
    the average in the rounds of ``private`` (the lesson's DP-FedAvg run with z = 2)."""
    need_private(private)
    alg = private.build_algorithm()
    z, clip = alg.noise_multiplier, alg.clip
    m, n = private.sampled_per_round(), private.num_clients

    def judge(sigma) -> str:
        require(is_number(sigma) and 0 < sigma <= 10,
                f"σ must be a number in (0, 10], got {shown(sigma)}")
        sigma = float(sigma)
        truth = noise_std(private)
        if math.isclose(sigma, truth, rel_tol=0.01):
            return f"σ = {sigma:g}: each coordinate of the noisy average varies by ±{truth:g}"
        ways = {z * clip: "that is the noise on the sum of the clipped updates: the server adds it to their average",
                z * clip / n: f"the average is over the clients sampled in a round, not all {n}",
                z / m: "the noise is scaled by the clip norm C, the most one client can move the sum",
                clip / m: "the noise multiplier z scales the noise"}
        why = next((text for value, text in ways.items() if math.isclose(sigma, value, rel_tol=0.01)),
                   "write σ from the equation with the settings of the run: z, C and the clients per round")
        require(False, f"σ = {sigma:g} is {'too large' if sigma > truth else 'too small'}: {why}")

    check(sigma, z * clip / m, judge, TASK_1.format(z=z), HINT_1, "your σ (a number)")


def check_exercise_2(answer: tuple[float, float] | None, private: Config, seeds, budget: float = 2.0,
                     delta: float = 1e-5, target: float = 0.8) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): a pair (z, C) whose run of ``private``'s rounds spends ε ≤
    ``budget`` at ``delta`` and whose late accuracy, averaged over ``seeds``, reaches ``target``."""
    need_private(private)
    seeds = seed_list(seeds)
    budget = need_number("budget", budget, 0, 100)
    delta = need_number("delta", delta, 0, 0.5)
    target = need_number("target", target, 0, 1)
    task = TASK_2.format(budget=budget, delta=delta, rounds=private.rounds, target=target,
                         over_seeds=f", averaged over seeds {seeds}" if len(seeds) > 1 else "")

    def judge(answer) -> str:
        require(isinstance(answer, (tuple, list)) and len(answer) == 2 and all(is_number(v) for v in answer),
                f"the answer must be a pair (z, C) of numbers, got {shown(answer)}")
        require(all(0 < v <= 100 for v in answer),
                f"z and C must be numbers in (0, 100], got {shown(answer)}")
        z, clip = float(answer[0]), float(answer[1])
        eps = config_epsilon(dp_config(z, clip, private), delta)
        require(eps <= budget, f"with z = {z:g}, {private.rounds} rounds spend ε = {eps:.3f} at δ = {delta:g}: over "
                               f"the budget of {budget:g}. ε depends on z (with q and T), not on C: a larger z spends "
                               "less")
        acc = measure(z, clip, private, seeds, delta)["accuracy"]
        if acc < target:
            norm, hints = median_norm(private, seeds), []
            if clip > 1.5 * norm:
                hints.append(f"most updates are shorter than C (their median norm is {norm:.2f} in the lesson's run), "
                             "so clipping barely acts while σ = zC/m grows with C: try a smaller C")
            elif clip < 0.5 * norm:
                hints.append(f"C is far below the updates' median norm ({norm:.2f} in the lesson's run): every update "
                             "is cut short and the model moves slowly; try a larger C")
            if eps < 0.7 * budget:
                hints.append(f"ε = {eps:.2f} leaves budget unspent: a smaller z adds less noise")
            hint = "; ".join(hints) or "the noise still drowns the updates: spend the budget and match C to them"
            require(False, f"with z = {z:g} and C = {clip:g}, ε = {eps:.2f} is within budget but the late accuracy is "
                           f"{acc:.3f} < {target:.2f}; {hint}")
        return f"with z = {z:g} and C = {clip:g}: ε = {eps:.2f} ≤ {budget:g} and late accuracy {acc:.3f} ≥ {target:.2f}"

    check(answer, REFERENCE, judge, task, HINT_2, "your pair (z, C) of numbers")
