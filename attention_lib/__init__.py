"""attention_lib: the small, tested reference implementation behind the attention-docs tutorials.

Boolean masks follow one convention throughout: True means "masked out" (see
[`attention_lib.masks`][attention_lib.masks]).
"""

from .additive import AdditiveAttention
from .alibi import alibi_bias, alibi_score_mod, alibi_slopes
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
from .flex_masks import (
    causal_mask_mod,
    document_mask_mod,
    left_padding_mask_mod,
    sliding_window_mask_mod,
)
from .general_multihead import GeneralMultiHeadAttention
from .grouped_query import GroupedQueryAttention
from .heads import merge_heads, split_heads, transpose_output, transpose_qkv
from .hf import from_gpt2_attention
from .kv_cache import append_to_cache
from .masks import (
    causal_mask,
    masked_fill_value,
    masked_softmax,
    padding_mask,
    refill_causal_mask,
    to_sdpa_mask,
)
from .masks_beyond import (
    document_ids_from_lengths,
    document_mask,
    left_padded_causal_mask,
    left_padding_mask,
    left_padding_position_ids,
    sliding_window_mask,
)
from .multihead import MultiHeadAttention, MultiHeadAttentionWrapper
from .previous_tokens import (
    PreviousTokens,
    previous_tokens_loss,
    train_previous_tokens,
)
from .rope import (
    RoPEAttention,
    apply_rope,
    interleaved_to_half,
    positions_for_step,
    rope_cos_sin,
    rope_frequencies,
)
from .scoring import (
    additive_scores,
    dot_product_scores,
    general_scores,
    scaled_dot_product_scores,
)
from .self_attention import SelfAttentionV1, SelfAttentionV2
from .static_cache import StaticKVCache, capture_decode_step
from .tiled_softmax import (
    TileStep,
    online_softmax,
    tile_steps,
    tiled_attention,
)
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
from .window_cache import SlidingWindowKVCache

__version__ = "0.6.0"

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
    "RoPEAttention",
    "SelfAttentionV1",
    "SelfAttentionV2",
    "SlidingWindowKVCache",
    "StaticKVCache",
    "TileStep",
    "additive_scores",
    "alibi_bias",
    "alibi_score_mod",
    "alibi_slopes",
    "append_to_cache",
    "apply_rope",
    "attn_scores_all",
    "attn_scores_all_loop",
    "attn_scores_for_query",
    "attn_scores_loop",
    "capture_decode_step",
    "causal_mask",
    "causal_mask_mod",
    "context_vector_loop",
    "context_vectors",
    "dessert_embedding",
    "dessert_token_ids",
    "dessert_vocab",
    "document_ids_from_lengths",
    "document_mask",
    "document_mask_mod",
    "dot_product_scores",
    "from_gpt2_attention",
    "general_scores",
    "interleaved_to_half",
    "journey_inputs",
    "left_padded_causal_mask",
    "left_padding_mask",
    "left_padding_mask_mod",
    "left_padding_position_ids",
    "masked_fill_value",
    "masked_softmax",
    "merge_heads",
    "naive_softmax",
    "normalize_by_sum",
    "online_softmax",
    "padding_mask",
    "positions_for_step",
    "previous_tokens_loss",
    "refill_causal_mask",
    "rope_cos_sin",
    "rope_frequencies",
    "scaled_dot_product_scores",
    "sliding_window_mask",
    "sliding_window_mask_mod",
    "split_heads",
    "tile_steps",
    "tiled_attention",
    "to_sdpa_mask",
    "train_previous_tokens",
    "transpose_output",
    "transpose_qkv",
]
