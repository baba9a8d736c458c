"""The example data readers know from the books, kept in one place for the pages and the tests.

Each function returns a new tensor, so a reader who modifies it in place cannot change what the next
example sees.
"""

from __future__ import annotations

import torch

JOURNEY_WORDS: tuple[str, ...] = (
    "Your",
    "journey",
    "starts",
    "with",
    "one",
    "step",
)
"""The six words of the running example in *Build a Large Language Model (From Scratch)*, chapter 3."""

DESSERT_SENTENCE: str = "Life is short, eat dessert first"
"""The sentence of the article "Understanding and Coding Self-Attention ... From Scratch"."""


def journey_inputs() -> torch.Tensor:
    """The book's 3-dimensional embeddings of "Your journey starts with one step".

    Returns:
        Tensor of shape ``(6, 3)``: one row per word of [`JOURNEY_WORDS`][attention_lib.data.JOURNEY_WORDS].
    """
    return torch.tensor(
        [
            [0.43, 0.15, 0.89],  # Your     (x^1)
            [0.55, 0.87, 0.66],  # journey  (x^2)
            [0.57, 0.85, 0.64],  # starts   (x^3)
            [0.22, 0.58, 0.33],  # with     (x^4)
            [0.77, 0.25, 0.10],  # one      (x^5)
            [0.05, 0.80, 0.55],  # step     (x^6)
        ]
    )


def dessert_vocab() -> dict[str, int]:
    """The article's vocabulary: each word of the sentence, sorted, numbered from 0.

    Returns:
        ``{'Life': 0, 'dessert': 1, ...}`` for the words of
        [`DESSERT_SENTENCE`][attention_lib.data.DESSERT_SENTENCE].
    """
    words = DESSERT_SENTENCE.replace(",", "").split()
    return {word: i for i, word in enumerate(sorted(words))}


def dessert_token_ids() -> torch.Tensor:
    """The token ids of [`DESSERT_SENTENCE`][attention_lib.data.DESSERT_SENTENCE] in sentence order.

    Returns:
        Tensor of shape ``(6,)`` and dtype ``torch.int64``: ``tensor([0, 4, 5, 2, 1, 3])``.
    """
    vocab = dessert_vocab()
    return torch.tensor(
        [vocab[word] for word in DESSERT_SENTENCE.replace(",", "").split()]
    )


def dessert_embedding(
    vocab_size: int = 50_000, embed_dim: int = 3
) -> torch.Tensor:
    """The article's embedded sentence, equal to what it prints.

    The article calls ``torch.manual_seed(123)`` and then ``torch.nn.Embedding(vocab_size, embed_dim)``,
    whose weights are drawn from a standard normal distribution. This function draws the same numbers
    from a private generator, so the global random state that the reader's next example relies on is
    left untouched.

    Returns:
        Tensor of shape ``(6, embed_dim)``: one row per word of
        [`DESSERT_SENTENCE`][attention_lib.data.DESSERT_SENTENCE].
    """
    generator = torch.Generator().manual_seed(123)
    weight = torch.randn(vocab_size, embed_dim, generator=generator)
    return weight[dessert_token_ids()]
