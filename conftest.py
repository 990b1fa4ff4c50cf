"""Test-session settings shared by the unit tests and the nbval notebook runs."""
import os
import tempfile


def pytest_configure(config):
    # Notebooks (run by nbval, which cannot inject papermill parameters) read their scale from here, and
    # must not overwrite the committed figures/ nor fill the user's run cache.
    scratch = tempfile.mkdtemp(prefix="fedkit-tests-")
    os.environ["FEDKIT_SCALE"] = "ci"
    os.environ.setdefault("FEDKIT_FIGURES", os.path.join(scratch, "figures"))
    os.environ.setdefault("FEDKIT_CACHE", os.path.join(scratch, "runs"))
    os.environ.setdefault("MPLBACKEND", "Agg")
