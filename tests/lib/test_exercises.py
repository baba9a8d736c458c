"""The exercise checker (attention_lib.exercises): each typical wrong answer gets the hint written for it, in both
languages; right answers pass; a wrong answer never passes.

The right answers of the pages are checked there too (their solutions print the checker's ✓, and Sybil compares);
here each exercise's mistakes are listed, as code a reader might write.
"""

from __future__ import annotations

import textwrap

import pytest
import torch
from torch import nn

from attention_lib.exercises import EXERCISES, check, diagnose
from attention_lib.exercises._core import CHECKED, HINTS, PROBLEMS, wrap

#: (exercise, the reader's code, the hint it must get). The code defines `answer`.
WRONG = [
    # attention scores
    ("exercise-all-scores", "def answer(inputs): return inputs.T @ inputs", "dims_product"),
    ("exercise-all-scores", "def answer(inputs): return inputs * inputs", "elementwise"),
    ("exercise-all-scores", "def answer(inputs): return inputs @ inputs[1]", "one_query"),
    ("exercise-all-scores", "def answer(inputs): inputs @ inputs.T", "return"),
    ("exercise-batched-scores", "def answer(x): return x @ x.T", "dot_t"),
    # attention weights
    (
        "exercise-stable-softmax",
        "def answer(x): return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)",
        "naive",
    ),
    (
        "exercise-stable-softmax",
        """
        def answer(x):
            e = torch.exp(x - x.max())
            return e / e.sum(dim=-1, keepdim=True)
        """,
        "global_max",
    ),
    (
        "exercise-softmax-bug",
        """
        def answer(x):
            e = torch.exp(x - x.max(dim=-1).values)
            return e / e.sum(dim=-1, keepdim=True)
        """,
        "no_keepdim",
    ),
    ("exercise-stable-softmax", "def answer(x): return x / x.sum(dim=-1, keepdim=True)", "by_sum"),
    ("exercise-stable-softmax", "def answer(x): return torch.softmax(x, dim=0)", "dim0"),
    # context vectors
    (
        "exercise-context-vectors",
        "def answer(inputs): return torch.softmax(inputs @ inputs.T, dim=0) @ inputs",
        "rows_are_queries",
    ),
    (
        "exercise-context-bug",
        "def answer(inputs): return torch.softmax(inputs @ inputs.T, dim=-1).T @ inputs",
        "rows_are_queries",
    ),
    ("exercise-context-vectors", "def answer(inputs): return (inputs @ inputs.T) @ inputs", "no_softmax"),
    (
        "exercise-context-vectors",
        "def answer(inputs): return inputs.T @ torch.softmax(inputs @ inputs.T, dim=-1)",
        "inputs_last",
    ),
]

SELF_ATTENTION = """
class answer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        {line}
"""
RIGHT_WEIGHTS = "torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)"
WRONG += [
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return torch.softmax(queries @ keys.T / keys.shape[-1], dim=-1) @ values"),
        "scale_d_k",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return torch.softmax(queries @ keys.T, dim=-1) @ values"),
        "no_scale",
    ),
    (
        "exercise-keys-bug",
        SELF_ATTENTION.format(line="keys = self.W_query(x)\n        return " + RIGHT_WEIGHTS + " @ values"),
        "keys_from_query",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return " + RIGHT_WEIGHTS + " @ keys"),
        "values_from_key",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=0) @ values"),
        "dim0",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return " + RIGHT_WEIGHTS + " @ values").replace("W_key =", "key_proj ="),
        "names",
    ),
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            with torch.no_grad():
                for name in ("W_query", "W_key", "W_value"):
                    getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight)
        """,
        "transpose",
    ),
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            sa_v1.W_query = sa_v2.W_query.weight.T
        """,
        "assign",
    ),
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            with torch.no_grad():
                sa_v1.W_query.copy_(sa_v2.W_key.weight.T)
                sa_v1.W_key.copy_(sa_v2.W_query.weight.T)
                sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
        """,
        "swapped",
    ),
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            sa_v1 = type(sa_v1)(sa_v2.W_query.weight.shape[1], sa_v2.W_query.weight.shape[0])
            with torch.no_grad():
                sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
        """,
        "in_place",
    ),
]

CAUSAL = """
def answer(attn_scores):
    n = attn_scores.shape[-1]
    ones = torch.ones(n, n)
    {lines}
"""
WRONG += [
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.tril(ones, diagonal=-1).bool()\n"
            "    return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=-1)"
        ),
        "inverted",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.triu(ones).bool()\n"
            "    return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=-1)"
        ),
        "diagonal",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.triu(ones, diagonal=1).bool()\n"
            "    return torch.softmax(attn_scores.masked_fill(mask, 0.0), dim=-1)"
        ),
        "zero_fill",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.triu(ones, diagonal=1).bool()\n"
            "    return torch.softmax(attn_scores, dim=-1).masked_fill(mask, 0.0)"
        ),
        "no_renorm",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.triu(ones, diagonal=1).bool()\n"
            "    return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=0)"
        ),
        "dim0",
    ),
    (
        "exercise-combined-mask-bug",
        """
        def answer(attn_scores, valid_len):
            n = attn_scores.shape[-1]
            causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
            padding = torch.arange(n) >= valid_len
            return torch.softmax(attn_scores.masked_fill(causal & padding, -torch.inf), dim=-1)
        """,
        "and",
    ),
]

#: A right answer to each exercise, as a reader might write it (not the page's solution).
RIGHT = {
    "exercise-all-scores": "def answer(inputs): return torch.einsum('id,jd->ij', inputs, inputs)",
    "exercise-batched-scores": "def answer(x): return torch.bmm(x, x.permute(0, 2, 1))",
    "exercise-stable-softmax": "def answer(x): return torch.exp(x - torch.logsumexp(x, dim=-1, keepdim=True))",
    "exercise-softmax-bug": "def answer(x): return torch.nn.functional.softmax(x, dim=1)",
    "exercise-context-vectors": "def answer(inputs): return torch.softmax(inputs @ inputs.mT, -1) @ inputs",
    "exercise-context-bug": "def answer(inputs): return torch.softmax(inputs @ inputs.T, dim=1) @ inputs",
    "exercise-self-attention": SELF_ATTENTION.format(line="return " + RIGHT_WEIGHTS + " @ values"),
    "exercise-keys-bug": SELF_ATTENTION.format(
        line="return torch.nn.functional.scaled_dot_product_attention(queries, keys, values)"
    ),
    "exercise-copy-v2-into-v1": """
        def answer(sa_v1, sa_v2):
            with torch.no_grad():
                sa_v1.W_query.data = sa_v2.W_query.weight.T.clone()
                sa_v1.W_key.data = sa_v2.W_key.weight.T.clone()
                sa_v1.W_value.data = sa_v2.W_value.weight.T.clone()
        """,
    "exercise-causal-weights": CAUSAL.format(
        lines="mask = torch.ones(n, n, dtype=torch.bool).tril()\n"
        "    return torch.softmax(attn_scores.masked_fill(~mask, float('-inf')), dim=-1)"
    ),
    "exercise-combined-mask-bug": """
        def answer(attn_scores, valid_len):
            n = attn_scores.shape[-1]
            keep = torch.ones(n, n, dtype=torch.bool).tril() & (torch.arange(n) < valid_len)
            return torch.softmax(attn_scores.masked_fill(~keep, -torch.inf), dim=-1)
        """,
}

# Each later chapter's typical wrong answers (WRONG) and one right answer per exercise (RIGHT), one block a chapter.

# scoring-functions (attention_lib/exercises/scoring.py)
WRONG += []
RIGHT |= {}

# dropout (attention_lib/exercises/dropout.py)
WRONG += []
RIGHT |= {}

# buffers (attention_lib/exercises/buffers.py)
CAUSAL_HEAD = """
class answer(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        future = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        {keep}

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5
        return torch.softmax(scores.masked_fill({mask}, {fill}), dim=-1) @ values
"""
BUFFER = 'self.register_buffer("mask", future, persistent=False)'
WRONG += [
    (
        "exercise-mask-attribute-bug",
        CAUSAL_HEAD.format(keep="self.mask = future", mask="self.mask[:n, :n]", fill="-torch.inf"),
        "attribute",
    ),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep="self.mask = future", mask="self.mask[:n, :n].to(x.device)", fill="-torch.inf"),
        "attribute",
    ),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(
            keep="self.mask = nn.Parameter(future.float())", mask="self.mask[:n, :n].bool()", fill="-torch.inf"
        ),
        "parameter",
    ),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep='self.register_buffer("mask", future)', mask="self.mask[:n, :n]", fill="-torch.inf"),
        "persistent",
    ),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(
            keep='self.register_buffer("causal", future, persistent=False)',
            mask="self.causal[:n, :n]",
            fill="-torch.inf",
        ),
        "name",
    ),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep=BUFFER, mask="self.mask[:n, :n]", fill="-1e9"),
        "fill_1e9",
    ),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep=BUFFER, mask="self.mask[:n, :n].T", fill="-torch.inf"),
        "inverted",
    ),
    (
        "exercise-mask-attribute-bug",
        CAUSAL_HEAD.format(keep=BUFFER, mask="self.mask[:n, :n]", fill="-torch.inf").replace(
            "scores.masked_fill(self.mask[:n, :n], -torch.inf)", "scores"
        ),
        "no_mask",
    ),
]
RIGHT |= {
    # the book's float mask, turned into booleans in forward
    "exercise-causal-buffer": CAUSAL_HEAD.format(
        keep='self.register_buffer("mask", future.float(), persistent=False)',
        mask="self.mask.bool()[:n, :n]",
        fill="float('-inf')",
    ),
    "exercise-mask-attribute-bug": """
        class answer(nn.Module):
            def __init__(self, d_in, d_out, context_length):
                super().__init__()
                self.W_query = nn.Linear(d_in, d_out, bias=False)
                self.W_key = nn.Linear(d_in, d_out, bias=False)
                self.W_value = nn.Linear(d_in, d_out, bias=False)
                self.register_buffer("mask", torch.ones(context_length, context_length).tril().bool(), persistent=False)

            def forward(self, x):
                n = x.shape[1]
                q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.mask[:n, :n])
        """,
}

# multi-head (attention_lib/exercises/multihead.py)
WRONG += []
RIGHT |= {}

# cross-attention (attention_lib/exercises/cross.py)
WRONG += []
RIGHT |= {}

# pytorch-equivalence (attention_lib/exercises/equivalence.py)
COPY_INTO_TORCH = """
def answer(torch_mha, mha):
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([{weights}]))
        {in_bias}
        torch_mha.out_proj.weight.copy_(mha.out_proj.weight)
        {out_bias}
"""
QKV = "mha.W_query.weight, mha.W_key.weight, mha.W_value.weight"
IN_BIAS = (
    "torch_mha.in_proj_bias.copy_(torch.cat([mha.W_query.bias, mha.W_key.bias, mha.W_value.bias])"
    " if mha.W_query.bias is not None else torch.zeros(3 * mha.d_out))"
)
OUT_BIAS = "torch_mha.out_proj.bias.copy_(mha.out_proj.bias)"
PADDED_SDPA = """
def answer(queries, keys, values, key_padding_mask):
    t = queries.shape[-2]
    causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    mask = causal | key_padding_mask[:, None, None, :]
    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, {how})
"""
WRONG += [
    (
        "exercise-copy-into-torch-mha",
        COPY_INTO_TORCH.format(
            weights="mha.W_key.weight, mha.W_query.weight, mha.W_value.weight", in_bias=IN_BIAS, out_bias=OUT_BIAS
        ),
        "order",
    ),
    (
        "exercise-copy-into-torch-mha",
        COPY_INTO_TORCH.format(
            weights="mha.W_query.weight.T, mha.W_key.weight.T, mha.W_value.weight.T", in_bias=IN_BIAS, out_bias=OUT_BIAS
        ),
        "transpose",
    ),
    (
        "exercise-copy-into-torch-mha",
        COPY_INTO_TORCH.format(weights=QKV, in_bias="torch_mha.in_proj_bias.zero_()", out_bias=OUT_BIAS),
        "in_bias",
    ),
    (
        "exercise-copy-into-torch-mha",
        COPY_INTO_TORCH.format(weights=QKV, in_bias="pass", out_bias=OUT_BIAS),
        "in_bias",
    ),
    (
        "exercise-copy-into-torch-mha",
        COPY_INTO_TORCH.format(weights=QKV, in_bias=IN_BIAS, out_bias="pass"),
        "out_proj",
    ),
    (
        "exercise-copy-into-torch-mha",
        """
        def answer(torch_mha, mha):
            torch_mha.in_proj_weight = torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight])
        """,
        "assign",
    ),
    (
        "exercise-copy-into-torch-mha",
        """
        def answer(torch_mha, mha):
            torch_mha.in_proj_weight.copy_(torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight]))
        """,
        "no_grad",
    ),
    (
        "exercise-copy-into-torch-mha",
        """
        def answer(torch_mha, mha):
            torch_mha = nn.MultiheadAttention(mha.d_out, mha.num_heads, batch_first=True)
            with torch.no_grad():
                torch_mha.in_proj_weight.copy_(torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight]))
        """,
        "in_place",
    ),
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="attn_mask=mask"), "polarity"),
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="attn_mask=~key_padding_mask[:, None, None, :]"), "no_causal"),
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="is_causal=True"), "no_padding"),
    (
        "exercise-sdpa-mask-bug",
        PADDED_SDPA.format(how="attn_mask=~causal | ~key_padding_mask[:, None, None, :]"),
        "combine",
    ),
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="attn_mask=mask.float()"), "float_mask"),
]
RIGHT |= {
    "exercise-copy-into-torch-mha": """
        def answer(torch_mha, mha):
            d = mha.d_out
            with torch.no_grad():
                for i, layer in enumerate((mha.W_query, mha.W_key, mha.W_value)):
                    torch_mha.in_proj_weight[i * d : (i + 1) * d] = layer.weight
                    torch_mha.in_proj_bias[i * d : (i + 1) * d] = 0.0 if layer.bias is None else layer.bias
            torch_mha.out_proj.load_state_dict(mha.out_proj.state_dict())
        """,
    # an additive float mask, 0 to keep and -inf to remove
    "exercise-sdpa-mask-bug": PADDED_SDPA.format(
        how="attn_mask=torch.zeros(mask.shape).masked_fill(mask, float('-inf'))"
    ),
}

# kv-cache (attention_lib/exercises/kv_cache.py)
WRONG += []
RIGHT |= {}

# grouped-query (attention_lib/exercises/grouped_query.py)
WRONG += []
RIGHT |= {}

# attention-backends (attention_lib/exercises/backends.py)
WRONG += []
RIGHT |= {}


def _answer(code: str):
    namespace = {"torch": torch, "nn": nn}
    exec(textwrap.dedent(code), namespace)
    return namespace["answer"]


@pytest.mark.parametrize(("exercise", "code", "hint"), WRONG, ids=[f"{e}-{h}" for e, _, h in WRONG])
def test_each_typical_wrong_answer_gets_its_hint_in_both_languages(exercise: str, code: str, hint: str) -> None:
    answer = _answer(code)
    english, chinese = diagnose(exercise, answer), diagnose(exercise, answer, lang="zh")
    assert not english.passed
    assert english.hint == hint, str(english)
    assert chinese.hint == hint
    assert str(english).startswith(f"✗ {exercise}: ")
    assert "  Hint: " in str(english)
    assert "  提示：" in str(chinese)
    assert str(chinese) != str(english)


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_a_right_answer_passes_and_says_what_was_checked(exercise: str, capsys: pytest.CaptureFixture[str]) -> None:
    answer = _answer(RIGHT[exercise])
    result = diagnose(exercise, answer)
    assert result.passed, str(result)
    assert result.hint is None
    lines = str(result).split("\n")
    assert lines[0] == f"✓ {exercise}"
    assert all(line.startswith(("  - ", "    ")) for line in lines[1:])
    assert diagnose(exercise, answer, lang="zh").passed
    check(exercise, answer)
    assert capsys.readouterr().out == str(result) + "\n"


def test_every_exercise_has_a_right_answer_and_a_wrong_one() -> None:
    assert set(RIGHT) == set(EXERCISES)
    assert {exercise for exercise, _, _ in WRONG} == set(EXERCISES)


def test_every_message_is_in_both_languages() -> None:
    tables = [PROBLEMS, HINTS, CHECKED, *(exercise.words for exercise in EXERCISES.values())]
    for table in tables:
        for key, texts in table.items():
            assert set(texts) == {"en", "zh"}, key


def test_the_checks_leave_the_readers_random_state_alone() -> None:
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    diagnose("exercise-self-attention", _answer(RIGHT["exercise-self-attention"]))
    assert torch.equal(torch.rand(3), expected)


def test_what_is_not_an_answer_is_named() -> None:
    result = diagnose("exercise-all-scores", None)
    assert not result.passed
    assert result.hint == "define"
    assert "NoneType" in str(result)
    with pytest.raises(ValueError, match=r"exercise must be the id of an exercise.*exercise-all-scores"):
        diagnose("exercise-nope", lambda x: x)
    with pytest.raises(ValueError, match="lang must be one of"):
        diagnose("exercise-all-scores", lambda x: x, lang="fr")


def test_a_module_that_is_not_one_is_named() -> None:
    result = diagnose("exercise-self-attention", lambda d_in, d_out: None)
    assert not result.passed
    assert "not an nn.Module" in str(result)


def test_long_messages_wrap_at_79_columns_counting_wide_characters_twice() -> None:
    text = wrap("  提示：" + "很长的中文句子" * 12 + " and some English words at the end", "    ")
    lines = text.split("\n")
    assert len(lines) > 2
    widths = [sum(2 if "\u4e00" <= c <= "\u9fff" or c == "：" else 1 for c in line) for line in lines]
    assert max(widths) <= 79
    assert all(line.startswith("    ") for line in lines[1:])
    assert "".join(line.strip() for line in lines).replace(" ", "") == (
        "提示：" + "很长的中文句子" * 12 + "andsomeEnglishwordsattheend"
    )
