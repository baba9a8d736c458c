"""Weight-free self-attention, step by step: the loops and the matrix products give the values a reader computes
by hand, refuse inputs that do not fit together, and return their result where the inputs are.

The inputs are small integers and the weights binary fractions, so that every expected value below is exact.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import attention_lib as al

# (num_tokens=4, d_in=3)
INPUTS = [[1.0, 0.0, 2.0], [0.0, 1.0, 1.0], [2.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
QUERY = [1.0, 2.0, 0.0]
# inputs @ query: 1*1 + 0*2 + 2*0 = 1, then 0 + 2 + 0, 2 + 2 + 0, 1 + 2 + 0
ATTN_SCORES = [1.0, 2.0, 4.0, 3.0]
# inputs @ inputs.T: row i holds the dot products of token i with every token
ALL_ATTN_SCORES = [[5.0, 2.0, 2.0, 3.0], [2.0, 2.0, 1.0, 2.0], [2.0, 1.0, 5.0, 3.0], [3.0, 2.0, 3.0, 3.0]]
ATTN_WEIGHTS = [[0.5, 0.25, 0.25, 0.0], [0.0, 0.0, 0.0, 1.0]]
# 0.5 * [1, 0, 2] + 0.25 * [0, 1, 1] + 0.25 * [2, 1, 0]; the second query's weight is all on the last token
CONTEXT_VECS = [[1.0, 0.5, 1.25], [1.0, 1.0, 1.0]]

# Each step as a function of (inputs, query, attn_weights), and what it must return.
Step = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
Values = list[float] | list[list[float]]
STEPS: dict[str, tuple[Step, Values]] = {
    "attn_scores_loop": (lambda x, q, w: al.attn_scores_loop(x, q), ATTN_SCORES),
    "attn_scores_for_query": (lambda x, q, w: al.attn_scores_for_query(x, q), ATTN_SCORES),
    "attn_scores_all_loop": (lambda x, q, w: al.attn_scores_all_loop(x), ALL_ATTN_SCORES),
    "attn_scores_all": (lambda x, q, w: al.attn_scores_all(x), ALL_ATTN_SCORES),
    "context_vector_loop": (lambda x, q, w: al.context_vector_loop(x, w[0]), CONTEXT_VECS[0]),
    "context_vectors": (lambda x, q, w: al.context_vectors(x, w), CONTEXT_VECS),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("step", "expected"), STEPS.values(), ids=STEPS.keys())
def test_each_step_gives_the_hand_computed_values_on_the_inputs_device(
    step: Step, expected: Values, dtype: torch.dtype, device: torch.device
) -> None:
    """The loops allocate their result themselves: it must have the inputs' dtype and device, as the matrix
    products' has (a float32 result for float64 inputs would round; a CPU result for GPU inputs would not be
    where the next step looks for it)."""
    inputs, query, attn_weights = (torch.tensor(t, dtype=dtype, device=device) for t in (INPUTS, QUERY, ATTN_WEIGHTS))
    result = step(inputs, query, attn_weights)
    assert (result.dtype, result.device.type) == (dtype, device.type)
    torch.testing.assert_close(result.cpu(), torch.tensor(expected, dtype=dtype), atol=0, rtol=0)


@pytest.mark.parametrize(("step", "expected"), STEPS.values(), ids=STEPS.keys())
def test_each_step_allocates_on_the_meta_device_too(step: Step, expected: Values) -> None:
    """meta, a device every machine has, stands for a GPU here: a result allocated on the default device instead
    of the inputs' would be a CPU tensor."""
    inputs, query, attn_weights = (torch.tensor(t, device="meta") for t in (INPUTS, QUERY, ATTN_WEIGHTS))
    result = step(inputs, query, attn_weights)
    assert result.device.type == "meta"
    assert result.shape == torch.tensor(expected).shape


@pytest.mark.parametrize("attn_scores", [al.attn_scores_loop, al.attn_scores_for_query])
@pytest.mark.parametrize("d_in", [2, 5])
def test_a_query_of_another_size_than_the_inputs_is_refused(
    attn_scores: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], d_in: int
) -> None:
    """A query must be a vector of the inputs' size, d_in=3: one shorter or longer has no dot product with them,
    and the error says so in the library's words, not torch.dot's or matmul's."""
    with pytest.raises(ValueError, match=r"^query must have size 3 in its last dimension \(d_in\)"):
        attn_scores(torch.tensor(INPUTS), torch.ones(d_in))


@pytest.mark.parametrize("num_tokens", [3, 5])
def test_attn_weights_over_another_number_of_tokens_are_refused(num_tokens: int) -> None:
    """One weight per input token, 4 here: a weight too many or too few is a mistake, not a shorter sum."""
    inputs = torch.tensor(INPUTS)
    message = r"^attn_weights must have size 4 in its last dimension \(num_tokens\)"
    with pytest.raises(ValueError, match=message):
        al.context_vector_loop(inputs, torch.full((num_tokens,), 1 / num_tokens))
    with pytest.raises(ValueError, match=message):
        al.context_vectors(inputs, torch.full((2, num_tokens), 1 / num_tokens))


# Positive scores, not symmetric and not square: each row or column has its own sum.
SCORES = [[1.0, 1.0, 2.0], [3.0, 1.0, 0.0]]


@pytest.mark.parametrize(
    ("dim", "expected"),
    [
        (-1, [[0.25, 0.25, 0.5], [0.75, 0.25, 0.0]]),  # each row by its own sum, 4
        (1, [[0.25, 0.25, 0.5], [0.75, 0.25, 0.0]]),
        (0, [[0.25, 0.5, 1.0], [0.75, 0.5, 0.0]]),  # each column by its own sum: 4, 2, 2
    ],
)
def test_normalize_by_sum_divides_each_row_or_column_by_its_own_sum(dim: int, expected: list[list[float]]) -> None:
    attn_weights = al.normalize_by_sum(torch.tensor(SCORES), dim=dim)
    torch.testing.assert_close(attn_weights, torch.tensor(expected), atol=0, rtol=0)


@pytest.mark.parametrize("dim", [-1, 0, 1, 2])
def test_naive_softmax_equals_torch_softmax_along_any_dim(dim: int) -> None:
    """While the scores are small enough for exp, naive_softmax is softmax along ``dim`` of a batch of score
    matrices, each slice on its own: it differs from torch.softmax only in overflowing."""
    attn_scores = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    attn_weights = al.naive_softmax(attn_scores, dim=dim)
    torch.testing.assert_close(attn_weights, torch.softmax(attn_scores, dim=dim))
    torch.testing.assert_close(attn_weights.sum(dim), torch.ones_like(attn_weights.sum(dim)))
