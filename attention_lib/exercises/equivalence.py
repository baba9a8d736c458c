"""The exercises of the from scratch to PyTorch (pytorch-equivalence) chapter."""

from __future__ import annotations

import copy
import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from ..masks import causal_mask, masked_softmax
from ..multihead import MultiHeadAttention
from ._core import (
    COUNT,
    Exercise,
    Messages,
    WrongAnswerError,
    call,
    close,
    expect,
    values_on,
)

WORDS: Messages = {
    "torch_output": {
        "en": "outputs of the nn.MultiheadAttention",
        "zh": "nn.MultiheadAttention 的输出",
    },
    "lib_mha": {
        "en": "the attention_lib.MultiHeadAttention it was copied from",
        "zh": "被复制权重的 attention_lib.MultiHeadAttention",
    },
    "lib_masked": {
        "en": "masked_softmax(scores, causal_mask(t) | key_padding_mask) "
        "@ values",
        "zh": "masked_softmax(scores, causal_mask(t) | key_padding_mask) "
        "@ values",
    },
    "biases": {
        "en": "with and without qkv_bias, whatever torch_mha held before",
        "zh": "有无 qkv_bias 都对，不论 torch_mha 原先存着什么",
    },
    "padded": {
        "en": "with padding in the batch and without",
        "zh": "批量中有填充和没有填充时都对",
    },
    "order": {
        "en": "in_proj_weight stacks the three projections in the order "
        "query, key, value: "
        "`torch.cat([W_query.weight, W_key.weight, W_value.weight])`.",
        "zh": "in_proj_weight 按查询、键、值的顺序堆叠三个投影："
        "`torch.cat([W_query.weight, W_key.weight, W_value.weight])`。",
    },
    "transpose": {
        "en": "in_proj_weight keeps each matrix as (out_features, "
        "in_features), as nn.Linear does: copy the weights as they are, "
        "without `.T`.",
        "zh": "in_proj_weight 与 nn.Linear 一样，按 (out_features, "
        "in_features) 存放每个矩阵：权重原样复制，不要加 `.T`。",
    },
    "in_bias": {
        "en": "in_proj_bias is the three projections' biases, stacked like "
        "the weights, or zeros when they have none (qkv_bias=False): "
        "whatever it held before stays in the outputs.",
        "zh": "in_proj_bias 是三个投影的偏置，像权重一样堆叠；投影没有偏置时"
        "（qkv_bias=False）要把它置零，否则它原先存着的值会留在输出里。",
    },
    "out_proj": {
        "en": "copy out_proj too, its weight and its bias: our out_proj "
        "always has a bias.",
        "zh": "out_proj 也要复制，权重和偏置都要：我们的 out_proj 总是带偏置。",
    },
    "assign": {
        "en": "a parameter cannot be replaced by a plain tensor: copy into "
        "it inside `torch.no_grad()`, `torch_mha.in_proj_weight.copy_(...)`.",
        "zh": "不能用普通张量替换参数：在 `torch.no_grad()` 中把值复制进去，"
        "`torch_mha.in_proj_weight.copy_(...)`。",
    },
    "no_grad": {
        "en": "autograd refuses to change a parameter in place: copy inside "
        "`with torch.no_grad():`.",
        "zh": "autograd 不允许原地修改参数：在 `with torch.no_grad():` "
        "中复制。",
    },
    "in_place": {
        "en": "change torch_mha itself (copy into its parameters); a new "
        "module made inside the function is lost when it returns.",
        "zh": "要修改 torch_mha 本身（把值复制进它的参数）；"
        "在函数里新建的模块在函数返回后就丢失了。",
    },
    "polarity": {
        "en": "SDPA reads a boolean attn_mask the other way round, True = "
        "may attend: pass it `~mask` (`al.to_sdpa_mask(mask)`), not our "
        "True-means-masked mask.",
        "zh": "SDPA 对布尔 attn_mask 的理解正好相反，True 表示可以关注："
        "要传 `~mask`（`al.to_sdpa_mask(mask)`），而不是我们那种 True "
        "表示被遮蔽的掩码。",
    },
    "no_causal": {
        "en": "an attn_mask replaces is_causal: put the causal mask into it "
        "too, `al.causal_mask(t) | key_padding_mask[:, None, None, :]`.",
        "zh": "attn_mask 会取代 is_causal：因果掩码也要放进去，"
        "`al.causal_mask(t) | key_padding_mask[:, None, None, :]`。",
    },
    "no_padding": {
        "en": "is_causal=True cannot express padding: build the mask from "
        "the causal mask and the padding, and pass it as attn_mask.",
        "zh": "is_causal=True 表达不了填充：用因果掩码和填充构造掩码，"
        "作为 attn_mask 传入。",
    },
    "combine": {
        "en": "with True = may attend, a key takes part only if both masks "
        "let it: combine SDPA masks with `&`, or ours with `|` and invert "
        "once.",
        "zh": "在 True 表示可以关注的约定下，只有两个掩码都允许时键才参与："
        "SDPA 的掩码要用 `&` 组合，或者先用 `|` 组合我们的掩码，再取反一次。",
    },
    "float_mask": {
        "en": "a float attn_mask is added to the scores (0 keeps a key, "
        "-inf removes it), so 1.0 and 0.0 remove nothing: pass a boolean "
        "mask.",
        "zh": "浮点 attn_mask 是加到分数上的（0 保留键，-inf 去掉键），"
        "所以 1.0 和 0.0 什么也去不掉：要传布尔掩码。",
    },
}


def _matching(
    out: object, makes: Sequence[Callable[[], torch.Tensor]]
) -> Callable[[], torch.Tensor]:
    # One hint, several ways to earn it: the wrong answer that matches out
    # (or the first, when none does).
    def make() -> torch.Tensor:
        results = [m() for m in makes]
        if isinstance(out, torch.Tensor):
            return next((r for r in results if close(out, r)), results[0])
        return results[0]

    return make


def _copied(
    start: nn.MultiheadAttention,
    mha: MultiHeadAttention,
    order: tuple[int, int, int] = (0, 1, 2),
    bias_order: tuple[int, int, int] | None = None,
    transpose: bool = False,
    in_bias: str = "copy",
    out_proj: str = "copy",
) -> nn.MultiheadAttention:
    """``start`` with ``mha``'s weights copied in, right or in one of the
    typical wrong ways."""
    torch_mha = copy.deepcopy(start)
    layers = [mha.W_query, mha.W_key, mha.W_value]
    weights = [
        layers[i].weight.T if transpose else layers[i].weight for i in order
    ]
    biases: list[torch.Tensor] = [
        torch.zeros(mha.d_out) if layers[i].bias is None else layers[i].bias
        for i in (order if bias_order is None else bias_order)
    ]
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat(weights))
        if in_bias == "copy":
            torch_mha.in_proj_bias.copy_(torch.cat(biases))
        elif in_bias == "zero":
            torch_mha.in_proj_bias.zero_()
        if out_proj in ("copy", "weight"):
            torch_mha.out_proj.weight.copy_(mha.out_proj.weight)
        if out_proj == "copy":
            torch_mha.out_proj.bias.copy_(mha.out_proj.bias)
    return torch_mha


def _run(torch_mha: nn.MultiheadAttention, x: torch.Tensor) -> torch.Tensor:
    t = x.shape[1]
    with torch.no_grad():
        out, _ = torch_mha(
            x, x, x, attn_mask=causal_mask(t), need_weights=False
        )
    return out


def _copy_into_torch(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # d >= 2: a (1, 1) weight would hide a transpose
        num_heads, head_dim = 1 + seed % 3, 2 + seed % 2
        d = num_heads * head_dim
        b, t = 1 + seed % 2, 2 + seed % 4
        qkv_bias = seed % 2 == 1
        torch.manual_seed(seed)
        mha = MultiHeadAttention(d, d, 8, 0.0, num_heads, qkv_bias).eval()
        torch_mha = nn.MultiheadAttention(d, num_heads, batch_first=True)
        torch_mha.eval()
        with torch.no_grad():
            # Whatever it held before (a model trained for something else):
            # every parameter must be written, biases too.
            for parameter in torch_mha.parameters():
                parameter.normal_()
        start = copy.deepcopy(torch_mha)
        x = torch.rand(b, t, d, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            expected = cast(torch.Tensor, mha(x))  # no weights asked for

        def run(**how: Any) -> torch.Tensor:
            return _run(_copied(start, mha, **how), x)

        try:
            call(answer, torch_mha, mha, changes=(0,))
        except WrongAnswerError as failure:
            said = str(failure.fields.get("error", ""))
            if "as parameter" in said:
                failure.hint = "assign"
            elif "in-place operation" in said:
                failure.hint = "no_grad"
            raise
        out = _run(torch_mha, x)
        # A wrong order of the weights, the biases in the same order or not.
        orders = [
            p for p in itertools.permutations(range(3)) if p != (0, 1, 2)
        ]
        reordered = [
            functools.partial(run, order=p, bias_order=bias_order)
            for p in orders
            for bias_order in (p, (0, 1, 2))
        ]
        wrong = {
            "order": _matching(out, reordered),
            "transpose": lambda: run(transpose=True),
            "in_bias": _matching(
                out,
                [lambda: run(in_bias="keep"), lambda: run(in_bias="zero")],
            ),
            "out_proj": _matching(
                out,
                [lambda: run(out_proj="keep"), lambda: run(out_proj="weight")],
            ),
            "in_place": lambda: _run(start, x),
        }
        expect(out, expected, "torch_output", wrong)

    for seed in range(COUNT):
        once(seed)
    values = values_on("lib_mha")
    return [("values", values), ("biases", {})]


def _sdpa(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **how: Any
) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, **how)


def _sdpa_padding(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        b, num_heads, t = 2, 1 + seed % 2, 3 + seed % 4
        head_dim = 1 + seed % 3
        g = torch.Generator().manual_seed(seed)
        q, k, v = (
            torch.randn(b, num_heads, t, head_dim, generator=g)
            for _ in range(3)
        )
        # On even seeds every sequence has two real tokens or more and ends
        # in padding (where the typical mistakes differ); on odd ones it
        # has one real token or more, and perhaps no padding.
        low, high = (2, t) if seed % 2 == 0 else (1, t + 1)
        lengths = torch.randint(low, high, (b,), generator=g)
        key_padding_mask = torch.arange(t) >= lengths[:, None]  # (b, t)
        causal = causal_mask(t)
        padding = key_padding_mask[:, None, None, :]  # (b, 1, 1, t)
        mask = causal | padding  # (b, 1, t, t), True = masked out
        scores = q @ k.transpose(-2, -1) / head_dim**0.5  # (b, h, t, t)
        expected = masked_softmax(scores, mask) @ v

        out = call(answer, q, k, v, key_padding_mask.clone())
        floats = [
            lambda: _sdpa(q, k, v, attn_mask=mask.float()),
            lambda: _sdpa(q, k, v, attn_mask=(~mask).float()),
        ]
        wrong = {
            "polarity": lambda: _sdpa(q, k, v, attn_mask=mask),
            "no_causal": lambda: _sdpa(q, k, v, attn_mask=~padding),
            "no_padding": lambda: _sdpa(q, k, v, is_causal=True),
            "combine": lambda: _sdpa(q, k, v, attn_mask=~causal | ~padding),
            "float_mask": _matching(out, floats),
        }
        expect(out, expected, "context", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "context", "shape": "(b, num_heads, t, head_dim)"}
    values = values_on("lib_masked")
    return [("shape", shape), ("values", values), ("padded", {})]


EXERCISES = [
    Exercise("exercise-copy-into-torch-mha", _copy_into_torch, WORDS),
    Exercise("exercise-sdpa-mask-bug", _sdpa_padding, WORDS),
]
