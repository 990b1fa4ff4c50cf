"""``fedkit.explore()``: an ipywidgets panel to pick a federation and a few methods, run them round by round and
watch their curves grow.

The logic has no widgets and is tested without a browser: ``Choice`` holds the panel's values, ``build_configs``
turns it into one ``Config`` per method (raising ``ConfigError``), and ``Session`` trains the configs in
lockstep through ``runner.Run`` (so a config run before comes back from the run cache at once) with a stop flag.
``model_for`` names the model a data set trains (what ``build_configs`` puts in every Config, and what the panel
shows), and ``equal_by_construction`` finds chosen methods that are one method by construction (the panel's note).
``Panel`` is the thin widget layer around them; ipywidgets is imported only there (``pip install
"fedkit-torch[explore]"``).
"""
from __future__ import annotations

import io
import json
import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from .config import Config
from .errors import ConfigError, FedkitError

# Data sets offered, with the model each runs. fedkit itself has no per-data-set model (Config's default is "cnn"
# for every data set, and the data-set registry holds loaders only), so this is where the explorer decides it;
# ``model_for`` reads it for ``build_configs`` and for the panel's "model" line alike. digits' 8x8 images are too
# small for the CNN, and the MLP's default (32, 16, 8) learns them slowly: one hidden layer of 64 reaches ~70 % in 5
# rounds; synthetic and adult are tabular.
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
    model, model_args = model_for(choice.dataset, choice.model)
    configs = {}
    for algorithm, hyper in choice.algorithms.items():
        cfg = Config(dataset=choice.dataset, model=model, model_args=dict(model_args), partition=choice.partition,
                     partition_args=partition_args, num_clients=choice.num_clients, algorithm=algorithm,
                     algorithm_args=hyper, lr=choice.lr, rounds=choice.rounds, local_steps=choice.local_steps,
                     seed=choice.seed, device=choice.device)
        label = algorithm + "".join(f" {k}={v:g}" if isinstance(v, float) else f" {k}={v}" for k, v in hyper.items())
        configs[label] = cfg
    return configs


def model_for(dataset: str, model: str | None = None) -> tuple[str, dict]:
    """(model, model_args) that ``build_configs`` gives every Config for ``dataset``: the explorer's choice for
    the data sets it offers (``DATASETS``), else Config's default, "cnn"; ``model`` (``Choice.model``) overrides
    it, with its own default arguments."""
    name, args = DATASETS.get(dataset, (Config.model, {}))
    if model is not None and model != name:
        return model, {}
    return name, dict(args)


def describe_model(model: str, model_args: dict) -> str:
    """'mlp (FcNet, hidden=[64])': the registry name, the class that ``fedkit.models.MODELS`` builds for it, and
    the arguments given."""
    from .models import MODELS

    cls = MODELS.get(model)
    inside = [cls.__name__] if cls is not None else []
    inside += [f"{k}={v}" for k, v in model_args.items()]
    return f"{model} ({', '.join(inside)})" if inside else model


def _known(field: str, value, registry, listing: str = "known") -> None:
    """Config's rule for a registry name, checked before the explorer looks the name up (Config's own check raises
    TypeError for an unhashable value such as a list)."""
    if not isinstance(value, str) or value not in registry:
        raise ConfigError(f"unknown {field} {value!r}; {listing}: {', '.join(sorted(registry))}")


# What ``equal_by_construction`` can prove, from each method's update rule (fedkit/algorithms/): these are FedAvg,
# with the same weighting of the clients (its "weighting" argument; SCAFFOLD and FedACG average uniformly by default,
# so they equal FedAvg only when it is given weighting="uniform"):
#   FedProx μ = 0 (no proximal term), MOON μ = 0 (no contrastive term), SCAFFOLD α = 0 (no correction), FedACG
#   λ = β = 0 (no look-ahead, no proximal term);
# and FedNova equals FedAvg (FedProx with its μ when μ > 0) when every client takes the same number K of local
# steps (``local_steps`` set, no threat: its a_i is then one number, so τ_eff Σ p_i Δ_i / a_i = Σ p_i Δ_i), with
# τ_eff = "a" (its default) or an a_i that is τ_i itself. Only when the configs agree in every other field, the
# client optimizer included; any other pair is not claimed either way (a local-epoch budget gives clients of
# different sizes different K_i). Each case is checked by training both methods (tests/test_explorer.py).


def _reduced(cfg: Config) -> tuple[tuple, str] | None:
    """(the plain method that ``cfg``'s algorithm is by construction, why) or None where no reduction is known."""
    from .algorithms.fedacg import FedACG
    from .algorithms.fedavg import FedAvg
    from .algorithms.fednova import FedNova
    from .algorithms.fedprox import FedProx
    from .algorithms.moon import Moon
    from .algorithms.scaffold import Scaffold
    from .optim import Adam

    if cfg.threat is not None:
        return None
    alg = cfg.build_algorithm()
    kind, fedavg = type(alg), ("fedavg", alg.weighting)
    if kind is FedAvg:
        return fedavg, ""
    if kind is FedProx:
        return (fedavg, "FedProx with μ = 0 adds no proximal term") if alg.mu == 0 else \
            (("fedprox", alg.mu, alg.weighting), "")
    if kind is Moon and alg.mu == 0:
        return fedavg, "MOON with μ = 0 adds no contrastive term"
    if kind is Scaffold and alg.alpha == 0:
        return fedavg, "SCAFFOLD with α = 0 applies no correction"
    if kind is FedACG and alg.lam == 0 and alg.beta == 0:
        return fedavg, "FedACG with λ = β = 0 has no look-ahead and no proximal term"
    if kind is FedNova and cfg.local_steps is not None:
        k = cfg.local_steps
        a_is_tau = (isinstance(alg.optimizer, Adam) or not alg.mu) and float(alg.normaliser(k, cfg.lr)) == k
        if alg.tau_eff == "a" or a_is_tau:
            return (fedavg if not alg.mu else ("fedprox", alg.mu, alg.weighting),
                    f"FedNova's normalisation cancels when every client takes the same K = {k} local steps")
    return None


def equal_by_construction(configs: dict[str, Config]) -> list[str]:
    """One note for each group of ``configs`` (labelled as ``build_configs`` labels them) that are one method by
    construction: FedProx μ = 0, MOON μ = 0, SCAFFOLD α = 0, FedACG λ = β = 0 (FedAvg, weighted alike) and FedNova
    at equal K (FedAvg, or FedProx with its μ), and only those (the comment above; a pair not named may still train
    alike)."""
    from .algorithms import ALGORITHMS

    groups: dict[tuple, list[tuple[str, str]]] = {}
    for label, cfg in configs.items():
        reduced = _reduced(cfg)
        if reduced is None:
            continue
        rest = {k: v for k, v in cfg.to_dict().items() if k not in ("algorithm", "algorithm_args", "optimizer")}
        optimizer = cfg.optimizer or ALGORITHMS[cfg.algorithm].optimizer_for(cfg.algorithm_args)
        key = (reduced[0], optimizer, json.dumps(rest, sort_keys=True, default=str))
        groups.setdefault(key, []).append((label, reduced[1]))
    notes = []
    for members in groups.values():
        if len(members) > 1:
            labels = [label for label, _ in members]
            reasons = list(dict.fromkeys(why for _, why in members if why))
            why = f" ({'; '.join(reasons)})" if reasons else ""
            notes.append(f"{', '.join(labels[:-1])} and {labels[-1]} are one method by construction here{why}: "
                         f"their curves coincide, up to rounding.")
    return notes


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


PLOT_INCHES, PLOT_DPI = (9.5, 3.2), 90  # 855 x 288 pixels, shown at that size (not stretched to the page's width)


def plot_png(curves: dict[str, pd.DataFrame], rounds: int) -> bytes:
    """``plot_figure`` as PNG bytes."""
    buffer = io.BytesIO()
    plot_figure(curves, rounds).savefig(buffer, format="png")
    return buffer.getvalue()


def plot_figure(curves: dict[str, pd.DataFrame], rounds: int):
    """Accuracy and loss against rounds for every method, the round axis with whole-number ticks only (a Figure,
    no pyplot: safe off the main thread)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=PLOT_INCHES, dpi=PLOT_DPI, layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, (column, title) in zip(axes, METRICS):
        for label, frame in curves.items():
            scored = frame.dropna(subset=[column])
            ax.plot(scored["round"], scored[column], marker="o", markersize=3, label=label)
        ax.set(xlabel="round", title=title, xlim=(0, max(rounds, 1)))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    if curves:
        axes[0].legend(fontsize=8)
    return fig


class Panel:
    """The widgets around ``Choice``/``Session``: ``panel.widget`` is what a notebook displays; ``run(wait=True)``
    presses Run and waits (what a test or a headless notebook does).

    Laid out so that the curves show without scrolling at 1280 x 800 under Voila, below the notebook's introduction
    (tests/test_browser.py): the settings in two columns, the algorithms in two, the plot at its own size and hidden
    until there is one. The "model" line is ``model_for``'s answer, what ``build_configs`` gives every Config; the
    note under the algorithms is ``equal_by_construction``'s. The number fields are not bounded: a bad value reaches
    Config, whose one-line refusal the status and the error box show, instead of being clamped in the browser."""

    def __init__(self, choice: Choice | None = None, cache=None):
        try:
            import ipywidgets as w
        except ImportError as err:
            raise FedkitError('fedkit.explore() needs ipywidgets: pip install "fedkit-torch[explore]"') from err
        c = choice or Choice()
        build_configs(c)  # a bad preset: Config's one-line error, not a widget's TraitError (or a silent clamp)
        self.cache, self.session, self.thread, self.device, self.model_name = cache, None, None, c.device, c.model
        style, field = {"description_width": "80px"}, {"width": "270px"}
        self.dataset = w.Dropdown(options=list(DATASETS), value=c.dataset, description="data set", style=style,
                                  layout=field)
        self.model = w.HTML(description="model", style=style, layout=field)
        self.partition = w.Dropdown(options=list(PARTITIONS), value=c.partition, description="partition",
                                    style=style, layout=field)
        self.partition_param = w.FloatText(value=c.partition_param or 0.0, style=style, layout=field)
        self.num_clients = w.IntText(value=c.num_clients, description="clients", style=style, layout=field)
        self.lr = w.FloatText(value=c.lr, description="lr (η_l)", style=style, layout=field)
        self.rounds = w.IntText(value=c.rounds, description="rounds", style=style, layout=field)
        self.local_steps = w.IntText(value=c.local_steps, description="local steps", style=style, layout=field)
        self.seed = w.IntText(value=c.seed, description="seed", style=style, layout=field)
        self.use, self.hyper = {}, {}
        rows = []
        for name, param in ALGORITHMS.items():
            self.use[name] = w.Checkbox(value=name in c.algorithms, description=name, indent=False,
                                        layout=w.Layout(width="100px"))
            row = [self.use[name]]
            if param is not None:
                value = c.algorithms.get(name, {}).get(param[0], param[1])
                self.hyper[name] = w.FloatText(value=value, description=param[0], layout=w.Layout(width="160px"),
                                               style={"description_width": "45px"})
                row.append(self.hyper[name])
            rows.append(w.HBox(row, layout=w.Layout(width="270px")))
        self.note = w.HTML(value="", layout=w.Layout(max_width="540px"))
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", button_style="warning", icon="stop", disabled=True)
        self.progress = w.IntProgress(value=0, min=0, max=1, description="progress")
        self.status = w.Label(value="", layout=w.Layout(flex="1 1 auto"))
        self.error = w.HTML(value="")
        width, height = (round(inches * PLOT_DPI) for inches in PLOT_INCHES)
        self.plot = w.Image(format="png", layout=w.Layout(width=f"{width}px", height=f"{height}px", display="none"))
        self.table = w.HTML(value="")
        self.partition.observe(lambda _: self._label_partition_param(reset=True), "value")
        self._label_partition_param(reset=False)
        for widget in (self.dataset, self.partition, self.partition_param, self.num_clients, self.lr, self.rounds,
                       self.local_steps, self.seed, *self.use.values(), *self.hyper.values()):
            widget.observe(lambda _: self._refresh(), "value")
        self.run_button.on_click(lambda _: self.run())
        self.stop_button.on_click(lambda _: self.stop())
        for widget, cls in ((self.run_button, "fedkit-run"), (self.stop_button, "fedkit-stop"),
                            (self.error, "fedkit-error"), (self.plot, "fedkit-plot"), (self.status, "fedkit-status"),
                            (self.table, "fedkit-table"), (self.lr, "fedkit-lr"), (self.rounds, "fedkit-rounds"),
                            (self.dataset, "fedkit-dataset"), (self.num_clients, "fedkit-clients"),
                            (self.local_steps, "fedkit-local-steps"), (self.progress, "fedkit-progress"),
                            (self.model, "fedkit-model"), (self.note, "fedkit-note"),
                            (self.partition, "fedkit-partition"), (self.partition_param, "fedkit-partition-param"),
                            *((box, f"fedkit-use-{name}") for name, box in self.use.items()),
                            *((box, f"fedkit-hyper-{name}") for name, box in self.hyper.items())):
            widget.add_class(cls)  # stable hooks for the browser test
        settings = w.HBox([w.VBox([self.dataset, self.model, self.partition, self.partition_param, self.num_clients]),
                           w.VBox([self.lr, self.rounds, self.local_steps, self.seed])])
        half = (len(rows) + 1) // 2
        methods = w.VBox([w.HTML("<b>algorithms</b>"), w.HBox([w.VBox(rows[:half]), w.VBox(rows[half:])]),
                          self.note])
        self.widget = w.VBox([w.HBox([settings, methods], layout=w.Layout(flex_flow="row wrap")),
                              w.HBox([self.run_button, self.stop_button, self.progress, self.status]),
                              self.error, self.plot, self.table])
        self._refresh()

    def _label_partition_param(self, reset: bool) -> None:
        param = PARTITIONS[self.partition.value]
        self.partition_param.disabled = param is None
        self.partition_param.description = param[0] if param else "(no parameter)"
        if param is not None and reset:
            self.partition_param.value = param[1]

    def _refresh(self) -> None:
        """The model line for the data set, and the note on methods that are one by construction (none while a
        value is bad: Run then says why)."""
        import html

        name, args = model_for(self.dataset.value, self.model_name)
        self.model.value = f'<span style="white-space:nowrap">{html.escape(describe_model(name, args))}</span>'
        try:
            configs = build_configs(self.choice())
        except FedkitError:
            configs = {}
        self._show_note(configs)

    def _show_note(self, configs: dict[str, Config]) -> None:
        import html

        notes = equal_by_construction(configs)
        self.note.value = "".join(f'<div style="font-size:90%;color:#555;line-height:1.3">note: {html.escape(n)}'
                                  f"</div>" for n in notes)

    def choice(self) -> Choice:
        algorithms = {name: ({ALGORITHMS[name][0]: self.hyper[name].value} if name in self.hyper else {})
                      for name, box in self.use.items() if box.value}
        return Choice(dataset=self.dataset.value, partition=self.partition.value,
                      partition_param=self.partition_param.value, num_clients=self.num_clients.value,
                      algorithms=algorithms, lr=self.lr.value, rounds=self.rounds.value,
                      local_steps=self.local_steps.value, seed=self.seed.value, device=self.device,
                      model=self.model_name)

    def run(self, wait: bool = False) -> None:
        """Build the configs and train them in a thread, so the Stop button stays live; ``wait`` joins the thread.
        The last run's curves, table, progress and status go first: a bad value leaves only its one-line message
        (in the status and the error box), and nothing runs."""
        if self.thread is not None and self.thread.is_alive():
            return
        self.error.value, self.table.value, self.progress.value = "", "", 0
        self._show_plot(None)
        try:
            configs = build_configs(self.choice())
        except FedkitError as err:
            self._show_error(err)
            self.status.value = f"not run: {err}"
            return
        self._show_note(configs)
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
            self.status.value = f"failed: {err}"
        except Exception as err:  # noqa: BLE001 - a bug: show it in one line rather than lose it in a thread
            self._show_error(f"{type(err).__name__}: {err}")
            self.status.value = f"failed: {type(err).__name__}: {err}"
        finally:
            self.run_button.disabled, self.stop_button.disabled = False, True

    def _update(self, session: Session) -> None:
        self.progress.value = session.done_rounds
        self.status.value = f"round {session.done_rounds}/{session.total_rounds}"
        self._show_plot(plot_png(session.curves, max(cfg.rounds for cfg in session.configs.values())))

    def _show_plot(self, png: bytes | None) -> None:
        """The curves, or none: the image is hidden while it has nothing to show (an empty one is a broken icon)."""
        if png:
            self.plot.value, self.plot.layout.display = png, None
        else:
            self.plot.layout.display, self.plot.value = "none", b""

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
