"""What a ✗ tells the learner besides the hint: the library call the answer was compared with, and the smallest
input it failed on, with the expected and the actual values next to each other; and what `check` returns."""

from __future__ import annotations

import re

import pytest
import torch
from attention_exercises import EXERCISES, LANGUAGES, check, diagnose
from attention_exercises._core import CHECKED, LABELS, say

IDS = sorted(EXERCISES)


def _reference(exercise: str, lang: str) -> str:
    spec = EXERCISES[exercise]
    return say({**CHECKED, **spec.words}, spec.reference, lang)


def _nothing(*args: object) -> torch.Tensor:
    return torch.zeros(1)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("exercise", IDS)
def test_every_failure_names_the_reference_it_compared_with(exercise: str, lang: str) -> None:
    result = diagnose(exercise, _nothing, lang=lang)
    assert not result
    reference = say(LABELS, "reference", lang, reference=_reference(exercise, lang))
    # Wrapped as printed: compare without the line breaks and indents (a Chinese line breaks between characters).
    assert re.sub(r"\s", "", reference) in re.sub(r"\s", "", str(result)), str(result)


@pytest.mark.parametrize("exercise", IDS)
def test_the_reference_a_failure_names_is_the_one_a_pass_names(exercise: str) -> None:
    """The ✓ says what the answer equals; the ✗ names the same call, before the learner has passed."""
    for lang in LANGUAGES:
        assert _reference(exercise, lang)
    reference = EXERCISES[exercise].reference
    assert reference.startswith("lib_"), reference


def _causal(wrong_from: int):
    """Right on scores of fewer than ``wrong_from`` tokens, wrong from there on: the mask forgotten."""

    def causal_weights(attn_scores):
        n = attn_scores.shape[-1]
        if n >= wrong_from:
            return torch.softmax(attn_scores, dim=-1)
        future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        return torch.softmax(attn_scores.masked_fill(future, -torch.inf), dim=-1)

    return causal_weights


def _example(message: str) -> list[str]:
    lines = message.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "The smallest input it failed on:")
    end = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Hint:"))
    return lines[start + 1 : end]


def test_the_example_is_the_smallest_input_that_fails() -> None:
    """Wrong everywhere: the 2 x 2 scores, shown whole, with the right and the returned weights."""
    message = str(diagnose("exercise-causal-weights", _causal(0)))
    example = _example(message)
    assert example[0].startswith("    attn_scores = tensor([[")
    assert len(example) == 6, message  # two rows each: the scores, the expected and the returned weights
    expected = next(i for i, line in enumerate(example) if line.startswith("  expected: "))
    got = next(i for i, line in enumerate(example) if line.startswith("  got: "))
    assert example[expected] == "  expected: tensor([[1.00, 0.00],", message  # the first token sees itself only
    assert example[got] != "  got:      tensor([[1.00, 0.00],", message
    # The numbers shown are the input's: recomputing the reference from them gives the expected row.
    rows = [re.findall(r"-?\d+\.\d+", line) for line in example[:2]]
    scores = torch.tensor([[float(x) for x in row] for row in rows])
    second = torch.softmax(scores[1], dim=-1)
    shown = [float(x) for x in re.findall(r"-?\d+\.\d+", example[expected + 1])]
    assert torch.allclose(second, torch.tensor(shown), atol=0.01), message


@pytest.mark.parametrize("wrong_from", [3, 4, 6])
def test_an_answer_wrong_only_on_larger_inputs_shows_the_smallest_of_those(wrong_from: int) -> None:
    message = str(diagnose("exercise-causal-weights", _causal(wrong_from)))
    example = _example(message)
    if wrong_from == 3:  # 3 x 3 is shown whole
        assert sum(line.startswith("    attn_scores = ") or line.startswith(" " * 19) for line in example[:3]) == 3
        assert example[0].count(",") == 3, message
    else:  # larger: its shape, and the first place the weights differ
        assert example[0] == f"    attn_scores = a tensor of shape ({wrong_from}, {wrong_from})", message
        assert example[1].startswith("  First difference at [0, 0]: expected 1, got "), message  # token 0 sees itself


def test_a_chinese_failure_shows_the_same_example_in_chinese() -> None:
    english = str(diagnose("exercise-causal-weights", _causal(0)))
    chinese = str(diagnose("exercise-causal-weights", _causal(0), lang="zh"))
    assert "出错的最小输入：" in chinese
    assert "  应为：" in chinese
    assert "  实际：" in chinese
    assert "对照：masked_softmax(attn_scores, causal_mask(n))" in chinese
    tensors = [line.strip() for line in english.splitlines() if "tensor" in line or line.strip().startswith("[")]
    for line in tensors:  # the same numbers
        assert line.split("tensor", 1)[-1] in chinese, line


def test_an_answer_that_raises_shows_the_input_it_raised_on() -> None:
    def batched_scores(x):
        return x @ x.T

    message = str(diagnose("exercise-batched-scores", batched_scores))
    assert "calling it raised RuntimeError" in message
    assert "Compared with: attention_lib.attn_scores_all(x[i]) for each sentence" in message
    assert "The smallest input it failed on:\n    x = " in message
    assert "expected:" not in message  # nothing came back to compare


def test_a_cache_given_to_the_answer_is_shown_as_it_was_before_the_call() -> None:
    """The answer fills the cache: the example shows what the cache held when the step was called."""

    def cached_attention(cache, queries, keys, values):
        if cache.cache_k is not None:
            keys = torch.cat([cache.cache_k, keys], dim=2)
            values = torch.cat([cache.cache_v, values], dim=2)
        cache.cache_k, cache.cache_v = keys, values
        return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, is_causal=True)

    message = str(diagnose("exercise-cached-attention", cached_attention))
    example = _example(message)
    assert example[0].startswith("    cache.cache_k = "), message
    assert not example[0].endswith("None"), message  # the bug shows only once something is cached
    # Before the call: the cache holds fewer keys than the context has queries and keys together.
    cached = next(line for line in example if line.startswith("    cache.cache_k = "))
    keys = next(line for line in example if line.startswith("    keys = "))
    assert cached != keys.replace("keys", "cache.cache_k", 1), message


def test_no_failure_of_a_rule_shows_an_input() -> None:
    def all_scores(queries, keys):
        return torch.stack([keys @ query for query in queries])

    result = diagnose("exercise-all-scores", all_scores)
    assert result.hint == "rule_loop"
    assert "The smallest input" not in str(result)
    assert "Compared with: attention_lib.dot_product_scores" in str(result)


def test_check_prints_its_result_and_returns_it(capsys: pytest.CaptureFixture) -> None:
    wrong = check("exercise-causal-weights", _causal(0))
    printed = capsys.readouterr().out
    assert printed == str(wrong) + "\n"
    assert not wrong
    assert wrong.hint == "no_mask"
    assert str(wrong).endswith(wrong.tip)
    assert wrong.tip.lstrip().startswith("Hint: ")
    right = check("exercise-causal-weights", _causal(100))
    assert right
    assert capsys.readouterr().out == str(right) + "\n"
    assert right.tip == ""
    assert check("exercise-causal-weights", _causal(100), lang="zh").passed


def test_check_works_in_an_assert() -> None:
    assert check("exercise-causal-weights", _causal(100))
    with pytest.raises(AssertionError):
        assert check("exercise-causal-weights", _causal(0))


def test_a_result_says_what_it_is_when_echoed() -> None:
    result = diagnose("exercise-causal-weights", _causal(0))
    assert repr(result) == "Result(exercise='exercise-causal-weights', passed=False, hint='no_mask')"


def test_the_result_holds_the_failing_input_to_reproduce_it() -> None:
    """Where the input is too large to print, the learner still has it: the generic hint points at
    ``result.example``, and the reference run on it gives ``expected``."""
    from attention_lib import causal_mask, masked_softmax

    result = diagnose("exercise-causal-weights", _causal(6))
    example = result.example
    assert example is not None
    scores = example.inputs["attn_scores"]
    assert scores.shape == (6, 6)
    assert torch.allclose(masked_softmax(scores, causal_mask(6)), example.expected)
    assert torch.allclose(_causal(6)(scores), example.got)
    assert diagnose("exercise-causal-weights", _causal(100)).example is None


def test_the_additive_scores_of_one_matrix_on_a_batch_get_their_own_hint() -> None:
    """The page's `(n_q, 1, h) + (1, n_k, h)` written with axes counted from the front: right for one matrix of
    queries, wrong with a batch in front (found by a newcomer's walk, 2026-11-27)."""

    def additive(queries, keys, W_q, W_k, w_v):
        hidden = (queries @ W_q.T).unsqueeze(1) + (keys @ W_k.T).unsqueeze(0)
        return (torch.tanh(hidden) @ w_v.T).squeeze(-1)

    assert diagnose("exercise-additive-scores", additive).hint == "axes_from_front"
    assert diagnose("exercise-additive-scores", additive, lang="zh").hint == "axes_from_front"


#: Wrong answers from a newcomer's walk (2026-11-27) that got only the generic hint then, with the hint each
#: gets now: a draw of its own where the task gives the draw, the heads swapped with their features, tanh in the
#: wrong place, the padding one key late, a mask not sliced to the tokens.
WALK_PROBES = [
    (
        "exercise-inverted-dropout",
        "def answer(attn_weights, keep, p):\n    return torch.nn.functional.dropout(attn_weights, p)",
        "rule_function",
    ),
    (
        "exercise-inverted-dropout",
        "def answer(attn_weights, keep, p):\n    return attn_weights * (torch.rand(attn_weights.shape) > p) / (1 - p)",
        "rule_function",
    ),
    (
        "exercise-split-heads-by-hand",
        "def answer(x, num_heads):\n    *lead, t, d = x.shape\n"
        "    return x.view(*lead, t, num_heads, d // num_heads).transpose(-2, -1)",
        "heads_axes",
    ),
    (
        "exercise-additive-scores",
        "def answer(queries, keys, W_q, W_k, w_v):\n"
        "    both = (queries @ W_q.T).unsqueeze(-2) + (keys @ W_k.T).unsqueeze(-3)\n"
        "    return torch.tanh(both @ w_v.T).squeeze(-1)",
        "tanh_place",
    ),
    (
        "exercise-additive-scores",
        "def answer(queries, keys, W_q, W_k, w_v):\n"
        "    both = (queries @ W_q.T).unsqueeze(-2) + (keys @ W_k.T).unsqueeze(-3)\n"
        "    return (torch.relu(both) @ w_v.T).squeeze(-1)",
        "tanh_place",
    ),
    (
        "exercise-cross-padding-bug",
        "def answer(queries, keys, values, valid_lens):\n"
        "    padding = torch.arange(keys.shape[1]) > valid_lens[:, None]\n"
        "    scores = queries @ keys.transpose(1, 2) / queries.shape[-1] ** 0.5\n"
        "    scores = scores.masked_fill(padding[:, None, :], -torch.inf)\n"
        "    return torch.softmax(scores, dim=-1) @ values",
        "padding_from",
    ),
    (
        "exercise-causal-buffer",
        "class answer(torch.nn.Module):\n"
        "    def __init__(self, d_in, d_out, context_length):\n"
        "        super().__init__()\n"
        "        self.W_query = torch.nn.Linear(d_in, d_out, bias=False)\n"
        "        self.W_key = torch.nn.Linear(d_in, d_out, bias=False)\n"
        "        self.W_value = torch.nn.Linear(d_in, d_out, bias=False)\n"
        "        ones = torch.ones(context_length, context_length, dtype=torch.bool)\n"
        '        self.register_buffer("mask", torch.triu(ones, 1), persistent=False)\n'
        "    def forward(self, x):\n"
        "        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)\n"
        "        s = (q @ k.transpose(1, 2) / k.shape[-1] ** 0.5).masked_fill(self.mask, -torch.inf)\n"
        "        return torch.softmax(s, dim=-1) @ v",
        "unsliced",
    ),
]


@pytest.mark.parametrize(("exercise", "source", "hint"), WALK_PROBES, ids=[f"{e}-{h}" for e, _, h in WALK_PROBES])
def test_a_newcomers_probes_get_their_own_hints(exercise: str, source: str, hint: str) -> None:
    namespace: dict[str, object] = {"torch": torch}
    exec(source, namespace)
    for lang in LANGUAGES:
        result = diagnose(exercise, namespace["answer"], lang=lang)
        assert (result.passed, result.hint) == (False, hint), str(result)


class _TiledGQA(torch.nn.Module):
    """Exercise 3 of grouped-query attention as the page gives it: `repeat` where `repeat_interleave` belongs, a
    bug only while 1 < num_kv_groups < num_heads."""

    def __init__(self, d_in, d_out, num_heads, num_kv_groups):
        super().__init__()
        self.h, self.g, self.hd = num_heads, num_kv_groups, d_out // num_heads
        self.W_query = torch.nn.Linear(d_in, d_out, bias=False)
        self.W_key = torch.nn.Linear(d_in, num_kv_groups * self.hd, bias=False)
        self.W_value = torch.nn.Linear(d_in, num_kv_groups * self.hd, bias=False)
        self.out_proj = torch.nn.Linear(d_out, d_out, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.g, self.hd).transpose(1, 2).repeat(1, self.h // self.g, 1, 1)
        v = self.W_value(x).view(b, t, self.g, self.hd).transpose(1, 2).repeat(1, self.h // self.g, 1, 1)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(out.transpose(1, 2).reshape(b, t, -1))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_module_exercises_example_shows_how_the_module_was_made(lang: str) -> None:
    """The input alone does not reproduce a module's failure: its sizes do (a newcomer's walk, 2026-11-27). The
    example shows the call that made the module, by the names of its parameters, then the input, in every language
    (the call is code), and `result.example.inputs` holds it."""
    result = diagnose("exercise-gqa-repeat-bug", _TiledGQA, lang=lang)
    assert (result.passed, result.hint) == (False, "repeat"), str(result)
    lines = str(result).splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == say(LABELS, "example", lang))
    made = re.fullmatch(
        r"    module = _TiledGQA\(d_in=(\d+), d_out=(\d+), num_heads=(\d+), num_kv_groups=(\d+)\)", lines[start + 1]
    )
    assert made is not None, str(result)
    assert lines[start + 2].startswith("    x = "), str(result)
    d_in, d_out, num_heads, num_kv_groups = (int(size) for size in made.groups())
    assert 1 < num_kv_groups < num_heads, str(result)  # where the bug shows
    assert result.example is not None
    built = result.example.inputs["module"]
    assert repr(built) == lines[start + 1].removeprefix("    module = ")
    # Made again from what it shows, the module fails on the input shown.
    module = _TiledGQA(d_in, d_out, num_heads, num_kv_groups)
    x = result.example.inputs["x"]
    assert isinstance(x, torch.Tensor)
    assert x.shape[-1] == d_in
    assert module(x).shape == result.example.expected.shape


def test_the_smallest_example_counts_the_sizes_the_module_was_made_with() -> None:
    from attention_exercises._core import Built, Example

    x = torch.zeros(2, 3)
    small = Example({"module": Built("M", (("d_in", 3), ("d_out", 2), ("dropout", 0.1))), "x": x})
    large = Example({"module": Built("M", (("d_in", 3), ("d_out", 8), ("dropout", 0.1))), "x": x})
    assert (small.size, large.size) == (6 + 5, 6 + 11)
    assert repr(small.inputs["module"]) == "M(d_in=3, d_out=2, dropout=0.1)"


def _dropout_attention(drop_scores: bool = False, drop_weights: bool = False) -> type:
    """The dropout chapter's causal attention, dropout on the scores, on the weights, or nowhere."""

    class Attention(torch.nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout):
            super().__init__()
            self.W_query = torch.nn.Linear(d_in, d_out, bias=False)
            self.W_key = torch.nn.Linear(d_in, d_out, bias=False)
            self.W_value = torch.nn.Linear(d_in, d_out, bias=False)
            self.p = dropout

        def forward(self, x):
            n = x.shape[1]
            queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
            scores = queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5
            if drop_scores:
                scores = torch.nn.functional.dropout(scores, self.p, self.training)
            future = torch.ones(n, n, dtype=torch.bool).triu(1)
            weights = torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)
            if drop_weights:
                weights = torch.nn.functional.dropout(weights, self.p, self.training)
            return weights @ values

    return Attention


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_failure_in_training_mode_names_training_mode_as_what_it_compared_with(lang: str) -> None:
    """The dropout exercise compares with the library in evaluation mode, then in training mode: a ✗ found in
    training mode names that (a newcomer's walk on 2026-11-27 found it named evaluation mode, with training-mode
    numbers)."""
    words = EXERCISES["exercise-dropout-eval-bug"].words
    result = diagnose("exercise-dropout-eval-bug", _dropout_attention(), lang=lang)
    assert (result.passed, result.hint) == (False, "never_train"), str(result)
    printed = re.sub(r"\s", "", str(result))
    assert re.sub(r"\s", "", say(LABELS, "reference", lang, reference=say(words, "lib_train", lang))) in printed
    assert re.sub(r"\s", "", say(words, "lib_eval", lang)) not in printed
    # The module right in both modes: nothing to name.
    assert diagnose("exercise-dropout-eval-bug", _dropout_attention(drop_weights=True), lang=lang).passed


def test_dropout_on_the_scores_is_not_said_to_leave_the_weights_unscaled() -> None:
    """F.dropout on the scores does scale the survivors by 1/(1 - p); what is wrong is where it is."""
    result = diagnose("exercise-dropout-eval-bug", _dropout_attention(drop_scores=True))
    assert result.hint == "scores_dropped", str(result)
    assert "not scaled by 1/(1 - p)" not in " ".join(str(result).split())
