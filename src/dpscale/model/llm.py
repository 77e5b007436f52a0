"""Transformer facts the sharded strategies need: model presets, layers, FLOPs, activations.

Model presets are data files shipped in the package (``models/<name>.toml``), each value with
the published config it comes from: ``params``, ``layers`` (the transformer blocks, the units
FSDP wraps), ``hidden_size``, ``heads``, ``vocab_size`` and ``seq_len`` (the pretraining
sequence length).

Where the layers are not given they are estimated from the parameters. A decoder block holds
about ``12 h^2`` parameters (attention 4 h^2, MLP 8 h^2: Kaplan et al. 2020, arXiv 2001.08361,
Table 1) and published LLMs keep ``h`` about 128 times the layer count (GPT-3 175B: 12,288 /
96; Llama 3 8B: 4,096 / 32; Llama 3.1 405B: 16,384 / 126), so ``P = 12 L (128 L)^2`` and
``L = (P / 196,608)^(1/3)``; ``h = sqrt(P / (12 L))`` where the hidden size is not given.

Training FLOPs per token: ``6 P + 12 L h s`` (Chowdhery et al. 2022, PaLM, arXiv 2204.02311,
appendix B: the matrix multiplications of forward and backward, 6 per parameter, plus the
attention's ``12 L H Q T`` with ``H Q = h`` and ``T = s``). Model FLOPs utilisation (MFU) is
achieved FLOPs over the device's peak, so a stated MFU gives ``tokens/s = MFU peak / FLOPs
per token``.

Activations per device (bytes), Korthikanti et al. 2022 (arXiv 2205.05198) sec. 4.1: a
GPT layer keeps ``s b h (34 + 5 a s / h)`` bytes of 16-bit activations for ``b`` sequences of
``s`` tokens; FlashAttention (and PyTorch's fused SDPA) keeps no attention scores, which
removes the ``5 a s / h`` term: ``34 s b h`` per layer. Of the 34, the MLP keeps 19 (its
input 2, the GELU's input and output 8 + 8 at an inner size ``f = 4h``, a dropout mask 1):
``3 + 4 f / h`` at any ``f``. A Llama block's MLP is SwiGLU (``w2(silu(w1 x) * w3 x)``) and
it has no dropout: its MLP keeps the input 2 and four tensors of the inner size (``w1 x``,
``silu(w1 x)``, ``w3 x`` and their product, each ``2 f``), ``2 + 8 f / h``, and its attention
10 instead of 11 (no dropout mask): ``16 + 8 f / h``, 44 for Llama 3 (``f = 3.5 h``), not 34
(:func:`layer_activation_sbh`). Full activation checkpointing keeps each layer's 16-bit
input, ``2 s b h`` per layer, and one layer's activations while it is recomputed. The output
layer's fp32 logits for the loss add ``4 s b V``. Checkpointing also
runs each forward once more in backward: backward becomes 3/4 of the compute (forward 2, the
recomputed forward 2, backward 4 FLOPs per parameter and token).

>>> round(float(default_layers(8.03e9))), round(float(default_layers(70.55e9)))
(34, 71)
>>> round(float(flops_per_token(8.03e9, layers=32, hidden_size=4096, seq_len=8192)) / 1e9, 1)
61.1
>>> round(float(activation_bytes(seq_len=8192, micro_batch=1, hidden_size=4096, layers=32,
...     vocab_size=128256, checkpointing=True)) / 2**30, 2)
6.98
>>> layer_activation_sbh(4096, 4 * 4096, "gelu"), layer_activation_sbh(4096, 14336, "swiglu")
(34.0, 44.0)
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpscale.model.presets import shipped_names, unknown_name

__all__ = [
    "ASPECT_RATIO",
    "CHECKPOINTED_BACKWARD_FRACTION",
    "ModelPreset",
    "activation_bytes",
    "default_hidden_size",
    "default_layers",
    "flops_per_token",
    "layer_activation_sbh",
    "load_model",
    "model_names",
]

ASPECT_RATIO = 128
"""Hidden size over layers of published LLMs (GPT-3 175B, Llama 3 8B and 405B)."""
PARAMS_PER_LAYER_H2 = 12
"""Parameters of one decoder block in units of h^2 (Kaplan et al. 2020, Table 1)."""
ACTIVATION_BYTES_PER_SBH = 34
"""Korthikanti et al. 2022 sec. 4.1, without the attention scores (FlashAttention): a GPT
layer, the default where the block's shape is not known."""
MLP_KINDS = ("gelu", "swiglu")
"""The MLPs a block may have: GPT's (two matrices, GELU) or Llama's SwiGLU (three)."""
CHECKPOINT_BYTES_PER_SBH = 2
"""A checkpointed layer's 16-bit input."""
LOGIT_BYTES = 4
"""fp32 logits per token and vocabulary entry, kept for the loss."""
CHECKPOINTED_BACKWARD_FRACTION = 3 / 4
"""Backward's share of compute when each forward runs again in backward: (2 + 4) / 8."""


@dataclass(frozen=True)
class ModelPreset:
    """A published model's shape, with where it comes from."""

    name: str
    title: str
    params: float
    layers: int
    hidden_size: int
    ffn_hidden_size: int
    """The MLP's inner size (Llama's ``intermediate_size``; 4 h in GPT and MPT)."""
    mlp: str
    """One of :data:`MLP_KINDS`."""
    heads: int
    vocab_size: int
    seq_len: int
    source: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _files() -> Any:
    return resources.files("dpscale.model").joinpath("models")


@cache
def model_names() -> tuple[str, ...]:
    """Names of the shipped model presets, sorted."""
    return shipped_names(_files())


@cache
def load_model(name: str) -> ModelPreset:
    """The model preset ``name``; :class:`InputError` on ``model`` when there is none."""
    if name not in model_names():
        raise unknown_name("model", "model", name, model_names())
    data = tomllib.loads(_files().joinpath(f"{name}.toml").read_text(encoding="utf-8"))
    return ModelPreset(
        name=name,
        title=str(data["title"]),
        params=float(data["params"]),
        layers=int(data["layers"]),
        hidden_size=int(data["hidden_size"]),
        ffn_hidden_size=int(data["ffn_hidden_size"]),
        mlp=str(data["mlp"]),
        heads=int(data["heads"]),
        vocab_size=int(data["vocab_size"]),
        seq_len=int(data["seq_len"]),
        source=str(data["source"]),
    )


def default_layers(params: ArrayLike) -> Any:
    """Layers of a decoder of ``params`` parameters at the usual aspect ratio (at least 1)."""
    per_layer_cubed = PARAMS_PER_LAYER_H2 * ASPECT_RATIO**2
    return np.maximum(np.cbrt(np.asarray(params, dtype=float) / per_layer_cubed), 1.0)


def default_hidden_size(params: ArrayLike, layers: ArrayLike) -> Any:
    """``h = sqrt(P / (12 L))``.

    >>> round(float(default_hidden_size(8.03e9, 32)))
    4573
    """
    p = np.asarray(params, dtype=float)
    return np.sqrt(p / (PARAMS_PER_LAYER_H2 * np.asarray(layers, dtype=float)))


def flops_per_token(
    params: ArrayLike, *, layers: ArrayLike, hidden_size: ArrayLike, seq_len: ArrayLike
) -> Any:
    """Training FLOPs per token: ``6 P + 12 L h s`` (PaLM appendix B)."""
    p = np.asarray(params, dtype=float)
    attention = 12 * np.asarray(layers, float) * np.asarray(hidden_size, float)
    return 6 * p + attention * np.asarray(seq_len, dtype=float)


def layer_activation_sbh(hidden_size: float, ffn_hidden_size: float, mlp: str) -> float:
    """Bytes one layer keeps per token and unit of hidden size (module doc): Korthikanti's 34
    with the MLP's share at its inner size, ``18 + 4 f / h`` for GELU, ``16 + 8 f / h`` for
    SwiGLU (no dropout)."""
    ratio = ffn_hidden_size / hidden_size
    if mlp == "swiglu":
        return 16.0 + 8.0 * ratio
    return ACTIVATION_BYTES_PER_SBH - 16.0 + 4.0 * ratio


def activation_bytes(
    *,
    seq_len: ArrayLike,
    micro_batch: ArrayLike,
    hidden_size: ArrayLike,
    layers: ArrayLike,
    vocab_size: ArrayLike = 0,
    checkpointing: bool = False,
    per_layer_sbh: float = ACTIVATION_BYTES_PER_SBH,
) -> Any:
    """Bytes of activations one device keeps for a micro-batch (module doc); a layer keeps
    ``per_layer_sbh`` bytes per token and unit of hidden size (:func:`layer_activation_sbh`)."""
    sbh = (
        np.asarray(seq_len, dtype=float)
        * np.asarray(micro_batch, dtype=float)
        * np.asarray(hidden_size, dtype=float)
    )
    count = np.asarray(layers, dtype=float)
    if checkpointing:
        kept = CHECKPOINT_BYTES_PER_SBH * sbh * count + per_layer_sbh * sbh
    else:
        kept = per_layer_sbh * sbh * count
    tokens = np.asarray(seq_len, dtype=float) * np.asarray(micro_batch, dtype=float)
    return kept + LOGIT_BYTES * tokens * np.asarray(vocab_size, dtype=float)
