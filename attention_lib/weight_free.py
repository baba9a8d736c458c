"""Self-attention without trainable weights: the first steps of the book's chapter 3.

Every input vector serves as its own query, key and value, which isolates the three steps of all
attention mechanisms: scores (how well each input matches the query), weights (the scores
normalized to sum to 1) and the context vector (the weighted sum of the inputs).
"""

from __future__ import annotations

import torch

from ._checks import check_tensor


def attn_scores_loop(
    inputs: torch.Tensor, query: torch.Tensor
) -> torch.Tensor:
    """Attention scores of one query, one dot product at a time.

    Args:
        inputs: input vectors, shape ``(num_tokens, d_in)``.
        query: the query vector, shape ``(d_in,)``.

    Returns:
        Scores of shape ``(num_tokens,)``: ``scores[i] = inputs[i] · query``.
    """
    check_tensor("inputs", inputs, ("num_tokens", "d_in"))
    check_tensor("query", query, ("d_in",), last_dim=inputs.shape[-1])
    attn_scores = torch.empty(
        inputs.shape[0], dtype=inputs.dtype, device=inputs.device
    )
    for i, x_i in enumerate(inputs):
        attn_scores[i] = torch.dot(x_i, query)
    return attn_scores


def attn_scores_for_query(
    inputs: torch.Tensor, query: torch.Tensor
) -> torch.Tensor:
    """Attention scores of one query as a single matrix-vector product; equals the loop above.

    Args:
        inputs: input vectors, shape ``(num_tokens, d_in)``.
        query: the query vector, shape ``(d_in,)``.

    Returns:
        Scores of shape ``(num_tokens,)``.
    """
    check_tensor("inputs", inputs, ("num_tokens", "d_in"))
    check_tensor("query", query, ("d_in",), last_dim=inputs.shape[-1])
    return inputs @ query


def attn_scores_all_loop(inputs: torch.Tensor) -> torch.Tensor:
    """Attention scores of every query against every input, with two loops.

    Args:
        inputs: input vectors, shape ``(num_tokens, d_in)``.

    Returns:
        Scores of shape ``(num_tokens, num_tokens)``: row ``i`` holds the scores of query ``i``.
    """
    check_tensor("inputs", inputs, ("num_tokens", "d_in"))
    num_tokens = inputs.shape[0]
    attn_scores = torch.empty(
        num_tokens, num_tokens, dtype=inputs.dtype, device=inputs.device
    )
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            attn_scores[i, j] = torch.dot(x_i, x_j)
    return attn_scores


def attn_scores_all(inputs: torch.Tensor) -> torch.Tensor:
    """Attention scores of every query against every input as one matrix product.

    Args:
        inputs: input vectors, shape ``(num_tokens, d_in)``.

    Returns:
        Scores of shape ``(num_tokens, num_tokens)``, equal to
        [`attn_scores_all_loop`][attention_lib.weight_free.attn_scores_all_loop].
    """
    check_tensor("inputs", inputs, ("num_tokens", "d_in"))
    return inputs @ inputs.T


def normalize_by_sum(attn_scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Divide scores by their sum: weights that add up to 1, but only while every score is positive.

    Args:
        attn_scores: scores of any shape.
        dim: the dimension along which the weights add up to 1.

    Returns:
        Tensor of the same shape as ``attn_scores``.
    """
    return attn_scores / attn_scores.sum(dim=dim, keepdim=True)


# --8<-- [start:naive_softmax]
def naive_softmax(attn_scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``exp(x) / sum(exp(x))`` exactly as written: overflows to ``nan`` for large scores.

    ``exp(89.0)`` is already ``inf`` in float32, and ``inf / inf`` is ``nan``. `torch.softmax`
    subtracts the maximum score first, which leaves the result unchanged and keeps ``exp`` finite.

    Args:
        attn_scores: scores of any shape.
        dim: the dimension along which the weights add up to 1.

    Returns:
        Tensor of the same shape as ``attn_scores``.
    """
    exp_scores = torch.exp(attn_scores)
    return exp_scores / exp_scores.sum(dim=dim, keepdim=True)


# --8<-- [end:naive_softmax]


def context_vector_loop(
    inputs: torch.Tensor, attn_weights: torch.Tensor
) -> torch.Tensor:
    """The context vector of one query as a weighted sum of the inputs, one term at a time.

    Args:
        inputs: input vectors (serving as values), shape ``(num_tokens, d_in)``.
        attn_weights: the query's attention weights, shape ``(num_tokens,)``.

    Returns:
        Context vector of shape ``(d_in,)``.
    """
    check_tensor("inputs", inputs, ("num_tokens", "d_in"))
    check_tensor(
        "attn_weights", attn_weights, ("num_tokens",), last_dim=inputs.shape[0]
    )
    context_vec = torch.zeros(
        inputs.shape[1], dtype=inputs.dtype, device=inputs.device
    )
    for weight, x_i in zip(attn_weights, inputs, strict=True):
        context_vec += weight * x_i
    return context_vec


def context_vectors(
    inputs: torch.Tensor, attn_weights: torch.Tensor
) -> torch.Tensor:
    """The context vectors of all queries as one matrix product.

    Args:
        inputs: input vectors (serving as values), shape ``(num_tokens, d_in)``.
        attn_weights: attention weights, shape ``(num_queries, num_tokens)``; row ``i`` belongs to
            query ``i``.

    Returns:
        Context vectors of shape ``(num_queries, d_in)``.
    """
    check_tensor("inputs", inputs, ("num_tokens", "d_in"))
    check_tensor(
        "attn_weights",
        attn_weights,
        ("num_queries", "num_tokens"),
        last_dim=inputs.shape[0],
    )
    return attn_weights @ inputs
