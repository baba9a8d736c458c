"""The trained example: two heads learn to look one and two tokens back (invariants, not exact numbers)."""

from __future__ import annotations

import copy

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
    batches = []  # by default 300 steps, one forward each, on 64 sequences of context_length tokens
    hook = model.register_forward_pre_hook(lambda module, args: batches.append(tuple(args[0].shape)))
    al.train_previous_tokens(model, seed=seed)
    hook.remove()
    assert batches == [(64, 8)] * 300
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
    with pytest.raises(
        ValueError,
        match=r"^token_ids must have at least 3 tokens \(the first target is at position 2\), got shape \(2, 2\)$",
    ):
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


def test_the_defaults_are_eight_tokens_of_eight_kinds() -> None:
    """PreviousTokens() takes up to 8 tokens from a vocabulary of 8, in 16-wide embeddings and 2 heads."""
    model = al.PreviousTokens()
    logits, attn_weights = model(torch.randint(8, (3, 8)))
    assert logits.shape == (3, 8, 2, 8)
    assert attn_weights.shape == (3, 2, 8, 8)
    assert (model.vocab_size, model.context_length) == (8, 8)
    assert model.tok_emb.weight.shape == model.pos_emb.weight.shape == (8, 16)


def test_attention_reads_each_tokens_embedding_plus_its_positions(device: torch.device) -> None:
    """The attention's input is the sum of the token's embedding and its position's, on the tokens' device."""
    torch.manual_seed(0)
    model = al.PreviousTokens(vocab_size=5, context_length=6, d_model=8, num_heads=2).to(device)
    token_ids = torch.tensor([[4, 0, 3], [1, 1, 2]], device=device)
    seen = []
    model.attn.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    model(token_ids)
    (x,) = seen
    expected = model.tok_emb.weight[token_ids] + model.pos_emb.weight[:3]
    torch.testing.assert_close(x, expected, atol=0, rtol=0)


def test_training_is_adam_on_seeded_batches_of_64_sequences() -> None:
    """Each step draws 64 sequences of context_length tokens from a CPU generator seeded with ``seed`` (0 by
    default; the global generator plays no part) and takes one Adam step, lr=0.01, on the task's loss."""
    torch.manual_seed(0)
    model = al.PreviousTokens(vocab_size=5, context_length=6, d_model=8, num_heads=2).double()
    reference = copy.deepcopy(model)
    batches = []
    model.register_forward_pre_hook(lambda module, args: batches.append(args[0]))
    torch.manual_seed(1)
    loss = al.train_previous_tokens(model, steps=3)

    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.Adam(reference.parameters(), lr=0.01)
    for batch in batches:
        token_ids = torch.randint(5, (64, 6), generator=generator)
        assert torch.equal(batch, token_ids)
        logits, _ = reference(token_ids)
        targets = torch.stack((token_ids[:, 1:-1], token_ids[:, :-2]), dim=-1)  # one back, two back
        reference_loss = torch.nn.functional.cross_entropy(logits[:, 2:].reshape(-1, 5), targets.reshape(-1))
        optimizer.zero_grad()
        reference_loss.backward()
        optimizer.step()
    assert len(batches) == 3
    assert loss == pytest.approx(reference_loss.item(), rel=1e-12)
    for ours, theirs in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-12, rtol=1e-10)
