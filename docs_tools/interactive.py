"""Export the numbers the attention explorers start from, taken from ``attention_lib``.

    python3 dev.py figures           # rewrites these with the figures
    python3 dev.py figures --check   # exit 1 if they are out of date

A page shows an explorer with a line ``<div data-attention-explorer="NAME"></div>``; hooks/interactive.py
puts ``EXPLORERS[NAME]`` from ``docs_tools/data/explorers.json`` on it, and
``docs/assets/javascripts/explorer.js`` computes the scores, weights and context vectors from those inputs
and projection weights, in the browser, as the reader changes the controls. The inputs and weights are the
ones the page prints (the journey sentence, and the modules the page creates after its seed);
tests/site/test_interactive.py checks the browser's numbers against ``attention_lib`` for every combination
of the controls. The build itself imports no torch, so the numbers are written here and committed.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable

import torch
from torch import nn

import attention_lib as al
from docs_tools import decode_stepper, generated, tile_stepper
from docs_tools.project import ROOT

DATA = ROOT / "docs_tools" / "data" / "explorers.json"
#: One explorer's numbers and settings, as explorer.js reads them from the JSON.
Explorer = dict[str, object]


def _rows(tensor: torch.Tensor) -> list[list[float]]:
    # float32 numbers as the doubles they are exactly: the browser computes in doubles from these.
    return tensor.detach().double().tolist()


def _explorer(
    inputs: torch.Tensor,
    projections: tuple[nn.Linear, nn.Linear, nn.Linear] | None,
    heads: list[int],
    **defaults: bool | int,
) -> Explorer:
    return {
        "words": list(al.JOURNEY_WORDS),
        "inputs": _rows(inputs),
        # nn.Linear's weight, (d_out, d_in): queries = inputs @ W_query.weight.T. None: the inputs themselves
        # are the queries, keys and values (self-attention without trainable weights).
        "W_query": None if projections is None else _rows(projections[0].weight),
        "W_key": None if projections is None else _rows(projections[1].weight),
        "W_value": None if projections is None else _rows(projections[2].weight),
        "heads": heads,
        "defaults": defaults,
    }


def weights() -> Explorer:
    """The attention weights page: scores are dot products of the inputs themselves."""
    return _explorer(al.journey_inputs(), None, [1], query=1, scale=False, causal=False, valid_len=6, num_heads=1)


def masks() -> Explorer:
    """The masks page: the queries, keys and values of the SelfAttentionV2 created after manual_seed(789)."""
    torch.manual_seed(789)
    sa_v2 = al.SelfAttentionV2(d_in=3, d_out=2)
    projections = (sa_v2.W_query, sa_v2.W_key, sa_v2.W_value)
    return _explorer(al.journey_inputs(), projections, [1], query=1, scale=True, causal=True, valid_len=6, num_heads=1)


def multi_head() -> Explorer:
    """The multi-head page: the projections created after manual_seed(123), d_in=3 and d_out=4, split into
    1, 2 or 4 heads (the page's example uses 2)."""
    torch.manual_seed(123)
    mha = al.MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2)
    projections = (mha.W_query, mha.W_key, mha.W_value)
    return _explorer(
        al.journey_inputs(), projections, [1, 2, 4], query=1, scale=True, causal=True, valid_len=6, num_heads=2
    )


@functools.cache
def real_model() -> nn.Module:
    """The real-model page's GPT-2 (transformers' GPT2LMHeadModel), built from the page's configuration after
    manual_seed(123), in eval() with eager attention, as the page builds it."""
    # Only this page's explorer, figures and questions need transformers (the test extra has it): the others are
    # made without.
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=16,
        n_positions=16,
        n_embd=8,
        n_layer=2,
        n_head=2,
        initializer_range=0.5,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(123)
    model = GPT2LMHeadModel(config)
    nn.Module.eval(model)  # what PreTrainedModel.eval does, typed
    model.set_attn_implementation("eager")
    return model


@functools.cache
def real_model_gpt2() -> tuple[torch.Tensor, al.MultiHeadAttention, torch.Tensor]:
    """The real-model page's GPT-2 (`real_model`) run on the six words as the page's made-up token ids: layer 0's
    input, what a forward hook captures (its ln_1 output, ``(6, 8)``), the layer as attention_lib.from_gpt2_attention
    copies it, and the layer's attention weights as ``output_attentions=True`` returns them, ``(num_heads, 6, 6)``."""
    model = real_model()
    layer = model.get_submodule("transformer.h.0.attn")  # the page's model.transformer.h[0].attn
    captured: list[torch.Tensor] = []
    handle = layer.register_forward_hook(lambda module, args, output: captured.append(args[0]))
    with torch.no_grad():
        out = model(torch.tensor([[1, 2, 3, 4, 5, 6]]), output_attentions=True)
    handle.remove()
    (inputs,) = captured
    positions = model.get_submodule("transformer.wpe")  # one embedding per position: the config's n_positions
    if not isinstance(positions, nn.Embedding):
        raise TypeError(f"transformer.wpe is a {type(positions).__name__}, not the nn.Embedding of GPT-2's positions")
    n_positions = positions.num_embeddings
    return inputs[0], al.from_gpt2_attention(layer, n_positions), out.attentions[0][0]


def gpt2() -> Explorer:
    """The real-model page: layer 0 of its GPT-2 (`real_model_gpt2`). The inputs are what the layer is fed; the
    projections are the three blocks of its Conv1D c_attn, transposed to nn.Linear's layout. explorer.js computes
    without biases: GPT-2 built from a configuration has zero biases, and a model with others is refused here,
    not drawn wrong."""
    inputs, mha, _ = real_model_gpt2()
    projections = (mha.W_query, mha.W_key, mha.W_value)
    if any(linear.bias is not None and bool(linear.bias.any()) for linear in projections):
        raise ValueError("layer 0's c_attn has biases other than zero, which the explorer does not add")
    return _explorer(inputs, projections, [1, 2], query=5, scale=True, causal=True, valid_len=6, num_heads=2)


EXPLORERS: dict[str, Callable[[], Explorer]] = {
    "weights": weights,
    "masks": masks,
    "multi-head": multi_head,
    "gpt2": gpt2,
}


def explorers_json() -> str:
    return json.dumps({name: make() for name, make in EXPLORERS.items()}, indent=1) + "\n"


def outputs() -> generated.Outputs:
    # The steppers' numbers are written with the explorers' (python3 dev.py figures), each in its own file.
    return {DATA: explorers_json, **decode_stepper.outputs(), **tile_stepper.outputs()}


def main(argv: list[str]) -> int:
    return generated.main(argv, outputs(), __doc__.splitlines()[0], "python3 dev.py figures")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
