"""The exercises of the dropout chapter."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..causal import CausalAttention
from ..masks import causal_mask, masked_softmax
from ._core import (
    COUNT,
    Exercise,
    Messages,
    WrongAnswerError,
    call,
    copy_weights,
    expect,
)

#: Dropout rates to try; 0.5 is left out, where 1/p and 1/(1 - p) agree.
RATES = (0.1, 0.2, 0.25, 0.3, 0.4, 0.6, 0.75)

_UNSLICED = {
    "en": "the mask buffer is made for `context_length` tokens, and x may "
    "have fewer: slice it to the number of tokens, "
    "`self.mask[:num_tokens, :num_tokens]`, as CausalAttention does.",
    "zh": "掩码缓冲区是按 `context_length` 个词元创建的，而 x 的词元可能更少："
    "要像 CausalAttention 那样，把它切成词元的个数，"
    "即 `self.mask[:num_tokens, :num_tokens]`。",
}

WORDS: Messages = {
    "dropped": {
        "en": "weights after dropout",
        "zh": "Dropout 之后的注意力权重",
    },
    "eval_output": {
        "en": "outputs in evaluation mode",
        "zh": "评估模式下的输出",
    },
    "train_output": {
        "en": "outputs in training mode",
        "zh": "训练模式下的输出",
    },
    "same_as_dropout": {
        "en": "equal to F.dropout with the same elements kept on {count} "
        "random inputs",
        "zh": "在 {count} 组随机输入上与 F.dropout 相等（保留的元素相同）",
    },
    "same_as_eval": {
        "en": "equal to attention_lib.CausalAttention in evaluation mode on "
        "{count} random inputs",
        "zh": "在 {count} 组随机输入上与评估模式下的 "
        "attention_lib.CausalAttention 相等",
    },
    "same_draw": {
        "en": "in training mode, equal to it with nn.Dropout's draw from the "
        "same seed",
        "zh": "训练模式下，随机种子相同时也与它相等（nn.Dropout 丢弃相同的元素）",
    },
    "by_p": {
        "en": "the survivors are divided by p, the probability of being "
        "dropped; divide them by `1 - p`, the probability of being kept, "
        "so that each weight keeps its expected value.",
        "zh": "你把保留下来的权重除以了 p，也就是被丢弃的概率；"
        "应当除以被保留的概率 `1 - p`，这样每个权重的期望才保持不变。",
    },
    "no_scale": {
        "en": "the survivors are not scaled: divide them by `1 - p`, or "
        "each weight's expected value shrinks to (1 - p) times its value.",
        "zh": "保留下来的权重没有缩放：要除以 `1 - p`，否则每个权重的期望"
        "会缩小为原值的 (1 - p) 倍。",
    },
    "times_keep": {
        "en": "multiplying by `1 - p` is what the original, non-inverted "
        "dropout does at evaluation time; inverted dropout divides the "
        "survivors by `1 - p` during training.",
        "zh": "乘以 `1 - p` 是原始的（非倒置）Dropout 在评估时的做法；"
        "倒置 Dropout 在训练时把保留下来的权重除以 `1 - p`。",
    },
    "keep_polarity": {
        "en": "`keep` is True where a weight survives: multiply by `keep`, "
        "not by `~keep`.",
        "zh": "`keep` 为 True 的位置是保留下来的权重：要乘以 `keep`，"
        "而不是 `~keep`。",
    },
    "renormalize": {
        "en": "dropout does not renormalize the rows: after it they no "
        "longer sum to 1, and that is intended; only divide the survivors "
        "by `1 - p`.",
        "zh": "Dropout 不会重新归一化每一行：之后各行之和不再是 1，"
        "这正是预期的结果；只需把保留下来的权重除以 `1 - p`。",
    },
    "eval": {
        "en": "`F.dropout` is on unless you say otherwise, in evaluation "
        "mode too: pass `training=self.training` (or use an `nn.Dropout` "
        "submodule, which `.eval()` switches off).",
        "zh": "除非另行指定，`F.dropout` 总是生效，评估模式下也一样：要传入 "
        "`training=self.training`（或者使用 `nn.Dropout` 子模块，"
        "`.eval()` 会把它关掉）。",
    },
    "eval_scale": {
        "en": "in evaluation mode inverted dropout changes nothing: the "
        "survivors were already divided by `1 - p` in training, so do not "
        "multiply by `1 - p` here.",
        "zh": "在评估模式下，倒置 Dropout 不做任何改动：训练时保留下来的权重"
        "已经除以了 `1 - p`，这里不要再乘以 `1 - p`。",
    },
    "never_train": {
        "en": "now dropout is off in training mode too: pass "
        "`training=self.training`, not `training=False`.",
        "zh": "现在训练模式下 Dropout 也关掉了：要传入 "
        "`training=self.training`，而不是 `training=False`。",
    },
    "unsliced_mask": _UNSLICED,
    "unsliced_fill": _UNSLICED,
    "keep_prob": {
        "en": "the p of `F.dropout` and `nn.Dropout` is the probability of "
        "dropping an element, not of keeping it: pass `self.p`, "
        "not `1 - self.p`.",
        "zh": "`F.dropout` 和 `nn.Dropout` 的 p 是丢弃一个元素的概率，"
        "不是保留它的概率：要传入 `self.p`，而不是 `1 - self.p`。",
    },
}


def _weights(seed: int, g: torch.Generator) -> torch.Tensor:
    # Causal attention weights, with and without a batch dimension: masked
    # zeros, rows that sum to 1.
    n = 2 + seed % 5
    lead = [(), (3,)][seed % 2]
    scores = torch.randn(*lead, n, n, generator=g)
    return masked_softmax(scores, causal_mask(n))


def _inverted(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        weights, p = _weights(seed, g), RATES[seed % len(RATES)]
        # The elements F.dropout keeps with this seed, and what it returns.
        torch.manual_seed(seed)
        keep = F.dropout(torch.ones_like(weights), p) != 0
        torch.manual_seed(seed)
        expected = F.dropout(weights, p)
        kept = weights * keep
        sums = kept.sum(dim=-1, keepdim=True)
        wrong = {
            "by_p": lambda: kept / p,
            "no_scale": lambda: kept,
            "times_keep": lambda: kept * (1 - p),
            "keep_polarity": lambda: weights * ~keep / (1 - p),
            "renormalize": lambda: kept / sums,
        }
        out = call(answer, weights.clone(), keep.clone(), p, wrong=wrong)
        expect(out, expected, "dropped", wrong)

    for seed in range(COUNT):
        once(seed)
    return [("same_as_dropout", {"count": COUNT})]


def _eval_bug(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> None:
        d_in, d_out, n = 2 + seed % 3, 1 + seed % 4, 3 + seed % 4
        # Fewer tokens than context_length on two seeds in three, so that
        # a mask left at its full size shows.
        num_tokens = n - seed % 3
        p = RATES[seed % len(RATES)]
        torch.manual_seed(seed)
        module = call(answer, d_in, d_out, n, p)
        if not isinstance(module, nn.Module):
            name = getattr(answer, "__name__", "answer")
            got = type(module).__name__
            raise WrongAnswerError("not_module", "compare", name=name, got=got)
        reference = CausalAttention(d_in, d_out, n, p)
        names = ("W_query", "W_key", "W_value")
        copy_weights(module, reference, names, d_in, d_out)
        g = torch.Generator().manual_seed(seed)
        x = torch.rand(2, num_tokens, d_in, generator=g)
        scores = torch.zeros(2, num_tokens, num_tokens)
        # The full (n, n) mask on the scores of fewer tokens, given to
        # masked_softmax or to masked_fill: the errors they raise.
        unsliced = {
            "unsliced_mask": lambda: masked_softmax(scores, causal_mask(n)),
            "unsliced_fill": lambda: scores.masked_fill(
                causal_mask(n), -torch.inf
            ),
        }

        def run(model: Any, mode: bool) -> Any:
            # The same seed before each call: the same elements dropped.
            model.train(mode)
            torch.manual_seed(seed)
            with torch.no_grad():
                return call(model, x, wrong=unsliced)

        right_eval, right_train = run(reference, False), run(reference, True)
        reference.dropout.p = 1 - p
        keep_prob = run(reference, True)
        wrong = {
            "eval": lambda: right_train,
            "eval_scale": lambda: right_eval * (1 - p),
        }
        expect(run(module, False), right_eval, "eval_output", wrong)
        wrong = {
            "never_train": lambda: right_eval,
            "keep_prob": lambda: keep_prob,
            "by_p": lambda: right_train * (1 - p) / p,
        }
        expect(run(module, True), right_train, "train_output", wrong)

    for seed in range(COUNT):
        once(seed)
    return [("same_as_eval", {"count": COUNT}), ("same_draw", {})]


EXERCISES = [
    Exercise("exercise-inverted-dropout", _inverted, WORDS),
    Exercise("exercise-dropout-eval-bug", _eval_bug, WORDS),
]
