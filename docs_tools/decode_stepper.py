"""The numbers of the decode stepper (docs/assets/javascripts/decode.js), exported from ``attention_lib``.

    python3 dev.py figures           # rewrites docs_tools/data/decode_stepper.json with the figures
    python3 dev.py figures --check   # exit 1 if it is out of date

The KV-cache page's module and text (``manual_seed(123)``, ``MultiHeadAttention(d_in=8, d_out=8,
context_length=16, dropout=0.0, num_heads=2)``, then ``x = torch.randn(1, 10, 8)``), generated the page's way:
a prefill of the 4 prompt tokens with ``use_cache=True``, then one token a step. For every step: the cache's
shape after it, and each new query's attention weights and output twice, as the module computes them (the
causal mask aligned bottom-right) and as ``F.scaled_dot_product_attention(..., is_causal=True)`` would over
the same cached keys and values (aligned top-left). decode.js computes nothing: it shows these numbers, and
tests/site/test_decode_stepper.py computes them again, independently, and compares what the browser shows.
"""

from __future__ import annotations

import json
from typing import Any

import torch
import torch.nn.functional as F

import attention_lib as al
from docs_tools import generated
from docs_tools.project import ROOT

DATA = ROOT / "docs_tools" / "data" / "decode_stepper.json"
PROMPT_LEN = 4
#: The JSON's numbers: float32 results, to 6 decimals, three more than the piece shows.
DIGITS = 6


#: A tensor's numbers as nested lists (a 0-d tensor: the number itself).
Nested = Any


def _rounded(tensor: torch.Tensor) -> Nested:
    return [_rounded(row) for row in tensor] if tensor.dim() else round(float(tensor), DIGITS)


def _weights(attn_weights: torch.Tensor, hidden: torch.Tensor) -> Nested:
    # (num_heads, num_new, num_keys), None where the mask hides the key: its weight is exactly 0, and the piece
    # marks it rather than shows it.
    rows = _rounded(attn_weights)
    return [[[None if hidden[i, j] else w for j, w in enumerate(row)] for i, row in enumerate(head)] for head in rows]


def kv_cache() -> dict[str, object]:
    """The KV-cache page's generation, step by step: prefill, then a token a step."""
    torch.manual_seed(123)
    mha = al.MultiHeadAttention(d_in=8, d_out=8, context_length=16, dropout=0.0, num_heads=2)
    mha.eval()
    x = torch.randn(1, 10, 8)  # (batch, num_tokens, d_in): 4 prompt + 6 new
    pieces = [(0, PROMPT_LEN)] + [(n, n + 1) for n in range(PROMPT_LEN, x.shape[1])]
    steps = []
    mha.reset_cache()
    with torch.no_grad():
        full = mha(x)[0]  # one forward over the whole text, without the cache
        for start, stop in pieces:
            piece = x[:, start:stop]
            num_new, num_keys = stop - start, stop
            # need_weights takes the explicit path, which returns the weights; the output is the module's
            # default path (SDPA), as the page generates. Same cache: the weights come first, then it is rewound.
            cache_k, cache_v = mha.cache_k, mha.cache_v
            _, attn_weights = mha(piece, need_weights=True, use_cache=True)
            mha.cache_k, mha.cache_v = cache_k, cache_v
            output = mha(piece, use_cache=True)[0]
            if not torch.allclose(output, full[start:stop], atol=1e-6):
                raise AssertionError(f"tokens {start}..{stop - 1}: the cached step differs from the full forward")
            # The same queries against the same cached keys and values, with the mask aligned top-left.
            queries = al.split_heads(mha.W_query(piece), mha.num_heads)
            keys, values = mha.cache_k, mha.cache_v  # (1, num_heads, num_keys, head_dim)
            if keys is None or values is None:
                raise AssertionError("the step above leaves the cache empty")
            top_left = al.causal_mask(num_new, num_keys, align="upper_left")
            right = al.causal_mask(num_new, num_keys, align="lower_right")
            wrong_weights = al.masked_softmax(al.scaled_dot_product_scores(queries, keys), top_left)
            wrong = mha.out_proj(al.merge_heads(wrong_weights @ values))[0]
            sdpa = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
            if not torch.allclose(wrong, mha.out_proj(al.merge_heads(sdpa))[0], atol=1e-6):
                raise AssertionError(f"tokens {start}..{stop - 1}: the top-left mask is not what is_causal=True does")
            steps.append(
                {
                    "tokens": list(range(start, stop)),
                    "cache_shape": list(keys.shape),
                    "weights": _weights(attn_weights[0], right),
                    "output": _rounded(output),
                    "wrong_weights": _weights(wrong_weights[0], top_left),
                    "wrong_output": _rounded(wrong),
                }
            )
    return {
        "prompt_len": PROMPT_LEN,
        "num_tokens": x.shape[1],
        "num_heads": mha.num_heads,
        "head_dim": mha.head_dim,
        "steps": steps,
    }


def decode_stepper_json() -> str:
    return json.dumps({"kv-cache": kv_cache()}, separators=(",", ":")) + "\n"


def outputs() -> generated.Outputs:
    return {DATA: decode_stepper_json}
