"""Model zoo (§20): exact parameter counts, shapes, torch.func use (vmap over clients), errors."""
from __future__ import annotations

import urllib.error

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from fedkit.errors import ConfigError, DataNotFoundError
from fedkit.models import MODELS, LSTMStack, build_model, count_parameters


@pytest.mark.parametrize(
    "name, input_shape, num_classes, options, expected",
    [
        ("cnn", (1, 28, 28), 10, {}, 44_426),
        ("cnn", (3, 32, 32), 10, {}, 62_006),
        ("cnn", (1, 28, 28), 62, {}, 48_846),
        ("mlp", (123,), 2, {}, 4_650),
        ("lenet5", (1, 28, 28), 10, {}, 61_706),
        ("resnet18", (3, 32, 32), 10, {}, 11_173_962),
        ("resnet18", (3, 32, 32), 100, {}, 11_220_132),
        ("resnet18", (3, 32, 32), 10, {"norm": "gn"}, 11_173_962),
        ("vgg16", (3, 32, 32), 10, {}, 14_714_688 + 512 * 512 + 512 + 512 * 10 + 10),
        ("vgg16", (3, 32, 32), 10, {"freeze_features": True}, 512 * 512 + 512 + 512 * 10 + 10),
        ("lstm", (80,), 80, {}, 819_920),
        ("lstm", (80,), 80, {"hidden": 64}, 640 + (4 * 64 * 72 + 8 * 64) + (4 * 64 * 128 + 8 * 64) + 64 * 80 + 80),
        ("fc500", (784,), 47, {}, 416_047),
        ("fc500", (1, 28, 28), 47, {"hidden_layers": 2}, 666_547),
        ("leaf_cnn", (1, 28, 28), 62, {}, 6_603_710),
        ("tf_cnn", (3, 32, 32), 10, {}, 797_962),
    ],
)
def test_parameter_counts(name, input_shape, num_classes, options, expected):
    assert count_parameters(build_model(name, input_shape, num_classes, **options)) == expected


def test_vgg_trunk_matches_section_20_5():
    model = build_model("vgg16", (3, 32, 32), 10)
    assert sum(p.numel() for p in model.features.parameters()) == 14_714_688
    assert sum(isinstance(m, torch.nn.Conv2d) for m in model.features) == 13


def _batch(input_shape, num_classes, n, *lead):
    """Random inputs [*lead, n, *input_shape] (token ids for 1-D shapes of the lstm) and labels."""
    y = torch.randint(num_classes, (*lead, n))
    if input_shape == (80,):
        return torch.randint(80, (*lead, n, *input_shape)), y
    return torch.rand(*lead, n, *input_shape), y


# (name, input_shape, num_classes, options): small inputs, every model and variant that vmap must handle.
VMAP_CASES = [
    ("cnn", (1, 28, 28), 10, {}),
    ("cnn", (3, 16, 16), 10, {}),
    ("mlp", (123,), 2, {}),
    ("lenet5", (1, 28, 28), 10, {}),
    ("resnet18", (3, 8, 8), 10, {"norm": "gn"}),
    ("vgg16", (3, 32, 32), 10, {}),
    ("lstm", (80,), 80, {}),
    ("fc500", (1, 28, 28), 47, {"hidden_layers": 2}),
    ("leaf_cnn", (1, 28, 28), 62, {}),
    ("tf_cnn", (3, 32, 32), 10, {}),
]


@pytest.mark.parametrize("name, input_shape, num_classes, options", VMAP_CASES)
def test_forward_shape(name, input_shape, num_classes, options):
    torch.manual_seed(0)
    model = build_model(name, input_shape, num_classes, **options)
    x, _ = _batch(input_shape, num_classes, 2)
    out = model(x)
    assert out.shape == (2, num_classes) and out.dtype == torch.float32


def test_forward_shape_other_image_sizes():
    assert build_model("cnn", (3, 64, 64), 10)(torch.rand(2, 3, 64, 64)).shape == (2, 10)
    assert build_model("lenet5", (3, 32, 32), 10)(torch.rand(2, 3, 32, 32)).shape == (2, 10)
    assert build_model("mlp", (2, 3), 4)(torch.rand(5, 2, 3)).shape == (5, 4)


@pytest.mark.parametrize(
    "name, side", [("cnn", 16), ("lenet5", 12), ("leaf_cnn", 4), ("tf_cnn", 18), ("vgg16", 32)]
)
def test_smallest_accepted_image_runs(name, side):
    """The minimum side named in the shape error is exact: it builds and runs, one less is refused."""
    assert build_model(name, (3, side, side), 5)(torch.rand(1, 3, side, side)).shape == (1, 5)
    with pytest.raises(ConfigError, match=f">= {side}"):
        build_model(name, (3, side - 1, side), 5)


def test_resnet18_batchnorm_forward_backward():
    torch.manual_seed(0)
    model = build_model("resnet18", (3, 32, 32), 10)
    x, y = _batch((3, 32, 32), 10, 2)
    F.cross_entropy(model(x), y).backward()
    assert all(p.grad is not None for p in model.parameters())
    assert model.blocks[0].norm1.num_batches_tracked == 1


def _flat_loss(model):
    """The engines' view: a loss of one flat parameter vector, and the model's current vector."""
    names, shapes = zip(*[(n, p.shape) for n, p in model.named_parameters()], strict=True)
    sizes = [s.numel() for s in shapes]

    def loss(w, x, y):
        params = {n: t.view(s) for n, t, s in zip(names, w.split(sizes), shapes, strict=True)}
        return F.cross_entropy(functional_call(model, params, (x,)), y)

    return loss, torch.cat([p.detach().flatten() for p in model.parameters()])


@pytest.mark.parametrize("name, input_shape, num_classes, options", VMAP_CASES)
def test_vmap_grad_matches_loop(name, input_shape, num_classes, options):
    torch.manual_seed(0)
    n_clients, batch = 3, (2 if name in ("resnet18", "vgg16") else 4)
    model = build_model(name, input_shape, num_classes, **options)
    loss, w0 = _flat_loss(model)
    weights = w0 + 0.01 * torch.randn(n_clients, w0.numel())
    x, y = _batch(input_shape, num_classes, batch, n_clients)
    batched = vmap(grad(loss))(weights, x, y)
    looped = torch.stack([grad(loss)(weights[i], x[i], y[i]) for i in range(n_clients)])
    torch.testing.assert_close(batched, looped, atol=1e-5, rtol=1e-5)


def test_lstm_stack_equals_nn_lstm():
    torch.manual_seed(0)
    reference = torch.nn.LSTM(8, 16, 2, batch_first=True)
    ours = LSTMStack(8, 16, 2)
    assert [(n, p.shape) for n, p in ours.named_parameters()] == [
        (n, p.shape) for n, p in reference.named_parameters()
    ]
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(3, 12, 8, requires_grad=True)
    expected, _ = reference(x)
    out = ours(x)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    (g_ours,) = torch.autograd.grad(out.square().sum(), x)
    (g_ref,) = torch.autograd.grad(expected.square().sum(), x)
    torch.testing.assert_close(g_ours, g_ref, atol=1e-5, rtol=1e-5)


def test_lstm_model_uses_nn_lstm_parameter_names():
    model = build_model("lstm", (80,), 80)
    reference = torch.nn.LSTM(8, 256, 2, batch_first=True)
    model.lstm.load_state_dict(reference.state_dict())  # strict: same names and shapes


def test_no_inplace_activations():
    for name, input_shape, num_classes, options in VMAP_CASES:
        for module in build_model(name, input_shape, num_classes, **options).modules():
            assert not getattr(module, "inplace", False), (name, module)


def test_unknown_model_lists_names():
    with pytest.raises(ConfigError, match="'transformer'") as err:
        build_model("transformer", (3, 32, 32), 10)
    assert all(name in str(err.value) for name in MODELS)


def test_unknown_option_is_named():
    with pytest.raises(ConfigError, match="'width'.*'norm'"):
        build_model("resnet18", (3, 32, 32), 10, width=2)
    with pytest.raises(ConfigError, match="'hidden'"):
        build_model("cnn", (1, 28, 28), 10, hidden=(3,))


@pytest.mark.parametrize(
    "name, input_shape, expected",
    [
        ("cnn", (28, 28), r"\(C, H, W\) with H, W >= 16"),
        ("cnn", (1, 8, 8), r"H, W >= 16.*\(1, 8, 8\)"),
        ("tf_cnn", (3, 17, 17), r"H, W >= 18"),
        ("vgg16", (3, 28, 28), r"H, W >= 32"),
        ("lstm", (80, 8), r"\(seq_len,\)"),
        ("mlp", (), "non-empty"),
        ("mlp", (0, 3), "positive ints"),
    ],
)
def test_bad_input_shape_says_what_was_expected(name, input_shape, expected):
    with pytest.raises(ConfigError, match=expected):
        build_model(name, input_shape, 10)


@pytest.mark.parametrize(
    "name, options, bad",
    [
        ("resnet18", {"norm": "ln"}, "'ln'"),
        ("mlp", {"hidden": 32}, "32"),
        ("fc500", {"hidden_layers": 0}, "0"),
        ("vgg16", {"head_hidden": -1}, "-1"),
        ("vgg16", {"pretrained": "yes"}, "'yes'"),
        ("lstm", {"vocab_size": 0}, "0"),
        ("lstm", {"hidden": 0}, "hidden"),
    ],
)
def test_bad_option_value_is_named(name, options, bad):
    shape = {"mlp": (123,), "fc500": (784,), "lstm": (80,)}.get(name, (3, 32, 32))
    with pytest.raises(ConfigError, match=bad):
        build_model(name, shape, 10, **options)


def test_bad_num_classes():
    with pytest.raises(ConfigError, match="num_classes.*0"):
        build_model("cnn", (1, 28, 28), 0)


def _patch_imagenet_weights(monkeypatch, get_state_dict):
    from torchvision.models import VGG16_Weights

    monkeypatch.setattr(VGG16_Weights, "get_state_dict", lambda self, **kw: get_state_dict())


def test_vgg_pretrained_offline_raises_data_not_found(monkeypatch):
    def offline():
        raise urllib.error.URLError("no network")

    _patch_imagenet_weights(monkeypatch, offline)
    with pytest.raises(DataNotFoundError, match="pretrained=True.*vgg16-397923af.pth"):
        build_model("vgg16", (3, 32, 32), 10, pretrained=True)
    with pytest.raises(ConfigError, match=r"\(3, H, W\)"):
        build_model("vgg16", (1, 32, 32), 10, pretrained=True)


def test_vgg_pretrained_loads_trunk_and_freezes(monkeypatch):
    source = build_model("vgg16", (3, 32, 32), 10)
    state = {f"features.{k}": v for k, v in source.features.state_dict().items()}
    state["classifier.0.weight"] = torch.zeros(4096, 25088)  # torchvision's head is ignored
    _patch_imagenet_weights(monkeypatch, lambda: state)
    model = build_model("vgg16", (3, 32, 32), 10, pretrained=True, freeze_features=True)
    for k, v in source.features.state_dict().items():
        torch.testing.assert_close(model.features.state_dict()[k], v)
    assert not any(p.requires_grad for p in model.features.parameters())
    assert all(p.requires_grad for p in model.classifier.parameters())


def test_mlp_init_follows_fcnet():
    model = build_model("mlp", (123,), 2)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert [m.out_features for m in linears] == [32, 16, 8, 2]
    assert all(torch.all(m.bias == 0.1) for m in linears)
    assert 0.08 < linears[0].weight.std().item() < 0.12


def test_feddual_lenet_shapes_and_keras_per_position_dense():
    """164,116 parameters on (1, 28, 28); the 120-unit Dense acts on the 6 channels of each of the 4×4 positions."""
    torch.manual_seed(0)
    model = build_model("feddual_lenet", (1, 28, 28), 10)
    assert count_parameters(model) == 164_116
    x = torch.randn(2, 1, 28, 28)
    positions = model.features(x)  # [2, 6, 4, 4]
    by_hand = torch.tanh(torch.einsum("bchw,oc->bhwo", positions, model.position.weight) + model.position.bias)
    torch.testing.assert_close(model(x), model.classifier(by_hand))
