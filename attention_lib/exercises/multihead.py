"""The exercises of the multi-head attention chapter: splitting a projection
into heads, and a whole multi-head forward pass whose heads are merged
back."""

from __future__ import annotations

import math
from typing import Any, cast

import torch
from torch import nn

from ..heads import split_heads
from ..masks import causal_mask
from ..multihead import MultiHeadAttention
from ._core import (
    COUNT,
    Exercise,
    Messages,
    WrongAnswerError,
    backward,
    call,
    expect,
    linear_named,
    values_on,
)

WORDS: Messages = {
    "heads": {"en": "split heads", "zh": "拆分后的多头张量"},
    "lib_split": {
        "en": "attention_lib.split_heads",
        "zh": "attention_lib.split_heads",
    },
    "lib_mha": {
        "en": "attention_lib.MultiHeadAttention with the same weights",
        "zh": "权重相同的 attention_lib.MultiHeadAttention",
    },
    "split_view": {
        "en": "one `view` straight to (b, num_heads, num_tokens, head_dim) "
        "cuts the memory in order, so a head gets whole tokens instead of "
        "head_dim features of every token: `view` to (b, num_tokens, "
        "num_heads, head_dim) first, then `transpose(1, 2)`.",
        "zh": "直接 `view` 成 (b, num_heads, num_tokens, head_dim) 会按内存顺序切分，"
        "一个头拿到的是整段的词元，而不是每个词元的 head_dim 个特征：先 `view` 成 "
        "(b, num_tokens, num_heads, head_dim)，再 `transpose(1, 2)`。",
    },
    "no_transpose": {
        "en": "after the `view` the heads still come after the tokens, "
        "(b, num_tokens, num_heads, head_dim): move them in front with "
        "`transpose(1, 2)`.",
        "zh": "`view` 之后，头数维度仍在词元之后，形状是 "
        "(b, num_tokens, num_heads, head_dim)：用 `transpose(1, 2)` "
        "把它移到词元前面。",
    },
    "wrong_axis": {
        "en": "the last two sizes of the `view` are (num_heads, head_dim), "
        "in that order: each head takes head_dim features in a row. With "
        "(head_dim, num_heads) a head gets every num_heads-th feature.",
        "zh": "`view` 的最后两个大小依次是 (num_heads, head_dim)：每个头取连续的 "
        "head_dim 个特征。写成 (head_dim, num_heads) 时，一个头拿到的是每隔 "
        "num_heads 个取一个的特征。",
    },
    "merge_view": {
        "en": "a `view` (or `reshape`) straight from (b, num_heads, "
        "num_tokens, head_dim) to (b, num_tokens, d_out) puts features of "
        "different tokens into one row: `transpose(1, 2)` the heads back "
        "behind the tokens first, then `.contiguous().view(...)`.",
        "zh": "把 (b, num_heads, num_tokens, head_dim) 直接 `view`（或 `reshape`）成 "
        "(b, num_tokens, d_out)，会把不同词元的特征拼进同一行：先用 "
        "`transpose(1, 2)` 把头数维度移回词元之后，再 `.contiguous().view(...)`。",
    },
    "contiguous": {
        "en": "after `transpose(1, 2)` the tensor is not contiguous, and "
        "`view` cannot merge the heads: call `.contiguous()` before "
        "`.view(...)`, or use `.reshape(...)`.",
        "zh": "`transpose(1, 2)` 之后张量在内存中不再连续，`view` 无法合并各个头："
        "在 `.view(...)` 之前调用 `.contiguous()`，或者改用 `.reshape(...)`。",
    },
    "scale_d_out": {
        "en": "scale each head's scores by the square root of the head's "
        "size, `head_dim ** 0.5`, not of d_out: each dot product sums over "
        "head_dim features.",
        "zh": "每个头的分数要除以这个头的维度的平方根 `head_dim ** 0.5`，"
        "而不是 d_out 的平方根：每个点积只在 head_dim 个特征上求和。",
    },
    "scale_d_k": {
        "en": "divide the scores by the square root of head_dim, "
        "`head_dim ** 0.5`, not by head_dim itself.",
        "zh": "分数要除以 head_dim 的平方根 `head_dim ** 0.5`，而不是 head_dim 本身。",
    },
    "no_mask": {
        "en": "every token sees the tokens after it: fill the scores above "
        "the diagonal with `-torch.inf` before the softmax (one causal mask "
        "of shape (num_tokens, num_tokens) serves every head).",
        "zh": "每个词元都看到了它之后的词元：所有头共用一个形状为 "
        "(num_tokens, num_tokens) 的因果掩码，在 softmax 之前用它把对角线以上的分数"
        "填成 `-torch.inf`。",
    },
    "names": {
        "en": "keep the names the page uses (W_query, W_key, W_value, "
        "out_proj), so that the check can give your module the library's "
        "weights.",
        "zh": "沿用页面上的名字（W_query、W_key、W_value、out_proj），"
        "这样检查时才能把库中模块的权重放进你的模块。",
    },
}


def _split_heads(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        # num_tokens apart from both head sizes, so that no two mistakes
        # give the same tensor; h == hd now and then
        b, t = 1 + seed % 3, 5 + seed % 3
        h, hd = 2 + seed % 3, 1 + seed % 4
        x = torch.rand(b, t, h * hd, generator=g)
        wrong = {
            # (b, t, d_out) -> (b, h, t, hd) in one go: tokens cut apart
            "split_view": lambda: x.view(b, h, t, hd),
            # (b, t, d_out) -> (b, t, h, hd), the heads left behind
            "no_transpose": lambda: x.view(b, t, h, hd),
            # (b, t, d_out) -> (b, t, hd, h) -> (b, hd, t, h): interleaved
            "wrong_axis": lambda: x.view(b, t, hd, h).transpose(1, 2),
        }
        out = call(answer, x, h, wrong=wrong)
        expect(out, split_heads(x, h), "heads", wrong)

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "heads", "shape": "(b, num_heads, num_tokens, head_dim)"}
    return [("shape", shape), ("values", values_on("lib_split"))]


def _attend(
    reference: MultiHeadAttention,
    x: torch.Tensor,
    *,
    merge: str = "right",
    scale: float | None = None,
    causal: bool = True,
) -> torch.Tensor:
    """The reference's forward pass, written out, with one of the typical
    mistakes when asked for."""
    b, t, _ = x.shape
    h, hd = reference.num_heads, reference.head_dim
    d_out = h * hd
    with torch.no_grad():
        # (b, t, d_out) -> (b, t, h, hd) -> (b, h, t, hd)
        q = reference.W_query(x).view(b, t, h, hd).transpose(1, 2)
        k = reference.W_key(x).view(b, t, h, hd).transpose(1, 2)  # as q
        v = reference.W_value(x).view(b, t, h, hd).transpose(1, 2)  # as q
        scores = q @ k.transpose(2, 3)  # (b, h, t, hd) @ (b, h, hd, t)
        if causal:
            scores = scores.masked_fill(causal_mask(t), -torch.inf)
        root = math.sqrt(hd) if scale is None else scale
        context = torch.softmax(scores / root, dim=-1) @ v  # (b, h, t, hd)
        if merge == "view":
            merged = context.view(b, t, d_out)  # (b, h, t, hd), cut wrong
        elif merge == "no_contiguous":
            # (b, h, t, hd) -> (b, t, h, hd) -> raises where h, t > 1
            merged = context.transpose(1, 2).view(b, t, d_out)
        else:
            # (b, h, t, hd) -> (b, t, h, hd) -> (b, t, d_out)
            merged = context.transpose(1, 2).contiguous().view(b, t, d_out)
        out: torch.Tensor = reference.out_proj(merged)
    return out


#: (num_heads, head_dim) of each seed: never equal, so that scaling by
#: sqrt(d_out) and by head_dim are told apart.
SIZES = [(2, 3), (3, 2), (4, 2), (2, 4), (3, 4)]


def _multi_head(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        h, hd = SIZES[seed % len(SIZES)]
        b, t, d_in, d_out = 1 + seed % 2, 2 + seed % 4, 2 + seed % 3, h * hd
        torch.manual_seed(seed)
        module = call(answer, d_in, d_out, h)
        if not isinstance(module, nn.Module):
            name = getattr(answer, "__name__", "answer")
            got = type(module).__name__
            raise WrongAnswerError("not_module", "define", name=name, got=got)
        reference = MultiHeadAttention(d_in, d_out, t, 0.0, h)
        sizes = {
            "W_query": (d_in, d_out),
            "W_key": (d_in, d_out),
            "W_value": (d_in, d_out),
            "out_proj": (d_out, d_out),
        }
        with torch.no_grad():
            for name, (n_in, n_out) in sizes.items():
                layer = linear_named(module, name, n_in, n_out)
                lib_layer = getattr(reference, name)
                layer.weight.copy_(lib_layer.weight)
                if layer.bias is not None and lib_layer.bias is not None:
                    layer.bias.copy_(lib_layer.bias)
                elif layer.bias is not None:
                    layer.bias.zero_()  # a qkv bias the library does not have
        g = torch.Generator().manual_seed(seed)
        # scores large enough that a wrong scale shows
        x = 2 * torch.randn(b, t, d_in, generator=g)
        wrong = {
            "merge_view": lambda: _attend(reference, x, merge="view"),
            "contiguous": lambda: _attend(reference, x, merge="no_contiguous"),
            "scale_d_out": lambda: _attend(reference, x, scale=d_out**0.5),
            "scale_d_k": lambda: _attend(reference, x, scale=float(hd)),
            "no_mask": lambda: _attend(reference, x, causal=False),
        }
        out = call(module, x, wrong=wrong)
        with torch.no_grad():
            expected = cast(torch.Tensor, reference(x))  # no weights asked
        expect(out, expected, "output", wrong)
        backward(out, module, "output")

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "output", "shape": "(b, num_tokens, d_out)"}
    checks = [("shape", shape), ("values", values_on("lib_mha"))]
    return [*checks, ("future", {}), ("grad", {})]


EXERCISES = [
    Exercise("exercise-split-heads-by-hand", _split_heads, WORDS),
    Exercise("exercise-merge-heads-bug", _multi_head, WORDS),
]
