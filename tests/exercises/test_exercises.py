"""The exercise checker (attention_exercises): each typical wrong answer gets the hint written for it, in both
languages; right answers pass; a wrong answer never passes.

The right answers of the pages are checked there too (their solutions print the checker's ✓, and Sybil compares);
here each exercise's mistakes are listed, as code a reader might write.
"""

from __future__ import annotations

import re
import textwrap

import pytest
import torch
from attention_exercises import EXERCISES, check, diagnose
from attention_exercises._core import CHECKED, HINTS, NOUNS, PROBLEMS, wrap
from torch import nn

#: (exercise, the reader's code, the hint it must get). The code defines `answer`.
WRONG = [
    # attention scores
    ("exercise-all-scores", "def answer(queries, keys): return queries.T @ keys", "dims_product"),
    ("exercise-all-scores", "def answer(queries, keys): return queries * keys", "elementwise"),
    ("exercise-all-scores", "def answer(queries, keys): return (queries * keys).sum(-1)", "elementwise"),
    ("exercise-all-scores", "def answer(queries, keys): return (queries * keys).sum(-1, keepdim=True)", "elementwise"),
    ("exercise-all-scores", "def answer(queries, keys): return keys @ queries.T", "keys_first"),
    ("exercise-all-scores", "def answer(queries, keys): return queries @ keys", "no_transpose"),
    # One tensor for every result: each call overwrites the scores it returned before.
    (
        "exercise-all-scores",
        "out = torch.empty(0)\ndef answer(queries, keys): return torch.matmul(queries, keys.T, out=out)",
        "later_call",
    ),
    # The transposed table has the right shape only with as many queries as keys: the values tell it then.
    ("exercise-all-scores", "def answer(queries, keys): return (keys @ queries.T).view(len(queries), -1)", "compare"),
    ("exercise-all-scores", "def answer(queries, keys): return queries @ queries.T", "self_scores"),
    ("exercise-all-scores", "def answer(queries, keys): return keys @ keys.T", "self_scores"),
    ("exercise-all-scores", "def answer(queries, keys): return queries @ keys.T / len(keys.T) ** 0.5", "scale_extra"),
    # A newcomer's walk: divided by d itself, and the softmax of the next chapter taken too.
    ("exercise-all-scores", "def answer(queries, keys): return (queries @ keys.T) / queries.shape[-1]", "scale_extra"),
    (
        "exercise-all-scores",
        "def answer(queries, keys): return torch.softmax(queries @ keys.T, dim=-1)",
        "weights_not_scores",
    ),
    ("exercise-all-scores", "def answer(queries, keys): queries @ keys.T", "return"),
    ("exercise-batched-scores", "def answer(x): return x @ x.T", "dot_T"),
    ("exercise-batched-scores", "def answer(x): return x @ x.transpose(0, 1)", "dot_T"),
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
    (
        "exercise-softmax-bug",
        """
        def answer(x):
            e = torch.exp(x - x.max(dim=0, keepdim=True).values)
            return e / e.sum(dim=-1, keepdim=True)
        """,
        "softmax_dim",
    ),
    (
        "exercise-stable-softmax",
        """
        def answer(x):
            e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
            return e / e.sum(dim=-1)
        """,
        "sum_no_keepdim",
    ),
    # A shift of each row by another score than its largest: right on small scores, inf on far-apart ones.
    (
        "exercise-stable-softmax",
        """
        def answer(x):
            e = torch.exp(x - x.min(dim=-1, keepdim=True).values)
            return e / e.sum(dim=-1, keepdim=True)
        """,
        "not_row_max",
    ),
    (
        "exercise-stable-softmax",
        """
        def answer(x):
            e = torch.exp(x - x.mean(dim=-1, keepdim=True))
            return e / e.sum(dim=-1, keepdim=True)
        """,
        "not_row_max",
    ),
    (
        "exercise-softmax-bug",
        """
        def answer(x):
            e = torch.exp(x - x[:, :1])
            return e / e.sum(dim=-1, keepdim=True)
        """,
        "not_row_max",
    ),
    ("exercise-stable-softmax", "def answer(x): return x / x.sum(dim=-1, keepdim=True)", "by_sum"),
    # `.values` forgotten: max with a dim returns the maxima and their indices, and the subtraction raises.
    (
        "exercise-stable-softmax",
        """
        def answer(x):
            e = torch.exp(x - x.max(dim=-1, keepdim=True))
            return e / e.sum(-1, keepdim=True)
        """,
        "no_values",
    ),
    (
        "exercise-stable-softmax",
        """
        def answer(x):
            e = torch.exp(x - x.max(dim=0, keepdim=True).values)
            return e / e.sum(dim=0, keepdim=True)
        """,
        "softmax_dim",
    ),
    # The task's rule: torch's softmax, whichever way it is called, is what the reader writes.
    ("exercise-stable-softmax", "def answer(x): return torch.softmax(x, dim=-1)", "rule_function"),
    # context vectors
    (
        "exercise-context-vectors",
        "def answer(inputs): return torch.softmax(inputs @ inputs.T, dim=0) @ inputs",
        "softmax_dim",
    ),
    (
        "exercise-context-bug",
        "def answer(inputs): return torch.softmax(inputs @ inputs.T, dim=-1).T @ inputs",
        "weights_T",
    ),
    (
        "exercise-context-bug",
        "def answer(inputs): return torch.softmax(inputs @ inputs.T, dim=0) @ inputs",
        "softmax_dim",
    ),
    (
        "exercise-context-bug",
        "def answer(inputs): return torch.softmax(inputs @ inputs.T / inputs.shape[-1], dim=-1) @ inputs",
        "scale_extra",
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
RIGHT_WEIGHTS = "torch.softmax(queries @ keys.mT / keys.shape[-1] ** 0.5, dim=-1)"
WRONG += [
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return torch.softmax(queries @ keys.T / keys.shape[-1], dim=-1) @ values"),
        "scale_by_d_k",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return torch.softmax(queries @ keys.T, dim=-1) @ values"),
        "scale_missing",
    ),
    (
        "exercise-keys-bug",
        SELF_ATTENTION.format(line="keys = self.W_query(x)\n        return " + RIGHT_WEIGHTS + " @ values"),
        "keys_from_query",
    ),
    # A newcomer's walk: the queries and the keys swapped, and the keys from W_value.
    (
        "exercise-keys-bug",
        SELF_ATTENTION.format(
            line="queries, keys = self.W_key(x), self.W_query(x)\n        return " + RIGHT_WEIGHTS + " @ values"
        ),
        "query_key_swapped",
    ),
    (
        "exercise-keys-bug",
        SELF_ATTENTION.format(line="keys = self.W_value(x)\n        return " + RIGHT_WEIGHTS + " @ values"),
        "keys_from_value",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return " + RIGHT_WEIGHTS + " @ keys"),
        "values_from_key",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=0) @ values"),
        "softmax_dim",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return " + RIGHT_WEIGHTS + " @ values").replace("W_key =", "key_proj ="),
        "names",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return " + RIGHT_WEIGHTS + " @ values").replace(
            "self.W_key = nn.Linear(d_in, d_out, bias=False)", "self.W_key = nn.Linear(d_out, d_in, bias=False)"
        ),
        "linear",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return " + RIGHT_WEIGHTS + " @ values").replace(
            "self.W_key = nn.Linear(d_in, d_out, bias=False)", "self.W_key = nn.Parameter(torch.rand(d_in, d_out))"
        ),
        "linear",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return " + RIGHT_WEIGHTS + " @ values").replace("bias=False", "bias=True"),
        "bias",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return torch.softmax(queries @ keys.T / x.shape[-1] ** 0.5, dim=-1) @ values"),
        "scale_wrong_size",
    ),
    (
        "exercise-keys-bug",
        SELF_ATTENTION.format(line="return torch.softmax(queries @ keys.T / keys.shape[0] ** 0.5, dim=-1) @ values"),
        "scale_wrong_size",
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
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            sa_v1.load_state_dict(sa_v2.state_dict(), strict=False)
        """,
        "in_place",
    ),
    ("exercise-copy-v2-into-v1", "def answer(sa_v1, sa_v2):\n    sa_v1.forward = lambda x: sa_v2(x)", "in_place"),
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            for name in ("W_query", "W_key", "W_value"):
                getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)
        """,
        "under_no_grad",
    ),
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            for name in ("W_query", "W_key", "W_value"):
                setattr(sa_v1, name, nn.Parameter(getattr(sa_v2, name).weight.clone()))
        """,
        "transpose",
    ),
    # The other way round: sa_v1's weights copied into sa_v2 made both equal, and passed.
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            with torch.no_grad():
                for name in ("W_query", "W_key", "W_value"):
                    getattr(sa_v2, name).weight.copy_(getattr(sa_v1, name).T)
        """,
        "wrong_way",
    ),
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            sa_v2.W_query.weight = nn.Parameter(sa_v1.W_query.T)
            sa_v2.W_key.weight = nn.Parameter(sa_v1.W_key.T)
            sa_v2.W_value.weight = nn.Parameter(sa_v1.W_value.T)
        """,
        "wrong_way",
    ),
    (
        "exercise-copy-v2-into-v1",
        """
        def answer(sa_v1, sa_v2):
            with torch.no_grad():
                for parameter in [*sa_v1.parameters(), *sa_v2.parameters()]:
                    parameter.zero_()
        """,
        "wrong_way",
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
        "mask_polarity",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.triu(ones).bool()\n"
            "    return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=-1)"
        ),
        "causal_diagonal",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.triu(ones, diagonal=1).bool()\n"
            "    return torch.softmax(attn_scores.masked_fill(mask, 0.0), dim=-1)"
        ),
        "mask_fill_zero",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.triu(ones, diagonal=1).bool()\n"
            "    return torch.softmax(attn_scores, dim=-1).masked_fill(mask, 0.0)"
        ),
        "mask_fill_zero",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.triu(ones, diagonal=1).bool()\n"
            "    return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=0)"
        ),
        "softmax_dim",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.triu(ones, diagonal=2).bool()\n"
            "    return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=-1)"
        ),
        "causal_diagonal",
    ),
    ("exercise-causal-weights", CAUSAL.format(lines="return torch.softmax(attn_scores, dim=-1)"), "no_mask"),
    (
        "exercise-causal-weights",
        CAUSAL.format(lines="return torch.softmax(attn_scores + torch.triu(ones, diagonal=1) * -torch.inf, dim=-1)"),
        "mul_inf",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="return torch.softmax(attn_scores.masked_fill(torch.triu(ones, diagonal=1), -torch.inf), dim=-1)"
        ),
        "float_mask",
    ),
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="mask = torch.tril(ones).bool()\n"
            "    return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=-1)"
        ),
        "mask_polarity",
    ),
    # Way 1 of the page, zero the future weights and renormalize: right on small scores, nan when a future score
    # leads by more than about 104.
    (
        "exercise-causal-weights",
        CAUSAL.format(
            lines="kept = torch.softmax(attn_scores, dim=-1) * torch.tril(ones)\n"
            "    return kept / kept.sum(dim=-1, keepdim=True)"
        ),
        "way1",
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
    (
        "exercise-combined-mask-bug",
        """
        def answer(attn_scores, valid_len):
            n = attn_scores.shape[-1]
            causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
            padding = torch.arange(n) > valid_len
            return torch.softmax(attn_scores.masked_fill(causal | padding, -torch.inf), dim=-1)
        """,
        "padding_from",
    ),
]

#: A right answer to each exercise, as a reader might write it (not the page's solution).
RIGHT = {
    "exercise-all-scores": "def answer(queries, keys): return torch.einsum('qd,kd->qk', queries, keys)",
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

# Whatever the exercise: an answer cut off from autograd, one whose in-place operation breaks the backward pass, one
# that changes the tensors it is given, and one in another dtype.
WRONG += [
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return (" + RIGHT_WEIGHTS + " @ values).detach()"),
        "detached",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(
            line="attn_weights = " + RIGHT_WEIGHTS + "\n        attn_weights.mul_(1.0)\n"
            "        return attn_weights @ values"
        ),
        "inplace_op",
    ),
    (
        "exercise-all-scores",
        "def answer(queries, keys):\n    keys /= 2\n    return 2 * queries @ keys.T",
        "keep_inputs",
    ),
    ("exercise-batched-scores", "def answer(x): return (x @ x.transpose(1, 2)).double()", "dtype"),
    ("exercise-all-scores", "def answer(queries, keys): return (queries @ keys.T).long()", "dtype"),
    ("exercise-all-scores", "def answer(queries, keys): return (queries @ keys.T).to(torch.complex64)", "dtype"),
    ("exercise-all-scores", "def answer(queries, keys): return (queries @ keys.T).to_sparse()", "compare"),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="return " + RIGHT_WEIGHTS + " @ values").replace(
            "self.W_key = nn.Linear(d_in, d_out, bias=False)",
            "self.W_key = nn.Linear(d_in, d_out, bias=False).requires_grad_(False)",
        ),
        "frozen",
    ),
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(line="keys = keys.detach()\n        return " + RIGHT_WEIGHTS + " @ values"),
        "detached",
    ),
]


def test_a_module_the_answer_should_only_read_must_stay_as_it_was() -> None:
    # Copying the wrong way round: torch_mha's weights into mha, which the answer should leave alone.
    answer = _answer(
        """
        def answer(torch_mha, mha):
            with torch.no_grad():
                mha.out_proj.weight.copy_(torch_mha.out_proj.weight)
        """
    )
    result = diagnose("exercise-copy-into-torch-mha", answer)
    assert (result.passed, result.hint) == (False, "keep_inputs")
    assert "changed its argument `mha` in place" in str(result)


def test_a_module_made_from_the_class_is_not_the_class() -> None:
    answer = _answer(RIGHT["exercise-self-attention"])
    result = diagnose("exercise-self-attention", answer(3, 2))
    assert (result.passed, result.hint) == (False, "pass_class")
    assert "answer(...)" in str(result)


def test_a_sparse_result_is_named_as_such() -> None:
    result = diagnose("exercise-all-scores", lambda queries, keys: (queries @ keys.T).to_sparse())
    assert "are a sparse_coo tensor, not an ordinary one" in " ".join(str(result).split())


# Each later chapter's typical wrong answers (WRONG) and one right answer per exercise (RIGHT), one block a chapter.

# scoring-functions (exercises/attention_exercises/scoring.py)
ADDITIVE = """
def answer(queries, keys, W_q, W_k, w_v):
    {lines}
"""
SCALED = """
import math

def answer(queries, keys):
    return {line}
"""
WRONG += [
    (
        "exercise-additive-scores",
        ADDITIVE.format(
            lines="features = torch.tanh(queries @ W_q.T + keys @ W_k.T)\n    return (features @ w_v.T).squeeze(-1)"
        ),
        "pairs",
    ),
    (
        "exercise-additive-scores",
        ADDITIVE.format(
            lines="q = torch.nn.functional.linear(queries, W_q).unsqueeze(-3)\n"
            "    k = torch.nn.functional.linear(keys, W_k).unsqueeze(-2)\n"
            "    return (torch.tanh(q + k) @ w_v.T).squeeze(-1)"
        ),
        "transposed",
    ),
    (
        "exercise-additive-scores",
        ADDITIVE.format(
            lines="q, k = queries @ W_q, keys @ W_k\n"
            "    return (torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3)) @ w_v.T).squeeze(-1)"
        ),
        "layout",
    ),
    # W_q on the keys and W_k on the queries (a newcomer's walk, 2026-11-27): an error, where d_q != d_k.
    (
        "exercise-additive-scores",
        ADDITIVE.format(
            lines="q, k = queries @ W_k.T, keys @ W_q.T\n"
            "    return (torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3)) @ w_v.T).squeeze(-1)"
        ),
        "swapped_weights",
    ),
    (
        "exercise-additive-scores",
        ADDITIVE.format(
            lines="features = (queries @ W_q.T).unsqueeze(-2) + (keys @ W_k.T).unsqueeze(-3)\n"
            "    return (features @ w_v.T).squeeze(-1)"
        ),
        "no_tanh",
    ),
    (
        "exercise-additive-scores",
        ADDITIVE.format(
            lines="features = torch.tanh((queries @ W_q.T)[..., :, None, :] + (keys @ W_k.T)[..., None, :, :])\n"
            "    return features.sum(dim=-1)"
        ),
        "no_w_v",
    ),
    (
        "exercise-additive-scores",
        ADDITIVE.format(
            lines="features = torch.tanh((queries @ W_q.T).unsqueeze(-2) + (keys @ W_k.T).unsqueeze(-3))\n"
            "    return features @ w_v.T"
        ),
        "no_squeeze",
    ),
    (
        "exercise-additive-scores",
        ADDITIVE.format(
            lines="q, k = queries @ W_q.T, keys @ W_k.T\n"
            "    return (torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3)) @ w_v.T).squeeze()"
        ),
        "squeeze_all",
    ),
    (
        "exercise-scaled-scores-bug",
        SCALED.format(line="queries @ keys.mT / math.sqrt(keys.shape[1])"),
        "scale_wrong_size",
    ),
    (
        "exercise-scaled-scores-bug",
        SCALED.format(line="queries @ keys.transpose(-2, -1) / keys.shape[-1]"),
        "scale_by_d_k",
    ),
    (
        "exercise-scaled-scores-bug",
        SCALED.format(line="torch.matmul(queries, keys.transpose(-2, -1))"),
        "scale_missing",
    ),
    ("exercise-scaled-scores-bug", SCALED.format(line="queries @ keys.T / keys.shape[-1] ** 0.5"), "dot_T"),
    (
        "exercise-scaled-scores-bug",
        SCALED.format(line="queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5"),
        "dot_T",
    ),
    (
        "exercise-scaled-scores-bug",
        SCALED.format(
            line="queries @ (keys.transpose(1, 2) if keys.dim() > 2 else keys.T) / math.sqrt(keys.shape[-1])"
        ),
        "dot_T",
    ),
]
RIGHT |= {
    "exercise-additive-scores": ADDITIVE.format(
        lines="linear = torch.nn.functional.linear\n"
        "    hidden = linear(queries, W_q)[..., :, None, :] + linear(keys, W_k)[..., None, :, :]\n"
        "    return torch.einsum('...qkh,h->...qk', torch.tanh(hidden), w_v[0])"
    ),
    "exercise-scaled-scores-bug": SCALED.format(
        line="torch.einsum('...qd,...kd->...qk', queries, keys) / math.sqrt(queries.size(-1))"
    ),
}

# dropout (exercises/attention_exercises/dropout.py)
EVAL_BUG = """
import torch.nn.functional as F
from attention_lib import causal_mask, masked_softmax

class answer(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.p = dropout
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5
        attn_weights = masked_softmax(scores, self.mask[:n, :n])
        {line}
        return attn_weights @ values
"""
WRONG += [
    ("exercise-inverted-dropout", "def answer(attn_weights, keep, p): return attn_weights * keep / p", "by_p"),
    (
        "exercise-inverted-dropout",
        "def answer(attn_weights, keep, p): return attn_weights.masked_fill(~keep, 0)",
        "no_scale",
    ),
    (
        "exercise-inverted-dropout",
        "def answer(attn_weights, keep, p): return attn_weights * keep * (1 - p)",
        "times_keep",
    ),
    (
        "exercise-inverted-dropout",
        "def answer(attn_weights, keep, p): return attn_weights.masked_fill(keep, 0.0) / (1 - p)",
        "mask_polarity",
    ),
    (
        "exercise-inverted-dropout",
        """
        def answer(attn_weights, keep, p):
            dropped = torch.where(keep, attn_weights, torch.zeros_like(attn_weights))
            return dropped / dropped.sum(dim=-1, keepdim=True)
        """,
        "renormalize",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.format(line="attn_weights = F.dropout(attn_weights, self.p)"),
        "dropout_in_eval",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.format(
            line="attn_weights = self.dropout(attn_weights) if self.training else attn_weights * (1 - self.p)"
        ),
        "eval_scale",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.format(line="attn_weights = F.dropout(attn_weights, self.p, training=False)"),
        "never_train",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.format(line="attn_weights = F.dropout(attn_weights, 1 - self.p, training=self.training)"),
        "keep_prob",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.format(
            line="if self.training:\n"
            "            keep = torch.empty_like(attn_weights).bernoulli_(1 - self.p)\n"
            "            attn_weights = attn_weights * keep / self.p"
        ),
        "by_p",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.replace("self.mask[:n, :n]", "self.mask").format(line="attn_weights = self.dropout(attn_weights)"),
        "unsliced",
    ),
    # A newcomer's walk (2026-11-27): dropout removed; a draw of one's own, not scaled by 1/(1 - p); the rows
    # renormalized after dropout; dropout on the scores, before the softmax. Each with nn.Dropout's draw, and with
    # a draw of its own, which the check judges by what dropout does.
    ("exercise-dropout-eval-bug", EVAL_BUG.format(line="pass"), "never_train"),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.format(
            line="if self.training:\n"
            "            attn_weights = attn_weights * (torch.rand_like(attn_weights) >= self.p)"
        ),
        "no_scale",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.format(
            line="if self.training:\n            attn_weights = F.dropout(attn_weights, self.p) * (1 - self.p)"
        ),
        "no_scale",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.format(
            line="attn_weights = F.dropout(attn_weights, self.p, training=self.training)\n"
            "        attn_weights = attn_weights / attn_weights.sum(-1, keepdim=True)"
        ),
        "renormalize",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.format(
            line="if self.training:\n"
            "            keep = torch.rand_like(attn_weights) >= self.p\n"
            "            attn_weights = attn_weights * keep / (1 - self.p)\n"
            "            attn_weights = attn_weights / attn_weights.sum(-1, keepdim=True).clamp_min(1e-12)"
        ),
        "renormalize",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.replace("masked_softmax(scores, ", "masked_softmax(F.dropout(scores, self.p, self.training), ").format(
            line="pass"
        ),
        "scores_dropped",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.replace(
            "masked_softmax(scores, ", "masked_softmax(scores * (torch.rand_like(scores) >= self.p) / (1 - self.p), "
        )
        .replace(
            "self.mask[:n, :n])", "self.mask[:n, :n]) if self.training else masked_softmax(scores, self.mask[:n, :n])"
        )
        .format(line="pass"),
        "scores_dropped",
    ),
    (
        "exercise-dropout-eval-bug",
        EVAL_BUG.replace(
            "masked_softmax(scores, self.mask[:n, :n])",
            "torch.softmax(scores.masked_fill(self.mask.bool(), -torch.inf), dim=-1)",
        ).format(line="attn_weights = F.dropout(attn_weights, self.p, training=self.training)"),
        "unsliced",
    ),
]
RIGHT |= {
    "exercise-inverted-dropout": """
        def answer(attn_weights, keep, p):
            scale = 1 / (1 - p) if p < 1 else 0.0
            return torch.where(keep, attn_weights * scale, 0.0)
        """,
    "exercise-dropout-eval-bug": EVAL_BUG.format(line="attn_weights = self.dropout(attn_weights)"),
}

# buffers (exercises/attention_exercises/buffers.py)
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
# The find-the-bug's module: the attention step of a causal head, its mask of 0 and -inf added to the scores by SDPA.
STEP = """
class answer(nn.Module):
    def __init__(self, context_length):
        super().__init__()
        future = torch.full((context_length, context_length), -torch.inf).triu(diagonal=1)
        {keep}

    def forward(self, queries, keys, values):
        n = queries.shape[1]
        return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask={mask})
"""
WRONG += [
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep="self.mask = future", mask="self.mask[:n, :n]", fill="-torch.inf"),
        "attribute",
    ),
    ("exercise-mask-attribute-bug", STEP.format(keep="self.mask = future", mask="self.mask[:n, :n]"), "attribute"),
    # A plain attribute that forward copies to x's device: it runs everywhere, and is still no buffer (a newcomer's
    # walk found it told "`mask` is not a buffer" as an error of the learner's call, with the checker's own argument).
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep="self.mask = future", mask="self.mask[:n, :n].to(x.device)", fill="-torch.inf"),
        "copied",
    ),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep="self.mask = future", mask="self.mask.to(x.device)[:n, :n]", fill="-torch.inf"),
        "copied",
    ),
    (
        "exercise-mask-attribute-bug",
        STEP.format(keep="self.mask = future", mask="self.mask.to(queries.device)[:n, :n]"),
        "copied",
    ),
    # The mask built in every forward, on x's device, and kept nowhere.
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(
            keep="",
            mask="torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)",
            fill="-torch.inf",
        ),
        "mask_in_forward",
    ),
    # float32's most negative number does not fit in float16 either.
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep=BUFFER, mask="self.mask[:n, :n]", fill="torch.finfo(torch.float32).min"),
        "fill_1e9",
    ),
    (
        "exercise-mask-attribute-bug",
        STEP.format(keep='self.register_buffer("mask", future)', mask="self.mask[:n, :n]"),
        "persistent",
    ),
    (
        "exercise-mask-attribute-bug",
        STEP.format(keep="self.mask = nn.Parameter(future, requires_grad=False)", mask="self.mask[:n, :n]"),
        "parameter",
    ),
    (
        "exercise-mask-attribute-bug",
        STEP.format(keep='self.register_buffer("mask", future, persistent=False)', mask="self.mask"),
        "unsliced",
    ),
    (
        "exercise-mask-attribute-bug",
        STEP.format(keep='self.register_buffer("mask", future, persistent=False)', mask="self.mask[:n, :n].T"),
        "mask_polarity",
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
        "mask_polarity",
    ),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep=BUFFER, mask="self.mask[:n, :n]", fill="-torch.inf").replace(
            "scores.masked_fill(self.mask[:n, :n], -torch.inf)", "scores"
        ),
        "no_mask",
    ),
    ("exercise-mask-attribute-bug", STEP.format(keep="", mask="None"), "no_mask"),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep=BUFFER, mask="self.mask[:n, :n]", fill="-torch.inf").replace("bias=False", "bias=True"),
        "bias",
    ),
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep=BUFFER, mask="self.mask[:n, :n]", fill="-torch.inf").replace(
            "nn.Linear(d_in, d_out, bias=False)", "nn.Linear(d_in, d_out)"
        ),
        "bias",
    ),
    (
        "exercise-causal-buffer",
        """
        class answer(nn.Module):
            def __init__(self, d_in, d_out, context_length):
                super().__init__()
                self.W_query = nn.Linear(d_in, d_out, bias=False)
                self.W_key = nn.Linear(d_in, d_out, bias=False)
                self.W_value = nn.Linear(d_in, d_out, bias=False)
                size = (context_length, context_length)
                self.register_buffer("mask", torch.full(size, -torch.inf).triu(1), persistent=False)

            def forward(self, x):
                n = x.shape[1]
                queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
                scores = queries @ keys.transpose(1, 2) + self.mask[:n, :n]
                return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1) @ values
        """,
        "bool_mask",
    ),
    # float32 out of a module made float16: the weights are converted, the result is not.
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(keep=BUFFER, mask="self.mask[:n, :n]", fill="-torch.inf").replace(
            "dim=-1) @ values", "dim=-1).float() @ values.float()"
        ),
        "dtype",
    ),
    # The book's float mask of ones and zeros, turned into booleans in forward: the task asks for a boolean one.
    (
        "exercise-causal-buffer",
        CAUSAL_HEAD.format(
            keep='self.register_buffer("mask", future.float(), persistent=False)',
            mask="self.mask.bool()[:n, :n]",
            fill="float('-inf')",
        ),
        "bool_mask",
    ),
]
RIGHT |= {
    "exercise-causal-buffer": CAUSAL_HEAD.format(
        keep='self.register_buffer("mask", future, persistent=False)',
        mask="self.mask[:n, :n]",
        fill="float('-inf')",
    ),
    "exercise-mask-attribute-bug": STEP.format(
        keep='self.register_buffer("mask", future, persistent=False)', mask="self.mask[:n, :n]"
    ),
}


# A causal head that hands the attention to SDPA: the causal-buffer write-it rules that out.
WRONG.append(
    (
        "exercise-causal-buffer",
        """
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
        "rule_function",
    )
)

# multi-head (exercises/attention_exercises/multihead.py)
MULTIHEAD_SPLIT = """
def answer(x, num_heads):
    b, t, d_out = x.shape
    head_dim = d_out // num_heads
    return {line}
"""
MULTIHEAD_MODULE = """
class answer(nn.Module):
    def __init__(self, d_in, d_out, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.{out_proj} = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, t, _ = x.shape
        h, d_out = self.num_heads, self.W_query.out_features
        hd = d_out // h
        q, k, v = (w(x).view(b, t, h, hd).transpose(1, 2) for w in (self.W_query, self.W_key, self.W_value))
        scores = q @ k.transpose(2, 3)
        {mask}
        context = torch.softmax(scores / {scale}, dim=-1) @ v
        return self.{out_proj}({merge})
"""
MULTIHEAD_RIGHT_PARTS = {
    "out_proj": "out_proj",
    "mask": "scores = scores.masked_fill(torch.ones(t, t).triu(1).bool(), -torch.inf)",
    "scale": "hd ** 0.5",
    "merge": "context.transpose(1, 2).contiguous().view(b, t, d_out)",
}


def _multihead_module(**changes: str) -> str:
    return MULTIHEAD_MODULE.format(**(MULTIHEAD_RIGHT_PARTS | changes))


WRONG += [
    (
        "exercise-split-heads-by-hand",
        MULTIHEAD_SPLIT.format(line="x.view(b, num_heads, t, head_dim)"),
        "view_no_transpose",
    ),
    (
        "exercise-split-heads-by-hand",
        MULTIHEAD_SPLIT.format(line="x.reshape(b, t, num_heads, head_dim)"),
        "view_no_transpose",
    ),
    (
        "exercise-split-heads-by-hand",
        MULTIHEAD_SPLIT.format(line="x.view(b, t, head_dim, num_heads).transpose(1, 2)"),
        "wrong_axis",
    ),
    ("exercise-merge-heads-bug", _multihead_module(merge="context.reshape(b, t, d_out)"), "view_no_transpose"),
    ("exercise-merge-heads-bug", _multihead_module(merge="context.transpose(1, 2).view(b, t, -1)"), "contiguous"),
    ("exercise-merge-heads-bug", _multihead_module(scale="d_out ** 0.5"), "scale_wrong_size"),
    ("exercise-merge-heads-bug", _multihead_module(scale="hd"), "scale_by_d_k"),
    ("exercise-merge-heads-bug", _multihead_module(mask="pass"), "no_mask"),
    ("exercise-merge-heads-bug", _multihead_module(out_proj="proj"), "names"),
]
RIGHT |= {
    "exercise-split-heads-by-hand": """
        def answer(x, num_heads):
            *lead, t, d_out = x.shape
            return x.reshape(*lead, t, num_heads, d_out // num_heads).transpose(-3, -2)
    """,
    "exercise-merge-heads-bug": """
        class answer(nn.Module):
            def __init__(self, d_in, d_out, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.W_query = nn.Linear(d_in, d_out, bias=False)
                self.W_key = nn.Linear(d_in, d_out, bias=False)
                self.W_value = nn.Linear(d_in, d_out, bias=False)
                self.out_proj = nn.Linear(d_out, d_out)

            def forward(self, x):
                b, t, d_in = x.shape
                heads = [
                    self.W_query(x).unflatten(-1, (self.num_heads, -1)).permute(0, 2, 1, 3),
                    self.W_key(x).unflatten(-1, (self.num_heads, -1)).permute(0, 2, 1, 3),
                    self.W_value(x).unflatten(-1, (self.num_heads, -1)).permute(0, 2, 1, 3),
                ]
                context = torch.nn.functional.scaled_dot_product_attention(*heads, is_causal=True)
                return self.out_proj(context.permute(0, 2, 1, 3).flatten(2))
        """,
}

# cross-attention (exercises/attention_exercises/cross.py)
CROSS = """
def answer(x_1, x_2, W_query, W_key, W_value):
    {lines}
    return torch.softmax(scores / keys.shape[-1] {scale}, dim={dim}) @ values
"""
PADDED = """
def answer(queries, keys, values, valid_lens):
    scores = queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5
    padding = torch.arange(keys.shape[1]) >= valid_lens[:, None]
    {lines}
"""
RIGHT_CROSS = "queries, keys, values = x_1 @ W_query, x_2 @ W_key, x_2 @ W_value\n    scores = queries @ keys.mT"
WRONG += [
    (
        "exercise-cross-attention",
        CROSS.format(
            lines="queries, keys, values = x_1 @ W_query, x_1 @ W_key, x_1 @ W_value\n    scores = queries @ keys.mT",
            scale="** 0.5",
            dim=-1,
        ),
        "kv_from_x1",
    ),
    (
        "exercise-cross-attention",
        CROSS.format(
            lines="queries, keys, values = x_2 @ W_query, x_2 @ W_key, x_2 @ W_value\n    scores = queries @ keys.mT",
            scale="** 0.5",
            dim=-1,
        ),
        "queries_from_x2",
    ),
    (
        "exercise-cross-attention",
        CROSS.format(
            lines="queries, keys, values = x_1 @ W_query, x_1 @ W_key, x_2 @ W_value\n    scores = queries @ keys.mT",
            scale="** 0.5",
            dim=-1,
        ),
        "keys_from_x1",
    ),
    (
        "exercise-cross-attention",
        CROSS.format(
            lines="queries, keys, values = x_1 @ W_query, x_2 @ W_key, x_1 @ W_value\n    scores = queries @ keys.mT",
            scale="** 0.5",
            dim=-1,
        ),
        "values_from_x1",
    ),
    ("exercise-cross-attention", CROSS.format(lines=RIGHT_CROSS, scale="", dim=-1), "scale_by_d_k"),
    ("exercise-cross-attention", CROSS.format(lines=RIGHT_CROSS, scale="** 0", dim=-1), "scale_missing"),
    (
        "exercise-cross-attention",
        CROSS.format(
            lines="queries, keys, values = x_1 @ W_query, x_2 @ W_key, x_2 @ W_value\n    scores = queries @ keys.T",
            scale="** 0.5",
            dim=-1,
        ),
        "dot_T",
    ),
    ("exercise-cross-attention", CROSS.format(lines=RIGHT_CROSS, scale="** 0.5", dim=0), "softmax_dim"),
    ("exercise-cross-attention", CROSS.format(lines=RIGHT_CROSS, scale="** 0.5", dim=-2), "softmax_dim"),
    (
        "exercise-cross-attention",
        """
        def answer(x_1, x_2, W_query, W_key, W_value):
            scores = (x_1 @ W_query) @ (x_2 @ W_key).transpose(-2, -1)
            return torch.softmax(scores / x_1.shape[-1] ** 0.5, -1) @ (x_2 @ W_value)
        """,
        "scale_wrong_size",
    ),
    (
        "exercise-cross-attention",
        """
        def answer(x_1, x_2, W_query, W_key, W_value):
            queries, keys, values = x_1 @ W_query, x_2 @ W_key, x_2 @ W_value
            return torch.softmax(queries @ keys.mT / W_key.shape[0] ** 0.5, dim=-1) @ values
        """,
        "scale_wrong_size",
    ),
    (
        "exercise-cross-padding-bug",
        PADDED.format(
            lines="return torch.softmax(scores.masked_fill(padding.unsqueeze(-1), -torch.inf), dim=-1) @ values"
        ),
        "mask_queries",
    ),
    (
        "exercise-cross-padding-bug",
        PADDED.format(lines="return torch.softmax(scores.masked_fill(padding[..., None], -1e9), dim=-1) @ values"),
        "mask_queries_finite",
    ),
    (
        "exercise-cross-padding-bug",
        PADDED.format(lines="return torch.softmax(scores.masked_fill(~padding[:, None], -torch.inf), -1) @ values"),
        "mask_polarity",
    ),
    ("exercise-cross-padding-bug", PADDED.format(lines="return torch.softmax(scores, dim=-1) @ values"), "no_mask"),
    (
        "exercise-cross-padding-bug",
        PADDED.format(lines="return torch.softmax(scores.masked_fill(padding[:, None], 0), dim=-1) @ values"),
        "mask_fill_zero",
    ),
    # The bug kept, and the nan of the rows it hides whole turned into 0: still the bug's own hint.
    (
        "exercise-cross-padding-bug",
        PADDED.format(
            lines="weights = torch.softmax(scores.masked_fill(padding.unsqueeze(-1), -torch.inf), dim=-1)\n"
            "    return torch.nan_to_num(weights) @ values"
        ),
        "mask_queries",
    ),
    # The new axis in front of the batch, or none: (1, b, t2) lines the batch up with the queries (b != t1 raises).
    (
        "exercise-cross-padding-bug",
        PADDED.format(
            lines="return torch.softmax(scores.masked_fill(padding.unsqueeze(0), -torch.inf), dim=-1) @ values"
        ),
        "mask_batch_axis",
    ),
    (
        "exercise-cross-padding-bug",
        PADDED.format(lines="return torch.softmax(scores.masked_fill(padding, -1e9), dim=-1) @ values"),
        "mask_batch_axis",
    ),
    # The mask's meaning inverted, True at the real keys: the catalogue's polarity hint, which names padding too.
    (
        "exercise-cross-padding-bug",
        PADDED.format(
            lines="real = torch.arange(keys.shape[1]) < valid_lens[:, None]\n"
            "    return torch.softmax(scores.masked_fill(real.unsqueeze(1), -torch.inf), dim=-1) @ values"
        ),
        "mask_polarity",
    ),
]
RIGHT |= {
    "exercise-cross-attention": """
        def answer(x_1, x_2, W_query, W_key, W_value):
            q, k, v = x_1 @ W_query, x_2 @ W_key, x_2 @ W_value
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)
        """,
    "exercise-cross-padding-bug": """
        def answer(queries, keys, values, valid_lens):
            keep = torch.arange(keys.shape[1])[None, None, :] < valid_lens[:, None, None]
            return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=keep)
        """,
}

# pytorch-equivalence (exercises/attention_exercises/equivalence.py)
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
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="attn_mask=mask"), "mask_polarity"),
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="attn_mask=~key_padding_mask[:, None, None, :]"), "no_causal"),
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="is_causal=True"), "no_padding"),
    (
        "exercise-sdpa-mask-bug",
        PADDED_SDPA.format(how="attn_mask=~causal | ~key_padding_mask[:, None, None, :]"),
        "combine",
    ),
    # A newcomer's walk: only the causal part turned around, and the padding broadcast over the queries.
    (
        "exercise-sdpa-mask-bug",
        PADDED_SDPA.format(how="attn_mask=~causal | key_padding_mask[:, None, None, :]"),
        "causal_only_inverted",
    ),
    (
        "exercise-sdpa-mask-bug",
        PADDED_SDPA.format(how="attn_mask=~(causal | key_padding_mask[:, None, :, None])"),
        "padding_queries",
    ),
    # A float mask, either way round, is added to the scores: float_keep, not the catalogue's fill of 0.
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="attn_mask=mask.float()"), "float_keep"),
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="attn_mask=(~mask).float()"), "float_keep"),
    ("exercise-sdpa-mask-bug", PADDED_SDPA.format(how="attn_mask=(~mask).float() - 1.0"), "float_keep"),
    # The attention written out with a fill of 0 is still the catalogue's mask_fill_zero.
    (
        "exercise-sdpa-mask-bug",
        """
        def answer(queries, keys, values, key_padding_mask):
            t = queries.shape[-2]
            causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            mask = causal | key_padding_mask[:, None, None, :]
            scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
            return torch.softmax(scores.masked_fill(mask, 0.0), dim=-1) @ values
        """,
        "mask_fill_zero",
    ),
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

# kv-cache (exercises/attention_exercises/kv_cache.py)
CACHED = """
def answer(cache, queries, keys, values):
    {append}
    num_new, num_keys = queries.shape[2], keys.shape[2]
    ones = torch.ones(num_new, num_keys, dtype=torch.bool)
    {attend}
"""
APPEND = """if cache.cache_k is not None:
        keys = torch.cat([cache.cache_k, keys], dim=2)
        values = torch.cat([cache.cache_v, values], dim=2)
    cache.cache_k, cache.cache_v = keys, values"""
ATTEND = """future = torch.triu(ones, diagonal=1 + num_keys - num_new)
    scores = (queries @ keys.transpose(2, 3)).masked_fill(future, -torch.inf)
    return torch.softmax(scores / queries.shape[-1] ** 0.5, dim=-1) @ values"""
WRONG += [
    (
        "exercise-cache-is-causal-bug",
        CACHED.format(
            append=APPEND,
            attend="return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, is_causal=True)",
        ),
        "causal_upper_left",
    ),
    (
        "exercise-cached-attention",
        CACHED.format(append=APPEND, attend=ATTEND.replace("diagonal=1 + num_keys - num_new", "diagonal=1")),
        "causal_upper_left",
    ),
    (
        "exercise-cached-attention",
        CACHED.format(
            append=APPEND,
            attend="return torch.softmax(queries @ keys.transpose(2, 3) / queries.shape[-1] ** 0.5, dim=-1) @ values",
        ),
        "no_mask",
    ),
    (
        "exercise-cached-attention",
        CACHED.format(append=APPEND, attend=ATTEND.replace("** 0.5", "")),
        "scale_by_d_k",
    ),
    (
        "exercise-cached-attention",
        CACHED.format(append=APPEND.replace("dim=2", "dim=1"), attend=ATTEND),
        "cat_dim",
    ),
    (
        "exercise-cached-attention",
        CACHED.format(
            append="keys = torch.cat([cache.cache_k, keys], dim=2)\n"
            "    values = torch.cat([cache.cache_v, values], dim=2)\n"
            "    cache.cache_k, cache.cache_v = keys, values",
            attend=ATTEND,
        ),
        "empty",
    ),
    (
        "exercise-cached-attention",
        CACHED.format(
            append=APPEND.replace("[cache.cache_k, keys]", "[keys, cache.cache_k]").replace(
                "[cache.cache_v, values]", "[values, cache.cache_v]"
            ),
            attend=ATTEND,
        ),
        "new_first",
    ),
    (
        "exercise-cached-attention",
        CACHED.format(append=APPEND.replace("cache.cache_k, cache.cache_v = keys, values", "pass"), attend=ATTEND),
        "no_store",
    ),
    (
        "exercise-cached-attention",
        CACHED.format(
            append="new_k, new_v = keys, values\n    " + APPEND.replace("= keys, values", "= new_k, new_v"),
            attend=ATTEND,
        ),
        "store_new",
    ),
    # The two off-by-ones of the bottom-right mask: one key too many (the first step, a prompt of two tokens, looks
    # like no mask at all), and the diagonal hidden (the prompt's first row is nan, or zeros through SDPA).
    (
        "exercise-cached-attention",
        CACHED.format(append=APPEND, attend=ATTEND.replace("diagonal=1 + num_keys", "diagonal=2 + num_keys")),
        "causal_diagonal",
    ),
    (
        "exercise-cached-attention",
        CACHED.format(append=APPEND, attend=ATTEND.replace("diagonal=1 + num_keys", "diagonal=num_keys")),
        "causal_diagonal",
    ),
    (
        "exercise-cache-is-causal-bug",
        CACHED.format(
            append=APPEND,
            attend="allowed = ~torch.triu(ones, diagonal=2 + num_keys - num_new)\n"
            "    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=allowed)",
        ),
        "causal_diagonal",
    ),
    (
        "exercise-cache-is-causal-bug",
        CACHED.format(
            append=APPEND,
            attend="allowed = ~torch.triu(ones, diagonal=num_keys - num_new)\n"
            "    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=allowed)",
        ),
        "causal_diagonal",
    ),
]
WRONG += [
    # A float mask is added to the scores: ones and zeros (or 0 and -1, the same after the softmax) hide nothing.
    # The backends' hint, not the catalogue's fill value.
    (
        exercise,
        CACHED.format(
            append=APPEND,
            attend="allowed = ~torch.triu(ones, diagonal=1 + num_keys - num_new)\n"
            f"    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask={mask})",
        ),
        "float_keep",
    )
    for exercise in ("exercise-cache-is-causal-bug", "exercise-cached-attention")
    for mask in ("allowed.float()", "allowed.to(queries.dtype) - 1.0")
]
RIGHT |= {
    "exercise-cached-attention": """
        def answer(cache, queries, keys, values):
            if cache.cache_k is None:
                cache.cache_k, cache.cache_v = keys, values
            else:
                cache.cache_k = torch.cat((cache.cache_k, keys), dim=-2)
                cache.cache_v = torch.cat((cache.cache_v, values), dim=-2)
            num_past = cache.cache_k.shape[2] - queries.shape[2]
            allowed = torch.ones(queries.shape[2], cache.cache_k.shape[2], dtype=torch.bool).tril(num_past)
            return torch.nn.functional.scaled_dot_product_attention(
                queries, cache.cache_k, cache.cache_v, attn_mask=allowed
            )
        """,
    "exercise-cache-is-causal-bug": """
        def answer(cache, queries, keys, values):
            if cache.cache_k is not None:
                keys = torch.cat([cache.cache_k, keys], dim=2)
                values = torch.cat([cache.cache_v, values], dim=2)
            cache.cache_k, cache.cache_v = keys, values
            if keys.shape[2] == queries.shape[2]:  # nothing cached: is_causal's top-left is right
                return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, is_causal=True)
            scores = torch.einsum("bhqd,bhkd->bhqk", queries, keys) / queries.shape[-1] ** 0.5
            offset = keys.shape[2] - queries.shape[2]
            rows = torch.arange(queries.shape[2])[:, None] + offset
            scores = scores.masked_fill(torch.arange(keys.shape[2]) > rows, float("-inf"))
            return scores.softmax(dim=-1) @ values
        """,
}

# The step for a CUDA graph: {write} the new tokens, {advance} the position, {attend} over every slot.
STATIC = """
def answer(cache, queries, keys, values):
    n, slots = queries.shape[2], torch.arange(cache.keys.shape[2])
    new_positions = cache.position + slots[:n]
    {write}
    {advance}
    {attend}
"""
STATIC_WRITE = "cache.keys.index_copy_(2, new_positions, keys); cache.values.index_copy_(2, new_positions, values)"
STATIC_ADVANCE = "cache.position.add_(n)"
STATIC_ATTEND = (
    "scores = (queries @ cache.keys.mT / queries.shape[-1] ** 0.5).masked_fill({hidden}, float('-inf'))\n"
    "    return scores.softmax(dim=-1) @ cache.values"
)
RIGHT |= {
    "exercise-static-cache-bug": STATIC.format(
        write=STATIC_WRITE, advance=STATIC_ADVANCE, attend=STATIC_ATTEND.format(hidden="slots > new_positions[:, None]")
    ),
}
WRONG += [
    (
        "exercise-static-cache-bug",
        STATIC.format(write=STATIC_WRITE, advance=STATIC_ADVANCE, attend=STATIC_ATTEND.format(hidden=hidden)),
        hint,
    )
    for hidden, hint in [
        ("slots[None, :] >= cache.position", "chunk_mask"),
        ("slots > slots[:n, None]", "causal_upper_left"),
        ("slots >= new_positions[:, None]", "causal_diagonal"),
        # Each new token's future hidden, the empty slots left visible (a newcomer's walk, 2026-11-27).
        ("(slots[None] > new_positions[:, None]) & (slots[None] < cache.position)", "empty_visible"),
    ]
] + [
    (
        "exercise-static-cache-bug",
        STATIC.format(
            write=STATIC_WRITE,
            advance="cache.position = cache.position + n",
            attend=STATIC_ATTEND.format(hidden="slots > new_positions[:, None]"),
        ),
        "in_place",
    ),
    (
        "exercise-static-cache-bug",
        STATIC.format(
            write="p = int(cache.position); cache.keys[:, :, p : p + n] = keys; cache.values[:, :, p : p + n] = values",
            advance=STATIC_ADVANCE,
            attend=STATIC_ATTEND.format(hidden="slots > new_positions[:, None]"),
        ),
        "reads_position",
    ),
    (
        "exercise-static-cache-bug",
        STATIC.format(
            write="cache.keys.index_add_(2, new_positions, keys); cache.values.index_add_(2, new_positions, values)",
            advance=STATIC_ADVANCE,
            attend=STATIC_ATTEND.format(hidden="slots > new_positions[:, None]"),
        ),
        "added",
    ),
]
WRONG += [
    # SDPA's float mask, ones and zeros or 0 and -1: the backends' hint. A fill of 0 in the attention written out
    # is still the catalogue's.
    (
        "exercise-static-cache-bug",
        STATIC.format(
            write=STATIC_WRITE,
            advance=STATIC_ADVANCE,
            attend="return torch.nn.functional.scaled_dot_product_attention(\n"
            f"        queries, cache.keys, cache.values, attn_mask={mask}\n    )",
        ),
        "float_keep",
    )
    for mask in ("(slots <= new_positions[:, None]).float()", "-(slots > new_positions[:, None]).to(queries.dtype)")
]
WRONG += [
    (
        "exercise-static-cache-bug",
        STATIC.format(
            write=STATIC_WRITE,
            advance=STATIC_ADVANCE,
            attend=STATIC_ATTEND.format(hidden="slots > new_positions[:, None]").replace("float('-inf')", "0.0"),
        ),
        "mask_fill_zero",
    ),
]


def test_the_static_step_of_the_page_with_sdpa_passes() -> None:
    """A right answer that got ✗ ("the keys in the cache it returned for an earlier input changed") while the check
    was being changed (a newcomer's walk, 2026-11-27): the task has the step overwrite the cache in place."""
    answer = _answer(
        """
        def answer(cache, queries, keys, values):
            num_new, max_tokens = queries.shape[2], cache.keys.shape[2]
            slots = torch.arange(max_tokens, device=queries.device)
            new_positions = cache.position + slots[:num_new]
            cache.keys.index_copy_(2, new_positions, keys); cache.values.index_copy_(2, new_positions, values)
            cache.position += num_new
            hidden = slots > new_positions[:, None]
            return torch.nn.functional.scaled_dot_product_attention(
                queries, cache.keys, cache.values, attn_mask=~hidden
            )
        """
    )
    for lang in ("en", "zh"):
        result = diagnose("exercise-static-cache-bug", answer, lang=lang)
        assert result.passed, str(result)


# grouped-query (exercises/attention_exercises/grouped_query.py)
GQA_FUNCTION = """
def answer(queries, keys, values):
    h, g, t, d = queries.shape[1], keys.shape[1], queries.shape[2], queries.shape[3]
    keys, values = {expand}
    scores = queries @ keys.transpose(-2, -1) / {scale}
    {mask}
    return torch.softmax(scores, dim=-1) @ values
"""
INTERLEAVE = "keys.repeat_interleave(h // g, dim=1), values.repeat_interleave(h // g, dim=1)"
CAUSAL_FILL = "scores = scores.masked_fill(torch.ones(t, t).triu(1).bool(), float('-inf'))"
GQA_MODULE = """
class answer(nn.Module):
    def __init__(self, d_in, d_out, num_heads, num_kv_groups):
        super().__init__()
        self.h, self.g, self.hd = num_heads, num_kv_groups, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.hd, bias=False)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.hd, bias=False)
        self.{out} = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = {split_q}
        k = self.W_key(x).view(b, t, self.g, self.hd).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.g, self.hd).transpose(1, 2)
        k, v = {expand}
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        w = torch.softmax((q @ k.mT / self.hd**0.5).masked_fill(mask, -torch.inf), dim=-1)
        return self.{out}({merge})
"""
SPLIT_Q = "self.W_query(x).view(b, t, self.h, self.hd).transpose(1, 2)"
MERGE = "(w @ v).transpose(1, 2).reshape(b, t, -1)"
EXPAND = "k.repeat_interleave(self.h // self.g, 1), v.repeat_interleave(self.h // self.g, 1)"


def _gqa_module(out: str = "out_proj", split_q: str = SPLIT_Q, expand: str = EXPAND, merge: str = MERGE) -> str:
    return GQA_MODULE.format(out=out, split_q=split_q, expand=expand, merge=merge)


WRONG += [
    (
        "exercise-gqa-attention",
        GQA_FUNCTION.format(
            expand="keys.repeat(1, h // g, 1, 1), values.repeat(1, h // g, 1, 1)", scale="d ** 0.5", mask=CAUSAL_FILL
        ),
        "repeat",
    ),
    (
        "exercise-gqa-attention",
        GQA_FUNCTION.format(expand="keys, values", scale="d ** 0.5", mask=CAUSAL_FILL),
        "no_repeat",
    ),
    (
        "exercise-gqa-attention",
        GQA_FUNCTION.format(
            expand="keys.repeat_interleave(g, dim=1), values.repeat_interleave(g, dim=1)",
            scale="d ** 0.5",
            mask=CAUSAL_FILL,
        ),
        "group_count",
    ),
    ("exercise-gqa-attention", GQA_FUNCTION.format(expand=INTERLEAVE, scale="d ** 0.5", mask="pass"), "no_causal"),
    ("exercise-gqa-attention", GQA_FUNCTION.format(expand=INTERLEAVE, scale="d", mask=CAUSAL_FILL), "scale_by_d_k"),
    # Right values, made by copying the key/value heads: the task asks for them shared (exercise 3's fix).
    (
        "exercise-gqa-attention",
        GQA_FUNCTION.format(expand=INTERLEAVE, scale="d ** 0.5", mask=CAUSAL_FILL),
        "share_heads",
    ),
    # The query heads of a group stacked as rows, (b, g, group_size * t, d), and a triu mask of those rows: it
    # hides by row number, not by each query's position.
    (
        "exercise-gqa-attention",
        """
        def answer(queries, keys, values):
            b, h, t, d = queries.shape
            g = keys.shape[1]
            q = queries.reshape(b, g, (h // g) * t, d)
            mask = torch.ones((h // g) * t, t, dtype=torch.bool).triu(1)
            w = torch.softmax((q @ keys.mT / d**0.5).masked_fill(mask, -torch.inf), dim=-1)
            return (w @ values).reshape(b, h, t, d)
        """,
        "group_mask",
    ),
    (
        "exercise-gqa-repeat-bug",
        _gqa_module(expand="k.repeat(1, self.h // self.g, 1, 1), v.repeat(1, self.h // self.g, 1, 1)"),
        "repeat",
    ),
    ("exercise-gqa-repeat-bug", _gqa_module(expand="k, v"), "no_repeat"),
    # The keys fixed and the values left tiled, or the other way round (a newcomer's walk, 2026-11-27).
    (
        "exercise-gqa-repeat-bug",
        _gqa_module(expand="k.repeat_interleave(self.h // self.g, dim=1), v.repeat(1, self.h // self.g, 1, 1)"),
        "mixed_repeat",
    ),
    (
        "exercise-gqa-repeat-bug",
        _gqa_module(expand="k.repeat(1, self.h // self.g, 1, 1), v.repeat_interleave(self.h // self.g, dim=1)"),
        "mixed_repeat",
    ),
    (
        "exercise-gqa-repeat-bug",
        _gqa_module(split_q="self.W_query(x).view(b, self.h, t, self.hd)").replace(
            ".view(b, t, self.g, self.hd).transpose(1, 2)", ".view(b, self.g, t, self.hd)"
        ),
        "view_no_transpose",
    ),
    (
        "exercise-gqa-repeat-bug",
        _gqa_module(split_q="self.W_query(x).view(b, self.h, t, self.hd)"),
        "view_no_transpose",
    ),
    ("exercise-gqa-repeat-bug", _gqa_module(merge="(w @ v).reshape(b, t, -1)"), "view_no_transpose"),
    ("exercise-gqa-repeat-bug", _gqa_module(out="proj"), "gqa_names"),
]
RIGHT |= {
    "exercise-gqa-attention": """
        def answer(queries, keys, values):
            group_size = queries.shape[1] // keys.shape[1]
            b, g, t, d = keys.shape
            # each key/value head shared, without a copy, by the query heads of its group
            keys = keys[:, :, None].expand(b, g, group_size, t, d).reshape(b, g * group_size, t, d)
            values = values[:, :, None].expand(b, g, group_size, t, d).reshape(b, g * group_size, t, d)
            return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, is_causal=True)
        """,
    "exercise-gqa-repeat-bug": _gqa_module(),
}

# attention-backends (exercises/attention_exercises/backends.py)
CAUSAL_SDPA = """
def answer(queries, keys, values, key_padding_mask=None):
    sdpa = torch.nn.functional.scaled_dot_product_attention
    if key_padding_mask is None:
        return sdpa(queries, keys, values, is_causal=True)
    n = queries.shape[2]
    hidden = torch.ones(n, n, dtype=torch.bool).triu(1) | key_padding_mask[:, None, None, :]
    return sdpa(queries, keys, values, attn_mask={mask})
"""
WRONG += [
    ("exercise-causal-sdpa", CAUSAL_SDPA.format(mask="hidden"), "mask_polarity"),
    # A float mask is added to the scores: ones and zeros (or 0 and -1, the same after the softmax) hide nothing.
    ("exercise-sdpa-float-mask-bug", CAUSAL_SDPA.format(mask="(~hidden).float()"), "float_keep"),
    ("exercise-sdpa-float-mask-bug", CAUSAL_SDPA.format(mask="(~hidden).float() - 1.0"), "float_keep"),
    ("exercise-causal-sdpa", CAUSAL_SDPA.format(mask="(~hidden).to(queries.dtype)"), "float_keep"),
    ("exercise-causal-sdpa", CAUSAL_SDPA.format(mask="hidden.float()"), "float_masked"),
    (
        "exercise-causal-sdpa",
        CAUSAL_SDPA.format(mask="~hidden").replace(
            "sdpa = torch.nn.functional.scaled_dot_product_attention",
            "queries = queries / queries.shape[-1] ** 0.5\n    sdpa = torch.nn.functional.scaled_dot_product_attention",
        ),
        "scale_by_d_k",
    ),
    (
        "exercise-causal-sdpa",
        CAUSAL_SDPA.format(mask="~key_padding_mask[:, None, None, :]"),
        "no_causal",
    ),
    (
        "exercise-causal-sdpa",
        """
        def answer(queries, keys, values, key_padding_mask=None):
            mask = None if key_padding_mask is None else ~key_padding_mask[:, None, None, :]
            return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)
        """,
        "no_causal",
    ),
    # The padding on the queries' axis; on a (b, 1, n) mask, which SDPA lines up with (heads, n, n); left out.
    (
        "exercise-causal-sdpa",
        CAUSAL_SDPA.format(mask="~hidden").replace("[:, None, None, :]", "[:, None, :, None]"),
        "padding_queries",
    ),
    (
        "exercise-causal-sdpa",
        CAUSAL_SDPA.format(mask="~hidden").replace("[:, None, None, :]", "[:, None, :]"),
        "padding_heads",
    ),
    (
        "exercise-causal-sdpa",
        """
        def answer(queries, keys, values, key_padding_mask=None):
            return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, is_causal=True)
        """,
        "no_padding",
    ),
    # The keep masks joined with | where it takes & (De Morgan).
    (
        "exercise-causal-sdpa",
        CAUSAL_SDPA.format(mask="keep").replace(
            "hidden = torch.ones(n, n, dtype=torch.bool).triu(1) | key_padding_mask[:, None, None, :]",
            "keep = torch.ones(n, n, dtype=torch.bool).tril() | ~key_padding_mask[:, None, None, :]",
        ),
        "keep_or",
    ),
]
# The same mask in both branches, so that the answer fails on seed 0, which has no padding.
ALWAYS_MASKED_SDPA = """
def answer(queries, keys, values, key_padding_mask=None):
    n = queries.shape[2]
    hidden = torch.ones(n, n, dtype=torch.bool).triu(1)
    if key_padding_mask is not None:
        hidden = hidden | key_padding_mask[:, None, None, :]
    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask={mask})
"""
WRONG += [
    ("exercise-causal-sdpa", ALWAYS_MASKED_SDPA.format(mask="hidden"), "mask_polarity"),
    # Right values, but a mask where the task asks for is_causal=True alone (no padding): told once the values
    # are right, so that the mistakes above get their own hints first.
    ("exercise-causal-sdpa", ALWAYS_MASKED_SDPA.format(mask="~hidden"), "rule_causal_alone"),
    ("exercise-causal-sdpa", ALWAYS_MASKED_SDPA.format(mask="(~hidden).float()"), "float_keep"),
    ("exercise-sdpa-float-mask-bug", ALWAYS_MASKED_SDPA.format(mask="(~hidden).float()"), "float_keep"),
    ("exercise-causal-sdpa", ALWAYS_MASKED_SDPA.format(mask="hidden.float()"), "float_masked"),
]
RIGHT |= {
    "exercise-causal-sdpa": """
        def answer(queries, keys, values, key_padding_mask=None):
            sdpa = torch.nn.functional.scaled_dot_product_attention
            if key_padding_mask is None:
                return sdpa(queries, keys, values, is_causal=True)
            n = queries.shape[-2]
            allowed = torch.ones(n, n, dtype=torch.bool).tril() & ~key_padding_mask.view(-1, 1, 1, n)
            return sdpa(queries, keys, values, attn_mask=allowed)
        """,
    "exercise-sdpa-float-mask-bug": """
        def answer(queries, keys, values, key_padding_mask=None):
            n = queries.shape[-2]
            bias = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
            if key_padding_mask is not None:
                bias = bias + torch.zeros(key_padding_mask.shape).masked_fill(key_padding_mask, float("-inf"))[
                    :, None, None, :
                ]
            return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=bias)
        """,
}


# Eval mode, in the earlier chapters' module exercises too.
WRONG += [
    (
        "exercise-self-attention",
        SELF_ATTENTION.format(
            line="return "
            + RIGHT_WEIGHTS.replace(" / keys.shape[-1] ** 0.5", " / (keys.shape[-1] ** 0.5 if self.training else 1)")
            + " @ values"
        ),
        "eval_mode",
    ),
]

# why attention (exercises/attention_exercises/why_attention.py)
DECODER = """
def answer(queries, states):
    scores = queries @ states.T
    return {line}
"""
POSITIONS = """
def answer(x, pos_embedding):
    {line}
"""
WRONG += [
    ("exercise-decoder-contexts", DECODER.format(line="states[-1].expand(queries.shape[0], -1)"), "last_state"),
    (
        "exercise-decoder-contexts",
        DECODER.format(line="states.mean(dim=0, keepdim=True).repeat(queries.shape[0], 1)"),
        "mean",
    ),
    ("exercise-decoder-contexts", DECODER.format(line="torch.softmax(scores, dim=0) @ states"), "softmax_dim"),
    ("exercise-decoder-contexts", DECODER.format(line="scores @ states"), "no_softmax"),
    (
        "exercise-decoder-contexts",
        DECODER.format(line="torch.softmax(scores / states.shape[-1] ** 0.5, dim=-1) @ states"),
        "scale_extra",
    ),
    (
        "exercise-decoder-contexts",
        DECODER.format(line="torch.softmax(queries @ queries.T, dim=-1) @ queries"),
        "own_queries",
    ),
    (
        "exercise-decoder-contexts",
        DECODER.format(line="torch.stack([torch.softmax(s, dim=0) @ states for s in scores])"),
        "rule_loop",
    ),
    (
        "exercise-positions-bug",
        POSITIONS.format(line="return x + pos_embedding(torch.arange(x.shape[0]))"),
        "batch_positions",
    ),
    ("exercise-positions-bug", POSITIONS.format(line="return x + pos_embedding.weight"), "whole_table"),
    (
        "exercise-positions-bug",
        POSITIONS.format(line="return x + pos_embedding.weight[-x.shape[1]:]"),
        "last_positions",
    ),
    (
        "exercise-positions-bug",
        POSITIONS.format(line="return x + pos_embedding(torch.arange(x.shape[1])).detach()"),
        "detached",
    ),
    (
        "exercise-positions-bug",
        POSITIONS.format(line="return torch.cat([x, pos_embedding(torch.arange(x.shape[1])).expand_as(x)], dim=-1)"),
        "concatenated",
    ),
    (
        "exercise-positions-bug",
        POSITIONS.format(line="x += pos_embedding(torch.arange(x.shape[1])); return x"),
        "keep_inputs",
    ),
]
RIGHT |= {
    "exercise-decoder-contexts": DECODER.format(line="torch.einsum('mn,nd->md', scores.softmax(-1), states)"),
    "exercise-positions-bug": POSITIONS.format(line="return x + pos_embedding.weight[: x.shape[-2]]"),
}

# pitfalls (exercises/attention_exercises/pitfalls.py)
FUSED = """
class answer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_qkv = nn.Linear(d_in, 3 * d_out, bias=False)

    def forward(self, x):
        {split}
        return torch.softmax(q @ k.transpose(-2, -1) / {scale}, dim=-1) @ v
"""
TORCH_CAUSAL = """
def answer(mha, x):
    t = x.shape[1]
    ones = torch.ones(t, t, dtype=torch.bool)
    return mha(x, x, x, {mask}, need_weights=False)[0]
"""
MASKED_WEIGHTS = """
def answer(attn_scores, mask):
    {lines}
"""
CAUSAL_ANY = """
def answer(attn_scores):
    n = attn_scores.shape[-1]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    return {line}
"""
WRONG += [
    (
        "exercise-fused-projection-bug",
        FUSED.format(split="q, v, k = self.W_qkv(x).chunk(3, dim=-1)", scale="k.shape[-1] ** 0.5"),
        "qkv_order",
    ),
    (
        "exercise-fused-projection-bug",
        FUSED.format(split="k, q, v = self.W_qkv(x).chunk(3, dim=-1)", scale="k.shape[-1] ** 0.5"),
        "qkv_order",
    ),
    (
        "exercise-fused-projection-bug",
        FUSED.format(split="qkv = self.W_qkv(x); q, k, v = qkv.chunk(3, dim=-1)", scale="qkv.shape[-1] ** 0.5"),
        "scale_fused",
    ),
    (
        "exercise-fused-projection-bug",
        FUSED.format(split="q, k, v = self.W_qkv(x).chunk(3, dim=-1)", scale="1"),
        "scale_missing",
    ),
    (
        "exercise-fused-projection-bug",
        FUSED.format(split="q, k, v = self.W_qkv(x).chunk(3, dim=-1)", scale="k.shape[-1] ** 0.5").replace(
            "W_qkv", "qkv"
        ),
        "names",
    ),
    (
        "exercise-split-order-bug",
        MULTIHEAD_SPLIT.format(line="x.transpose(1, 2).reshape(b, num_heads, t, head_dim)"),
        "transpose_first",
    ),
    (
        "exercise-split-order-bug",
        MULTIHEAD_SPLIT.format(line="x.view(b, num_heads, t, head_dim)"),
        "view_no_transpose",
    ),
    ("exercise-torch-mask-bug", TORCH_CAUSAL.format(mask="attn_mask=torch.tril(ones)"), "mask_polarity"),
    # nn.MultiheadAttention adds a float mask to the scores, as SDPA does: float_keep, either way round.
    ("exercise-torch-mask-bug", TORCH_CAUSAL.format(mask="attn_mask=torch.tril(ones).float()"), "float_keep"),
    ("exercise-torch-mask-bug", TORCH_CAUSAL.format(mask="attn_mask=torch.triu(ones, 1).float()"), "float_keep"),
    ("exercise-torch-mask-bug", TORCH_CAUSAL.format(mask="attn_mask=torch.tril(ones).float() - 1.0"), "float_keep"),
    ("exercise-torch-mask-bug", TORCH_CAUSAL.format(mask="attn_mask=torch.triu(ones)"), "causal_diagonal"),
    ("exercise-torch-mask-bug", TORCH_CAUSAL.format(mask="attn_mask=None"), "no_mask"),
    (
        "exercise-torch-mask-bug",
        TORCH_CAUSAL.format(mask="attn_mask=torch.triu(ones, 1)").replace("return", "with torch.no_grad(): return"),
        "detached",
    ),
    (
        "exercise-out-proj-bug",
        _multihead_module().replace("nn.Linear(d_out, d_out)", "nn.Linear(d_in, d_out)"),
        "layer_size",
    ),
    (
        "exercise-out-proj-bug",
        _multihead_module().replace("self.W_key = nn.Linear(d_in, d_out", "self.W_key = nn.Linear(d_out, d_in"),
        "layer_size",
    ),
    ("exercise-head-scale-bug", _multihead_module(scale="d_out ** 0.5"), "scale_wrong_size"),
    ("exercise-head-scale-bug", _multihead_module(scale="hd"), "scale_by_d_k"),
    # Exercise 5's forward pass, copied onto exercise 8's module: right outputs, but SDPA picks the scale the
    # exercise asks the reader to find.
    (
        "exercise-head-scale-bug",
        _multihead_module().replace(
            "context = torch.softmax(scores / hd ** 0.5, dim=-1) @ v",
            "context = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
        ),
        "rule_function",
    ),
    (
        "exercise-fill-value-bug",
        MASKED_WEIGHTS.format(
            lines="return torch.softmax(attn_scores.masked_fill(mask, -1e9), dim=-1).masked_fill(mask, 0.0)"
        ),
        "big_fill",
    ),
    (
        "exercise-fill-value-bug",
        MASKED_WEIGHTS.format(
            lines="return torch.softmax(attn_scores.masked_fill(mask, torch.finfo(torch.float32).min), -1)"
            ".masked_fill(mask, 0.0)"
        ),
        "big_fill",
    ),
    (
        "exercise-fill-value-bug",
        MASKED_WEIGHTS.format(lines="return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=-1)"),
        "inf_fill",
    ),
    (
        "exercise-fill-value-bug",
        MASKED_WEIGHTS.format(
            lines="return torch.softmax(attn_scores.masked_fill(mask, -1e4), dim=-1).masked_fill(mask, 0.0)"
        ),
        "small_fill",
    ),
    (
        "exercise-fill-value-bug",
        MASKED_WEIGHTS.format(
            lines="return torch.softmax(attn_scores.masked_fill(mask, torch.finfo(attn_scores.dtype).min), dim=-1)"
        ),
        "no_zero",
    ),
    (
        "exercise-fill-value-bug",
        MASKED_WEIGHTS.format(
            lines="from attention_lib import masked_softmax\n    return masked_softmax(attn_scores, mask)"
        ),
        "rule_function",
    ),
    (
        "exercise-fill-value-bug",
        MASKED_WEIGHTS.format(
            lines="s = attn_scores.float().masked_fill(mask, -1e30)\n"
            "    return torch.softmax(s, dim=-1).masked_fill(mask, 0.0)"
        ),
        "dtype",
    ),
    # nan left in the rows whose every key is masked, the others right and computed in float64: no typical wrong
    # answer's values, so the rows themselves are looked at.
    (
        "exercise-fill-value-bug",
        MASKED_WEIGHTS.format(
            lines="w = torch.softmax(attn_scores.double().masked_fill(mask, float('-inf')), dim=-1)\n"
            "    return torch.where(mask & ~mask.all(-1, keepdim=True), 0.0, w).to(attn_scores.dtype)"
        ),
        "inf_fill",
    ),
    # Computed in float64, the fully masked rows left uniform.
    (
        "exercise-fill-value-bug",
        MASKED_WEIGHTS.format(
            lines="w = torch.softmax(attn_scores.double().masked_fill(mask, -1e300), dim=-1)\n"
            "    return torch.where(mask & ~mask.all(-1, keepdim=True), 0.0, w).to(attn_scores.dtype)"
        ),
        "no_zero",
    ),
    (
        "exercise-softmax-dim-bug",
        CAUSAL_ANY.format(line="torch.softmax(attn_scores.masked_fill(future, -torch.inf), dim=1)"),
        "softmax_dim",
    ),
    (
        "exercise-softmax-dim-bug",
        CAUSAL_ANY.format(line="torch.softmax(attn_scores.masked_fill(future, -torch.inf), dim=0)"),
        "softmax_dim",
    ),
    (
        "exercise-softmax-dim-bug",
        CAUSAL_ANY.format(line="torch.softmax(attn_scores.masked_fill(future, -torch.inf), dim=-2)"),
        "softmax_dim",
    ),
    ("exercise-softmax-dim-bug", CAUSAL_ANY.format(line="torch.softmax(attn_scores, dim=-1)"), "no_causal"),
]
RIGHT |= {
    "exercise-fused-projection-bug": FUSED.format(
        split="q, k, v = self.W_qkv(x).split(self.W_qkv.out_features // 3, dim=-1)",
        scale="k.size(-1) ** 0.5",
    ),
    "exercise-split-order-bug": MULTIHEAD_SPLIT.format(line="x.unflatten(-1, (num_heads, head_dim)).transpose(1, 2)"),
    "exercise-torch-mask-bug": TORCH_CAUSAL.format(mask="attn_mask=~torch.tril(ones), is_causal=True"),
    "exercise-out-proj-bug": _multihead_module(),
    "exercise-head-scale-bug": _multihead_module(),
    "exercise-fill-value-bug": MASKED_WEIGHTS.format(
        lines="s = attn_scores.float().masked_fill(mask, float('-inf'))\n"
        "    w = torch.softmax(s, dim=-1).nan_to_num(0.0)\n"
        "    return w.to(attn_scores.dtype)"
    ),
    "exercise-softmax-dim-bug": CAUSAL_ANY.format(
        line="torch.where(future, 0.0, torch.softmax(attn_scores.masked_fill(future, float('-inf')), dim=-1))"
    ),
}

# positions (exercises/attention_exercises/positions.py)
ROPE_COMPLEX = """
def answer(x, positions):
    from attention_lib import rope_frequencies
    head_dim = x.shape[-1]
    freqs = {freqs}
    angles = {positions}[:, None] * freqs
    turn = torch.polar(torch.ones_like(angles), {angles})
    pairs = torch.view_as_complex({pairs})
    {ret}
"""
_COMPLEX_RIGHT = {
    "freqs": "rope_frequencies(head_dim)",
    "positions": "positions",
    "angles": "angles",
    "pairs": "x.reshape(*x.shape[:-1], head_dim // 2, 2)",
    "ret": "return torch.view_as_real(pairs * turn).flatten(-2)",
}


def _rope_complex(**changes: str) -> str:
    return ROPE_COMPLEX.format(**{**_COMPLEX_RIGHT, **changes})


WRONG += [
    # Pairs (i, i + head_dim / 2): the half layout's, through complex numbers, written back interleaved.
    (
        "exercise-rope-complex",
        _rope_complex(pairs="x.unflatten(-1, (2, head_dim // 2)).transpose(-1, -2).contiguous()"),
        "half_pairs",
    ),
    # ... or put back in the halves they came from.
    (
        "exercise-rope-complex",
        _rope_complex(
            pairs="x.unflatten(-1, (2, head_dim // 2)).transpose(-1, -2).contiguous()",
            ret="return torch.view_as_real(pairs * turn).transpose(-1, -2).flatten(-2)",
        ),
        "half_pairs",
    ),
    (
        "exercise-rope-complex",
        _rope_complex(freqs="10000.0 ** (-torch.arange(head_dim // 2) / head_dim)"),
        "frequencies",
    ),
    (
        "exercise-rope-complex",
        _rope_complex(freqs="10000.0 ** (torch.arange(0, head_dim, 2) / head_dim)"),
        "frequencies",
    ),
    # The pairs counted from 1: every frequency one step too slow, none turning one radian a position.
    (
        "exercise-rope-complex",
        _rope_complex(freqs="10000.0 ** (-2 * torch.arange(1, head_dim // 2 + 1) / head_dim)"),
        "frequencies",
    ),
    ("exercise-rope-complex", _rope_complex(positions="torch.arange(x.shape[-2])"), "given_positions"),
    ("exercise-rope-complex", _rope_complex(angles="-angles"), "direction"),
    ("exercise-rope-complex", _rope_complex(ret="return torch.view_as_real(pairs * turn)"), "flatten"),
    ("exercise-rope-complex", _rope_complex(ret="return pairs * turn"), "to_real"),
    # Angles in float64: the result comes back float64.
    ("exercise-rope-complex", _rope_complex(freqs="rope_frequencies(head_dim, dtype=torch.float64)"), "dtype"),
    (
        "exercise-rope-complex",
        _rope_complex(ret="with torch.no_grad():\n        return torch.view_as_real(pairs * turn).flatten(-2)"),
        "detached",
    ),
    # The task's rules: the library's rotation, or a cosine and a sine instead of one complex multiplication.
    (
        "exercise-rope-complex",
        "def answer(x, positions):\n    from attention_lib import apply_rope\n"
        "    return apply_rope(x, positions, layout='interleaved')",
        "rule_function",
    ),
    (
        "exercise-rope-complex",
        """
        def answer(x, positions):
            from attention_lib import rope_frequencies
            angles = positions[:, None] * rope_frequencies(x.shape[-1])
            cos, sin = torch.cos(angles), torch.sin(angles)
            x1, x2 = x[..., 0::2], x[..., 1::2]
            return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
        """,
        "rule_function",
    ),
]

# The cached step of RoPE attention: {positions} of the new tokens, {rotate} them, {store} the cache, {attend}.
ROPE_STEP = """
def answer(cache, queries, keys, values):
    from attention_lib import apply_rope
    num_new = queries.shape[2]
    num_cached = 0 if cache.cache_k is None else cache.cache_k.shape[2]
    positions = {positions}
    {rotate}
    {store}
    {attend}
"""
_STEP_RIGHT = {
    "positions": "torch.arange(num_cached, num_cached + num_new)",
    "rotate": "queries, keys = apply_rope(queries, positions), apply_rope(keys, positions)",
    "store": "if cache.cache_k is not None:\n"
    "        keys = torch.cat([cache.cache_k, keys], dim=2)\n"
    "        values = torch.cat([cache.cache_v, values], dim=2)\n"
    "    cache.cache_k, cache.cache_v = keys, values",
    "attend": "allowed = torch.ones(num_new, keys.shape[2], dtype=torch.bool).tril(num_cached)\n"
    "    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=allowed)",
}


def _rope_step(**changes: str) -> str:
    return ROPE_STEP.format(**{**_STEP_RIGHT, **changes})


def test_a_wrong_rope_cache_names_the_cache_it_was_compared_with() -> None:
    """Right context vectors and a cache of unrotated keys: the ✗ names the keys the cache should hold."""
    code = _rope_step(
        rotate="pass",
        store=_STEP_RIGHT["store"]
        + "\n    queries = apply_rope(queries, positions)"
        + "\n    keys = apply_rope(keys, torch.arange(keys.shape[2]))",
    )
    english = diagnose("exercise-rope-cache-bug", _answer(code))
    chinese = diagnose("exercise-rope-cache-bug", _answer(code), lang="zh")
    assert english.hint == chinese.hint == "cache_unrotated"
    assert "Compared with: the keys of every token so far" in str(english), str(english)
    assert "RoPEAttention's forward over the whole sequence" not in str(english)
    assert "到目前为止每个词元的键" in str(chinese), str(chinese)


WRONG += [
    ("exercise-rope-cache-bug", _rope_step(positions="torch.arange(num_new)"), "restart"),
    # Positions one after the right ones: the first step's context is right, its cache is not.
    (
        "exercise-rope-cache-bug",
        _rope_step(positions="torch.arange(num_cached + 1, num_cached + 1 + num_new)"),
        "off_by_one",
    ),
    (
        "exercise-rope-cache-bug",
        _rope_step(positions="torch.arange(num_cached - 1, num_cached - 1 + num_new)"),
        "off_by_one",
    ),
    # The new keys rotated and cached, then every key rotated again at 0 .. num_keys - 1 before attending.
    (
        "exercise-rope-cache-bug",
        _rope_step(store=_STEP_RIGHT["store"] + "\n    keys = apply_rope(keys, torch.arange(keys.shape[2]))"),
        "rotate_twice",
    ),
    # The new keys appended unrotated to the rotated cache, then all of it rotated: right on the prompt, and the
    # cache it leaves holds unrotated keys.
    (
        "exercise-rope-cache-bug",
        _rope_step(
            rotate="pass",
            store=_STEP_RIGHT["store"]
            + "\n    queries = apply_rope(queries, positions)"
            + "\n    keys = apply_rope(keys, torch.arange(keys.shape[2]))",
        ),
        "cache_unrotated",
    ),
    ("exercise-rope-cache-bug", _rope_step(rotate="keys = apply_rope(keys, positions)"), "rotate_both"),
    (
        "exercise-rope-cache-bug",
        _rope_step(
            rotate="queries = apply_rope(queries, positions, 'interleaved')\n"
            "    keys = apply_rope(keys, positions, 'interleaved')"
        ),
        "layout",
    ),
    # Right context vectors, and the new keys stored before their rotation: the next step would read them unrotated.
    (
        "exercise-rope-cache-bug",
        _rope_step(
            rotate="raw, queries, keys = keys, apply_rope(queries, positions), apply_rope(keys, positions)",
            store=_STEP_RIGHT["store"]
            + "\n    past = cache.cache_k[:, :, :num_cached]"
            + "\n    cache.cache_k = raw if num_cached == 0 else torch.cat([past, raw], dim=2)",
        ),
        "cache_unrotated",
    ),
    (
        "exercise-rope-cache-bug",
        _rope_step(
            attend="return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, is_causal=True)"
        ),
        "causal_upper_left",
    ),
    (
        "exercise-rope-cache-bug",
        _rope_step(
            attend=_STEP_RIGHT["attend"].replace("attn_mask=allowed", "attn_mask=allowed, scale=1 / keys.shape[-1]")
        ),
        "scale_by_d_k",
    ),
    (
        "exercise-rope-cache-bug",
        _rope_step(store=_STEP_RIGHT["store"].replace("cache.cache_k, cache.cache_v = keys, values", "pass")),
        "no_store",
    ),
    # The mask handed to SDPA as floats, ones and zeros or 0 and -1: added to the scores, it hides nothing.
    (
        "exercise-rope-cache-bug",
        _rope_step(attend=_STEP_RIGHT["attend"].replace("attn_mask=allowed", "attn_mask=allowed.float()")),
        "float_keep",
    ),
    (
        "exercise-rope-cache-bug",
        _rope_step(attend=_STEP_RIGHT["attend"].replace("attn_mask=allowed", "attn_mask=allowed.float() - 1.0")),
        "float_keep",
    ),
]
RIGHT |= {
    # The turn as exp(i * angle), the frequencies written out, the pairs by view.
    "exercise-rope-complex": """
        def answer(x, positions):
            d = x.shape[-1]
            inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d // 2, dtype=torch.float32) * 2 / d))
            turn = torch.exp(1j * torch.outer(positions.float(), inv_freq))
            z = torch.view_as_complex(x.float().contiguous().view(*x.shape[:-1], d // 2, 2))
            return torch.view_as_real(z * turn).reshape(x.shape).type_as(x)
        """,
    # The attention written out with einsum, the positions from the cache's own length.
    "exercise-rope-cache-bug": """
        def answer(cache, queries, keys, values):
            from attention_lib import apply_rope, positions_for_step
            past = 0 if cache.cache_k is None else cache.cache_k.size(-2)
            where = positions_for_step(past, queries.size(-2))
            queries, keys = apply_rope(queries, where), apply_rope(keys, where)
            if past:
                keys = torch.cat((cache.cache_k, keys), dim=-2)
                values = torch.cat((cache.cache_v, values), dim=-2)
            cache.cache_k, cache.cache_v = keys, values
            scores = torch.einsum("bhqd,bhkd->bhqk", queries, keys) / queries.size(-1) ** 0.5
            rows = torch.arange(queries.size(-2))[:, None] + past
            scores = scores.masked_fill(torch.arange(keys.size(-2)) > rows, float("-inf"))
            return scores.softmax(dim=-1) @ values
        """,
}

# masks beyond causal (exercises/attention_exercises/masks_beyond.py)
SLIDING_DOCUMENT = """
def answer(document_ids, window):
    n = document_ids.shape[-1]
    back = torch.arange(n)[:, None] - torch.arange(n)
    outside = {outside}
    other = {other}
    return {ret}
"""
_SLIDING_RIGHT = {
    "outside": "(back < 0) | (back >= window)",
    "other": "document_ids[..., :, None] != document_ids[..., None, :]",
    "ret": "other | outside",
}


def _sliding_document(**changes: str) -> str:
    return SLIDING_DOCUMENT.format(**{**_SLIDING_RIGHT, **changes})


WRONG += [
    ("exercise-sliding-document-mask", _sliding_document(ret="~(other | outside)"), "mask_polarity"),
    ("exercise-sliding-document-mask", _sliding_document(outside="(back <= 0) | (back >= window)"), "causal_diagonal"),
    ("exercise-sliding-document-mask", _sliding_document(outside="(back < -1) | (back >= window)"), "causal_diagonal"),
    ("exercise-sliding-document-mask", _sliding_document(outside="(back < 0) | (back > window)"), "window_count"),
    ("exercise-sliding-document-mask", _sliding_document(outside="(back < 0) | (back >= window - 1)"), "window_count"),
    ("exercise-sliding-document-mask", _sliding_document(outside="back < 0"), "window_missing"),
    ("exercise-sliding-document-mask", _sliding_document(ret="outside.expand(other.shape)"), "documents_missing"),
    ("exercise-sliding-document-mask", _sliding_document(ret="other & outside"), "combine_or"),
    # One row of ids only: a batch of rows compared across the batch.
    (
        "exercise-sliding-document-mask",
        _sliding_document(other="document_ids[:, None] != document_ids[None, :]"),
        "batch_dims",
    ),
    ("exercise-sliding-document-mask", _sliding_document(ret="(other | outside).int()"), "bool_mask"),
    # The task's rule: the library's two masks.
    (
        "exercise-sliding-document-mask",
        "def answer(document_ids, window):\n    from attention_lib import document_mask, sliding_window_mask\n"
        "    return document_mask(document_ids) | sliding_window_mask(document_ids.shape[-1], window)",
        "rule_function",
    ),
]

# The page's find-the-bug mask_mod, with {real} keys and {allowed} as the fix writes them.
PADDED_WINDOW = """
def answer(valid_lens, num_keys, window):
    num_pads = num_keys - valid_lens

    def mask_mod(b, h, q_idx, kv_idx):
        back = q_idx - kv_idx
        real = {real}
        return {allowed}

    return mask_mod
"""
_PADDED_RIGHT = {"real": "kv_idx >= num_pads[b]", "allowed": "real & (back >= 0) & (back < window)"}


def _padded_window(**changes: str) -> str:
    return PADDED_WINDOW.format(**{**_PADDED_RIGHT, **changes})


WRONG += [
    # The bug left in: True where masked out.
    ("exercise-padded-window-bug", _padded_window(allowed="~real | (back < 0) | (back >= window)"), "mask_polarity"),
    ("exercise-padded-window-bug", _padded_window(allowed="real | (back >= 0) | (back < window)"), "combine_and"),
    ("exercise-padded-window-bug", _padded_window(allowed="real & (back > 0) & (back < window)"), "causal_diagonal"),
    ("exercise-padded-window-bug", _padded_window(allowed="real & (back >= 0) & (back <= window)"), "window_count"),
    ("exercise-padded-window-bug", _padded_window(allowed="real & (back < window)"), "future"),
    # A newcomer's walk: the window dropped, which a window of 1 on a short sequence cannot tell from one key too many.
    (
        "exercise-padded-window-bug",
        _padded_window(allowed="(kv_idx >= num_pads[b]) & (q_idx - kv_idx >= 0)"),
        "window_missing",
    ),
    ("exercise-padded-window-bug", _padded_window(real="kv_idx < valid_lens[b]"), "left_pads"),
    ("exercise-padded-window-bug", _padded_window(real="kv_idx > num_pads[b]"), "left_pads"),
    ("exercise-padded-window-bug", _padded_window(allowed="real and (back >= 0) and (back < window)"), "tensor_ops"),
]
RIGHT |= {
    # The window from the library's positions written as torch.where, the documents by eq and logical_not.
    "exercise-sliding-document-mask": """
        def answer(document_ids, window):
            idx = torch.arange(document_ids.size(-1))
            seen = (idx[None, :] <= idx[:, None]) & (idx[None, :] > idx[:, None] - window)
            same = document_ids.unsqueeze(-1).eq(document_ids.unsqueeze(-2))
            return torch.logical_not(same & seen)
        """,
    # ~ of the whole masked-out condition, with torch.logical_or.
    "exercise-padded-window-bug": """
        def answer(valid_lens, num_keys, window):
            pads = num_keys - valid_lens

            def mask_mod(b, h, q_idx, kv_idx):
                masked = torch.logical_or(kv_idx < pads[b], (q_idx - kv_idx < 0) | (q_idx - kv_idx >= window))
                return ~masked

            return mask_mod
        """,
}


# softmax in tiles (exercises/attention_exercises/tiles.py)
# The write-it's loop: scores {scale}d, the {new_max}, the {rescale} factor, the {running_sum} and the {output}
# it keeps, and what it {ret}urns.
TILED = """
def answer(queries, keys, values, tile_size):
    num_queries, num_keys = queries.shape[0], keys.shape[0]
    running_max = torch.full((num_queries, 1), float("-inf"))
    running_sum = torch.zeros(num_queries, 1)
    output = torch.zeros(num_queries, values.shape[1])
    for start in range(0, num_keys, tile_size):
        stop = min(start + tile_size, num_keys)
        scores = queries @ keys[start:stop].T / {scale}
        new_max = {new_max}
        rescale = {rescale}
        exps = torch.exp(scores - new_max)
        running_sum = {running_sum}
        output = {output}
        running_max = new_max
    return {ret}
"""
_TILED_RIGHT = {
    "scale": "queries.shape[1] ** 0.5",
    "new_max": "torch.maximum(running_max, scores.amax(dim=1, keepdim=True))",
    "rescale": "torch.exp(running_max - new_max)",
    "running_sum": "running_sum * rescale + exps.sum(dim=1, keepdim=True)",
    "output": "output * rescale + exps @ values[start:stop]",
    "ret": "output / running_sum",
}


def _tiled(**changes: str) -> str:
    return TILED.format(**{**_TILED_RIGHT, **changes})


# The find-the-bug's masked loop, fixed, with the mask {fill}ed in, the {safe} maximum, and what it {ret}urns.
TILED_MASKED = """
def answer(queries, keys, values, mask, tile_size):
    num_queries, num_keys = queries.shape[0], keys.shape[0]
    running_max = torch.full((num_queries, 1), float("-inf"))
    running_sum = torch.zeros(num_queries, 1)
    output = torch.zeros(num_queries, values.shape[1])
    for start in range(0, num_keys, tile_size):
        stop = min(start + tile_size, num_keys)
        scores = queries @ keys[start:stop].T / queries.shape[1] ** 0.5
        scores = {fill}
        new_max = torch.maximum(running_max, scores.amax(dim=1, keepdim=True))
        safe_max = {safe}
        rescale = {rescale}
        exps = torch.exp(scores - safe_max)
        running_sum = {running_sum}
        output = {output}
        running_max = new_max
    return {ret}
"""
_MASKED_RIGHT = {
    "fill": 'scores.masked_fill(mask[:, start:stop], float("-inf"))',
    "safe": 'new_max.masked_fill(new_max == float("-inf"), 0.0)',
    "rescale": "torch.exp(running_max - safe_max)",
    "running_sum": "running_sum * rescale + exps.sum(dim=1, keepdim=True)",
    "output": "output * rescale + exps @ values[start:stop]",
    "ret": "output / running_sum.masked_fill(running_sum == 0, 1.0)",
}


def _tiled_masked(**changes: str) -> str:
    return TILED_MASKED.format(**{**_MASKED_RIGHT, **changes})


WRONG += [
    ("exercise-tiled-attention", _tiled(scale="1.0"), "scale_missing"),
    ("exercise-tiled-attention", _tiled(scale="queries.shape[1]"), "scale_by_d_k"),
    ("exercise-tiled-attention", _tiled(scale="keys.shape[0] ** 0.5"), "scale_wrong_size"),
    ("exercise-tiled-attention", _tiled(scale="values.shape[1] ** 0.5"), "scale_wrong_size"),
    ("exercise-tiled-attention", _tiled(rescale="1.0"), "no_rescale"),
    ("exercise-tiled-attention", _tiled(output="output + exps @ values[start:stop]"), "rescale_sum_only"),
    (
        "exercise-tiled-attention",
        _tiled(running_sum="running_sum + exps.sum(dim=1, keepdim=True)"),
        "rescale_output_only",
    ),
    # exp(new - old): inf at the first tile, from a running max of -inf, and nan from 0 * inf.
    ("exercise-tiled-attention", _tiled(rescale="torch.exp(new_max - running_max)"), "rescale_sign"),
    ("exercise-tiled-attention", _tiled(ret="output"), "no_divide"),
    # Right until a later tile's score is 89 above the first tile's maximum: the large inputs.
    (
        "exercise-tiled-attention",
        _tiled(new_max="scores.amax(dim=1, keepdim=True) if start == 0 else running_max"),
        "first_max",
    ),
    # exp of the scores themselves: right until they pass 88.
    (
        "exercise-tiled-attention",
        _tiled(new_max="torch.zeros(num_queries, 1)", rescale="1.0"),
        "naive_exp",
    ),
    # A softmax of each tile, written out (torch.softmax is ruled out), the tiles' outputs added or averaged.
    (
        "exercise-tiled-attention",
        """
        def answer(queries, keys, values, tile_size):
            total, count = 0.0, 0
            for start in range(0, keys.shape[0], tile_size):
                scores = queries @ keys[start : start + tile_size].T / queries.shape[1] ** 0.5
                exps = torch.exp(scores - scores.amax(dim=1, keepdim=True))
                total = total + exps / exps.sum(dim=1, keepdim=True) @ values[start : start + tile_size]
                count += 1
            return total
        """,
        "tile_softmax",
    ),
    (
        "exercise-tiled-attention",
        """
        def answer(queries, keys, values, tile_size):
            outs = []
            for start in range(0, keys.shape[0], tile_size):
                scores = queries @ keys[start : start + tile_size].T / queries.shape[1] ** 0.5
                exps = torch.exp(scores - scores.amax(dim=1, keepdim=True))
                outs.append(exps / exps.sum(dim=1, keepdim=True) @ values[start : start + tile_size])
            return sum(outs) / len(outs)
        """,
        "tile_softmax",
    ),
    # The whole row of scores first, then the loop over its tiles: right numbers, not the tiled loop.
    (
        "exercise-tiled-attention",
        """
        def answer(queries, keys, values, tile_size):
            every_score = queries @ keys.T / queries.shape[1] ** 0.5
            running_max = torch.full((queries.shape[0], 1), float("-inf"))
            running_sum, output = torch.zeros(queries.shape[0], 1), torch.zeros(queries.shape[0], values.shape[1])
            for start in range(0, keys.shape[0], tile_size):
                scores = every_score[:, start : start + tile_size]
                new_max = torch.maximum(running_max, scores.amax(dim=1, keepdim=True))
                rescale, exps = torch.exp(running_max - new_max), torch.exp(scores - new_max)
                running_sum = running_sum * rescale + exps.sum(dim=1, keepdim=True)
                output = output * rescale + exps @ values[start : start + tile_size]
                running_max = new_max
            return output / running_sum
        """,
        "whole_row",
    ),
    # The exponentials of a whole row, computed one key at a time into a list: a row of them, stacked.
    (
        "exercise-tiled-attention",
        """
        def answer(queries, keys, values, tile_size):
            scores = torch.cat([queries @ keys[j : j + 1].T for j in range(keys.shape[0])], dim=1)
            exps = torch.exp((scores - scores.amax(dim=1, keepdim=True)) / queries.shape[1] ** 0.5)
            return exps @ values / exps.sum(dim=1, keepdim=True)
        """,
        "whole_row",
    ),
    # The task's rule: no softmax of torch's, nor the library's loop.
    (
        "exercise-tiled-attention",
        "def answer(queries, keys, values, tile_size):\n"
        "    return torch.softmax(queries @ keys.T / queries.shape[1] ** 0.5, dim=-1) @ values",
        "rule_function",
    ),
    (
        "exercise-tiled-attention",
        "def answer(queries, keys, values, tile_size):\n"
        "    from attention_lib import tiled_attention\n"
        "    return tiled_attention(queries, keys, values, tile_size=tile_size)",
        "rule_function",
    ),
    # The page's bug left in: the output kept on the old maximum's scale.
    ("exercise-tile-rescale-bug", _tiled_masked(output="output + exps @ values[start:stop]"), "rescale_sum_only"),
    (
        "exercise-tile-rescale-bug",
        _tiled_masked(running_sum="running_sum + exps.sum(dim=1, keepdim=True)"),
        "rescale_output_only",
    ),
    ("exercise-tile-rescale-bug", _tiled_masked(rescale="1.0"), "no_rescale"),
    ("exercise-tile-rescale-bug", _tiled_masked(rescale="torch.exp(safe_max - running_max)"), "rescale_sign"),
    # -inf - (-inf) in a row whose first keys are masked, and 0 / 0 in a row that sees no key.
    ("exercise-tile-rescale-bug", _tiled_masked(safe="new_max"), "masked_nan"),
    # The safe max kept, and only the rows that see no key end as 0 / 0: the hint leads with dividing by 1.
    ("exercise-tile-rescale-bug", _tiled_masked(ret="output / running_sum"), "empty_rows_nan"),
    ("exercise-tile-rescale-bug", _tiled_masked(ret="output"), "no_divide"),
    (
        "exercise-tile-rescale-bug",
        _tiled_masked(fill='scores.masked_fill(~mask[:, start:stop], float("-inf"))'),
        "mask_polarity",
    ),
    ("exercise-tile-rescale-bug", _tiled_masked(fill="scores.masked_fill(mask[:, start:stop], 0.0)"), "mask_fill_zero"),
]
RIGHT |= {
    # The tiles from split, the correction written as a ratio of exponentials of the old and new maximum.
    "exercise-tiled-attention": """
        def answer(queries, keys, values, tile_size):
            q = queries / queries.size(-1) ** 0.5
            m = torch.full((q.size(0), 1), -torch.inf)
            l = torch.zeros(q.size(0), 1)
            o = torch.zeros(q.size(0), values.size(-1))
            for k_tile, v_tile in zip(keys.split(tile_size), values.split(tile_size)):
                s = q @ k_tile.mT
                m_new = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
                p = (s - m_new).exp()
                l = l * (m - m_new).exp() + p.sum(-1, keepdim=True)
                o = o * (m - m_new).exp() + p @ v_tile
                m = m_new
            return o / l
        """,
    # The masked rows handled with torch.where, and the zero rows by clamping the sum.
    "exercise-tile-rescale-bug": """
        def answer(queries, keys, values, mask, tile_size):
            d = queries.shape[-1]
            m = torch.full((queries.shape[0], 1), float("-inf"))
            l = torch.zeros(queries.shape[0], 1)
            o = torch.zeros(queries.shape[0], values.shape[-1])
            for a in range(0, keys.shape[0], tile_size):
                s = torch.where(mask[:, a : a + tile_size], float("-inf"), queries @ keys[a : a + tile_size].T / d**0.5)
                m_new = torch.maximum(m, s.amax(-1, keepdim=True))
                shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
                c = torch.exp(m - shift)
                p = torch.exp(s - shift)
                l, o, m = l * c + p.sum(-1, keepdim=True), o * c + p @ values[a : a + tile_size], m_new
            return o / l.clamp_min(torch.finfo(l.dtype).tiny)
        """,
}


# real-model (exercises/attention_exercises/real_model.py)
HEAD_AVERAGE = """
def answer(attentions, query):
    return {line}
"""
WRONG += [
    (
        "exercise-real-model-head-average",
        HEAD_AVERAGE.format(line="torch.stack(attentions)[..., query].mean(dim=2)"),
        "column",
    ),
    (
        "exercise-real-model-head-average",
        HEAD_AVERAGE.format(line="torch.stack(attentions)[:, :, :, query, :].mean(dim=1)"),
        "head_dim",
    ),
    (
        "exercise-real-model-head-average",
        HEAD_AVERAGE.format(line="torch.stack([a[:, :, query, :].mean(dim=0) for a in attentions])"),
        "head_dim",
    ),
    (
        "exercise-real-model-head-average",
        HEAD_AVERAGE.format(line="torch.stack(attentions)[:, :, :, query, :].sum(dim=2)"),
        "sum",
    ),
    # A newcomer's walk: a softmax again after the average.
    (
        "exercise-real-model-head-average",
        HEAD_AVERAGE.format(line="torch.softmax(torch.stack(attentions)[:, :, :, query].mean(2), -1)"),
        "softmax_again",
    ),
    (
        "exercise-real-model-head-average",
        HEAD_AVERAGE.format(line="torch.stack(attentions)[:, :, :, query, :]"),
        "average",
    ),
    (
        "exercise-real-model-head-average",
        HEAD_AVERAGE.format(line="torch.cat(attentions)[:, :, query, :].mean(dim=1)"),
        "stack",
    ),
    (
        "exercise-real-model-head-average",
        HEAD_AVERAGE.format(line="[a[:, :, query, :].mean(dim=1) for a in attentions]"),
        "stack",
    ),
    (
        "exercise-real-model-head-average",
        HEAD_AVERAGE.format(line="attentions[-1][:, :, query, :].mean(dim=1)"),
        "layers",
    ),
]
# The page's find-the-bug, fixed as {weight} and {proj} say, the biases as {bias} and {proj_bias} do.
GPT2_TO_LIB = """
def answer(attn, context_length):
    from attention_lib import MultiHeadAttention

    d = attn.c_proj.weight.shape[0]
    mha = MultiHeadAttention(d, d, context_length, 0.0, attn.num_heads, qkv_bias={qkv_bias})
    w_q, w_k, w_v = attn.c_attn.weight.split(d, dim={dim})
    b_q, b_k, b_v = attn.c_attn.bias.split(d)
    with torch.no_grad():
        for linear, weight, bias in {copies}:
            linear.weight.copy_({weight})
            {bias}
        mha.out_proj.weight.copy_({proj})
        {proj_bias}
    return mha
"""
RIGHT_COPY = {
    "qkv_bias": "True",
    "dim": "1",
    "copies": "((mha.W_query, w_q, b_q), (mha.W_key, w_k, b_k), (mha.W_value, w_v, b_v))",
    "weight": "weight.T",
    "bias": "linear.bias.copy_(bias)",
    "proj": "attn.c_proj.weight.T",
    "proj_bias": "mha.out_proj.bias.copy_(attn.c_proj.bias)",
}


def _gpt2_to_lib(**changes: str) -> str:
    return GPT2_TO_LIB.format(**(RIGHT_COPY | changes))


WRONG += [
    ("exercise-real-model-conv1d-bug", _gpt2_to_lib(weight="weight", proj="attn.c_proj.weight"), "transpose"),
    ("exercise-real-model-conv1d-bug", _gpt2_to_lib(proj="attn.c_proj.weight"), "transpose"),
    ("exercise-real-model-conv1d-bug", _gpt2_to_lib(weight="weight"), "transpose"),
    (
        "exercise-real-model-conv1d-bug",
        _gpt2_to_lib(copies="((mha.W_query, w_k, b_k), (mha.W_key, w_q, b_q), (mha.W_value, w_v, b_v))"),
        "order",
    ),
    ("exercise-real-model-conv1d-bug", _gpt2_to_lib(qkv_bias="False", bias="pass"), "qkv_bias"),
    ("exercise-real-model-conv1d-bug", _gpt2_to_lib(bias="pass"), "qkv_bias"),
    ("exercise-real-model-conv1d-bug", _gpt2_to_lib(proj_bias="pass"), "proj_bias"),
    ("exercise-real-model-conv1d-bug", _gpt2_to_lib(dim="0"), "split_dim"),
    # No bias copied at all: left as the module made them, or zeroed.
    ("exercise-real-model-conv1d-bug", _gpt2_to_lib(bias="pass", proj_bias="pass"), "qkv_bias"),
    (
        "exercise-real-model-conv1d-bug",
        _gpt2_to_lib(bias="linear.bias.zero_()", proj_bias="mha.out_proj.bias.zero_()"),
        "qkv_bias",
    ),
    # `reshape(3, d, d)` cuts the (d, 3 * d) weight's rows into three, not its columns.
    (
        "exercise-real-model-conv1d-bug",
        _gpt2_to_lib().replace("attn.c_attn.weight.split(d, dim=1)", "attn.c_attn.weight.reshape(3, d, d)"),
        "split_dim",
    ),
    (
        "exercise-real-model-conv1d-bug",
        _gpt2_to_lib().replace("linear.weight.copy_(weight.T)", "linear.weight = weight.T"),
        "assign",
    ),
    (
        "exercise-real-model-conv1d-bug",
        _gpt2_to_lib().replace("with torch.no_grad():", "if True:"),
        "no_grad",
    ),
    (
        "exercise-real-model-conv1d-bug",
        """
        def answer(attn, context_length):
            from attention_lib import from_gpt2_attention
            return from_gpt2_attention(attn, context_length)
        """,
        "rule_function",
    ),
]
RIGHT |= {
    # The layers' weights averaged one layer at a time, the query counted as a row of each.
    "exercise-real-model-head-average": """
        def answer(attentions, query):
            return torch.stack([layer[:, :, query].mean(dim=1) for layer in attentions])
        """,
    # Transposed first, then cut along the rows; everything loaded at once as a state dict.
    "exercise-real-model-conv1d-bug": """
        def answer(attn, context_length):
            from attention_lib import MultiHeadAttention

            d = attn.c_attn.weight.shape[0]
            mha = MultiHeadAttention(d, d, context_length, 0.0, attn.num_heads, qkv_bias=True)
            weights = attn.c_attn.weight.T.split(d)  # 3 x (d_out, d_in)
            biases = attn.c_attn.bias.split(d)
            state = {"out_proj.weight": attn.c_proj.weight.T, "out_proj.bias": attn.c_proj.bias}
            for name, weight, bias in zip(("W_query", "W_key", "W_value"), weights, biases):
                state[f"{name}.weight"], state[f"{name}.bias"] = weight, bias
            mha.load_state_dict(state)
            return mha
        """,
}


def test_the_real_model_checks_stand_in_computes_what_gpt2s_attention_layer_computes() -> None:
    """The layer the find-the-bug exercise hands over needs no transformers; where transformers is installed, its
    forward is GPT-2's own, with the same weights."""
    hf_gpt2 = pytest.importorskip("transformers.models.gpt2.modeling_gpt2", reason="needs transformers")
    from attention_exercises.real_model import _gpt2_layer

    for seed, (num_heads, head_dim, num_tokens) in enumerate([(1, 2, 1), (2, 3, 5), (3, 2, 4)]):
        d = num_heads * head_dim
        stand_in = _gpt2_layer(seed, d, num_heads)
        config = hf_gpt2.GPT2Config(n_embd=d, n_head=num_heads, attn_implementation="eager")
        theirs = hf_gpt2.GPT2Attention(config, layer_idx=0).eval()
        theirs.load_state_dict(stand_in.state_dict())
        x = torch.randn(2, num_tokens, d, generator=torch.Generator().manual_seed(seed))
        causal = torch.zeros(num_tokens, num_tokens).masked_fill(
            torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1), torch.finfo(torch.float32).min
        )
        with torch.no_grad():
            ours, our_weights = stand_in(x)
            expected, weights = theirs(x, attention_mask=causal[None, None])
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(our_weights, weights, atol=1e-5, rtol=1e-5)
        assert repr(stand_in.c_attn) == repr(theirs.c_attn)


def _answer(code: str):
    namespace = {"torch": torch, "nn": nn}
    exec(textwrap.dedent(code), namespace)
    return namespace["answer"]


def test_masked_weights_written_out_in_a_narrow_dtype_are_as_right_as_torchs() -> None:
    """In bfloat16 a softmax written out step by step, rounding after each, differs from torch's (which rounds once)
    by more than the checks' usual tolerance; both are right."""
    from attention_lib import masked_softmax

    answer = _answer(
        MASKED_WEIGHTS.format(
            lines="s = attn_scores.masked_fill(mask, torch.finfo(attn_scores.dtype).min)\n"
            "    e = (s - s.amax(dim=-1, keepdim=True)).exp()\n"
            "    return (e / e.sum(dim=-1, keepdim=True)).masked_fill(mask, 0.0)"
        )
    )
    scores = 3 * torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
    ours, theirs = masked_softmax(scores.bfloat16(), mask), answer(scores.bfloat16(), mask)
    assert not torch.allclose(ours.double(), theirs.double(), rtol=1e-4, atol=1e-5)
    assert diagnose("exercise-fill-value-bug", answer)


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
def test_a_right_answer_passes_and_says_what_was_checked(
    exercise: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The checks seed only the CPU's generator: torch.manual_seed would also queue the seed for CUDA, and the
    # learner's CUDA generator would start from the check's seed once CUDA starts.
    seeded: list[int] = []
    monkeypatch.setattr(torch, "manual_seed", seeded.append)
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
    assert seeded == []


def test_every_exercise_has_a_right_answer_and_a_wrong_one() -> None:
    assert set(RIGHT) == set(EXERCISES)
    assert {exercise for exercise, _, _ in WRONG} == set(EXERCISES)


def test_every_message_is_in_both_languages() -> None:
    tables = [PROBLEMS, HINTS, CHECKED, NOUNS, *(exercise.words for exercise in EXERCISES.values())]
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


def test_a_mistyped_exercise_id_is_answered_in_the_learners_language_with_the_nearest_id() -> None:
    with pytest.raises(ValueError, match=r"got 'exercise-stable-softmx'\. Did you mean 'exercise-stable-softmax'\?$"):
        diagnose("exercise-stable-softmx", lambda x: x)
    with pytest.raises(ValueError, match=r"^exercise 必须是一道练习的 id.*你想写的是不是 'exercise-stable-softmax'？$"):
        diagnose("exercise-stable-softmx", lambda x: x, lang="zh")
    # Nothing near: no suggestion.
    with pytest.raises(ValueError, match="exercise must be the id") as raised:
        diagnose("softmax", lambda x: x)
    assert "Did you mean" not in str(raised.value)


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


def test_a_chinese_line_never_starts_with_closing_punctuation_nor_ends_with_an_opening_one() -> None:
    # "`keys.shape[-1] ** 0.5`，" must not leave "，" alone at the start of the next line.
    text = wrap("  提示：" + "很长的句子" * 7 + "除以 `keys.shape[-1] ** 0.5`，而不是 d_k（`x`）。", "    ")
    lines = text.split("\n")
    assert len(lines) > 1
    assert not any(line.strip().startswith(("，", "。", "：", "；", "）", "、")) for line in lines)
    assert not any(line.endswith("（") for line in lines)


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_chinese_messages_put_no_space_between_chinese_characters(exercise: str) -> None:
    # "与 {reference} 相等" with a reference that starts with Chinese ("权重相同的 …").
    text = str(diagnose(exercise, _answer(RIGHT[exercise]), lang="zh"))
    chinese = r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]"
    assert not re.search(rf"{chinese} +{chinese}", text.replace("\n    ", "")), text


def test_a_learners_first_check_imports_nothing_heavy() -> None:
    """A fresh Python's first check answers at once: restoring torch's settings after it does not call
    ``torch.use_deterministic_algorithms`` when nothing changed, whose first call imports torch._inductor and
    torch._dynamo (1.3 s, then more than the check itself)."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from attention_exercises import check\n"
        "def answer(queries, keys): return queries @ keys.T\n"
        "check('exercise-all-scores', answer)\n"
        "print(sorted(name for name in ('torch._dynamo', 'torch._inductor') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("✓ exercise-all-scores")
    assert result.stdout.splitlines()[-1] == "[]"
