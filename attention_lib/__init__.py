"""attention_lib: the small, tested reference implementation behind the attention-docs tutorials.

Boolean masks follow one convention throughout: True means "masked out" (see
[`attention_lib.masks`][attention_lib.masks]).
"""

from .additive import AdditiveAttention
from .causal import CausalAttention
from .cross import CrossAttention
from .data import (
    DESSERT_SENTENCE,
    JOURNEY_WORDS,
    dessert_embedding,
    dessert_token_ids,
    dessert_vocab,
    journey_inputs,
)
from .dot_product import DotProductAttention
from .general_multihead import GeneralMultiHeadAttention
from .grouped_query import GroupedQueryAttention
from .heads import merge_heads, split_heads, transpose_output, transpose_qkv
from .kv_cache import append_to_cache
from .masks import (
    causal_mask,
    masked_fill_value,
    masked_softmax,
    padding_mask,
    refill_causal_mask,
    to_sdpa_mask,
)
from .multihead import MultiHeadAttention, MultiHeadAttentionWrapper
from .previous_tokens import (
    PreviousTokens,
    previous_tokens_loss,
    train_previous_tokens,
)
from .scoring import (
    additive_scores,
    dot_product_scores,
    general_scores,
    scaled_dot_product_scores,
)
from .self_attention import SelfAttentionV1, SelfAttentionV2
from .static_cache import StaticKVCache, capture_decode_step
from .weight_free import (
    attn_scores_all,
    attn_scores_all_loop,
    attn_scores_for_query,
    attn_scores_loop,
    context_vector_loop,
    context_vectors,
    naive_softmax,
    normalize_by_sum,
)

__version__ = "0.4.0"

__all__ = [
    "DESSERT_SENTENCE",
    "JOURNEY_WORDS",
    "AdditiveAttention",
    "CausalAttention",
    "CrossAttention",
    "DotProductAttention",
    "GeneralMultiHeadAttention",
    "GroupedQueryAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "PreviousTokens",
    "SelfAttentionV1",
    "SelfAttentionV2",
    "StaticKVCache",
    "additive_scores",
    "append_to_cache",
    "attn_scores_all",
    "attn_scores_all_loop",
    "attn_scores_for_query",
    "attn_scores_loop",
    "capture_decode_step",
    "causal_mask",
    "context_vector_loop",
    "context_vectors",
    "dessert_embedding",
    "dessert_token_ids",
    "dessert_vocab",
    "dot_product_scores",
    "general_scores",
    "journey_inputs",
    "masked_fill_value",
    "masked_softmax",
    "merge_heads",
    "naive_softmax",
    "normalize_by_sum",
    "padding_mask",
    "previous_tokens_loss",
    "refill_causal_mask",
    "scaled_dot_product_scores",
    "split_heads",
    "to_sdpa_mask",
    "train_previous_tokens",
    "transpose_output",
    "transpose_qkv",
]
