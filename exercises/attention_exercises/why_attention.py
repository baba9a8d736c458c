"""The exercises of the why-attention chapter: a decoder that reads every
encoder state, and the position embeddings that give attention the order."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ._core import (
    COUNT,
    Exercise,
    Flow,
    call,
    each_seed,
    expect,
    gradients_flow,
    hinted,
    seed_weights,
    values_on,
)
from ._messages import Messages, messages
from ._rules import Rules

WORDS: Messages = messages("why_attention")


def _decoder_contexts(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Flow:
        g = torch.Generator().manual_seed(seed)
        # Two seeds in a row share their sizes, with other values: an
        # answer that remembers its result by shape shows. Never as many
        # output steps as input positions: an answer that mixes the two up
        # either raises or shows.
        size = seed // 2
        n, d = 3 + size % 5, 1 + size % 4
        m = 1 + (size * 3) % 6
        m += m == n
        if size % 4 == 3:  # as many output steps as positions, now and then
            m = n
        # float64 now and then: the result keeps the inputs' dtype.
        dtype = torch.float64 if seed % 5 == 4 else torch.float32
        # Negative values too, and scores spread enough that the weights
        # are far from uniform. A decoder trains through both.
        queries = 3 * torch.rand(m, d, generator=g, dtype=dtype) - 1.5
        states = 3 * torch.rand(n, d, generator=g, dtype=dtype) - 1.5
        if size % 3 == 2:
            # Scores in the hundreds: a softmax that does not subtract the
            # row's largest score overflows.
            queries = 100 * queries
        queries.requires_grad_()
        states.requires_grad_()
        inputs = {"queries": queries, "states": states}
        with torch.no_grad():
            scores = queries @ states.T  # (m, d) @ (d, n) -> (m, n)
            expected = _contexts(inputs)
        wrong = {
            "last_state": lambda: states[-1].expand(m, d),
            "mean": lambda: states.mean(dim=0).expand(m, d),
            "softmax_dim": lambda: torch.softmax(scores, dim=0) @ states,
            "no_softmax": lambda: scores @ states,
            "naive": lambda: (
                (scores.exp() / scores.exp().sum(dim=-1, keepdim=True))
                @ states
            ),
            # The scaling of later chapters (F.scaled_dot_product_attention's
            # own), a step too early here.
            "scale_extra": lambda: (
                torch.softmax(scores / d**0.5, dim=-1) @ states
            ),
            "own_queries": lambda: (
                torch.softmax(queries @ queries.T, dim=-1) @ queries
            ),
        }
        out = call(answer, queries, states, wrong=wrong)
        expect(out, expected, "context", wrong)
        return out, inputs, "context", _contexts

    for flow in each_seed(once):
        gradients_flow(*flow)
    shape = {"what": "context", "shape": "(m, d)"}
    checks = [("shape", shape), ("values", values_on("lib_decoder"))]
    return [*checks, ("grad_inputs", {"names": "queries, states"})]


def _contexts(inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    queries, states = inputs["queries"], inputs["states"]
    return torch.softmax(queries @ states.T, dim=-1) @ states


def _positions(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    def once(seed: int) -> Flow:
        g = torch.Generator().manual_seed(seed)
        # A batch of one first, as the page's own test has; then batches as
        # large as, and larger or smaller than, the number of tokens.
        b = 1 if seed % 3 == 0 else 1 + seed % 5
        context_length = 4 + seed % 4
        # Fewer tokens than the table has rows, and now and then as many.
        t = (
            context_length
            if seed % 4 == 3
            else 2 + seed % (context_length - 2)
        )
        # Never 1, and never the first seed's number of tokens: positions
        # counted from the vectors' size show.
        d = 3 + (seed // 2) % 3
        seed_weights(seed)
        pos_embedding = nn.Embedding(context_length, d)
        # Every table lives until the check ends: no later one can take the
        # id (or the memory) of one before it, and an answer that keeps its
        # result by id fails at the training step below, always the same.
        tables.append(pos_embedding)
        # The token embeddings are trained too.
        x = (2 * torch.rand(b, t, d, generator=g) - 1).requires_grad_()
        table = pos_embedding.weight.detach()
        wrong = {
            "batch_positions": lambda: x + table[:b],
            "feature_positions": lambda: x + table[:d],
            "whole_table": lambda: x + table,
            "no_positions": lambda: x,
            "last_positions": lambda: x + table[-t:],
            "concatenated": lambda: torch.cat(
                [x, table[:t].expand(b, t, d)], dim=-1
            ),
        }
        out = call(answer, x, pos_embedding, wrong=wrong)
        # The position vectors are trained with the rest of the model.
        inputs = {"x": x, "pos_embedding": pos_embedding.weight}
        expect(out, _embedded(inputs).detach(), "output", wrong)
        return out, inputs, "output", _embedded

    tables: list[nn.Embedding] = []
    for flow in each_seed(once):
        gradients_flow(*flow)
    # A training step changes the table in place, and the same module is
    # called again: the positions must be read from it then, not kept.
    seed_weights(COUNT)
    pos_embedding = nn.Embedding(6, 3)
    x = torch.rand(2, 4, 3, generator=torch.Generator().manual_seed(COUNT))
    with torch.no_grad():
        call(answer, x, pos_embedding)
        pos_embedding.weight.mul_(-2.0)
        trained = x + pos_embedding.weight[:4]
        with hinted("later_call", unless_named=True):
            expect(call(answer, x, pos_embedding), trained, "output")
    shape = {"what": "output", "shape": "(b, num_tokens, d_in)"}
    checks = [("shape", shape), ("values", values_on("lib_positions"))]
    return [*checks, ("grad_inputs", {"names": "x, pos_embedding"})]


def _embedded(inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    x = inputs["x"]
    return x + inputs["pos_embedding"][: x.shape[1]]


EXERCISES = [
    Exercise(
        "exercise-decoder-contexts",
        _decoder_contexts,
        WORDS,
        Rules(no_loop=True),
        reference="lib_decoder",
        mistakes=frozenset({"softmax_dim", "scale_extra"}),
    ),
    Exercise(
        "exercise-positions-bug", _positions, WORDS, reference="lib_positions"
    ),
]
