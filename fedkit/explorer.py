"""``fedkit.explore()``: an ipywidgets panel to pick a federation and a few methods, run them round by round and
watch their curves grow.

The logic has no widgets and is tested without a browser: ``Choice`` holds the panel's values, ``build_configs``
turns it into one ``Config`` per method (raising ``ConfigError``), and ``Session`` trains the configs in
lockstep through ``runner.Run`` (so a config run before comes back from the run cache at once) with a stop flag.
``Panel`` is the thin widget layer around them; ipywidgets is imported only there (``pip install
"fedkit-torch[explore]"``).
"""
from __future__ import annotations

import io
import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from .config import Config
from .errors import ConfigError, FedkitError

# Data sets offered, with the model each runs (digits' 8x8 images are too small for the CNN, and the MLP's default
# (32, 16, 8) learns them slowly: one hidden layer of 64 reaches ~70 % in 5 rounds).
DATASETS = {"digits": ("mlp", {"hidden": [64]}), "mnist_5k": ("cnn", {}), "synthetic": ("mlp", {}),
            "mnist": ("cnn", {}), "fashion_mnist": ("cnn", {}), "cifar10": ("cnn", {}), "adult": ("mlp", {})}
# Partitioners and their main parameter (name, default); None: no parameter.
PARTITIONS = {"dirichlet": ("phi", 0.5), "iid": None, "shards": ("shards_per_client", 2),
              "labels_per_client": ("k", 2), "quantity": ("beta", 0.5), "qskew": ("q", 0.5)}
# Algorithms and their main hyper-parameter (name, default); None: none shown.
ALGORITHMS = {"fedavg": None, "fedprox": ("mu", 0.1), "scaffold": ("alpha", 1.0), "feddyn": ("alpha", 0.01),
              "fedacg": ("lam", 0.85), "stem": ("a", 0.2), "fednova": None, "moon": ("mu", 5.0)}
METRICS = (("test_accuracy", "test accuracy"), ("test_loss", "test loss"))


@dataclass
class Choice:
    """The panel's values. ``algorithms`` maps each chosen method to its hyper-parameters."""
    dataset: str = "digits"
    partition: str = "dirichlet"
    partition_param: float | None = 0.5
    num_clients: int = 10
    algorithms: dict[str, dict] = field(default_factory=lambda: {"fedavg": {}, "scaffold": {}})
    lr: float = 0.1
    rounds: int = 20
    local_steps: int = 10
    seed: int = 0
    device: str = "cpu"
    model: str | None = None  # None: the data set's default (DATASETS)


def build_configs(choice: Choice) -> dict[str, Config]:
    """One Config per chosen method, labelled by the method and its hyper-parameters; a bad value raises the one-line
    ConfigError that Config gives for it."""
    from . import data, models

    _known("dataset", choice.dataset, data.DATASETS)
    _known("partition", choice.partition, PARTITIONS, "the explorer offers")
    if choice.model is not None:
        _known("model", choice.model, models.MODELS)
    if not isinstance(choice.algorithms, dict):
        raise ConfigError(f"algorithms must be a mapping of method names to hyper-parameters, got "
                          f"{choice.algorithms!r}")
    if not choice.algorithms:
        raise ConfigError("choose at least one algorithm")
    partition_args = {}
    if PARTITIONS[choice.partition] is not None:  # checked by Config, against the partitioner's annotation
        name = PARTITIONS[choice.partition][0]
        hint = typing.get_type_hints(data.PARTITIONS[choice.partition], include_extras=True)[name]
        value = choice.partition_param
        if typing.get_args(hint)[0] is int and isinstance(value, float) and value.is_integer():
            value = int(value)  # the panel's number field holds a float
        partition_args[name] = value
    model, model_args = DATASETS.get(choice.dataset, ("cnn", {}))
    if choice.model is not None and choice.model != model:
        model, model_args = choice.model, {}
    configs = {}
    for algorithm, hyper in choice.algorithms.items():
        cfg = Config(dataset=choice.dataset, model=model, model_args=dict(model_args), partition=choice.partition,
                     partition_args=partition_args, num_clients=choice.num_clients, algorithm=algorithm,
                     algorithm_args=hyper, lr=choice.lr, rounds=choice.rounds, local_steps=choice.local_steps,
                     seed=choice.seed, device=choice.device)
        label = algorithm + "".join(f" {k}={v:g}" if isinstance(v, float) else f" {k}={v}" for k, v in hyper.items())
        configs[label] = cfg
    return configs


def _known(field: str, value, registry, listing: str = "known") -> None:
    """Config's rule for a registry name, checked before the explorer looks the name up (Config's own check raises
    TypeError for an unhashable value such as a list)."""
    if not isinstance(value, str) or value not in registry:
        raise ConfigError(f"unknown {field} {value!r}; {listing}: {', '.join(sorted(registry))}")


class Session:
    """Trains configs in lockstep, one round of each in turn, until done or ``stop()``.

    ``on_update(session)`` is called after every round of any method (and once for each cached run). ``curves``
    maps each label to its rounds so far (round 0 is the initial model); ``cached`` names the runs read back from
    the run cache. A stopped run keeps its checkpoint, so running the same config again resumes it.
    """

    def __init__(self, configs: dict[str, Config], *, cache=None):
        self.configs, self.cache = configs, cache
        self.curves: dict[str, pd.DataFrame] = {}
        self.cached: list[str] = []
        self._stop = threading.Event()
        self.stopped = False

    def stop(self) -> None:
        self._stop.set()

    @property
    def total_rounds(self) -> int:
        return sum(cfg.rounds for cfg in self.configs.values())

    @property
    def done_rounds(self) -> int:
        return sum(int(frame["round"].max()) for frame in self.curves.values() if len(frame))

    def run(self, on_update: Callable[[Session], None] = lambda s: None) -> dict[str, pd.DataFrame]:
        from .runner import Run

        live = {}
        for label, cfg in self.configs.items():
            if self._stop.is_set():
                break
            r = Run(cfg, cache=self.cache, progress=False)
            if r.history is not None:  # finished before: read back at once
                self.curves[label] = r.history.rounds
                self.cached.append(label)
            else:
                self.curves[label] = pd.DataFrame(r.round_rows)
                if r.active:
                    live[label] = (r, iter(r.fed.rounds(r.state)))
                else:
                    r.finish()
            on_update(self)
        while live and not self._stop.is_set():
            for label in list(live):
                if self._stop.is_set():
                    break
                r, rounds = live[label]
                rnd = next(rounds, None)
                ended = rnd is None or r.record(rnd) or not r.active
                self.curves[label] = pd.DataFrame(r.round_rows)
                if ended:
                    r.finish()
                    del live[label]
                on_update(self)
        self.stopped = bool(live)
        return self.curves

    def summary(self) -> pd.DataFrame:
        """The last evaluated round of each method."""
        rows = []
        for label, frame in self.curves.items():
            scored = frame.dropna(subset=["test_accuracy"])
            last = scored.iloc[-1] if len(scored) else frame.iloc[-1]
            rows.append({"method": label, "round": int(last["round"]), "test accuracy": last["test_accuracy"],
                         "test loss": last["test_loss"], "from cache": label in self.cached})
        return pd.DataFrame(rows)


def plot_png(curves: dict[str, pd.DataFrame], rounds: int) -> bytes:
    """Accuracy and loss against rounds for every method, as PNG bytes (no pyplot: safe off the main thread)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.5, 3.4), dpi=90, layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, (column, title) in zip(axes, METRICS):
        for label, frame in curves.items():
            scored = frame.dropna(subset=[column])
            ax.plot(scored["round"], scored[column], marker="o", markersize=3, label=label)
        ax.set(xlabel="round", title=title, xlim=(0, max(rounds, 1)))
        ax.grid(alpha=0.3)
    if curves:
        axes[0].legend(fontsize=8)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


class Panel:
    """The widgets around ``Choice``/``Session``: ``panel.widget`` is what a notebook displays; ``run(wait=True)``
    presses Run and waits (what a test or a headless notebook does)."""

    def __init__(self, choice: Choice | None = None, cache=None):
        try:
            import ipywidgets as w
        except ImportError as err:
            raise FedkitError('fedkit.explore() needs ipywidgets: pip install "fedkit-torch[explore]"') from err
        c = choice or Choice()
        build_configs(c)  # a bad preset: Config's one-line error, not a widget's TraitError (or a silent clamp)
        self.cache, self.session, self.thread, self.device = cache, None, None, c.device
        wide = {"description_width": "110px"}
        self.dataset = w.Dropdown(options=list(DATASETS), value=c.dataset, description="data set", style=wide)
        self.partition = w.Dropdown(options=list(PARTITIONS), value=c.partition, description="partition",
                                    style=wide)
        self.partition_param = w.FloatText(value=c.partition_param or 0.0, style=wide)
        self.num_clients = w.BoundedIntText(value=c.num_clients, min=1, max=10_000, description="clients",
                                            style=wide)
        self.lr = w.FloatText(value=c.lr, description="lr (η_l)", style=wide)
        self.rounds = w.BoundedIntText(value=c.rounds, min=1, max=10_000, description="rounds", style=wide)
        self.local_steps = w.BoundedIntText(value=c.local_steps, min=1, max=100_000, description="local steps",
                                            style=wide)
        self.seed = w.BoundedIntText(value=c.seed, min=0, max=2**31 - 1, description="seed", style=wide)
        self.use, self.hyper = {}, {}
        rows = []
        for name, param in ALGORITHMS.items():
            self.use[name] = w.Checkbox(value=name in c.algorithms, description=name, indent=False,
                                        layout=w.Layout(width="100px"))
            row = [self.use[name]]
            if param is not None:
                value = c.algorithms.get(name, {}).get(param[0], param[1])
                self.hyper[name] = w.FloatText(value=value, description=param[0], layout=w.Layout(width="170px"),
                                               style={"description_width": "50px"})
                row.append(self.hyper[name])
            rows.append(w.HBox(row))
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", button_style="warning", icon="stop", disabled=True)
        self.progress = w.IntProgress(value=0, min=0, max=1, description="progress")
        self.status = w.Label(value="")
        self.error = w.HTML(value="")
        self.plot = w.Image(format="png", layout=w.Layout(width="auto"))
        self.table = w.HTML(value="")
        self.partition.observe(lambda _: self._label_partition_param(reset=True), "value")
        self._label_partition_param(reset=False)
        self.run_button.on_click(lambda _: self.run())
        self.stop_button.on_click(lambda _: self.stop())
        for widget, cls in ((self.run_button, "fedkit-run"), (self.stop_button, "fedkit-stop"),
                            (self.error, "fedkit-error"), (self.plot, "fedkit-plot"), (self.status, "fedkit-status"),
                            (self.table, "fedkit-table"), (self.lr, "fedkit-lr"), (self.rounds, "fedkit-rounds"),
                            (self.dataset, "fedkit-dataset"), (self.num_clients, "fedkit-clients"),
                            (self.local_steps, "fedkit-local-steps"), (self.progress, "fedkit-progress"),
                            *((box, f"fedkit-use-{name}") for name, box in self.use.items())):
            widget.add_class(cls)  # stable hooks for the browser test
        settings = w.VBox([self.dataset, self.partition, self.partition_param, self.num_clients, self.lr,
                           self.rounds, self.local_steps, self.seed])
        methods = w.VBox([w.HTML("<b>algorithms</b>"), *rows])
        self.widget = w.VBox([w.HBox([settings, methods]), w.HBox([self.run_button, self.stop_button,
                                                                   self.progress, self.status]),
                              self.error, self.plot, self.table])

    def _label_partition_param(self, reset: bool) -> None:
        param = PARTITIONS[self.partition.value]
        self.partition_param.disabled = param is None
        self.partition_param.description = param[0] if param else "(no parameter)"
        if param is not None and reset:
            self.partition_param.value = param[1]

    def choice(self) -> Choice:
        algorithms = {name: ({ALGORITHMS[name][0]: self.hyper[name].value} if name in self.hyper else {})
                      for name, box in self.use.items() if box.value}
        return Choice(dataset=self.dataset.value, partition=self.partition.value,
                      partition_param=self.partition_param.value, num_clients=self.num_clients.value,
                      algorithms=algorithms, lr=self.lr.value, rounds=self.rounds.value,
                      local_steps=self.local_steps.value, seed=self.seed.value, device=self.device)

    def run(self, wait: bool = False) -> None:
        """Build the configs (a bad value shows its message and nothing runs) and train them in a thread, so the
        Stop button stays live; ``wait`` joins the thread."""
        if self.thread is not None and self.thread.is_alive():
            return
        self.error.value, self.table.value = "", ""
        try:
            configs = build_configs(self.choice())
        except FedkitError as err:
            self._show_error(err)
            self.status.value = f"not run: {err}"
            return
        self.session = Session(configs, cache=self.cache)
        self.progress.max, self.progress.value = self.session.total_rounds, 0
        self.status.value = "starting"
        self.run_button.disabled, self.stop_button.disabled = True, False
        self.thread = threading.Thread(target=self._train, daemon=True)
        self.thread.start()
        if wait:
            self.thread.join()

    def stop(self) -> None:
        if self.session is not None:
            self.session.stop()
            self.status.value = "stopping after this round"

    def _train(self) -> None:
        session = self.session
        try:
            session.run(self._update)
            self.status.value = ("stopped (press Run to resume from the checkpoint)" if session.stopped
                                 else f"done: {session.done_rounds}/{session.total_rounds} rounds"
                                 + (f" ({len(session.cached)} from the cache)" if session.cached else ""))
            self.table.value = session.summary().to_html(index=False, float_format="{:.4f}".format)
        except FedkitError as err:  # a bad combination found once the data is loaded (e.g. a model too big)
            self._show_error(err)
            self.status.value = "failed"
        except Exception as err:  # noqa: BLE001 - a bug: show it in one line rather than lose it in a thread
            self._show_error(f"{type(err).__name__}: {err}")
            self.status.value = "failed"
        finally:
            self.run_button.disabled, self.stop_button.disabled = False, True

    def _update(self, session: Session) -> None:
        self.progress.value = session.done_rounds
        self.status.value = f"round {session.done_rounds}/{session.total_rounds}"
        self.plot.value = plot_png(session.curves, max(cfg.rounds for cfg in session.configs.values()))

    def _show_error(self, err) -> None:
        import html

        self.error.value = (f'<div style="color:#a00;border:1px solid #a00;padding:4px 8px">'
                            f"{html.escape(str(err))}</div>")


def explore(choice: Choice | None = None, *, cache=None, **values) -> Panel:
    """Display the explorer in a notebook and return its Panel; ``values`` preset fields of ``Choice``
    (e.g. ``explore(dataset="mnist_5k", algorithms={"fedavg": {}, "fedprox": {"mu": 0.01}}, rounds=10)``)."""
    panel = Panel(choice or Choice(**values), cache=cache)
    from IPython.display import display  # ipywidgets depends on IPython

    display(panel.widget)
    return panel
