"""Every bad input raises a clear exception naming the argument and what was expected."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest
import torch

import attention_lib as al

X = torch.randn(2, 4, 3)
Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2)

BAD: dict[str, tuple[Callable[[], object], type[Exception], str]] = {
    # d_out not divisible by num_heads
    "mha d_out % num_heads": (
        lambda: al.MultiHeadAttention(3, 5, 4, 0.0, num_heads=2),
        ValueError,
        r"d_out must be divisible by num_heads, got d_out=5 and num_heads=2",
    ),
    "general mha num_hiddens % num_heads": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 4, 10, 3, 0.0),
        ValueError,
        r"num_hiddens must be divisible by num_heads, got num_hiddens=10 and num_heads=3",
    ),
    "split_heads d_out % num_heads": (
        lambda: al.split_heads(torch.randn(1, 2, 5), 2),
        ValueError,
        r"d_out must be divisible by num_heads, got d_out=5",
    ),
    "transpose_qkv num_hiddens % num_heads": (
        lambda: al.transpose_qkv(torch.randn(1, 2, 5), 2),
        ValueError,
        r"num_hiddens must be divisible by num_heads, got num_hiddens=5 and num_heads=2",
    ),
    "zero heads": (
        lambda: al.MultiHeadAttention(3, 4, 4, 0.0, num_heads=0),
        ValueError,
        r"num_heads must be a positive integer, got 0",
    ),
    # a size of the wrong type is a TypeError, a size of the right type but out of range a ValueError
    "float size": (lambda: al.SelfAttentionV1(3.0, 2), TypeError, r"d_in must be a positive integer, got 3.0"),  # type: ignore[arg-type]
    "bool size": (lambda: al.SelfAttentionV1(True, 2), TypeError, r"d_in must be a positive integer, got True"),
    "gqa with the Llama signature's dtype": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, torch.bfloat16),  # type: ignore[arg-type]
        TypeError,
        r"num_kv_groups must be a positive integer, got torch.bfloat16",
    ),
    # an input the module's weights do not match: dtype, device; the book's positional use_cache
    "mha float64 input": (
        lambda: al.MultiHeadAttention(3, 4, 4, 0.0, 2)(X.double()),
        TypeError,
        r"x must have the dtype of the module's weights, torch.float32, got torch.float64: convert one",
    ),
    "gqa bfloat16 module": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, 1).bfloat16()(X),
        TypeError,
        r"x must have the dtype of the module's weights, torch.bfloat16, got torch.float32",
    ),
    "v2 meta input": (
        lambda: al.SelfAttentionV2(3, 2)(X.to("meta")),
        ValueError,
        r"x must be on the device of the module's weights, cpu, got meta",
    ),
    "cross float64 x_2": (
        lambda: al.CrossAttention(3, 2, 2)(X, X.double()),
        TypeError,
        r"x_2 must have the dtype of the module's weights",
    ),
    "mha use_cache positional": (
        lambda: al.MultiHeadAttention(3, 4, 4, 0.0, 2)(X, True),  # type: ignore[arg-type]
        TypeError,
        r"key_padding_mask must be a boolean tensor or None, got True: use_cache is keyword-only",
    ),
    # input of the wrong rank
    "mha 2-D input": (
        lambda: al.MultiHeadAttention(3, 4, 4, 0.0, 2)(X[0]),
        ValueError,
        r"x must be a 3-D tensor of shape \(batch, num_tokens, d_in\), got a 2-D tensor of shape \(4, 3\)",
    ),
    "causal 4-D input": (lambda: al.CausalAttention(3, 4, 4, 0.0)(X[None]), ValueError, r"x must be a 3-D tensor"),
    "v1 1-D input": (lambda: al.SelfAttentionV1(3, 2)(X[0, 0]), ValueError, r"x must be a 2-D or 3-D tensor"),
    "merge_heads 3-D": (
        lambda: al.merge_heads(X),
        ValueError,
        r"x must be a 4-D tensor of shape \(batch, num_heads, num_tokens, head_dim\)",
    ),
    "dot product 2-D queries": (
        lambda: al.DotProductAttention(0.0)(Q[0], K, V),
        ValueError,
        r"queries must be a 3-D tensor",
    ),
    "weight-free 3-D inputs": (
        lambda: al.attn_scores_all(X),
        ValueError,
        r"inputs must be a 2-D tensor of shape \(num_tokens, d_in\)",
    ),
    # wrong last dimension
    "mha last dim": (
        lambda: al.MultiHeadAttention(5, 4, 4, 0.0, 2)(X),
        ValueError,
        r"x must have size 5 in its last dimension \(d_in\), got shape \(2, 4, 3\)",
    ),
    "v2 last dim": (lambda: al.SelfAttentionV2(4, 2)(X), ValueError, r"size 4 in its last dimension"),
    "cross x_2 last dim": (
        lambda: al.CrossAttention(3, 2, 2)(X, torch.randn(2, 4, 5)),
        ValueError,
        r"x_2 must have size 3",
    ),
    "cross batch mismatch": (
        lambda: al.CrossAttention(3, 2, 2)(X, torch.randn(3, 4, 3)),
        ValueError,
        r"same batch dimensions",
    ),
    "query size for dot product": (
        lambda: al.DotProductAttention(0.0)(torch.randn(2, 3, 5), K, V),
        ValueError,
        r"queries and keys must have the same size",
    ),
    "keys vs values positions": (lambda: al.DotProductAttention(0.0)(Q, K, V[:, :4]), ValueError, r"one value per key"),
    "batch mismatch": (lambda: al.AdditiveAttention(4, 4, 2, 0.0)(Q, K[:1], V[:1]), ValueError, r"same batch size"),
    "additive weight shape": (
        lambda: al.additive_scores(Q, K, torch.randn(3, 4), torch.randn(3, 5), torch.randn(1, 3)),
        ValueError,
        r"W_k must have shape \(num_hiddens, key_size\) = \(3, 4\), got \(3, 5\)",
    ),
    "additive w_v missing": (
        lambda: al.additive_scores(Q, K, torch.randn(3, 4), torch.randn(3, 4), None),  # type: ignore[arg-type]
        TypeError,
        r"w_v must be a torch.Tensor, got NoneType",
    ),
    "additive w_v 1-D": (
        lambda: al.additive_scores(Q, K, torch.randn(3, 4), torch.randn(3, 4), torch.randn(3)),
        ValueError,
        r"w_v must be a 2-D tensor of shape \(1, num_hiddens\), got a 1-D tensor of shape \(3,\)",
    ),
    "general scores weight": (
        lambda: al.general_scores(Q, K, torch.randn(4, 5)),
        ValueError,
        r"W must have shape \(d_q, d_k\) = \(4, 4\), got \(4, 5\)",
    ),
    "general scores weight 1-D": (
        lambda: al.general_scores(Q, K, torch.randn(4)),
        ValueError,
        r"W must be a 2-D tensor of shape \(d_q, d_k\), got a 1-D tensor of shape \(4,\)",
    ),
    "general scores weight list": (
        lambda: al.general_scores(Q, K, [[1.0] * 4] * 4),  # type: ignore[arg-type]
        TypeError,
        r"W must be a torch.Tensor, got list",
    ),
    "general scores integer weight": (
        lambda: al.general_scores(Q, K, torch.ones(4, 4, dtype=torch.long)),
        TypeError,
        r"W must be a floating-point tensor \(e.g. torch.float32\), got dtype torch.int64",
    ),
    "scoring 1-D queries": (
        lambda: al.dot_product_scores(torch.randn(4), K),
        ValueError,
        r"queries must be a tensor of shape \(\.\.\., num_queries, d\) with at least 2 dimensions, "
        r"got a 1-D tensor of shape \(4,\)",
    ),
    "general scoring 1-D keys": (
        lambda: al.general_scores(Q, torch.randn(4), torch.randn(4, 4)),
        ValueError,
        r"keys must be a tensor of shape \(\.\.\., num_keys, d_k\) with at least 2 dimensions",
    ),
    "dot product sizes": (
        lambda: al.dot_product_scores(Q, torch.randn(2, 5, 3)),
        ValueError,
        r"queries and keys must have the same last dimension \(d\) for a dot product, got 4 and 3",
    ),
    "query vector size": (
        lambda: al.attn_scores_for_query(X[0], torch.randn(4)),
        ValueError,
        r"query must have size 3",
    ),
    # more tokens than context_length
    "causal too long": (
        lambda: al.CausalAttention(3, 4, 3, 0.0)(X),
        ValueError,
        r"the input has 4 tokens, more than context_length=3",
    ),
    "mha too long": (lambda: al.MultiHeadAttention(3, 4, 2, 0.0, 2)(X), ValueError, r"more than context_length=2"),
    # valid_lens
    "valid_lens shape": (
        lambda: al.DotProductAttention(0.0)(Q, K, V, torch.tensor([1, 2, 3])),
        ValueError,
        r"valid_lens must have shape \(batch,\) = \(2,\) or \(batch, num_queries\) = \(2, 3\), got \(3,\)",
    ),
    "valid_lens per-query shape": (
        lambda: al.AdditiveAttention(4, 4, 2, 0.0)(Q, K, V, torch.ones(2, 4, dtype=torch.long)),
        ValueError,
        r"valid_lens must have shape",
    ),
    "valid_lens list": (
        lambda: al.DotProductAttention(0.0)(Q, K, V, [1, 2]),  # type: ignore[arg-type]
        TypeError,
        r"valid_lens must be a torch.Tensor, got list",
    ),
    "valid_lens negative": (
        lambda: al.DotProductAttention(0.0)(Q, K, V, torch.tensor([-1, 2])),
        ValueError,
        r"valid_lens must lie in \[0, 5\] \(the number of keys\), got \[-1, 2\]",
    ),
    "valid_lens too long": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 2, 4, 2, 0.0)(Q, K, V, torch.tensor([6, 2])),
        ValueError,
        r"valid_lens must lie in \[0, 5\]",
    ),
    "valid_lens general shape": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 2, 4, 2, 0.0)(Q, K, V, torch.tensor([1, 2, 3])),
        ValueError,
        r"valid_lens must have shape \(batch,\) = \(2,\)",
    ),
    "valid_lens fractional": (lambda: al.padding_mask(torch.tensor([1.5, 2.0]), 3), ValueError, r"whole numbers"),
    "valid_lens bool": (lambda: al.padding_mask(torch.tensor([True, False]), 3), TypeError, r"integer lengths"),
    "padding_mask valid_lens list": (
        lambda: al.padding_mask([1, 2], 3),
        TypeError,
        r"valid_lens must be a torch.Tensor, got list",
    ),  # type: ignore[arg-type]
    "valid_lens 3-D": (
        lambda: al.padding_mask(torch.ones(1, 1, 1), 3),
        ValueError,
        r"valid_lens must be a tensor of shape \(batch,\) or \(batch, num_queries\)",
    ),
    # dropout outside [0, 1)
    "dropout 1.0": (
        lambda: al.CausalAttention(3, 4, 4, 1.0),
        ValueError,
        r"dropout must be a probability in \[0, 1\), got 1.0",
    ),
    "dropout negative": (lambda: al.MultiHeadAttention(3, 4, 4, -0.1, 2), ValueError, r"got -0.1"),
    "dropout string": (
        lambda: al.DotProductAttention("0.1"),
        TypeError,
        r"dropout must be a probability in \[0, 1\), got '0.1'",
    ),  # type: ignore[arg-type]
    "dropout wrapper": (
        lambda: al.MultiHeadAttentionWrapper(3, 4, 4, 1.5, 2),
        ValueError,
        r"dropout must be a probability",
    ),
    "dropout additive": (lambda: al.AdditiveAttention(3, 4, 4, 2), ValueError, r"dropout must be a probability"),
    # non-floating input
    "mha int input": (
        lambda: al.MultiHeadAttention(3, 4, 4, 0.0, 2)(torch.ones(2, 4, 3, dtype=torch.long)),
        TypeError,
        r"x must be a floating-point tensor .* got dtype torch.int64; "
        r"token ids must go through an embedding layer first",
    ),
    "v1 list input": (
        lambda: al.SelfAttentionV1(3, 2)([[1.0, 2.0, 3.0]]),
        TypeError,
        r"x must be a torch.Tensor, got list",
    ),
    "int keys": (
        lambda: al.DotProductAttention(0.0)(Q, K.long(), V),
        TypeError,
        r"keys must be a floating-point tensor",
    ),
    "scoring int": (
        lambda: al.scaled_dot_product_scores(Q.long(), K),
        TypeError,
        r"queries must be a floating-point tensor",
    ),
    # masks of the wrong shape or dtype
    "kpm shape": (
        lambda: al.MultiHeadAttention(3, 4, 4, 0.0, 2)(X, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool)),
        ValueError,
        r"key_padding_mask must have shape \(2, 4\), got \(2, 5\)",
    ),
    "kpm broadcastable but not exact": (
        lambda: al.MultiHeadAttention(3, 4, 4, 0.0, 2)(X, key_padding_mask=torch.zeros(4, dtype=torch.bool)),
        ValueError,
        r"key_padding_mask must have shape \(2, 4\)",
    ),
    "kpm float": (
        lambda: al.MultiHeadAttention(3, 4, 4, 0.0, 2)(X, key_padding_mask=torch.zeros(2, 4)),
        TypeError,
        r"key_padding_mask must be a boolean tensor \(True = masked out\), got dtype torch.float32",
    ),
    "masked_softmax shape": (
        lambda: al.masked_softmax(torch.randn(2, 4), torch.zeros(3, dtype=torch.bool)),
        ValueError,
        r"mask of shape \(3,\) does not broadcast to the attention scores' shape \(2, 4\)",
    ),
    "masked_softmax grows shape": (
        lambda: al.masked_softmax(torch.randn(2, 4), torch.zeros(3, 2, 4, dtype=torch.bool)),
        ValueError,
        r"does not broadcast",
    ),
    "causal_mask rectangular without align": (
        lambda: al.causal_mask(1, 5),
        ValueError,
        r"align is required when num_queries \(1\) and num_keys \(5\) differ: align='lower_right' if",
    ),
    "causal_mask unknown align": (
        lambda: al.causal_mask(2, 5, align="bottom_right"),
        ValueError,
        r"align must be 'lower_right' or 'upper_left', got 'bottom_right'",
    ),
    "refill_causal_mask without a mask": (
        lambda: al.refill_causal_mask(torch.nn.Module()),
        TypeError,
        r"module.mask must be a torch.Tensor \(the module's causal mask buffer\), got NoneType",
    ),
    "to_sdpa_mask not tensor": (
        lambda: al.to_sdpa_mask([[True]]),  # type: ignore[arg-type]
        TypeError,
        r"mask must be a torch.Tensor, got list",
    ),
    "to_sdpa_mask float": (
        lambda: al.to_sdpa_mask(torch.zeros(2, 2)),
        TypeError,
        r"mask must be a boolean tensor \(True = masked out\), got dtype torch.float32",
    ),
    "masked_softmax not tensor": (
        lambda: al.masked_softmax(torch.randn(2, 4), [[True]]),
        TypeError,
        r"mask must be a torch.Tensor",
    ),  # type: ignore[arg-type]
    "transpose_output heads": (
        lambda: al.transpose_output(torch.randn(5, 2, 3), 2),
        ValueError,
        r"multiple of num_heads",
    ),
    "gqa num_heads % num_kv_groups": (
        lambda: al.GroupedQueryAttention(3, 12, 0.0, num_heads=4, num_kv_groups=3),
        ValueError,
        r"num_heads must be divisible by num_kv_groups, got num_heads=4 and num_kv_groups=3",
    ),
    "gqa zero groups": (
        lambda: al.GroupedQueryAttention(3, 12, 0.0, num_heads=4, num_kv_groups=0),
        ValueError,
        r"num_kv_groups must be a positive integer, got 0",
    ),
    "gqa d_out % num_heads": (
        lambda: al.GroupedQueryAttention(3, 10, 0.0, num_heads=4, num_kv_groups=2),
        ValueError,
        r"d_out must be divisible by num_heads, got d_out=10 and num_heads=4",
    ),
    "gqa 2-D input": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, 1)(X[0]),
        ValueError,
        r"x must be a 3-D tensor of shape \(batch, num_tokens, d_in\)",
    ),
    "mha cache past context_length": (
        lambda: _fill_cache(al.MultiHeadAttention(3, 4, 6, 0.0, 2), 4)(X[:, :3], use_cache=True),
        ValueError,
        r"the KV cache holds 4 tokens and x adds 3: 7 is more than context_length=6; call reset_cache\(\)",
    ),
    "mha cache batch changes": (
        lambda: _fill_cache(al.MultiHeadAttention(3, 4, 6, 0.0, 2), 2)(X[:1, :1], use_cache=True),
        ValueError,
        r"x has batch size 1, but the KV cache holds 2 sequences; .* call reset_cache\(\)",
    ),
    "gqa cache batch changes": (
        lambda: _fill_cache(al.GroupedQueryAttention(3, 4, 0.0, 2, 1), 2)(X[:1, :1], use_cache=True),
        ValueError,
        r"x has batch size 1, but the KV cache holds 2 sequences",
    ),
    "mha cache with padding": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(
            X, key_padding_mask=torch.zeros(2, 4, dtype=torch.bool), use_cache=True
        ),
        ValueError,
        r"key_padding_mask cannot be combined with use_cache=True",
    ),
}


def _fill_cache(module: torch.nn.Module, num_tokens: int) -> torch.nn.Module:
    """``module`` with the first ``num_tokens`` tokens of both sequences of ``X`` in its cache."""
    module(X[:, :num_tokens], use_cache=True)
    return module


def test_a_module_under_autocast_takes_an_input_of_another_dtype() -> None:
    """Autocast converts inside the layers, so the dtype check stands aside."""
    module = al.MultiHeadAttention(3, 4, 4, 0.0, 2).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert module(X).shape == (2, 4, 4)


@pytest.mark.parametrize(("call", "error", "message"), BAD.values(), ids=BAD.keys())
def test_bad_input_raises_a_clear_error(call: Callable[[], object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_checks_survive_python_dash_o() -> None:
    """The checks are `if ... raise`, not `assert`, so `python -O` keeps them."""
    code = (
        "import attention_lib as al\n"
        "try:\n"
        "    al.MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)\n"
        "except ValueError as e:\n"
        "    print('raised:', e)\n"
    )
    result = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True)
    assert "raised: d_out must be divisible by num_heads" in result.stdout
