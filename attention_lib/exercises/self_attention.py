"""The exercises of the self-attention chapters: trainable weights and
masks."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..masks import causal_mask, masked_softmax, padding_mask
from ..self_attention import SelfAttentionV1, SelfAttentionV2
from ._core import (
    COUNT,
    Exercise,
    Messages,
    WrongAnswerError,
    backward,
    call,
    close,
    expect,
    linear_named,
    module_from,
    rows_sum_to_one,
    values_on,
)

WORDS: Messages = {
    "v1_output": {
        "en": "outputs of the SelfAttentionV1",
        "zh": "SelfAttentionV1 的输出",
    },
    "v1_weights": {
        "en": "weights of the SelfAttentionV1",
        "zh": "SelfAttentionV1 的权重",
    },
    "lib_v2": {
        "en": "attention_lib.SelfAttentionV2 with the same weights",
        "zh": "权重相同的 attention_lib.SelfAttentionV2",
    },
    "lib_v2_copied": {
        "en": "the SelfAttentionV2 they were copied from",
        "zh": "被复制权重的 SelfAttentionV2",
    },
    "lib_causal": {
        "en": "masked_softmax(attn_scores, causal_mask(n))",
        "zh": "masked_softmax(attn_scores, causal_mask(n))",
    },
    "lib_combined": {
        "en": "masked_softmax with causal_mask | padding_mask",
        "zh": "使用 causal_mask | padding_mask 的 masked_softmax",
    },
    "scale_d_k": {
        # Dividing by d_k shrinks the scores by another sqrt(d_k): the
        # weights come out flatter than they should, not sharper.
        "en": "your weights are too flat: divide the scores by "
        "`keys.shape[-1] ** 0.5`, the square root of d_k, not by d_k.",
        "zh": "你的注意力权重太平坦了：分数要除以 d_k 的平方根 "
        "`keys.shape[-1] ** 0.5`，而不是 d_k 本身。",
    },
    "scale_d_in": {
        "en": "scale by the square root of the keys' size, "
        "`keys.shape[-1] ** 0.5` (d_out), not of the inputs' size d_in "
        "(`x.shape[-1]`): the scores are dot products of queries and keys.",
        "zh": "要除以键的维度的平方根 `keys.shape[-1] ** 0.5`（即 d_out），"
        "而不是输入维度 d_in 的平方根（`x.shape[-1]`）：分数是查询和键的点积。",
    },
    "scale_n": {
        "en": "scale by the square root of the keys' size, "
        "`keys.shape[-1] ** 0.5`, not of the number of tokens "
        "(`keys.shape[0]`): the size of a key is the last dimension.",
        "zh": "要除以键的维度的平方根 `keys.shape[-1] ** 0.5`，"
        "而不是词元个数的平方根（`keys.shape[0]`）：键的维度是最后一个维度。",
    },
    "no_scale": {
        "en": "the scores are not scaled: divide them by "
        "`keys.shape[-1] ** 0.5` before the softmax.",
        "zh": "分数没有缩放：在 softmax 之前把它们除以 `keys.shape[-1] ** 0.5`。",
    },
    "keys_from_query": {
        "en": "the keys come from `self.W_key(x)`; yours are the queries "
        "again (`self.W_query(x)`).",
        "zh": "键应该来自 `self.W_key(x)`；你的键其实又是查询"
        "（`self.W_query(x)`）。",
    },
    "values_from_key": {
        "en": "the values come from `self.W_value(x)`, not from W_key.",
        "zh": "值应该来自 `self.W_value(x)`，而不是 W_key。",
    },
    "bias": {
        "en": "the page's layers have no bias: "
        "`nn.Linear(d_in, d_out, bias=False)`. Yours have one, which the "
        "check sets to random values, as training would, and it shifts every "
        "query, key and value.",
        "zh": "页面上的线性层没有偏置：`nn.Linear(d_in, d_out, bias=False)`。"
        "你的线性层带有偏置，检查时像训练那样给了它随机值，"
        "它会平移每一个查询、键和值。",
    },
    "linear": {
        "en": "the names are right, but W_query, W_key and W_value must "
        "each be a layer `nn.Linear(d_in, d_out, bias=False)`: not an "
        "`nn.Parameter`, and d_in first (nn.Linear takes the input size, "
        "then the output size).",
        "zh": "名字没有问题，但 W_query、W_key 和 W_value 都必须是层 "
        "`nn.Linear(d_in, d_out, bias=False)`：不能是 `nn.Parameter`，"
        "而且 d_in 在前（nn.Linear 先写输入维度，再写输出维度）。",
    },
    "dim0": {
        "en": "softmax over `dim=-1`: each query's weights over the keys "
        "must sum to 1.",
        "zh": "softmax 要在 `dim=-1` 上做：每个查询对所有键的权重之和必须是 1。",
    },
    "transpose": {
        "en": "nn.Linear keeps its weight as (d_out, d_in) and "
        "SelfAttentionV1's parameters are (d_in, d_out): copy the "
        "transposes, `sa_v2.W_query.weight.T`.",
        "zh": "nn.Linear 的权重形状是 (d_out, d_in)，而 SelfAttentionV1 的参数是 "
        "(d_in, d_out)：要复制转置，即 `sa_v2.W_query.weight.T`。",
    },
    "assign": {
        "en": "a parameter cannot be replaced by a plain tensor: copy into "
        "it inside `torch.no_grad()`, "
        "`sa_v1.W_query.copy_(sa_v2.W_query.weight.T)`.",
        "zh": "不能用普通张量替换参数：在 `torch.no_grad()` 中把值复制进去，"
        "`sa_v1.W_query.copy_(sa_v2.W_query.weight.T)`。",
    },
    "under_no_grad": {
        "en": "autograd does not let you copy into a parameter that "
        "requires grad: copy inside `with torch.no_grad():`, "
        "`sa_v1.W_query.copy_(sa_v2.W_query.weight.T)`.",
        "zh": "autograd 不允许直接复制进需要梯度的参数：要在 "
        "`with torch.no_grad():` 中复制，"
        "`sa_v1.W_query.copy_(sa_v2.W_query.weight.T)`。",
    },
    "wrong_way": {
        "en": "leave sa_v2 as it is and copy from it into sa_v1, not the "
        "other way round: sa_v2's weights are the ones to keep, sa_v1's "
        "parameters the ones to overwrite.",
        "zh": "不要改动 sa_v2，要从它复制到 sa_v1，而不是反过来：sa_v2 的权重要"
        "保持不变，被覆盖的是 sa_v1 的参数。",
    },
    "swapped": {
        "en": "each parameter takes its namesake: W_query from W_query, "
        "W_key from W_key, W_value from W_value.",
        "zh": "每个参数要从同名的层复制：W_query 对 W_query，W_key 对 W_key，"
        "W_value 对 W_value。",
    },
    "in_place": {
        "en": "sa_v1's outputs did not change: nothing was copied into its "
        "parameters (a new module made inside the function, "
        "`load_state_dict(..., strict=False)` with keys that do not match, "
        "a new `forward`, …). Copy into `sa_v1.W_query` and the others "
        "themselves.",
        "zh": "sa_v1 的输出没有变化：没有任何值被复制进它的参数"
        "（在函数里新建了模块、`load_state_dict(..., strict=False)` "
        "的键对不上、换了一个新的 `forward`……）。要复制进 `sa_v1.W_query` "
        "等参数本身。",
    },
    "inverted": {
        "en": "the mask hides the past instead of the future: True must "
        "mark the keys after the query, "
        "`torch.triu(torch.ones(n, n), diagonal=1).bool()`.",
        "zh": "这个掩码遮住的是过去而不是未来：True 应该标记查询之后的键，"
        "`torch.triu(torch.ones(n, n), diagonal=1).bool()`。",
    },
    "diagonal": {
        "en": "each token must see itself: `diagonal=1`; with "
        "`diagonal=0` the first row has nothing left and becomes nan.",
        "zh": "每个词元都必须能看到自己：用 `diagonal=1`；用 `diagonal=0` "
        "时第一行什么都不剩，结果是 nan。",
    },
    "sees_next": {
        "en": "each query still sees the key right after it: "
        "`diagonal=1` hides every key after the query; `diagonal=2` "
        "starts one key too late.",
        "zh": "每个查询仍然能看到紧跟在它后面的那个键：`diagonal=1` "
        "才会遮住查询之后的所有键；`diagonal=2` 晚了一个键。",
    },
    "no_mask": {
        "en": "nothing is masked: every query still sees the keys after "
        "it. Fill the scores above the diagonal with `-torch.inf` before "
        "the softmax, `attn_scores.masked_fill(mask, -torch.inf)`.",
        "zh": "什么都没有遮住：每个查询仍然能看到它之后的键。在 softmax 之前"
        "把对角线以上的分数填成 `-torch.inf`，"
        "即 `attn_scores.masked_fill(mask, -torch.inf)`。",
    },
    "mul_inf": {
        "en": "0 * -inf is nan, so multiplying the mask by `-torch.inf` "
        "turns every allowed score into nan too: fill with a boolean mask, "
        "`attn_scores.masked_fill(mask, -torch.inf)`.",
        "zh": "0 * -inf 是 nan，所以用掩码乘以 `-torch.inf` 会把所有允许的分数"
        "也变成 nan：要用布尔掩码填充，"
        "`attn_scores.masked_fill(mask, -torch.inf)`。",
    },
    "float_mask": {
        "en": "masked_fill takes a boolean mask: "
        "`torch.triu(torch.ones(n, n), diagonal=1).bool()`.",
        "zh": "masked_fill 需要布尔掩码："
        "`torch.triu(torch.ones(n, n), diagonal=1).bool()`。",
    },
    "keep_mask": {
        "en": "`torch.tril(ones)` marks the keys a query may see, itself "
        "and the past, and masked_fill fills where the mask is True, so it "
        "hid those: mask the keys after the query, "
        "`torch.triu(ones, diagonal=1).bool()` (or `~torch.tril(ones).bool()`).",
        "zh": "`torch.tril(ones)` 标记的是查询可以看到的键（它自己和过去），"
        "而 masked_fill 会填充掩码为 True 的位置，所以遮住的恰恰是这些键："
        "要遮住查询之后的键，`torch.triu(ones, diagonal=1).bool()`"
        "（或 `~torch.tril(ones).bool()`）。",
    },
    "way1": {
        "en": "the later keys' scores still reach the earlier rows: when a "
        "future score is far above the others, the first softmax rounds the "
        "allowed weights to 0 and renormalizing gives 0 / 0 = nan. Fill the "
        "future scores with `-torch.inf` before the softmax.",
        "zh": "之后的键的分数仍然影响到了前面的行：某个未来分数远大于其他分数时，"
        "第一次 softmax 会把允许的权重舍入成 0，重新归一化就成了 0 / 0 = nan。"
        "要在 softmax 之前把未来的分数填成 `-torch.inf`。",
    },
    "zero_fill": {
        "en": "a masked score of 0 still gets weight `exp(0)`: fill the "
        "masked scores with `-torch.inf`.",
        "zh": "被遮蔽的分数填成 0 仍然会得到权重 `exp(0)`：要用 `-torch.inf` 填充。",
    },
    "no_renorm": {
        "en": "after zeroing the future weights, the rows no longer sum to "
        "1: renormalize them, or fill the scores with `-torch.inf` before "
        "the softmax.",
        "zh": "把未来的权重置零后，每一行之和不再是 1：要重新归一化，"
        "或者在 softmax 之前把分数填成 `-torch.inf`。",
    },
    "and": {
        "en": "a key is hidden when either mask hides it: combine "
        "True-means-masked masks with `|`, not `&`.",
        "zh": "只要任意一个掩码遮住了某个键，它就被遮住：True 表示遮蔽的掩码要用 "
        "`|` 组合，而不是 `&`。",
    },
    "padding_from": {
        "en": "the padding starts at index valid_len (the real tokens are "
        "0 to valid_len - 1): `torch.arange(n) >= valid_len`, not `>`.",
        "zh": "填充从下标 valid_len 开始（真实词元是 0 到 valid_len - 1）："
        "要写 `torch.arange(n) >= valid_len`，而不是 `>`。",
    },
}


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    dim: int = -1,
) -> torch.Tensor:
    return torch.softmax(q @ k.T / scale, dim=dim) @ v


def _sizes(seed: int) -> tuple[int, int, int]:
    # d_in, d_out and the number of tokens all apart, so that scaling by
    # the root of d_in or of the number of tokens shows on every seed (and
    # d_in is never d_out ** 2: its root is never the d_out of scale_d_k).
    d_out = 2 + seed % 3
    d_in = d_out + 3 + seed % 2
    return d_in, d_out, d_in + 1 + seed % 3


def _self_attention(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    names = ("W_query", "W_key", "W_value")

    def once(seed: int) -> None:
        d_in, d_out, n = _sizes(seed)
        torch.manual_seed(seed)
        module = module_from(answer, d_in, d_out)
        reference = SelfAttentionV2(d_in, d_out)
        g = torch.Generator().manual_seed(seed)
        biases: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            for name in names:
                layer = linear_named(module, name, d_in, d_out, "linear")
                layer.weight.copy_(getattr(reference, name).weight)
                if layer.bias is not None:
                    # The library has none: a bias the reader added gets
                    # random values, as training would give it, so it shows.
                    layer.bias.copy_(torch.rand(d_out, generator=g) + 0.5)
                    biases[name] = layer.bias.detach().clone()
        x = torch.rand(n, d_in, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            q = reference.W_query(x)
            k = reference.W_key(x)
            v = reference.W_value(x)
            qb, kb, vb = (
                projected + biases.get(name, 0.0)
                for projected, name in zip((q, k, v), names, strict=True)
            )
        root = math.sqrt(d_out)
        wrong = {
            "scale_d_k": lambda: _attend(q, k, v, d_out),
            "scale_d_in": lambda: _attend(q, k, v, math.sqrt(d_in)),
            "scale_n": lambda: _attend(q, k, v, math.sqrt(n)),
            "no_scale": lambda: _attend(q, k, v, 1.0),
            "keys_from_query": lambda: _attend(q, q, v, root),
            "values_from_key": lambda: _attend(q, k, k, root),
            "dim0": lambda: _attend(q, k, v, root, dim=0),
            **({"bias": lambda: _attend(qb, kb, vb, root)} if biases else {}),
        }
        out = call(module, x, wrong=wrong)
        with torch.no_grad():
            expected = reference(x)
        expect(out, expected.detach(), "output", wrong)
        backward(out, module, "output")

    for seed in range(COUNT):
        once(seed)
    shape = {"what": "output", "shape": "(n, d_out)"}
    values = values_on("lib_v2")
    return [("shape", shape), ("values", values), ("grad", {})]


def _copy_v2_into_v1(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    names = ("W_query", "W_key", "W_value")

    def once(seed: int) -> None:
        d_in, d_out, n = 2 + seed % 3, 1 + seed % 4, 2 + seed % 5
        if d_in == d_out:
            d_out += 1  # a square weight would hide a missing transpose
        torch.manual_seed(seed)
        sa_v1, sa_v2 = (
            SelfAttentionV1(d_in, d_out),
            SelfAttentionV2(d_in, d_out),
        )
        x = torch.rand(n, d_in, generator=torch.Generator().manual_seed(seed))

        def v1_output(v1: SelfAttentionV1) -> torch.Tensor:
            # The library's forward on sa_v1's parameters: a `forward`
            # the answer put on the instance does not count.
            with torch.no_grad():
                return SelfAttentionV1.forward(v1, x)

        def copied(pairs: dict[str, torch.Tensor]) -> torch.Tensor:
            v1 = SelfAttentionV1(d_in, d_out)
            with torch.no_grad():
                for name, value in pairs.items():
                    getattr(v1, name).copy_(value)
            return v1_output(v1)

        def plain(name: str) -> torch.Tensor:
            return getattr(sa_v2, name).weight.T

        def assigned() -> torch.Tensor:
            # Raises: a parameter cannot be replaced by a plain tensor.
            v1 = SelfAttentionV1(d_in, d_out)
            v1.W_query = plain("W_query")  # type: ignore[assignment]
            return v1_output(v1)

        def no_grad_copy() -> torch.Tensor:
            # Raises: autograd refuses an in-place copy into a leaf that
            # requires grad.
            return SelfAttentionV1(d_in, d_out).W_query.copy_(plain("W_query"))

        wrong = {
            "transpose": lambda: copied(
                {name: getattr(sa_v2, name).weight for name in names}
            ),
            "assign": assigned,
            "under_no_grad": no_grad_copy,
            "swapped": lambda: copied(
                {
                    "W_query": plain("W_key"),
                    "W_key": plain("W_query"),
                    "W_value": plain("W_value"),
                }
            ),
            "in_place": lambda: v1_output(sa_v1),
        }
        # What sa_v2 computes before the call: an answer that copies the
        # other way round, or changes both, must not pass.
        with torch.no_grad():
            expected = sa_v2(x)
        before = v1_output(sa_v1)
        try:
            call(answer, sa_v1, sa_v2, wrong=wrong, changes=(0,))
        except WrongAnswerError as failure:
            if failure.problem == "mutated":  # sa_v2, the one to keep
                failure.hint = "wrong_way"
            raise
        for name in names:
            weight = getattr(sa_v1, name, None)
            # d_in != d_out: nn.Linear's layout, not transposed.
            if isinstance(weight, torch.Tensor) and weight.shape == (
                d_out,
                d_in,
            ):
                raise WrongAnswerError(
                    "shape",
                    "transpose",
                    what="v1_weights",
                    got=tuple(weight.shape),
                    expected=(d_in, d_out),
                )
        try:
            out = v1_output(sa_v1)
        except Exception as error:  # the reader's parameters, reported
            said = f"{type(error).__name__}: {error}"
            raise WrongAnswerError("raised", "compare", error=said) from None
        wrong["in_place"] = lambda: before
        expect(out, expected, "v1_output", wrong)

    for seed in range(COUNT):
        once(seed)
    values = values_on("lib_v2_copied")
    return [("values", values)]


def _causal_weights(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # 3 tokens first: with 2, hiding from diagonal=2 hides nothing.
        n = 2 + (seed + 1) % 6
        g = torch.Generator().manual_seed(seed)
        scores = torch.randn(n, n, generator=g)
        future = causal_mask(n)
        ones = torch.ones(n, n)
        inf = -torch.inf
        weights = torch.softmax(scores, dim=-1)

        def hiding(mask: torch.Tensor) -> torch.Tensor:
            return torch.softmax(scores.masked_fill(mask, inf), dim=-1)

        wrong = {
            "inverted": lambda: hiding(torch.tril(ones, -1).bool()),
            "diagonal": lambda: hiding(torch.triu(ones).bool()),
            "keep_mask": lambda: hiding(torch.tril(ones).bool()),
            "sees_next": lambda: hiding(torch.triu(ones, 2).bool()),
            "no_mask": lambda: weights,
            "mul_inf": lambda: torch.softmax(
                scores + torch.triu(ones, 1) * inf, dim=-1
            ),
            "float_mask": lambda: scores.masked_fill(torch.triu(ones, 1), inf),
            "zero_fill": lambda: torch.softmax(
                scores.masked_fill(future, 0.0), dim=-1
            ),
            "no_renorm": lambda: weights.masked_fill(future, 0.0),
            "dim0": lambda: torch.softmax(
                scores.masked_fill(future, inf), dim=0
            ),
        }
        out = call(answer, scores.clone(), wrong=wrong)
        expected = masked_softmax(scores, future)
        expect(out, expected, "weights", wrong)
        rows_sum_to_one(out, "no_renorm")
        # The later keys' scores, far above the others: no earlier row
        # may change.
        lead = 200 + 100 * torch.rand(n, n, generator=g)
        raised = torch.where(future, lead, scores)
        kept = torch.softmax(raised, dim=-1).masked_fill(future, 0.0)
        late = {"way1": lambda: kept / kept.sum(dim=-1, keepdim=True)}
        out = call(answer, raised.clone(), wrong=late)
        try:
            expect(out, expected, "weights", late)
        except WrongAnswerError as failure:
            changed = [
                i for i in range(n - 1) if not close(out[i], expected[i])
            ]
            if failure.problem not in ("values", "not_finite") or not changed:
                raise
            i = changed[0]
            raise WrongAnswerError(
                "future", failure.hint, i=i, j=i + 1
            ) from None

    for seed in range(COUNT):
        once(seed)
    values = values_on("lib_causal")
    return [("values", values), ("rows", {}), ("future", {})]


def _combined_weights(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        # First two real tokens and three padding keys: there `&`, and
        # padding from valid_len + 1, give weights of their own (with 2
        # tokens and 1 real one they are the same). Later seeds have one
        # real token, or no padding at all.
        n = 2 + (seed + 3) % 6
        g = torch.Generator().manual_seed(seed)
        scores = torch.randn(n, n, generator=g)
        valid_len = 1 + (seed + 1) % n
        causal = causal_mask(n)
        padding = padding_mask(torch.tensor([valid_len]), n)[0]  # (1, n)
        late = torch.arange(n) > valid_len  # padding from valid_len + 1
        wrong = {
            "and": lambda: masked_softmax(scores, causal & padding),
            "padding_from": lambda: torch.softmax(
                scores.masked_fill(causal | late, -torch.inf), dim=-1
            ),
        }
        out = call(answer, scores.clone(), valid_len, wrong=wrong)
        expected = masked_softmax(scores, causal | padding)
        expect(out, expected, "weights", wrong)

    for seed in range(COUNT):
        once(seed)
    values = values_on("lib_combined")
    return [("values", values)]


EXERCISES = [
    Exercise("exercise-self-attention", _self_attention, WORDS),
    Exercise("exercise-copy-v2-into-v1", _copy_v2_into_v1, WORDS),
    Exercise("exercise-keys-bug", _self_attention, WORDS),
    Exercise("exercise-causal-weights", _causal_weights, WORDS),
    Exercise("exercise-combined-mask-bug", _combined_weights, WORDS),
]
