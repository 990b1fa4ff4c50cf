"""FedBN: clients keep their BatchNorm tensors and statistics; the server averages the rest."""
import copy

import numpy as np
import pytest
import torch
from test_algorithms import ENGINES
from test_engine import bn_module, toy_data
from test_run import digits_config
from torch import nn

from fedkit import run
from fedkit.algorithms import Settings, make_algorithm
from fedkit.engine import ClientInput, FlatModel, SequentialEngine, evaluate, make_plan
from fedkit.optim import SGD


def test_a_client_trains_from_the_global_tensors_and_its_own_batchnorm_and_uploads_no_bn():
    x, y = toy_data()
    fm = FlatModel(bn_module())  # Linear(12, 8) | BatchNorm1d(8) | Linear(8, 3): BN at coordinates 104–119
    alg = make_algorithm("fedbn", Settings(optimizer=SGD(lr=0.1), layout=fm.layout))
    bn = torch.arange(104, 120)
    torch.testing.assert_close(alg.index("cpu"), bn)
    w0 = fm.flat()
    own = torch.linspace(0.5, 1.5, 16)  # the client's BN affine tensors from an earlier round
    stats = {"2.running_mean": torch.full((1, 8), 0.2), "2.running_var": torch.full((1, 8), 2.0),
             "2.num_batches_tracked": torch.tensor([3])}
    plan = make_plan(0, np.arange(30), 10, 3, np.random.default_rng(0))
    c = ClientInput(w0[None], {}, {"bn": own[None]}, torch.tensor([3.0]), 0.1, 1)
    result = SequentialEngine(fm, alg, "classification", x, y).train(c, [plan], stats)

    net = copy.deepcopy(fm.module).train()  # the reference: a plain loop from (global non-BN, own BN, own stats)
    with torch.no_grad():
        net[2].weight.copy_(own[:8])
        net[2].bias.copy_(own[8:])
        net[2].running_mean.fill_(0.2)
        net[2].running_var.fill_(2.0)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for k in range(3):
        opt.zero_grad()
        nn.functional.cross_entropy(net(x[plan.indices[k]]), y[plan.indices[k]]).backward()
        opt.step()
    trained = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    delta = result.uploads["delta"][0]
    assert (delta[bn] == 0).all()
    keep = torch.ones(fm.dim, dtype=torch.bool)
    keep[bn] = False
    torch.testing.assert_close(delta[keep], (trained - w0)[keep], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(result.kept["bn"][0], trained[bn], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(result.buffers["2.running_mean"][0], net[2].running_mean)
    assert alg.bytes_up(result.uploads).item() == 4 * (fm.dim - 16)


def test_client_models_carry_each_clients_batchnorm():
    fm = FlatModel(bn_module())
    alg = make_algorithm("fedbn", Settings(layout=fm.layout))
    w = fm.flat()
    kept = {"bn": torch.arange(32.0).view(2, 16)}
    models = alg.client_models(w, kept)
    torch.testing.assert_close(models[:, 104:120], kept["bn"])
    torch.testing.assert_close(models[:, :104], w[:104].expand(2, -1))


@pytest.mark.parametrize("engine", ENGINES)
def test_without_batchnorm_it_is_fedavg(engine):
    cfg = digits_config(engine=engine)
    fedbn = run(cfg.replace(algorithm="fedbn"), cache=False, progress=False)
    fedavg = run(cfg.replace(algorithm_args={"weighting": "uniform"}), cache=False, progress=False)
    np.testing.assert_allclose(fedbn.weights.numpy(), fedavg.weights.numpy(), rtol=1e-6, atol=1e-7)
    assert "test_accuracy_clients" not in fedbn.rounds  # every client's model is the global one


def test_the_federation_reports_the_mean_over_the_clients_own_models():
    from fedkit.federation import Federation

    fed = Federation(digits_config(algorithm="fedbn", model="resnet18", model_args={"norm": "bn"}, num_clients=3,
                                   clients_per_round=3, rounds=1, local_steps=1))
    s = fed.initial()
    s = next(fed.rounds(s)).after
    scores = fed.evaluate_all(s)
    models = fed.algorithm.client_models(s.w, s.kept)
    each = [evaluate(fed.fm, m, fed.x_test, fed.y_test, fed.task, {k: v[i] for k, v in s.buffers.items()})
            for i, m in enumerate(models)]
    assert scores["test_accuracy_clients"] == pytest.approx(np.mean([a for a, _ in each]))
    assert not torch.equal(models[0], models[1])  # each its own BatchNorm
