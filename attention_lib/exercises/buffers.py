"""The exercises of the buffers chapter."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..causal import CausalAttention
from ..masks import masked_softmax
from ._core import (
    COUNT,
    Exercise,
    Messages,
    WrongAnswerError,
    backward,
    call,
    expect,
    linear_named,
    module_from,
    values_on,
)

WORDS: Messages = {
    "half_output": {
        "en": "outputs after .half()",
        "zh": ".half() 之后的输出",
    },
    "lib_causal": {
        "en": "attention_lib.CausalAttention with the same weights",
        "zh": "权重相同的 attention_lib.CausalAttention",
    },
    "loads": {
        "en": "loads CausalAttention's state_dict with strict=True: the "
        "mask is not saved",
        "zh": "能以 strict=True 加载 CausalAttention 的 state_dict："
        "掩码不会被保存",
    },
    "moves": {
        "en": "the mask is a buffer: it moves with .to('meta')",
        "zh": "掩码是缓冲区：它会随 .to('meta') 一起移动",
    },
    "half": {
        "en": "runs in float16 after .half()",
        "zh": ".half() 之后能以 float16 运行",
    },
    "parameter": {
        "en": "the mask is an nn.Parameter: it is saved, counted among the "
        "weights and handed to the optimizer. A tensor the module computes "
        "and never learns is a buffer: "
        '`self.register_buffer("mask", ..., persistent=False)`.',
        "zh": "掩码是一个 nn.Parameter：它会被保存、算进权重，还会交给优化器。"
        "模块自己算出、从不学习的张量应该是缓冲区："
        '`self.register_buffer("mask", ..., persistent=False)`。',
    },
    "persistent": {
        "en": "the mask is saved with the weights, so a checkpoint without "
        "it (or of another context_length) does not load: it is computed "
        "from context_length anyway, register it with `persistent=False`.",
        "zh": "掩码和权重一起被保存了，所以不含掩码（或 context_length "
        "不同）的检查点加载不进来：掩码本来就能由 context_length 算出，"
        "注册时加上 `persistent=False`。",
    },
    "attribute": {
        "en": 'the checker moved your module with `.to("meta")` and the '
        "mask stayed behind on the CPU: a plain tensor attribute "
        "(`self.mask = ...`) is not moved with the module. Register it: "
        '`self.register_buffer("mask", ..., persistent=False)`.',
        "zh": '检查器用 `.to("meta")` 移动了你的模块，掩码却留在了 CPU 上：'
        "普通的张量属性（`self.mask = ...`）不会随模块移动。"
        '要注册它：`self.register_buffer("mask", ..., persistent=False)`。',
    },
    "name": {
        "en": "register the buffer under the name `mask`, as "
        "CausalAttention does, so that the check can find it.",
        "zh": "像 CausalAttention 那样，把缓冲区注册为 `mask` 这个名字，"
        "检查时才能找到它。",
    },
    "no_mask": {
        "en": "the outputs are those of attention without a mask: every "
        "token sees the later ones. Fill the scores above the diagonal "
        "with `-torch.inf` before the softmax.",
        "zh": "这些输出是不加掩码的注意力的输出：每个词元都看到了它之后的词元。"
        "在 softmax 之前把对角线以上的分数填成 `-torch.inf`。",
    },
    "inverted": {
        "en": "the mask hides the past instead of the future: True must "
        "mark the keys after the query, `torch.triu(..., diagonal=1)`.",
        "zh": "这个掩码遮住的是过去而不是未来：True 应该标记查询之后的键，"
        "`torch.triu(..., diagonal=1)`。",
    },
    "bias": {
        "en": "the names are right, but your layers have a bias, and "
        "CausalAttention's have none, so its checkpoint holds no `.bias` "
        "to load: the projections have no bias, "
        "`nn.Linear(d_in, d_out, bias=False)`.",
        "zh": "名字没有问题，但你的线性层带有偏置，而 CausalAttention 的没有，"
        "所以它的检查点里没有可以加载的 `.bias`：这几个投影层不带偏置，"
        "要写成 `nn.Linear(d_in, d_out, bias=False)`。",
    },
    "mask_entries": {"en": "mask's entries", "zh": "掩码"},
    "bool_mask": {
        "en": "the exercise asks for a boolean mask (True = masked out), not "
        "a float one added to the scores: build it with "
        "`torch.triu(torch.ones(size, dtype=torch.bool), diagonal=1)` and "
        "apply it with `scores.masked_fill(mask, -torch.inf)`.",
        "zh": "练习要求的是布尔掩码（True 表示被遮蔽），而不是加到分数上的浮点掩码："
        "用 `torch.triu(torch.ones(size, dtype=torch.bool), diagonal=1)` "
        "构造它，再用 `scores.masked_fill(mask, -torch.inf)` 应用它。",
    },
    "fill_1e9": {
        "en": "-1e9 does not fit in float16 (its largest number is 65504), "
        "so masked_fill refuses it once the module is converted: fill "
        "with `-torch.inf`.",
        "zh": "-1e9 超出了 float16 的范围（最大只有 65504），模块转换之后 "
        "masked_fill 就会拒绝它：改用 `-torch.inf` 填充。",
    },
}


PROJECTIONS = ("W_query", "W_key", "W_value")


def _causal_head(
    answer: Any, d_in: int, d_out: int, context_length: int
) -> nn.Module:
    module = module_from(answer, d_in, d_out, context_length)
    for name in PROJECTIONS:
        linear_named(module, name, d_in, d_out)
    return module


def _load(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    # The library's checkpoint holds the three weights and no mask: it loads
    # with strict=True only into a module that saves nothing else.
    try:
        module.load_state_dict(state, strict=True)
    except Exception as error:  # the reader's bug, reported as a message
        said = " ".join(f"{type(error).__name__}: {error}".split())
        biased = any(
            getattr(module, name).bias is not None for name in PROJECTIONS
        )
        hint = (
            "parameter"
            if "mask" in dict(module.named_parameters())
            else "persistent"
            if "mask" in module.state_dict()
            else "bias"
            if biased
            else "names"
        )
        raise WrongAnswerError("raised", hint, error=said) from None


def _boolean_mask(module: nn.Module) -> None:
    # The book's mask of ones and zeros, made boolean in forward, is a mask
    # still; a float one of 0 and -inf (or -1e9) is added to the scores.
    mask = getattr(module, "mask", None)
    if (
        isinstance(mask, torch.Tensor)
        and mask.is_floating_point()
        and not ((mask == 0) | (mask == 1)).all()
    ):
        got = str(mask.dtype).removeprefix("torch.")
        raise WrongAnswerError(
            "dtype", "bool_mask", what="mask_entries", got=got, expected="bool"
        )


def _left_behind(module: nn.Module) -> bool:
    mask = getattr(module, "mask", None)
    return isinstance(mask, torch.Tensor) and not mask.is_meta


def _causal_buffer(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        d_in, d_out = 2 + seed % 3, 1 + seed % 4
        context_length = 4 + seed % 5
        b, n = 1 + seed % 2, 2 + seed % (context_length - 1)
        torch.manual_seed(seed)
        module = _causal_head(answer, d_in, d_out, context_length)
        reference = CausalAttention(d_in, d_out, context_length, 0.0)
        _load(module, reference.state_dict())
        _boolean_mask(module)

        g = torch.Generator().manual_seed(seed)
        x = torch.rand(b, n, d_in, generator=g)
        with torch.no_grad():
            q = reference.W_query(x)
            k = reference.W_key(x)
            v = reference.W_value(x)
            expected = reference(x)
        scores = q @ k.transpose(1, 2) / d_out**0.5  # (b, n, n)
        ones = torch.ones(n, n, dtype=torch.bool)
        wrong = {
            "no_mask": lambda: torch.softmax(scores, dim=-1) @ v,
            "inverted": lambda: masked_softmax(scores, ones.tril(-1)) @ v,
        }
        out = call(module, x, wrong=wrong)
        expect(out, expected, "output", wrong)
        backward(out, module, "output")

        # A model converted to float16, as for inference on a GPU.
        def fill_1e9() -> object:
            return scores.half().masked_fill(ones.triu(1), -1e9)

        with torch.no_grad():
            half = call(module.half(), x.half(), wrong={"fill_1e9": fill_1e9})
        if not isinstance(half, torch.Tensor):
            got = type(half).__name__
            raise WrongAnswerError("not_tensor", "compare", got=got)
        if not torch.isfinite(half).all():
            raise WrongAnswerError("not_finite", "compare", what="half_output")
        # float16 keeps about 3 decimal digits
        diff = (half.double() - expected.double()).abs().max().item()
        if diff > 1e-2:
            raise WrongAnswerError(
                "values", "compare", what="half_output", diff=diff
            )

        # The meta device moves a module anywhere CPU-only code runs: a
        # mask that stays on the CPU fails here as it would on a GPU.
        moved = _causal_head(answer, d_in, d_out, context_length).to("meta")
        try:
            call(moved, torch.empty(b, n, d_in, device="meta"))
        except WrongAnswerError as failure:
            if _left_behind(moved):
                failure.hint = "attribute"
            raise
        if "mask" not in dict(moved.named_buffers()):
            # Right on every device, yet no buffer: forward copies the mask
            # to x's device on every call, or it is not called mask.
            try:
                call(moved.get_buffer, "mask")
            except WrongAnswerError as failure:
                failure.hint = "attribute" if _left_behind(moved) else "name"
                raise

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "output", "shape": "(b, num_tokens, d_out)"}
    values = values_on("lib_causal")
    return [
        ("shape", shape),
        ("values", values),
        ("grad", {}),
        ("loads", {}),
        ("half", {}),
        ("moves", {}),
    ]


EXERCISES = [
    Exercise("exercise-causal-buffer", _causal_buffer, WORDS),
    Exercise("exercise-mask-attribute-bug", _causal_buffer, WORDS),
]
