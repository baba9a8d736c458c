"""The exercises of the real model chapter (real-model.md): the attention
weights that ``output_attentions=True`` returns, averaged over the heads, and
GPT-2's ``Conv1D`` weights copied into ``attention_lib``.

The checks need no ``transformers``: the layer they hand to the reader's code
is a stand-in laid out as GPT-2's (`GPT2Attention`, with ``c_attn`` and
``c_proj``, ``Conv1D`` layers whose weight is ``(d_in, d_out)``), whose forward
computes what GPT-2's eager attention computes. The checker's tests compare it
with ``transformers``' own where that is installed."""

from __future__ import annotations

import functools
import itertools
from typing import Any

import torch
from attention_lib.hf import from_gpt2_attention
from attention_lib.masks import causal_mask
from attention_lib.multihead import MultiHeadAttention
from torch import nn

from ._core import (
    Exercise,
    Ways,
    WrongAnswerError,
    call,
    each_seed,
    expect,
    rows_sum_to_one,
    seed_weights,
    shares_memory,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("real_model")


class Conv1D(nn.Module):
    """GPT-2's linear layer, as ``transformers.pytorch_utils.Conv1D``:
    ``x @ weight + bias``, with ``weight`` of shape ``(nx, nf)``, inputs by
    outputs, the transpose of an ``nn.Linear``'s."""

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.nf, self.nx = nf, nx
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def __repr__(self) -> str:
        return f"Conv1D(nf={self.nf}, nx={self.nx})"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight + self.bias


class GPT2Attention(nn.Module):
    """A stand-in for one layer's attention of ``transformers``' GPT-2, with
    its parameters' names and shapes: ``c_attn`` (the queries', keys' and
    values' projections side by side) and ``c_proj``. Called on the block's
    ``ln_1`` output, it returns the layer's output (before the residual) and
    its attention weights, as GPT-2's eager attention does in eval mode."""

    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.split_size = embed_dim
        self.scaling = self.head_dim**-0.5
        self.c_attn = Conv1D(3 * embed_dim, embed_dim)
        self.c_proj = Conv1D(embed_dim, embed_dim)

    def forward(
        self, hidden_states: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        b, t, _ = hidden_states.shape
        qkv = self.c_attn(hidden_states).split(self.split_size, dim=2)
        # (b, t, embed_dim) -> (b, t, num_heads, head_dim)
        # -> (b, num_heads, t, head_dim)
        q, k, v = (
            y.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
            for y in qkv
        )
        # (b, h, t, head_dim) @ (b, h, head_dim, t) -> (b, h, t, t)
        scores = q @ k.transpose(-1, -2) * self.scaling
        hidden = causal_mask(t, device=scores.device)
        weights = torch.softmax(scores.masked_fill(hidden, -torch.inf), -1)
        # (b, h, t, head_dim) -> (b, t, h, head_dim) -> (b, t, embed_dim)
        out = (weights @ v).transpose(1, 2).reshape(b, t, self.embed_dim)
        return self.c_proj(out), weights


def _gpt2_layer(seed: int, embed_dim: int, num_heads: int) -> GPT2Attention:
    """A layer with random weights and biases: a model built from a config
    has zero biases, a trained one has not, and a bias left uncopied must
    show."""
    attn = GPT2Attention(embed_dim, num_heads)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in attn.parameters():
            parameter.copy_(0.5 * torch.randn(parameter.shape, generator=g))
    return attn


def _copied(
    attn: GPT2Attention,
    module: nn.Module,
    context_length: int,
    *,
    qkv_t: bool = True,
    proj_t: bool = True,
    order: tuple[int, ...] = (0, 1, 2),
    qkv_bias: bool = True,
    proj_bias: bool = True,
    reshaped: bool = False,
) -> MultiHeadAttention:
    """``attn``'s weights in a `MultiHeadAttention`, copied right or in one
    of the typical wrong ways: without a transpose, in another order, a
    bias left as the reader's ``module`` holds it, or c_attn's weight cut
    by ``reshape(3, d, d)``, which splits its rows, not its columns."""
    d = attn.embed_dim
    mha = MultiHeadAttention(
        d, d, context_length, 0.0, attn.num_heads, qkv_bias=True
    )
    w_attn: torch.Tensor = attn.c_attn.weight  # (d_in, 3 * d_out)
    b_attn: torch.Tensor = attn.c_attn.bias
    # 3 x (d_in, d_out); reshaped, each is d_in / 3 rows of every output
    weights = list(
        w_attn.reshape(3, d, d) if reshaped else w_attn.split(d, dim=1)
    )
    biases = b_attn.split(d)
    layers = (mha.W_query, mha.W_key, mha.W_value)
    theirs = [getattr(module, name, None) for name in _PROJECTIONS]
    with torch.no_grad():
        for layer, i, their in zip(layers, order, theirs, strict=True):
            layer.weight.copy_(weights[i].T if qkv_t else weights[i])
            if qkv_bias:
                layer.bias.copy_(biases[i])
            else:  # whatever the reader's layer holds: none is zero
                held = getattr(their, "bias", None)
                layer.bias.copy_(_or_zeros(held, layer.bias))
        w_proj = attn.c_proj.weight
        mha.out_proj.weight.copy_(w_proj.T if proj_t else w_proj)
        if proj_bias:
            mha.out_proj.bias.copy_(attn.c_proj.bias)
        else:
            held = getattr(getattr(module, "out_proj", None), "bias", None)
            mha.out_proj.bias.copy_(_or_zeros(held, mha.out_proj.bias))
    return mha


def _or_zeros(held: object, like: torch.Tensor) -> torch.Tensor:
    """The bias a reader's layer holds, or zeros where it has none."""
    if isinstance(held, torch.Tensor) and held.shape == like.shape:
        return held
    return torch.zeros_like(like)


_PROJECTIONS = ("W_query", "W_key", "W_value")


def _unpack3(pieces: tuple[torch.Tensor, ...]) -> None:
    """What ``w_q, w_k, w_v = pieces`` raises where the split went wrong."""
    _q, _k, _v = pieces


def _from_gpt2(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # head_dim >= 2: a (1, 1) block would hide a transpose
        num_heads, head_dim = 1 + seed % 3, 2 + seed % 2
        d = num_heads * head_dim
        b, t, context_length = 1 + seed % 2, 1 + (seed + 2) % 5, 8
        attn = _gpt2_layer(seed, d, num_heads)
        x = torch.randn(b, t, d, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            expected, _ = attn(x)
        w_attn: torch.Tensor = attn.c_attn.weight
        # The split along the inputs: one piece of (d, 3 * d) where three
        # were meant, or the transposed weight cut along its columns.
        splits = {
            "split_dim": [
                lambda: _unpack3(w_attn.split(d, dim=0)),
                lambda: _unpack3(w_attn.T.split(d, dim=1)),
            ]
        }
        seed_weights(seed)
        try:
            module = call(answer, attn, context_length, wrong=variants(splits))
        except WrongAnswerError as failure:
            said = str(failure.fields.get("error", ""))
            if "as parameter" in said:
                failure.hint = "assign"
            elif "in-place operation" in said:
                failure.hint = "no_grad"
            raise
        if not isinstance(module, nn.Module):
            name = getattr(answer, "__name__", "answer")
            raise WrongAnswerError(
                "not_module", "compare", name=name, got=type(module).__name__
            )
        with torch.no_grad():
            out = call(module, x)
        if isinstance(out, tuple) and out:
            out = out[0]

        def run(**how: Any) -> torch.Tensor:
            with torch.no_grad():
                mha = _copied(attn, module, context_length, **how)
                return mha(x)

        orders = [
            p for p in itertools.permutations(range(3)) if p != (0, 1, 2)
        ]
        ways: Ways = {
            "transpose": [
                lambda: run(qkv_t=False, proj_t=False),
                lambda: run(qkv_t=False),
                lambda: run(proj_t=False),
            ],
            "order": [functools.partial(run, order=p) for p in orders],
            "qkv_bias": [lambda: run(qkv_bias=False)],
            "proj_bias": [lambda: run(proj_bias=False)],
        }
        wrong = variants(ways)
        # No bias copied at all (after proj_bias, which a right c_attn bias
        # held by the reader's module would otherwise take); c_attn's weight
        # cut by reshape(3, d, d), rows where the columns were meant.
        wrong["qkv_bias:none"] = lambda: run(qkv_bias=False, proj_bias=False)
        wrong["split_dim:reshape"] = lambda: run(reshaped=True)
        expect(out, expected, "output", wrong)
        if shares_memory(module, attn):
            shared.append(seed)

    shared: list[int] = []
    each_seed(once)
    shape = {"what": "output", "shape": "(b, num_tokens, d_out)"}
    checked = [("shape", shape), ("values", values_on("lib_gpt2"))]
    checked.append(("sizes", {}))
    if shared:  # right, and yet not a copy
        checked.append(("shares", {"target": "mha", "source": "attn"}))
    return checked


def _attentions(
    seed: int, num_layers: int, b: int, h: int, t: int
) -> tuple[torch.Tensor, ...]:
    """What ``output_attentions=True`` returns: one ``(b, h, t, t)`` tensor
    of causal attention weights per layer."""
    g = torch.Generator().manual_seed(seed)
    hidden = causal_mask(t)
    return tuple(
        torch.softmax(
            (2 * torch.randn(b, h, t, t, generator=g)).masked_fill(
                hidden, -torch.inf
            ),
            dim=-1,
        )
        for _ in range(num_layers)
    )


def _head_average(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # More heads than sequences, and the other way round: an average
        # over the wrong dimension has another shape, or other values. One
        # layer only later on: the first failure tells the layers from the
        # batch.
        num_layers, b, h = (
            (2, 3, 1)[seed % 3],
            1 + seed % 2,
            2 + (seed + 1) % 3,
        )
        t = 2 + seed % 4
        attentions = _attentions(seed, num_layers, b, h, t)
        # The first query, the last, and counted from the end.
        query = (0, t - 1, 1, -1)[seed % 4]
        stacked = torch.stack(attentions)  # (num_layers, b, h, t, t)
        expected = stacked[..., query, :].mean(dim=2)  # (num_layers, b, t)
        ways: Ways = {
            # What every query gives the key `query`: a column.
            "column": [
                lambda: stacked[..., query].mean(dim=2),
                lambda: stacked[..., query].mean(dim=-2),
            ],
            # Averaged over the batch, the layers or the keys.
            "head_dim": [
                lambda: stacked[..., query, :].mean(dim=1),
                lambda: stacked[..., query, :].mean(dim=0),
                lambda: stacked[..., query, :].mean(dim=-1),
            ],
            "sum": [lambda: stacked[..., query, :].sum(dim=2)],
            # A softmax again, over weights that are a softmax already.
            "softmax_again": [
                lambda: torch.softmax(stacked[..., query, :].mean(2), -1)
            ],
            "average": [
                lambda: stacked[..., query, :],
                lambda: stacked[..., query, :].max(dim=2).values,
            ],
            # The layers joined along the batch: (num_layers * b, ...).
            "stack": [
                lambda: torch.cat(attentions)[:, :, query].mean(dim=1),
            ],
            "layers": [
                lambda: attentions[-1][:, :, query].mean(dim=1),
                lambda: attentions[0][:, :, query].mean(dim=1),
            ],
        }
        out = call(answer, attentions, query, wrong=variants(ways))
        if isinstance(out, (list, tuple)):
            raise WrongAnswerError(
                "not_tensor", "stack", got=type(out).__name__
            )
        expect(out, expected, "averaged", variants(ways))
        rows_sum_to_one(out, "compare")

    each_seed(once)
    shape = {"what": "averaged", "shape": "(num_layers, batch, num_tokens)"}
    checked = [("shape", shape), ("values", values_on("lib_head_average"))]
    return [*checked, ("rows", {}), ("queries", {})]


EXERCISES = [
    Exercise(
        "exercise-real-model-head-average",
        _head_average,
        WORDS,
        reference="lib_head_average",
    ),
    Exercise(
        "exercise-real-model-conv1d-bug",
        _from_gpt2,
        WORDS,
        # The fix, not the library's function that makes it.
        Rules(functions={"from_gpt2_attention": from_gpt2_attention}),
        reference="lib_gpt2",
    ),
]
