"""A tiny model trained on a synthetic task, to watch two heads learn different jobs.

The task: from position 2 on, name the tokens one and two places back. Attention alone cannot tell
places apart (it sees a set of vectors), so the model adds a position embedding to each token's.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_num_tokens, check_positive_int
from .multihead import MultiHeadAttention


# --8<-- [start:PreviousTokens]
class PreviousTokens(nn.Module):
    """A model that names the tokens one and two places back.

    Token and position embeddings, one causal ``MultiHeadAttention`` and a
    read-out with two predictions per position.

    Args:
        vocab_size: number of different tokens.
        context_length: the largest number of tokens the model accepts.
        d_model: size of the embeddings and of the attention.
        num_heads: number of heads; must divide ``d_model``.

    Shape:
        - Input ``token_ids``: ``(batch, num_tokens)``, integers in
          ``[0, vocab_size)``.
        - Output: logits ``(batch, num_tokens, 2, vocab_size)``, one back
          and two back, and the attention weights ``(batch, num_heads,
          num_tokens, num_tokens)``.
    """

    def __init__(
        self,
        vocab_size: int = 8,
        context_length: int = 8,
        d_model: int = 16,
        num_heads: int = 2,
    ) -> None:
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.context_length = check_positive_int(
            "context_length", context_length
        )
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(context_length, d_model)
        self.attn = MultiHeadAttention(
            d_model, d_model, context_length, 0.0, num_heads
        )
        self.out = nn.Linear(d_model, 2 * vocab_size)

    def forward(
        self, token_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(batch, num_tokens, 2, vocab_size)`` and the attention weights."""
        if token_ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(
                "token_ids must be an integer tensor (torch.int64 or "
                f"torch.int32), got dtype {token_ids.dtype}"
            )
        if token_ids.dim() != 2:
            raise ValueError(
                "token_ids must be a 2-D tensor of shape (batch, num_tokens), "
                f"got shape {tuple(token_ids.shape)}"
            )
        num_tokens = token_ids.shape[1]
        check_num_tokens(num_tokens, self.context_length)
        positions = torch.arange(num_tokens, device=token_ids.device)
        # (b, t) -> (b, t, d_model): what each token is, plus where it is
        x = self.tok_emb(token_ids) + self.pos_emb(positions)
        context_vec, attn_weights = self.attn(x, need_weights=True)
        logits = self.out(context_vec)  # (b, t, 2 * vocab_size)
        # (b, t, 2 * vocab_size) -> (b, t, 2, vocab_size)
        logits = logits.view(*logits.shape[:2], 2, self.vocab_size)
        return logits, attn_weights


def previous_tokens_loss(
    model: PreviousTokens, token_ids: torch.Tensor
) -> torch.Tensor:
    """The task's cross-entropy: from position 2 on, the tokens 1 and 2 back.

    Args:
        model: the model to score.
        token_ids: ``(batch, num_tokens)``, with ``num_tokens >= 3``.

    Returns:
        A scalar tensor, averaged over both targets of every position.
    """
    if token_ids.dim() == 2 and token_ids.shape[1] < 3:
        raise ValueError(
            "token_ids must have at least 3 tokens (the first target is at "
            f"position 2), got shape {tuple(token_ids.shape)}"
        )
    logits, _ = model(token_ids)
    # From position 2 on, the targets are the tokens one and two back:
    # (b, t - 2, 2)
    targets = torch.stack((token_ids[:, 1:-1], token_ids[:, :-2]), dim=-1)
    # (b, t - 2, 2, vocab_size) -> (b * (t - 2) * 2, vocab_size)
    return F.cross_entropy(logits[:, 2:].flatten(0, 2), targets.flatten())


def train_previous_tokens(
    model: PreviousTokens, steps: int = 300, seed: int = 0
) -> float:
    """Train ``model`` in place with Adam, on a new random batch each step.

    Each batch holds 64 sequences of ``context_length`` tokens.

    Args:
        model: the model to train.
        steps: number of optimizer steps.
        seed: seed of the batches' random generator (the model's own
            initialization is the caller's ``torch.manual_seed``).

    Returns:
        The loss of the last batch.
    """
    check_positive_int("steps", steps)
    # Drawn on the CPU, so a seed gives the same batches on every device.
    generator = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    shape = (64, model.context_length)  # a new random batch each step
    for _ in range(steps):
        token_ids = torch.randint(model.vocab_size, shape, generator=generator)
        loss = previous_tokens_loss(model, token_ids.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


# --8<-- [end:PreviousTokens]
