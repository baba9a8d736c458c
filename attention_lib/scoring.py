"""Scoring functions: how well each query matches each key.

All functions take queries of shape ``(..., num_queries, d_q)`` and keys of
shape ``(..., num_keys, d_k)`` and return scores of shape ``(..., num_queries,
num_keys)``; the leading dimensions (batch, heads) broadcast.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._checks import check_tensor


def _check_pair(
    queries: torch.Tensor, keys: torch.Tensor, sizes: tuple[str, str]
) -> None:
    """Check queries and keys whose last dimensions are named ``sizes``."""
    query_size, key_size = sizes
    check_tensor(
        "queries", queries, ("num_queries", query_size), any_leading=True
    )
    check_tensor("keys", keys, ("num_keys", key_size), any_leading=True)


def _check_weight(
    name: str,
    weight: torch.Tensor,
    dims: tuple[str, str],
    shape: tuple[int, int],
) -> None:
    """Check a 2-D weight whose dimensions ``dims`` must have sizes ``shape``."""
    check_tensor(name, weight, dims)
    if tuple(weight.shape) != shape:
        raise ValueError(
            f"{name} must have shape ({', '.join(dims)}) = {shape}, got {tuple(weight.shape)}"
        )


def dot_product_scores(
    queries: torch.Tensor, keys: torch.Tensor
) -> torch.Tensor:
    """``q · k`` for every pair: the scores whose spread grows with the vector size ``d``.

    Args:
        queries: shape ``(..., num_queries, d)``.
        keys: shape ``(..., num_keys, d)``.

    Returns:
        Scores of shape ``(..., num_queries, num_keys)``.
    """
    _check_pair(queries, keys, ("d", "d"))
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"queries and keys must have the same last dimension (d) for a dot product, got "
            f"{queries.shape[-1]} and {keys.shape[-1]}"
        )
    return queries @ keys.transpose(-2, -1)


def scaled_dot_product_scores(
    queries: torch.Tensor, keys: torch.Tensor
) -> torch.Tensor:
    """``q · k / sqrt(d)``: dot products scaled back to unit variance for unit-variance inputs.

    Without the scaling, the variance of ``q · k`` is ``d`` and softmax saturates into a near one-hot
    distribution whose gradients vanish.

    Args:
        queries: shape ``(..., num_queries, d)``.
        keys: shape ``(..., num_keys, d)``.

    Returns:
        Scores of shape ``(..., num_queries, num_keys)``.
    """
    return dot_product_scores(queries, keys) / math.sqrt(keys.shape[-1])


def general_scores(
    queries: torch.Tensor, keys: torch.Tensor, W: torch.Tensor
) -> torch.Tensor:
    """The bilinear ("general", Luong et al.) score ``q W kᵀ``: queries and keys may differ in size.

    Args:
        queries: shape ``(..., num_queries, d_q)``.
        keys: shape ``(..., num_keys, d_k)``.
        W: weight of shape ``(d_q, d_k)``.

    Returns:
        Scores of shape ``(..., num_queries, num_keys)``.
    """
    _check_pair(queries, keys, ("d_q", "d_k"))
    d_q, d_k = queries.shape[-1], keys.shape[-1]
    _check_weight("W", W, ("d_q", "d_k"), (d_q, d_k))
    return (queries @ W) @ keys.transpose(-2, -1)


def additive_scores(
    queries: torch.Tensor,
    keys: torch.Tensor,
    W_q: torch.Tensor,
    W_k: torch.Tensor,
    w_v: torch.Tensor,
) -> torch.Tensor:
    """The additive (Bahdanau) score ``w_vᵀ tanh(W_q q + W_k k)``: a one-hidden-layer network.

    The weights use the layout of `torch.nn.Linear` (``out_features x in_features``), so an
    ``nn.Linear`` layer's ``.weight`` can be passed as is.

    Args:
        queries: shape ``(..., num_queries, query_size)``.
        keys: shape ``(..., num_keys, key_size)``.
        W_q: shape ``(num_hiddens, query_size)``.
        W_k: shape ``(num_hiddens, key_size)``.
        w_v: shape ``(1, num_hiddens)``.

    Returns:
        Scores of shape ``(..., num_queries, num_keys)``.
    """
    _check_pair(queries, keys, ("query_size", "key_size"))
    # W_q fixes num_hiddens; the other weights must agree with it.
    check_tensor("W_q", W_q, ("num_hiddens", "query_size"))
    num_hiddens = W_q.shape[0]
    expected = (
        ("W_q", W_q, ("num_hiddens", "query_size"), queries.shape[-1]),
        ("W_k", W_k, ("num_hiddens", "key_size"), keys.shape[-1]),
    )
    for name, weight, dims, size in expected:
        _check_weight(name, weight, dims, (num_hiddens, size))
    _check_weight("w_v", w_v, ("1", "num_hiddens"), (1, num_hiddens))
    # (..., q, h) -> (..., q, 1, h)
    query_features = F.linear(queries, W_q).unsqueeze(-2)
    # (..., k, h) -> (..., 1, k, h)
    key_features = F.linear(keys, W_k).unsqueeze(-3)
    # Broadcasting adds every query to every key: (..., q, k, h).
    features = torch.tanh(query_features + key_features)
    return F.linear(features, w_v).squeeze(-1)  # (..., q, k, 1) -> (..., q, k)
