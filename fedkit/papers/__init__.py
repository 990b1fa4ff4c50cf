"""Per-paper experimental settings and the analyses behind their figures and tables."""


def seeded(configs: dict, seeds) -> dict:
    """Each labelled config at each of ``seeds``, labelled "<label>/seed <s>" (how ``runs()`` lists a notebook's
    runs)."""
    return {f"{label}/seed {s}": c.replace(seed=s) for label, c in configs.items() for s in seeds}
