"""The kit features of lessons 09 and 10: the feature_shift data set (fedkit/data/shift.py), the quadratic toy with
unequal client data (fedkit/data/unequal.py) and the small BatchNorm MLP (fedkit/models/bn.py)."""
import numpy as np
import pytest
import torch

from fedkit import Config, Federation
from fedkit.data import load_dataset
from fedkit.data.shift import SCANNERS, _feature_shift, domain_rows, shift_images, user_domain
from fedkit.data.toy import quadratic
from fedkit.errors import ConfigError
from fedkit.models import MODELS, build_model, count_parameters


def test_feature_shift_gives_each_user_its_domain_and_tests_every_domain():
    base, data = load_dataset("mnist_5k"), load_dataset("feature_shift")
    assert data.x_train.shape == base.x_train.shape and torch.equal(data.y_train, base.y_train)
    assert len(data.x_test) == 4 * len(base.x_test) and torch.equal(data.y_test, base.y_test.repeat(4))
    assert data.users.tolist()[:10] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1] and set(data.users) == set(range(8))
    domain = user_domain(data.users, len(SCANNERS))
    clean = torch.as_tensor(domain == 0)
    assert torch.equal(data.x_train[clean], base.x_train[clean])  # domain 0: the images as they are
    faded = torch.as_tensor(domain == 1)
    assert torch.allclose(data.x_train[faded], 0.4 * base.x_train[faded] + 0.3)
    assert torch.allclose(data.x_test[domain_rows(data, 1, 4)], 0.4 * base.x_test + 0.3)
    assert data.x_train.min() >= 0 and data.x_train.max() <= 1 and data.x_test.max() <= 1


def test_feature_shift_is_the_same_data_every_time():
    first = _feature_shift.__wrapped__("digits", (tuple(sorted({"noise": 0.2}.items())),), 2)
    second = _feature_shift.__wrapped__("digits", (tuple(sorted({"noise": 0.2}.items())),), 2)
    assert torch.equal(first.x_train, second.x_train) and torch.equal(first.x_test, second.x_test)


def test_shift_images():
    x = torch.rand(3, 1, 8, 8)
    assert torch.equal(shift_images(x), x)
    assert torch.allclose(shift_images(x, contrast=-1.0, brightness=1.0), 1 - x)
    assert torch.allclose(shift_images(x, rotate=90.0), torch.rot90(x, 1, (2, 3)), atol=1e-5)  # counter-clockwise
    assert torch.equal(shift_images(x, noise=0.5, seed=1), shift_images(x, noise=0.5, seed=1))
    assert shift_images(x, brightness=0.5, rotate=45.0)[:, :, 0, 0].eq(0.5).all()  # corners: the background b


def test_the_natural_split_gives_client_u_user_u():
    cfg = Config(dataset="feature_shift", dataset_args={"base": "digits", "users": 4, "domains": [{}, {"noise": 0.1}]},
                 partition="natural", partition_args={}, num_clients=4, model="mlp_bn", rounds=1)
    fed = Federation(cfg)
    users = load_dataset(cfg.dataset, **cfg.dataset_args).users
    assert [set(users[p]) for p in fed.parts] == [{0}, {1}, {2}, {3}]


@pytest.mark.parametrize("args, message", [({"domains": "clean"}, "domains got .clean., which is none of list"),
                                           ({"domains": []}, "non-empty list"),
                                           ({"domains": [{"blur": 1.0}]}, r"unknown domain key\(s\) \['blur'\]"),
                                           ({"domains": [{"noise": -0.1}]}, "noise must be ≥ 0"),
                                           ({"domains": [{"contrast": "high"}]}, "contrast must be a finite number"),
                                           ({"users": 2}, "users=2 must be ≥ the number of domains"),
                                           ({"base": "mnist"}, "must be one of 'mnist_5k', 'digits'")])
def test_feature_shift_refuses_bad_options(args, message):
    with pytest.raises(ConfigError, match=message):
        load_dataset("feature_shift", **args)


def test_quadratic_unequal_is_the_toy_with_unequal_samples():
    data, toy = load_dataset("quadratic_unequal", samples=[1, 3]), quadratic(num_users=2, samples_per_user=1)
    assert data.users.tolist() == [0, 1, 1, 1] and torch.equal(data.x_test, toy.x_test)
    assert torch.equal(data.x_train, toy.x_test[[0, 1, 1, 1]])
    with pytest.raises(ConfigError, match="samples must be a non-empty list of integers ≥ 1"):
        load_dataset("quadratic_unequal", samples=[2, 0])
    with pytest.raises(ConfigError, match="samples names 3 users, centers 2"):
        load_dataset("quadratic_unequal", samples=[1, 1, 1], centers=[[0.0], [1.0]], curvatures=[[[1.0]], [[2.0]]])


def test_mlp_bn_normalises_its_hidden_layers():
    model = build_model("mlp_bn", (1, 28, 28), 10, hidden=[32, 16])
    assert MODELS["mlp_bn"] is type(model)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    assert [m.num_features for m in norms] == [32, 16]
    assert count_parameters(build_model("mlp_bn", (1, 28, 28), 10)) == 102_026
    assert model(torch.rand(5, 1, 28, 28)).shape == (5, 10)
    with pytest.raises(ConfigError, match="hidden must be a non-empty tuple"):
        build_model("mlp_bn", (1, 28, 28), 10, hidden=[])


def test_fedbn_keeps_each_clients_batchnorm_layers():
    shift = {"base": "digits", "users": 4, "domains": [{}, {"contrast": 0.5}]}
    cfg = Config(dataset="feature_shift", dataset_args=shift, partition="natural", partition_args={}, num_clients=4,
                 model="mlp_bn", model_args={"hidden": [16]}, algorithm="fedbn", rounds=2, local_steps=3, batch_size=16,
                 lr=0.1)
    fed = Federation(cfg)
    assert fed.engine_name == "sequential"  # buffers: the vectorized engine cannot carry them
    state = list(fed.rounds())[-1].after
    models = fed.algorithm.client_models(state.w, state.kept)
    assert not torch.equal(models[0], models[1])
    assert state.buffers["net.2.running_mean"].shape == (4, 16)
    assert not np.allclose(state.buffers["net.2.running_mean"][0], state.buffers["net.2.running_mean"][1])
