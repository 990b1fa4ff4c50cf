"""Per-paper experimental settings and the analyses behind their figures and tables."""


def seeded(configs: dict, seeds, seed_first: bool = False) -> dict:
    """Each labelled config at each of ``seeds``, labelled "<label>/seed <s>" (how ``runs()`` lists a notebook's
    runs); ``seed_first``: "seed <s>/<label>", seed by seed, so that a label ending in '?' (a run made only where an
    earlier result calls for it) keeps its '?' last."""
    if seed_first:
        return {f"seed {s}/{label}": c.replace(seed=s) for s in seeds for label, c in configs.items()}
    return {f"{label}/seed {s}": c.replace(seed=s) for label, c in configs.items() for s in seeds}
