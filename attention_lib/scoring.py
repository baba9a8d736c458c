"""Scoring functions: how well each query matches each key.

All functions take queries of shape ``(..., num_queries, d)`` and keys of shape
``(..., num_keys, d_k)`` and return scores of shape ``(..., num_queries, num_keys)``; the leading
dimensions (batch, heads) broadcast.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _check_pair(
    queries: torch.Tensor, keys: torch.Tensor, same_size: bool
) -> None:
    for name, x in (("queries", queries), ("keys", keys)):
        if (
            not isinstance(x, torch.Tensor)
            or not x.is_floating_point()
            or x.dim() < 2
        ):
            raise TypeError(
                f"{name} must be a floating-point tensor of shape (..., num_tokens, d) with at least "
                f"2 dimensions, got {x.dtype if isinstance(x, torch.Tensor) else type(x).__name__}"
                f"{tuple(x.shape) if isinstance(x, torch.Tensor) else ''}"
            )
    if same_size and queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"queries and keys must have the same last dimension for a dot product, got "
            f"{queries.shape[-1]} and {keys.shape[-1]}"
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
    _check_pair(queries, keys, same_size=True)
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
    _check_pair(queries, keys, same_size=False)
    if W.shape != (queries.shape[-1], keys.shape[-1]):
        raise ValueError(
            f"W must have shape (d_q, d_k) = ({queries.shape[-1]}, {keys.shape[-1]}), got {tuple(W.shape)}"
        )
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
    _check_pair(queries, keys, same_size=False)
    num_hiddens = W_q.shape[0]
    expected = {
        "W_q": (num_hiddens, queries.shape[-1]),
        "W_k": (num_hiddens, keys.shape[-1]),
        "w_v": (1, num_hiddens),
    }
    for name, weight in (("W_q", W_q), ("W_k", W_k), ("w_v", w_v)):
        if tuple(weight.shape) != expected[name]:
            raise ValueError(
                f"{name} must have shape {expected[name]}, got {tuple(weight.shape)}"
            )
    # (..., q, h) -> (..., q, 1, h)
    query_features = F.linear(queries, W_q).unsqueeze(-2)
    # (..., k, h) -> (..., 1, k, h)
    key_features = F.linear(keys, W_k).unsqueeze(-3)
    # Broadcasting adds every query to every key: (..., q, k, h).
    features = torch.tanh(query_features + key_features)
    return F.linear(features, w_v).squeeze(-1)  # (..., q, k, 1) -> (..., q, k)
