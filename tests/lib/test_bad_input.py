"""Every bad input raises a clear exception naming the argument and what was expected.

Each row of ``BAD`` gives the whole message, compared exactly: a message that names the wrong argument or
dimension, or prints one number in place of another, fails. So the inputs make every number that a message
prints differ from the others (batch sizes, token counts, sizes, the expected against the actual value).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from types import SimpleNamespace

import pytest
import torch

import attention_lib as al

X = torch.randn(2, 4, 3)  # (batch, num_tokens, d_in)
Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
K_6 = torch.randn(2, 5, 6)  # keys of another size than the queries'
INPUTS = torch.randn(4, 3)  # (num_tokens, d_in): weight-free attention

BAD: dict[str, tuple[Callable[[], object], type[Exception], str]] = {
    # a size of the wrong type is a TypeError, a size of the right type but out of range a ValueError;
    # every size each constructor or function takes
    "v1 float d_in": (
        lambda: al.SelfAttentionV1(3.0, 2),  # type: ignore[arg-type]
        TypeError,
        "d_in must be a positive integer, got 3.0",
    ),
    "v1 bool d_in": (lambda: al.SelfAttentionV1(True, 2), TypeError, "d_in must be a positive integer, got True"),
    "v1 string d_in": (
        lambda: al.SelfAttentionV1("3", 2),  # type: ignore[arg-type]
        TypeError,
        "d_in must be a positive integer, got '3'",
    ),
    "v1 zero d_out": (lambda: al.SelfAttentionV1(3, 0), ValueError, "d_out must be a positive integer, got 0"),
    "v1 zero d_out_v": (lambda: al.SelfAttentionV1(3, 2, 0), ValueError, "d_out_v must be a positive integer, got 0"),
    "v2 zero d_in": (lambda: al.SelfAttentionV2(0, 2), ValueError, "d_in must be a positive integer, got 0"),
    "v2 negative d_out": (lambda: al.SelfAttentionV2(3, -2), ValueError, "d_out must be a positive integer, got -2"),
    "cross zero d_in": (lambda: al.CrossAttention(0, 2, 5), ValueError, "d_in must be a positive integer, got 0"),
    "cross zero d_out_kq": (
        lambda: al.CrossAttention(3, 0, 5),
        ValueError,
        "d_out_kq must be a positive integer, got 0",
    ),
    "cross zero d_out_v": (lambda: al.CrossAttention(3, 2, 0), ValueError, "d_out_v must be a positive integer, got 0"),
    "causal zero d_in": (
        lambda: al.CausalAttention(0, 4, 6, 0.0),
        ValueError,
        "d_in must be a positive integer, got 0",
    ),
    "causal zero d_out": (
        lambda: al.CausalAttention(3, 0, 6, 0.0),
        ValueError,
        "d_out must be a positive integer, got 0",
    ),
    "causal zero context_length": (
        lambda: al.CausalAttention(3, 4, 0, 0.0),
        ValueError,
        "context_length must be a positive integer, got 0",
    ),
    "wrapper zero heads": (
        lambda: al.MultiHeadAttentionWrapper(3, 4, 6, 0.0, 0),
        ValueError,
        "num_heads must be a positive integer, got 0",
    ),
    "wrapper zero d_in": (
        lambda: al.MultiHeadAttentionWrapper(0, 4, 6, 0.0, 2),
        ValueError,
        "d_in must be a positive integer, got 0",
    ),
    "mha zero d_in": (
        lambda: al.MultiHeadAttention(0, 4, 6, 0.0, 2),
        ValueError,
        "d_in must be a positive integer, got 0",
    ),
    "mha zero d_out": (
        lambda: al.MultiHeadAttention(3, 0, 6, 0.0, 2),
        ValueError,
        "d_out must be a positive integer, got 0",
    ),
    "mha zero heads": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, num_heads=0),
        ValueError,
        "num_heads must be a positive integer, got 0",
    ),
    "mha zero context_length": (
        lambda: al.MultiHeadAttention(3, 4, 0, 0.0, 2),
        ValueError,
        "context_length must be a positive integer, got 0",
    ),
    "gqa zero d_in": (
        lambda: al.GroupedQueryAttention(0, 4, 0.0, 2, 1),
        ValueError,
        "d_in must be a positive integer, got 0",
    ),
    "gqa zero d_out": (
        lambda: al.GroupedQueryAttention(3, 0, 0.0, 2, 1),
        ValueError,
        "d_out must be a positive integer, got 0",
    ),
    "gqa zero heads": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 0, 1),
        ValueError,
        "num_heads must be a positive integer, got 0",
    ),
    "gqa zero groups": (
        lambda: al.GroupedQueryAttention(3, 12, 0.0, num_heads=4, num_kv_groups=0),
        ValueError,
        "num_kv_groups must be a positive integer, got 0",
    ),
    "gqa with the Llama signature's dtype": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, torch.bfloat16),  # type: ignore[arg-type]
        TypeError,
        "num_kv_groups must be a positive integer, got torch.bfloat16",
    ),
    "additive zero key_size": (
        lambda: al.AdditiveAttention(0, 4, 7, 0.0),
        ValueError,
        "key_size must be a positive integer, got 0",
    ),
    "additive zero query_size": (
        lambda: al.AdditiveAttention(4, 0, 7, 0.0),
        ValueError,
        "query_size must be a positive integer, got 0",
    ),
    "additive zero num_hiddens": (
        lambda: al.AdditiveAttention(4, 4, 0, 0.0),
        ValueError,
        "num_hiddens must be a positive integer, got 0",
    ),
    "general mha zero key_size": (
        lambda: al.GeneralMultiHeadAttention(0, 4, 6, 8, 2, 0.0),
        ValueError,
        "key_size must be a positive integer, got 0",
    ),
    "general mha zero query_size": (
        lambda: al.GeneralMultiHeadAttention(4, 0, 6, 8, 2, 0.0),
        ValueError,
        "query_size must be a positive integer, got 0",
    ),
    "general mha zero value_size": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 0, 8, 2, 0.0),
        ValueError,
        "value_size must be a positive integer, got 0",
    ),
    "general mha zero num_hiddens": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 0, 2, 0.0),
        ValueError,
        "num_hiddens must be a positive integer, got 0",
    ),
    "general mha zero heads": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 8, 0, 0.0),
        ValueError,
        "num_heads must be a positive integer, got 0",
    ),
    "previous tokens zero vocab_size": (
        lambda: al.PreviousTokens(vocab_size=0),
        ValueError,
        "vocab_size must be a positive integer, got 0",
    ),
    "previous tokens zero context_length": (
        lambda: al.PreviousTokens(context_length=0),
        ValueError,
        "context_length must be a positive integer, got 0",
    ),
    "train_previous_tokens zero steps": (
        lambda: al.train_previous_tokens(al.PreviousTokens(), steps=0),
        ValueError,
        "steps must be a positive integer, got 0",
    ),
    "static cache zero batch": (
        lambda: al.StaticKVCache(0, 3, 6, 5),
        ValueError,
        "batch must be a positive integer, got 0",
    ),
    "static cache zero num_kv_heads": (
        lambda: al.StaticKVCache(2, 0, 6, 5),
        ValueError,
        "num_kv_heads must be a positive integer, got 0",
    ),
    "static cache zero max_tokens": (
        lambda: al.StaticKVCache(2, 3, 0, 5),
        ValueError,
        "max_tokens must be a positive integer, got 0",
    ),
    "static cache zero head_dim": (
        lambda: al.StaticKVCache(2, 3, 6, 0),
        ValueError,
        "head_dim must be a positive integer, got 0",
    ),
    "split_heads zero heads": (
        lambda: al.split_heads(X, 0),
        ValueError,
        "num_heads must be a positive integer, got 0",
    ),
    "transpose_qkv zero heads": (
        lambda: al.transpose_qkv(X, 0),
        ValueError,
        "num_heads must be a positive integer, got 0",
    ),
    "transpose_output zero heads": (
        lambda: al.transpose_output(X, 0),
        ValueError,
        "num_heads must be a positive integer, got 0",
    ),
    "causal_mask zero num_queries": (
        lambda: al.causal_mask(0),
        ValueError,
        "num_queries must be a positive integer, got 0",
    ),
    "causal_mask zero num_keys": (
        lambda: al.causal_mask(3, 0),
        ValueError,
        "num_keys must be a positive integer, got 0",
    ),
    "padding_mask zero num_keys": (
        lambda: al.padding_mask(torch.tensor([1, 2]), 0),
        ValueError,
        "num_keys must be a positive integer, got 0",
    ),
    # a size the heads do not split evenly
    "mha d_out % num_heads": (
        lambda: al.MultiHeadAttention(3, 5, 4, 0.0, num_heads=2),
        ValueError,
        "d_out must be divisible by num_heads, got d_out=5 and num_heads=2 (d_out / num_heads = 2.5)",
    ),
    "gqa d_out % num_heads": (
        lambda: al.GroupedQueryAttention(3, 10, 0.0, num_heads=4, num_kv_groups=2),
        ValueError,
        "d_out must be divisible by num_heads, got d_out=10 and num_heads=4 (d_out / num_heads = 2.5)",
    ),
    "gqa num_heads % num_kv_groups": (
        lambda: al.GroupedQueryAttention(3, 12, 0.0, num_heads=4, num_kv_groups=3),
        ValueError,
        "num_heads must be divisible by num_kv_groups, got num_heads=4 and num_kv_groups=3: "
        "every key/value head serves the same number of query heads",
    ),
    "general mha num_hiddens % num_heads": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 10, 3, 0.0),
        ValueError,
        "num_hiddens must be divisible by num_heads, got num_hiddens=10 and num_heads=3 "
        "(num_hiddens / num_heads = 3.33333)",
    ),
    "split_heads d_out % num_heads": (
        lambda: al.split_heads(torch.randn(4, 3, 5), 2),
        ValueError,
        "d_out must be divisible by num_heads, got d_out=5 and num_heads=2 (d_out / num_heads = 2.5)",
    ),
    "transpose_qkv num_hiddens % num_heads": (
        lambda: al.transpose_qkv(torch.randn(4, 3, 5), 2),
        ValueError,
        "num_hiddens must be divisible by num_heads, got num_hiddens=5 and num_heads=2 (num_hiddens / num_heads = 2.5)",
    ),
    "transpose_output first dim % num_heads": (
        lambda: al.transpose_output(torch.randn(5, 4, 3), 2),
        ValueError,
        "the first dimension of x (5) must be a multiple of num_heads (2)",
    ),
    # dropout outside [0, 1), or not a number; every module that takes one
    "causal dropout 1.0": (
        lambda: al.CausalAttention(3, 4, 4, 1.0),
        ValueError,
        "dropout must be a probability in [0, 1), got 1.0",
    ),
    "mha dropout negative": (
        lambda: al.MultiHeadAttention(3, 4, 4, -0.1, 2),
        ValueError,
        "dropout must be a probability in [0, 1), got -0.1",
    ),
    "wrapper dropout 1.5": (
        lambda: al.MultiHeadAttentionWrapper(3, 4, 4, 1.5, 2),
        ValueError,
        "dropout must be a probability in [0, 1), got 1.5",
    ),
    "gqa dropout 1": (
        lambda: al.GroupedQueryAttention(3, 4, 1, 2, 1),
        ValueError,
        "dropout must be a probability in [0, 1), got 1",
    ),
    "additive dropout 2": (
        lambda: al.AdditiveAttention(3, 4, 4, 2),
        ValueError,
        "dropout must be a probability in [0, 1), got 2",
    ),
    "dot product dropout string": (
        lambda: al.DotProductAttention("0.1"),  # type: ignore[arg-type]
        TypeError,
        "dropout must be a probability in [0, 1), got '0.1'",
    ),
    "dot product dropout bool": (
        lambda: al.DotProductAttention(False),
        TypeError,
        "dropout must be a probability in [0, 1), got False",
    ),
    "general mha dropout 1.0": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 8, 2, 1.0),
        ValueError,
        "dropout must be a probability in [0, 1), got 1.0",
    ),
    # a module's input: not a tensor, integer token ids, the wrong rank, the wrong last dimension, or a dtype or
    # device other than the module's weights'; every module's forward
    "v1 list input": (
        lambda: al.SelfAttentionV1(3, 2)([[1.0, 2.0, 3.0]]),
        TypeError,
        "x must be a torch.Tensor, got list",
    ),
    "v1 int input": (
        lambda: al.SelfAttentionV1(3, 2)(torch.ones(4, 3, dtype=torch.long)),
        TypeError,
        "x must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
    "v1 1-D input": (
        lambda: al.SelfAttentionV1(3, 2)(X[0, 0]),
        ValueError,
        "x must be a 2-D or 3-D tensor of shape (batch, num_tokens, d_in), got a 1-D tensor of shape (3,)",
    ),
    "v1 last dim": (
        lambda: al.SelfAttentionV1(5, 2)(X),
        ValueError,
        "x must have size 5 in its last dimension (d_in), got shape (2, 4, 3)",
    ),
    "v1 float64 input": (
        lambda: al.SelfAttentionV1(3, 2)(X.double()),
        TypeError,
        "x must have the dtype of the module's weights, torch.float32, got torch.float64: "
        "convert one to the other, x.to(torch.float32) or module.to(torch.float64)",
    ),
    "v1 meta input": (
        lambda: al.SelfAttentionV1(3, 2)(X.to("meta")),
        ValueError,
        "x must be on the device of the module's weights, cpu, got meta: "
        "move one to the other, x.to(module_device) or module.to(x.device)",
    ),
    "v2 list input": (lambda: al.SelfAttentionV2(3, 2)(X.tolist()), TypeError, "x must be a torch.Tensor, got list"),
    "v2 int input": (
        lambda: al.SelfAttentionV2(3, 2)(torch.ones(2, 4, 3, dtype=torch.int32)),
        TypeError,
        "x must be a floating-point tensor (e.g. torch.float32), got dtype torch.int32; "
        "token ids must go through an embedding layer first",
    ),
    "v2 4-D input": (
        lambda: al.SelfAttentionV2(3, 2)(torch.randn(5, 2, 4, 3)),
        ValueError,
        "x must be a 2-D or 3-D tensor of shape (batch, num_tokens, d_in), got a 4-D tensor of shape (5, 2, 4, 3)",
    ),
    "v2 last dim": (
        lambda: al.SelfAttentionV2(5, 2)(X),
        ValueError,
        "x must have size 5 in its last dimension (d_in), got shape (2, 4, 3)",
    ),
    "v2 float64 input": (
        lambda: al.SelfAttentionV2(3, 2)(X.double()),
        TypeError,
        "x must have the dtype of the module's weights, torch.float32, got torch.float64: "
        "convert one to the other, x.to(torch.float32) or module.to(torch.float64)",
    ),
    "v2 meta input": (
        lambda: al.SelfAttentionV2(3, 2)(X.to("meta")),
        ValueError,
        "x must be on the device of the module's weights, cpu, got meta: "
        "move one to the other, x.to(module_device) or module.to(x.device)",
    ),
    "cross x_1 list": (
        lambda: al.CrossAttention(3, 2, 5)(X.tolist(), X),
        TypeError,
        "x_1 must be a torch.Tensor, got list",
    ),
    "cross x_2 list": (
        lambda: al.CrossAttention(3, 2, 5)(X, X.tolist()),
        TypeError,
        "x_2 must be a torch.Tensor, got list",
    ),
    "cross int x_1": (
        lambda: al.CrossAttention(3, 2, 5)(X.long(), X),
        TypeError,
        "x_1 must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
    "cross int x_2": (
        lambda: al.CrossAttention(3, 2, 5)(X, X.long()),
        TypeError,
        "x_2 must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
    "cross 4-D x_1": (
        lambda: al.CrossAttention(3, 2, 5)(torch.randn(5, 2, 4, 3), X),
        ValueError,
        "x_1 must be a 2-D or 3-D tensor of shape (batch, num_tokens, d_in), got a 4-D tensor of shape (5, 2, 4, 3)",
    ),
    "cross 1-D x_2": (
        lambda: al.CrossAttention(3, 2, 5)(X, X[0, 0]),
        ValueError,
        "x_2 must be a 2-D or 3-D tensor of shape (batch, num_tokens, d_in), got a 1-D tensor of shape (3,)",
    ),
    "cross x_1 last dim": (
        lambda: al.CrossAttention(3, 2, 5)(torch.randn(2, 6, 7), X),
        ValueError,
        "x_1 must have size 3 in its last dimension (d_in), got shape (2, 6, 7)",
    ),
    "cross x_2 last dim": (
        lambda: al.CrossAttention(3, 2, 5)(X, torch.randn(2, 6, 7)),
        ValueError,
        "x_2 must have size 3 in its last dimension (d_in), got shape (2, 6, 7)",
    ),
    "cross float64 x_1": (
        lambda: al.CrossAttention(3, 2, 5)(X.double(), X),
        TypeError,
        "x_1 must have the dtype of the module's weights, torch.float32, got torch.float64: "
        "convert one to the other, x.to(torch.float32) or module.to(torch.float64)",
    ),
    "cross float64 x_2": (
        lambda: al.CrossAttention(3, 2, 5)(X, X.double()),
        TypeError,
        "x_2 must have the dtype of the module's weights, torch.float32, got torch.float64: "
        "convert one to the other, x.to(torch.float32) or module.to(torch.float64)",
    ),
    "cross meta x_1": (
        lambda: al.CrossAttention(3, 2, 5)(X.to("meta"), X),
        ValueError,
        "x_1 must be on the device of the module's weights, cpu, got meta: "
        "move one to the other, x.to(module_device) or module.to(x.device)",
    ),
    "cross meta x_2": (
        lambda: al.CrossAttention(3, 2, 5)(X, X.to("meta")),
        ValueError,
        "x_2 must be on the device of the module's weights, cpu, got meta: "
        "move one to the other, x.to(module_device) or module.to(x.device)",
    ),
    "cross batch mismatch": (
        lambda: al.CrossAttention(3, 2, 5)(X, torch.randn(5, 6, 3)),
        ValueError,
        "x_1 and x_2 must have the same batch dimensions, got shapes (2, 4, 3) and (5, 6, 3)",
    ),
    "cross unbatched x_1, batched x_2": (
        lambda: al.CrossAttention(3, 2, 5)(INPUTS, torch.randn(5, 6, 3)),
        ValueError,
        "x_1 and x_2 must have the same batch dimensions, got shapes (4, 3) and (5, 6, 3)",
    ),
    "causal list input": (
        lambda: al.CausalAttention(3, 4, 6, 0.0)(X.tolist()),
        TypeError,
        "x must be a torch.Tensor, got list",
    ),
    "causal int input": (
        lambda: al.CausalAttention(3, 4, 6, 0.0)(X.long()),
        TypeError,
        "x must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
    "causal 4-D input": (
        lambda: al.CausalAttention(3, 4, 6, 0.0)(torch.randn(5, 2, 4, 3)),
        ValueError,
        "x must be a 3-D tensor of shape (batch, num_tokens, d_in), got a 4-D tensor of shape (5, 2, 4, 3)",
    ),
    "causal last dim": (
        lambda: al.CausalAttention(5, 4, 6, 0.0)(X),
        ValueError,
        "x must have size 5 in its last dimension (d_in), got shape (2, 4, 3)",
    ),
    "causal float64 input": (
        lambda: al.CausalAttention(3, 4, 6, 0.0)(X.double()),
        TypeError,
        "x must have the dtype of the module's weights, torch.float32, got torch.float64: "
        "convert one to the other, x.to(torch.float32) or module.to(torch.float64)",
    ),
    "causal meta input": (
        lambda: al.CausalAttention(3, 4, 6, 0.0)(X.to("meta")),
        ValueError,
        "x must be on the device of the module's weights, cpu, got meta: "
        "move one to the other, x.to(module_device) or module.to(x.device)",
    ),
    "wrapper 2-D input": (
        lambda: al.MultiHeadAttentionWrapper(3, 4, 6, 0.0, 2)(X[0]),
        ValueError,
        "x must be a 3-D tensor of shape (batch, num_tokens, d_in), got a 2-D tensor of shape (4, 3)",
    ),
    "mha list input": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X.tolist()),  # type: ignore[call-overload]
        TypeError,
        "x must be a torch.Tensor, got list",
    ),
    "mha int input": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(torch.ones(2, 4, 3, dtype=torch.long)),
        TypeError,
        "x must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
    "mha 2-D input": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X[0]),
        ValueError,
        "x must be a 3-D tensor of shape (batch, num_tokens, d_in), got a 2-D tensor of shape (4, 3)",
    ),
    "mha last dim": (
        lambda: al.MultiHeadAttention(5, 4, 6, 0.0, 2)(X),
        ValueError,
        "x must have size 5 in its last dimension (d_in), got shape (2, 4, 3)",
    ),
    "mha float64 input": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X.double()),
        TypeError,
        "x must have the dtype of the module's weights, torch.float32, got torch.float64: "
        "convert one to the other, x.to(torch.float32) or module.to(torch.float64)",
    ),
    "mha meta input": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X.to("meta")),
        ValueError,
        "x must be on the device of the module's weights, cpu, got meta: "
        "move one to the other, x.to(module_device) or module.to(x.device)",
    ),
    "gqa list input": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, 1)(X.tolist()),
        TypeError,
        "x must be a torch.Tensor, got list",
    ),
    "gqa int input": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, 1)(X.long()),
        TypeError,
        "x must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
    "gqa 2-D input": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, 1)(X[0]),
        ValueError,
        "x must be a 3-D tensor of shape (batch, num_tokens, d_in), got a 2-D tensor of shape (4, 3)",
    ),
    "gqa last dim": (
        lambda: al.GroupedQueryAttention(5, 4, 0.0, 2, 1)(X),
        ValueError,
        "x must have size 5 in its last dimension (d_in), got shape (2, 4, 3)",
    ),
    "gqa bfloat16 module": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, 1).bfloat16()(X),
        TypeError,
        "x must have the dtype of the module's weights, torch.bfloat16, got torch.float32: "
        "convert one to the other, x.to(torch.bfloat16) or module.to(torch.float32)",
    ),
    "gqa meta input": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, 1)(X.to("meta")),
        ValueError,
        "x must be on the device of the module's weights, cpu, got meta: "
        "move one to the other, x.to(module_device) or module.to(x.device)",
    ),
    "previous tokens float token_ids": (
        lambda: al.PreviousTokens()(torch.zeros(2, 7)),
        TypeError,
        "token_ids must be an integer tensor (torch.int64 or torch.int32), got dtype torch.float32",
    ),
    "previous tokens 1-D token_ids": (
        lambda: al.PreviousTokens()(torch.zeros(7, dtype=torch.long)),
        ValueError,
        "token_ids must be a 2-D tensor of shape (batch, num_tokens), got shape (7,)",
    ),
    "previous_tokens_loss 2 tokens": (
        lambda: al.previous_tokens_loss(al.PreviousTokens(), torch.zeros(4, 2, dtype=torch.long)),
        ValueError,
        "token_ids must have at least 3 tokens (the first target is at position 2), got shape (4, 2)",
    ),
    # more tokens than context_length
    "causal too long": (
        lambda: al.CausalAttention(3, 4, 3, 0.0)(X),
        ValueError,
        "the input has 4 tokens, more than context_length=3; "
        "shorten the input or create the module with a larger context_length",
    ),
    "mha too long": (
        lambda: al.MultiHeadAttention(3, 4, 2, 0.0, 2)(X),
        ValueError,
        "the input has 4 tokens, more than context_length=2; "
        "shorten the input or create the module with a larger context_length",
    ),
    "previous tokens too long": (
        lambda: al.PreviousTokens(context_length=5)(torch.zeros(2, 7, dtype=torch.long)),
        ValueError,
        "the input has 7 tokens, more than context_length=5; "
        "shorten the input or create the module with a larger context_length",
    ),
    # queries, keys and values: each checked, and the three against each other; every module that takes them
    "dot product list queries": (
        lambda: al.DotProductAttention(0.0)(Q.tolist(), K, V),
        TypeError,
        "queries must be a torch.Tensor, got list",
    ),
    "dot product int keys": (
        lambda: al.DotProductAttention(0.0)(Q, K.long(), V),
        TypeError,
        "keys must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
    "dot product 2-D queries": (
        lambda: al.DotProductAttention(0.0)(Q[0], K, V),
        ValueError,
        "queries must be a 3-D tensor of shape (batch, num_queries, query_size), got a 2-D tensor of shape (3, 4)",
    ),
    "dot product batch mismatch": (
        lambda: al.DotProductAttention(0.0)(Q, torch.randn(6, 5, 4), torch.randn(7, 5, 6)),
        ValueError,
        "queries, keys and values must have the same batch size, got 2, 6 and 7",
    ),
    "dot product keys vs values positions": (
        lambda: al.DotProductAttention(0.0)(Q, K, torch.randn(2, 7, 6)),
        ValueError,
        "keys and values must have the same number of positions (one value per key), got 5 and 7",
    ),
    "dot product query size": (
        lambda: al.DotProductAttention(0.0)(torch.randn(2, 3, 7), K, V),
        ValueError,
        "queries and keys must have the same size for a dot product, got 7 and 4",
    ),
    "additive 2-D keys": (
        lambda: al.AdditiveAttention(4, 4, 7, 0.0)(Q, K[0], V),
        ValueError,
        "keys must be a 3-D tensor of shape (batch, num_keys, key_size), got a 2-D tensor of shape (5, 4)",
    ),
    "additive batch mismatch": (
        lambda: al.AdditiveAttention(4, 4, 7, 0.0)(torch.randn(7, 3, 4), torch.randn(6, 5, 4), V),
        ValueError,
        "queries, keys and values must have the same batch size, got 7, 6 and 2",
    ),
    "general mha 4-D values": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 8, 2, 0.0)(Q, K, V[None]),
        ValueError,
        "values must be a 3-D tensor of shape (batch, num_keys, value_size), got a 4-D tensor of shape (1, 2, 5, 6)",
    ),
    "general mha keys vs values positions": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 8, 2, 0.0)(Q, K, V[:, :4]),
        ValueError,
        "keys and values must have the same number of positions (one value per key), got 5 and 4",
    ),
    # valid_lens: not a tensor, the wrong shape, not integer lengths, out of [0, num_keys]
    "dot product valid_lens list": (
        lambda: al.DotProductAttention(0.0)(Q, K, V, [1, 2]),
        TypeError,
        "valid_lens must be a torch.Tensor, got list",
    ),
    "dot product valid_lens shape": (
        lambda: al.DotProductAttention(0.0)(Q, K, V, torch.tensor([1, 2, 3, 4, 5, 0, 1])),
        ValueError,
        "valid_lens must have shape (batch,) = (2,) or (batch, num_queries) = (2, 3), got (7,)",
    ),
    "dot product valid_lens negative": (
        lambda: al.DotProductAttention(0.0)(Q, K, V, torch.tensor([-1, 2])),
        ValueError,
        "valid_lens must lie in [0, 5] (the number of keys), got [-1, 2]",
    ),
    "additive valid_lens per-query shape": (
        lambda: al.AdditiveAttention(4, 4, 7, 0.0)(Q, K, V, torch.ones(2, 4, dtype=torch.long)),
        ValueError,
        "valid_lens must have shape (batch,) = (2,) or (batch, num_queries) = (2, 3), got (2, 4)",
    ),
    "additive valid_lens too long": (
        lambda: al.AdditiveAttention(4, 4, 7, 0.0)(Q, K, V, torch.tensor([[1, 6, 2], [0, 3, 4]])),
        ValueError,
        "valid_lens must lie in [0, 5] (the number of keys), got [[1, 6, 2], [0, 3, 4]]",
    ),
    "general mha valid_lens list": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 8, 2, 0.0)(Q, K, V, (1, 2)),
        TypeError,
        "valid_lens must be a torch.Tensor, got tuple",
    ),
    "general mha valid_lens shape": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 8, 2, 0.0)(Q, K, V, torch.tensor([1, 2, 3, 4, 5, 0, 1])),
        ValueError,
        "valid_lens must have shape (batch,) = (2,) or (batch, num_queries) = (2, 3), got (7,)",
    ),
    "general mha valid_lens too long": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 8, 2, 0.0)(Q, K, V, torch.tensor([6, 2])),
        ValueError,
        "valid_lens must lie in [0, 5] (the number of keys), got [6, 2]",
    ),
    "general mha valid_lens bool": (
        lambda: al.GeneralMultiHeadAttention(4, 4, 6, 8, 2, 0.0)(Q, K, V, torch.tensor([True, False])),
        TypeError,
        "valid_lens must hold integer lengths, got dtype torch.bool",
    ),
    "padding_mask valid_lens list": (
        lambda: al.padding_mask([1, 2], 3),  # type: ignore[arg-type]
        TypeError,
        "valid_lens must be a torch.Tensor, got list",
    ),
    "padding_mask valid_lens 3-D": (
        lambda: al.padding_mask(torch.ones(2, 3, 4, dtype=torch.long), 5),
        ValueError,
        "valid_lens must be a tensor of shape (batch,) or (batch, num_queries), got (2, 3, 4)",
    ),
    "padding_mask valid_lens bool": (
        lambda: al.padding_mask(torch.tensor([True, False]), 3),
        TypeError,
        "valid_lens must hold integer lengths, got dtype torch.bool",
    ),
    "padding_mask valid_lens complex": (
        lambda: al.padding_mask(torch.tensor([1 + 0j, 2 + 0j]), 3),
        TypeError,
        "valid_lens must hold integer lengths, got dtype torch.complex64",
    ),
    "padding_mask valid_lens fractional": (
        lambda: al.padding_mask(torch.tensor([1.5, 2.0]), 3),
        ValueError,
        "valid_lens must hold whole numbers, got [1.5, 2.0]",
    ),
    "padding_mask valid_lens too long": (
        lambda: al.padding_mask(torch.tensor([4, 1]), 3),
        ValueError,
        "valid_lens must lie in [0, 3] (the number of keys), got [4, 1]",
    ),
    "padding_mask per-query valid_lens too long": (
        lambda: al.padding_mask(torch.tensor([[1, 2, 6], [0, 1, 2]]), 4),
        ValueError,
        "valid_lens must lie in [0, 4] (the number of keys), got [[1, 2, 6], [0, 1, 2]]",
    ),
    # scoring functions: queries and keys of any leading dimensions, and weights of the right shape
    "dot product scores 1-D queries": (
        lambda: al.dot_product_scores(torch.randn(4), K),
        ValueError,
        "queries must be a tensor of shape (..., num_queries, d) with at least 2 dimensions, "
        "got a 1-D tensor of shape (4,)",
    ),
    "dot product scores 1-D keys": (
        lambda: al.dot_product_scores(Q, torch.randn(4)),
        ValueError,
        "keys must be a tensor of shape (..., num_keys, d) with at least 2 dimensions, got a 1-D tensor of shape (4,)",
    ),
    "dot product scores sizes": (
        lambda: al.dot_product_scores(Q, K_6),
        ValueError,
        "queries and keys must have the same last dimension (d) for a dot product, got 4 and 6",
    ),
    "scaled dot product scores int queries": (
        lambda: al.scaled_dot_product_scores(Q.long(), K),
        TypeError,
        "queries must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
    "general scores 1-D queries": (
        lambda: al.general_scores(torch.randn(4), K_6, torch.randn(4, 6)),
        ValueError,
        "queries must be a tensor of shape (..., num_queries, d_q) with at least 2 dimensions, "
        "got a 1-D tensor of shape (4,)",
    ),
    "general scores 1-D keys": (
        lambda: al.general_scores(Q, torch.randn(6), torch.randn(4, 6)),
        ValueError,
        "keys must be a tensor of shape (..., num_keys, d_k) with at least 2 dimensions, "
        "got a 1-D tensor of shape (6,)",
    ),
    "general scores weight shape": (
        lambda: al.general_scores(Q, K_6, torch.randn(6, 4)),
        ValueError,
        "W must have shape (d_q, d_k) = (4, 6), got (6, 4)",
    ),
    "general scores weight 1-D": (
        lambda: al.general_scores(Q, K_6, torch.randn(4)),
        ValueError,
        "W must be a 2-D tensor of shape (d_q, d_k), got a 1-D tensor of shape (4,)",
    ),
    "general scores weight list": (
        lambda: al.general_scores(Q, K_6, [[1.0] * 6] * 4),  # type: ignore[arg-type]
        TypeError,
        "W must be a torch.Tensor, got list",
    ),
    "general scores integer weight": (
        lambda: al.general_scores(Q, K_6, torch.ones(4, 6, dtype=torch.long)),
        TypeError,
        "W must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
    "additive scores 1-D queries": (
        lambda: al.additive_scores(torch.randn(4), K_6, torch.randn(7, 4), torch.randn(7, 6), torch.randn(1, 7)),
        ValueError,
        "queries must be a tensor of shape (..., num_queries, query_size) with at least 2 dimensions, "
        "got a 1-D tensor of shape (4,)",
    ),
    "additive scores 1-D keys": (
        lambda: al.additive_scores(Q, torch.randn(6), torch.randn(7, 4), torch.randn(7, 6), torch.randn(1, 7)),
        ValueError,
        "keys must be a tensor of shape (..., num_keys, key_size) with at least 2 dimensions, "
        "got a 1-D tensor of shape (6,)",
    ),
    "additive scores W_q 1-D": (
        lambda: al.additive_scores(Q, K_6, torch.randn(7), torch.randn(7, 6), torch.randn(1, 7)),
        ValueError,
        "W_q must be a 2-D tensor of shape (num_hiddens, query_size), got a 1-D tensor of shape (7,)",
    ),
    "additive scores W_q shape": (
        lambda: al.additive_scores(Q, K_6, torch.randn(7, 5), torch.randn(7, 6), torch.randn(1, 7)),
        ValueError,
        "W_q must have shape (num_hiddens, query_size) = (7, 4), got (7, 5)",
    ),
    "additive scores W_k shape": (
        lambda: al.additive_scores(Q, K_6, torch.randn(7, 4), torch.randn(7, 4), torch.randn(1, 7)),
        ValueError,
        "W_k must have shape (num_hiddens, key_size) = (7, 6), got (7, 4)",
    ),
    "additive scores W_k 3-D": (
        lambda: al.additive_scores(Q, K_6, torch.randn(7, 4), torch.randn(1, 7, 6), torch.randn(1, 7)),
        ValueError,
        "W_k must be a 2-D tensor of shape (num_hiddens, key_size), got a 3-D tensor of shape (1, 7, 6)",
    ),
    "additive scores w_v shape": (
        lambda: al.additive_scores(Q, K_6, torch.randn(7, 4), torch.randn(7, 6), torch.randn(1, 5)),
        ValueError,
        "w_v must have shape (1, num_hiddens) = (1, 7), got (1, 5)",
    ),
    "additive scores w_v 1-D": (
        lambda: al.additive_scores(Q, K_6, torch.randn(7, 4), torch.randn(7, 6), torch.randn(7)),
        ValueError,
        "w_v must be a 2-D tensor of shape (1, num_hiddens), got a 1-D tensor of shape (7,)",
    ),
    "additive scores w_v missing": (
        lambda: al.additive_scores(Q, K_6, torch.randn(7, 4), torch.randn(7, 6), None),  # type: ignore[arg-type]
        TypeError,
        "w_v must be a torch.Tensor, got NoneType",
    ),
    # weight-free attention: inputs (num_tokens, d_in), one query (d_in,), weights over the tokens
    "attn_scores_loop 3-D inputs": (
        lambda: al.attn_scores_loop(X, INPUTS[0]),
        ValueError,
        "inputs must be a 2-D tensor of shape (num_tokens, d_in), got a 3-D tensor of shape (2, 4, 3)",
    ),
    "attn_scores_loop query size": (
        lambda: al.attn_scores_loop(INPUTS, torch.randn(5)),
        ValueError,
        "query must have size 3 in its last dimension (d_in), got shape (5,)",
    ),
    "attn_scores_loop 2-D query": (
        lambda: al.attn_scores_loop(INPUTS, torch.randn(2, 3)),
        ValueError,
        "query must be a 1-D tensor of shape (d_in), got a 2-D tensor of shape (2, 3)",
    ),
    "attn_scores_for_query 1-D inputs": (
        lambda: al.attn_scores_for_query(INPUTS[0], INPUTS[0]),
        ValueError,
        "inputs must be a 2-D tensor of shape (num_tokens, d_in), got a 1-D tensor of shape (3,)",
    ),
    "attn_scores_for_query query size": (
        lambda: al.attn_scores_for_query(INPUTS, torch.randn(5)),
        ValueError,
        "query must have size 3 in its last dimension (d_in), got shape (5,)",
    ),
    "attn_scores_for_query 2-D query": (
        lambda: al.attn_scores_for_query(INPUTS, torch.randn(2, 3)),
        ValueError,
        "query must be a 1-D tensor of shape (d_in), got a 2-D tensor of shape (2, 3)",
    ),
    "attn_scores_all_loop 3-D inputs": (
        lambda: al.attn_scores_all_loop(X),
        ValueError,
        "inputs must be a 2-D tensor of shape (num_tokens, d_in), got a 3-D tensor of shape (2, 4, 3)",
    ),
    "attn_scores_all 3-D inputs": (
        lambda: al.attn_scores_all(X),
        ValueError,
        "inputs must be a 2-D tensor of shape (num_tokens, d_in), got a 3-D tensor of shape (2, 4, 3)",
    ),
    "context_vector_loop 3-D inputs": (
        lambda: al.context_vector_loop(X, torch.rand(4)),
        ValueError,
        "inputs must be a 2-D tensor of shape (num_tokens, d_in), got a 3-D tensor of shape (2, 4, 3)",
    ),
    "context_vector_loop 2-D attn_weights": (
        lambda: al.context_vector_loop(INPUTS, torch.rand(4, 5)),
        ValueError,
        "attn_weights must be a 1-D tensor of shape (num_tokens), got a 2-D tensor of shape (4, 5)",
    ),
    "context_vector_loop attn_weights size": (
        lambda: al.context_vector_loop(INPUTS, torch.rand(5)),
        ValueError,
        "attn_weights must have size 4 in its last dimension (num_tokens), got shape (5,)",
    ),
    "context_vectors 3-D inputs": (
        lambda: al.context_vectors(X, torch.rand(2, 4)),
        ValueError,
        "inputs must be a 2-D tensor of shape (num_tokens, d_in), got a 3-D tensor of shape (2, 4, 3)",
    ),
    "context_vectors 1-D attn_weights": (
        lambda: al.context_vectors(INPUTS, torch.rand(4)),
        ValueError,
        "attn_weights must be a 2-D tensor of shape (num_queries, num_tokens), got a 1-D tensor of shape (4,)",
    ),
    "context_vectors attn_weights size": (
        lambda: al.context_vectors(INPUTS, torch.rand(2, 5)),
        ValueError,
        "attn_weights must have size 4 in its last dimension (num_tokens), got shape (2, 5)",
    ),
    # heads: the layout each function takes
    "split_heads 2-D": (
        lambda: al.split_heads(INPUTS, 2),
        ValueError,
        "x must be a 3-D tensor of shape (batch, num_tokens, d_out), got a 2-D tensor of shape (4, 3)",
    ),
    "merge_heads 3-D": (
        lambda: al.merge_heads(X),
        ValueError,
        "x must be a 4-D tensor of shape (batch, num_heads, num_tokens, head_dim), got a 3-D tensor of shape (2, 4, 3)",
    ),
    "transpose_qkv 2-D": (
        lambda: al.transpose_qkv(INPUTS, 2),
        ValueError,
        "x must be a 3-D tensor of shape (batch, num_tokens, num_hiddens), got a 2-D tensor of shape (4, 3)",
    ),
    "transpose_output 2-D": (
        lambda: al.transpose_output(INPUTS, 2),
        ValueError,
        "x must be a 3-D tensor of shape (batch * num_heads, num_tokens, head_dim), got a 2-D tensor of shape (4, 3)",
    ),
    # masks: not a tensor, not boolean, a shape that does not fit the scores
    "masked_softmax mask list": (
        lambda: al.masked_softmax(torch.randn(2, 4), [[True]]),  # type: ignore[arg-type]
        TypeError,
        "mask must be a torch.Tensor, got list",
    ),
    "masked_softmax float mask": (
        lambda: al.masked_softmax(torch.randn(2, 4), torch.zeros(2, 4)),
        TypeError,
        "mask must be a boolean tensor (True = masked out), got dtype torch.float32",
    ),
    "masked_softmax mask shape": (
        lambda: al.masked_softmax(torch.randn(2, 4), torch.zeros(3, dtype=torch.bool)),
        ValueError,
        "mask of shape (3,) does not broadcast to the attention scores' shape (2, 4)",
    ),
    "masked_softmax mask grows the shape": (
        lambda: al.masked_softmax(torch.randn(2, 4), torch.zeros(3, 2, 4, dtype=torch.bool)),
        ValueError,
        "mask of shape (3, 2, 4) does not broadcast to the attention scores' shape (2, 4)",
    ),
    "to_sdpa_mask list": (
        lambda: al.to_sdpa_mask([[True]]),  # type: ignore[arg-type]
        TypeError,
        "mask must be a torch.Tensor, got list",
    ),
    "to_sdpa_mask float": (
        lambda: al.to_sdpa_mask(torch.zeros(2, 2)),
        TypeError,
        "mask must be a boolean tensor (True = masked out), got dtype torch.float32",
    ),
    "causal_mask rectangular without align": (
        lambda: al.causal_mask(3, 5),
        ValueError,
        "align is required when num_queries (3) and num_keys (5) differ: align='lower_right' if the queries "
        "are the last positions (decoding with a KV cache), align='upper_left' if they are the first "
        "(what scaled_dot_product_attention's is_causal=True assumes)",
    ),
    "causal_mask unknown align": (
        lambda: al.causal_mask(2, 5, align="bottom_right"),
        ValueError,
        "align must be 'lower_right' or 'upper_left', got 'bottom_right'",
    ),
    "refill_causal_mask without a mask": (
        lambda: al.refill_causal_mask(torch.nn.Module()),
        TypeError,
        "module.mask must be a torch.Tensor (the module's causal mask buffer), got NoneType",
    ),
    "refill_causal_mask with a list for a mask": (
        lambda: al.refill_causal_mask(SimpleNamespace(mask=[[False, True], [False, False]])),  # type: ignore[arg-type]
        TypeError,
        "module.mask must be a torch.Tensor (the module's causal mask buffer), got list",
    ),
    # MultiHeadAttention's key_padding_mask, and the book's positional use_cache in its place
    "mha use_cache positional": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X, True),  # type: ignore[call-overload]
        TypeError,
        "key_padding_mask must be a boolean tensor or None, got True: use_cache is keyword-only, "
        "module(x, use_cache=True)",
    ),
    "kpm list": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X, [[False] * 4] * 2),  # type: ignore[call-overload]
        TypeError,
        "key_padding_mask must be a torch.Tensor, got list",
    ),
    "kpm float": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X, key_padding_mask=torch.zeros(2, 4)),
        TypeError,
        "key_padding_mask must be a boolean tensor (True = masked out), got dtype torch.float32",
    ),
    "kpm shape": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool)),
        ValueError,
        "key_padding_mask must have shape (2, 4), got (2, 5)",
    ),
    "kpm broadcastable but not exact": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X, key_padding_mask=torch.zeros(4, dtype=torch.bool)),
        ValueError,
        "key_padding_mask must have shape (2, 4), got (4,)",
    ),
    # the module's own KV cache (use_cache=True): what it cannot continue
    "mha cache with padding": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(
            X, key_padding_mask=torch.zeros(2, 4, dtype=torch.bool), use_cache=True
        ),
        ValueError,
        "key_padding_mask cannot be combined with use_cache=True: "
        "the cache would forget which of its tokens were padding",
    ),
    "mha cache past context_length": (
        lambda: _fill_cache(al.MultiHeadAttention(3, 4, 6, 0.0, 2), 4)(X[:, :3], use_cache=True),
        ValueError,
        "the KV cache holds 4 tokens and x adds 3: 7 is more than context_length=6; call reset_cache() "
        "(and start again from a shorter context), or create the module with a larger context_length",
    ),
    "mha cache batch changes": (
        lambda: _fill_cache(al.MultiHeadAttention(3, 4, 6, 0.0, 2), 3)(X[:1, :1], use_cache=True),
        ValueError,
        "x has batch size 1, but the KV cache holds 2 sequences; "
        "a cache continues the same sequences: call reset_cache() before starting new ones",
    ),
    "gqa cache batch changes": (
        lambda: _fill_cache(al.GroupedQueryAttention(3, 4, 0.0, 2, 1), 3)(X[:1, :1], use_cache=True),
        ValueError,
        "x has batch size 1, but the KV cache holds 2 sequences; "
        "a cache continues the same sequences: call reset_cache() before starting new ones",
    ),
    # a StaticKVCache (cache=): not one, one that another option contradicts, one that does not fit
    "mha cache not a StaticKVCache": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X, cache={}),  # type: ignore[call-overload]
        TypeError,
        "cache must be a StaticKVCache or None, got dict",
    ),
    "mha cache and use_cache": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(X, use_cache=True, cache=al.StaticKVCache(2, 2, 6, 2)),
        ValueError,
        "cache= and use_cache=True are two caches for the same tokens: pass one of them "
        "(cache= for a cache allocated once, use_cache=True for the module's own)",
    ),
    "mha cache with padding mask": (
        lambda: al.MultiHeadAttention(3, 4, 6, 0.0, 2)(
            X, key_padding_mask=torch.zeros(2, 4, dtype=torch.bool), cache=al.StaticKVCache(2, 2, 6, 2)
        ),
        ValueError,
        "key_padding_mask cannot be combined with cache=: the cache would forget which of its tokens were padding",
    ),
    "mha cache longer than context_length": (
        lambda: al.MultiHeadAttention(3, 4, 5, 0.0, 2)(X, cache=al.StaticKVCache(2, 2, 7, 2)),
        ValueError,
        "the cache has max_tokens=7, more than the module's context_length=5: allocate it with max_tokens <= 5",
    ),
    "gqa cache not a StaticKVCache": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, 1)(X, cache=[]),
        TypeError,
        "cache must be a StaticKVCache or None, got list",
    ),
    "gqa cache and use_cache": (
        lambda: al.GroupedQueryAttention(3, 4, 0.0, 2, 1)(X, True, cache=al.StaticKVCache(2, 1, 6, 2)),
        ValueError,
        "cache= and use_cache=True are two caches for the same tokens: pass one of them "
        "(cache= for a cache allocated once, use_cache=True for the module's own)",
    ),
    "static cache keys shape": (
        lambda: al.StaticKVCache(2, 3, 6, 5).update(torch.randn(2, 3, 1, 4), torch.randn(2, 3, 1, 5)),
        ValueError,
        "keys must have shape (batch=2, num_kv_heads=3, num_tokens, head_dim=5) to fit the cache, "
        "got (2, 3, 1, 4): a cache serves one layer and one batch",
    ),
    "static cache values shape": (
        lambda: al.StaticKVCache(2, 3, 6, 5).update(torch.randn(2, 3, 1, 5), torch.randn(4, 3, 1, 5)),
        ValueError,
        "values must have shape (batch=2, num_kv_heads=3, num_tokens, head_dim=5) to fit the cache, "
        "got (4, 3, 1, 5): a cache serves one layer and one batch",
    ),
    "static cache keys dtype": (
        lambda: al.StaticKVCache(2, 3, 6, 5).update(torch.randn(2, 3, 1, 5).double(), torch.randn(2, 3, 1, 5)),
        TypeError,
        "keys must have the cache's dtype, torch.float32, got torch.float64: create the cache with the layer's dtype",
    ),
    "static cache values dtype": (
        lambda: al.StaticKVCache(2, 3, 6, 5, dtype=torch.float64).update(
            torch.randn(2, 3, 1, 5).double(), torch.randn(2, 3, 1, 5).half()
        ),
        TypeError,
        "values must have the cache's dtype, torch.float64, got torch.float16: create the cache with the layer's dtype",
    ),
    "static cache keys device": (
        lambda: al.StaticKVCache(2, 3, 6, 5).update(torch.randn(2, 3, 1, 5, device="meta"), torch.randn(2, 3, 1, 5)),
        ValueError,
        "keys must be on the cache's device, cpu, got meta: create the cache on the layer's device",
    ),
    "static cache values device": (
        lambda: al.StaticKVCache(2, 3, 6, 5).update(torch.randn(2, 3, 1, 5), torch.randn(2, 3, 1, 5, device="meta")),
        ValueError,
        "values must be on the cache's device, cpu, got meta: create the cache on the layer's device",
    ),
    "static cache full": (
        lambda: _fill_static_cache(al.StaticKVCache(2, 3, 4, 5), 2).update(
            torch.randn(2, 3, 3, 5), torch.randn(2, 3, 3, 5)
        ),
        ValueError,
        "the cache holds 2 tokens and 3 more do not fit in max_tokens=4: "
        "call reset() before a new sequence, or allocate a larger cache",
    ),
    "capture_decode_step eager cache": (
        lambda: al.capture_decode_step(al.MultiHeadAttention(3, 4, 6, 0.0, 2), al.StaticKVCache(2, 2, 6, 2), X[:, :1]),
        ValueError,
        "cache must have static_shapes=True: a graph replays the shapes "
        "and numbers it recorded, and an eager cache's are Python ints",
    ),
    # softmax in tiles; tile_steps is a generator, which checks its arguments at the first step
    "tile_steps zero tile_size": (
        lambda: next(al.tile_steps(Q, K, V, tile_size=0)),
        ValueError,
        "tile_size must be a positive integer, got 0",
    ),
    "tiled_attention float tile_size": (
        lambda: al.tiled_attention(Q, K, V, tile_size=2.0),  # type: ignore[arg-type]
        TypeError,
        "tile_size must be a positive integer, got 2.0",
    ),
    "tiled_attention keys and values of different lengths": (
        lambda: al.tiled_attention(Q, K, V[:, :4]),
        ValueError,
        "keys and values must have the same number of positions, got 5 and 4",
    ),
    "tiled_attention keys of another size": (
        lambda: al.tiled_attention(Q, K_6, V),
        ValueError,
        "keys must have size 4 in its last dimension (head_dim), got shape (2, 5, 6)",
    ),
    "tiled_attention no keys": (
        lambda: al.tiled_attention(Q, K[:, :0], V[:, :0]),
        ValueError,
        "keys must hold at least one position, got 0",
    ),
    "tiled_attention mask of the wrong shape": (
        lambda: al.tiled_attention(Q, K, V, torch.zeros(3, 4, dtype=torch.bool)),
        ValueError,
        "mask of shape (3, 4) does not broadcast to the attention scores' shape (2, 3, 5)",
    ),
    "tiled_attention float mask": (
        lambda: al.tiled_attention(Q, K, V, torch.zeros(3, 5)),
        TypeError,
        "mask must be a boolean tensor (True = masked out), got dtype torch.float32",
    ),
    "online_softmax zero tile_size": (
        lambda: al.online_softmax(torch.randn(3, 5), 0),
        ValueError,
        "tile_size must be a positive integer, got 0",
    ),
    "online_softmax integer scores": (
        lambda: al.online_softmax(torch.ones(3, 5, dtype=torch.long), 2),
        TypeError,
        "attn_scores must be a floating-point tensor (e.g. torch.float32), got dtype torch.int64; "
        "token ids must go through an embedding layer first",
    ),
}


def _fill_cache(module: torch.nn.Module, num_tokens: int) -> torch.nn.Module:
    """``module`` with the first ``num_tokens`` tokens of both sequences of ``X`` in its cache."""
    module(X[:, :num_tokens], use_cache=True)
    return module


def _fill_static_cache(cache: al.StaticKVCache, num_tokens: int) -> al.StaticKVCache:
    """``cache`` with ``num_tokens`` tokens' keys and values written into it."""
    b, h, _, head_dim = cache.keys.shape
    cache.update(torch.randn(b, h, num_tokens, head_dim), torch.randn(b, h, num_tokens, head_dim))
    return cache


def test_a_module_under_autocast_takes_an_input_of_another_dtype() -> None:
    """Autocast converts inside the layers, so the dtype check stands aside."""
    module = al.MultiHeadAttention(3, 4, 4, 0.0, 2).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert module(X).shape == (2, 4, 4)


@pytest.mark.parametrize(("call", "error", "message"), BAD.values(), ids=BAD.keys())
def test_bad_input_raises_a_clear_error(call: Callable[[], object], error: type[Exception], message: str) -> None:
    """The exception's type says which kind of mistake it is, and its message is exactly the expected one."""
    with pytest.raises(error) as excinfo:
        call()
    assert str(excinfo.value) == message


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
