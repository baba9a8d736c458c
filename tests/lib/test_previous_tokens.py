"""The trained example: two heads learn to look one and two tokens back (invariants, not exact numbers)."""

from __future__ import annotations

import pytest
import torch

import attention_lib as al


def _lookback(attn_weights: torch.Tensor) -> torch.Tensor:
    """How many places back each head's largest weight is, per query: (b, h, t, t) -> (h, t)."""
    # averaged over the batch: (h, t, t) -> (h, t), the key each query weights most
    keys = attn_weights.mean(dim=0).argmax(dim=-1)
    return torch.arange(attn_weights.shape[-1]) - keys


@pytest.mark.parametrize("seed", [0, 1])
def test_after_training_one_head_looks_one_back_and_the_other_two_back(seed: int) -> None:
    torch.manual_seed(seed)
    model = al.PreviousTokens()
    token_ids = torch.randint(8, (256, 8), generator=torch.Generator().manual_seed(100 + seed))
    with torch.no_grad():
        loss_before = float(al.previous_tokens_loss(model, token_ids))
        _, before = model(token_ids)
    al.train_previous_tokens(model, seed=seed)
    with torch.no_grad():
        logits, after = model(token_ids)
        loss_after = float(al.previous_tokens_loss(model, token_ids))
    # From position 2 on, every query of a head looks the same distance back: 1 for one head, 2 for the other.
    learned = _lookback(after)[:, 2:]
    assert sorted(set(learned[0].tolist()) | set(learned[1].tolist())) == [1, 2]
    assert {tuple(set(row.tolist())) for row in learned} == {(1,), (2,)}
    assert {tuple(set(row.tolist())) for row in _lookback(before)[:, 2:]} != {(1,), (2,)}
    # And the task is solved on sequences it never saw.
    targets = torch.stack((token_ids[:, 1:-1], token_ids[:, :-2]), dim=-1)
    assert (logits[:, 2:].argmax(dim=-1) == targets).float().mean() > 0.99
    assert loss_after < 0.05 < 1.0 < loss_before


def test_the_model_checks_its_input() -> None:
    model = al.PreviousTokens()
    with pytest.raises(
        TypeError, match=r"token_ids must be an integer tensor \(torch.int64 or torch.int32\), got dtype torch.float32"
    ):
        model(torch.zeros(2, 8))
    with pytest.raises(
        ValueError, match=r"token_ids must be a 2-D tensor of shape \(batch, num_tokens\), got shape \(8,\)"
    ):
        model(torch.zeros(8, dtype=torch.long))
    with pytest.raises(ValueError, match="more than context_length=8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_the_loss_refuses_fewer_than_three_tokens() -> None:
    """With two tokens no position has two tokens before it: the mean of nothing would be nan."""
    torch.manual_seed(0)
    model = al.PreviousTokens(vocab_size=5, context_length=6, d_model=8, num_heads=2)
    with pytest.raises(ValueError, match=r"at least 3 tokens .* got shape \(2, 2\)"):
        al.previous_tokens_loss(model, torch.zeros(2, 2, dtype=torch.long))
    assert torch.isfinite(al.previous_tokens_loss(model, torch.zeros(2, 3, dtype=torch.long)))


def test_training_takes_at_least_one_step() -> None:
    model = al.PreviousTokens(vocab_size=5, context_length=6, d_model=8, num_heads=2)
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        al.train_previous_tokens(model, steps=0)


def test_training_draws_its_batches_where_the_model_is(device: torch.device) -> None:
    """The batches follow the model to its device, and a seed gives the same training on every device."""
    losses = []
    for where in ("cpu", device):
        torch.manual_seed(0)
        model = al.PreviousTokens(vocab_size=5, context_length=6, d_model=8, num_heads=2)
        model = model.double().to(where)
        losses.append(al.train_previous_tokens(model, steps=3))
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)
