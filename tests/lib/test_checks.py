"""The shared argument checks where they reach a user through the package's functions and modules, beyond the
messages that test_bad_input.py pins: what they let through as well as what they refuse."""

from __future__ import annotations

import pytest
import torch

import attention_lib as al


def test_scores_take_queries_and_keys_without_leading_dimensions() -> None:
    """The scoring functions take (..., num_queries, d) and (..., num_keys, d): "..." may be empty, a single
    sequence of shape (num_queries, d), as well as a batch or a batch of heads."""
    torch.manual_seed(0)
    queries, keys = torch.randn(3, 4), torch.randn(5, 4)
    attn_scores = al.dot_product_scores(queries, keys)
    torch.testing.assert_close(attn_scores, queries @ keys.T)
    torch.testing.assert_close(al.dot_product_scores(queries[None, None], keys[None, None])[0, 0], attn_scores)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        al.dot_product_scores(queries[0], keys)


def test_the_autocast_exemption_works_with_the_api_of_torch_before_2_4(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under autocast the layers convert their input, so the dtype check stands aside. torch 2.2 and 2.3, which
    pyproject.toml allows, have ``is_autocast_enabled()`` without a device (CUDA's) and
    ``is_autocast_cpu_enabled()``: under CPU autocast the check must stand aside there too. Those two, written
    with today's API, stand in for them."""
    enabled = torch.is_autocast_enabled

    def before_2_4(*args: object) -> bool:
        if args:
            raise TypeError("is_autocast_enabled() takes 0 positional arguments but 1 was given")
        return enabled("cuda")

    module = al.MultiHeadAttention(3, 4, 4, 0.0, 2)  # float32 weights
    x = torch.randn(2, 4, 3, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16), monkeypatch.context() as old_torch:
        old_torch.setattr(torch, "is_autocast_enabled", before_2_4)
        old_torch.setattr(torch, "is_autocast_cpu_enabled", lambda: enabled("cpu"))
        assert module(x).dtype == torch.bfloat16
    with monkeypatch.context() as old_torch:
        old_torch.setattr(torch, "is_autocast_enabled", before_2_4)
        old_torch.setattr(torch, "is_autocast_cpu_enabled", lambda: enabled("cpu"))
        with pytest.raises(TypeError, match="must have the dtype of the module's weights"):
            module(x)  # without autocast, the check still refuses it
