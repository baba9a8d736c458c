"""The exercises of the buffers chapter."""

from __future__ import annotations

import re
from typing import Any

import torch
from attention_lib.causal import CausalAttention
from attention_lib.masks import masked_softmax
from torch import nn

from ._core import (
    CAUSAL_ATTENTION,
    Exercise,
    Ways,
    WrongAnswerError,
    backward,
    call,
    each_seed,
    expect,
    later_calls,
    layers_match,
    linear_named,
    module_from,
    seed_weights,
    values_on,
    variants,
)
from ._messages import Messages, messages
from ._rules import Rules
from .dropout import one_head_mistakes

WORDS: Messages = messages("buffers")


PROJECTIONS = ("W_query", "W_key", "W_value")
#: Where the check moves the module: a real second device if there is one.
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "meta")


def _causal_head(
    answer: Any, d_in: int, d_out: int, context_length: int
) -> nn.Module:
    module = module_from(answer, d_in, d_out, context_length)
    for name in PROJECTIONS:
        linear_named(module, name, d_in, d_out)
    return module


def _load(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    # The library's checkpoint holds the three weights and no mask: it loads
    # with strict=True only into a module that saves nothing else.
    try:
        module.load_state_dict(state, strict=True)
    except Exception as error:  # the reader's bug, reported as a message
        said = " ".join(f"{type(error).__name__}: {error}".split())
        biased = any(
            getattr(module, name).bias is not None for name in PROJECTIONS
        )
        hint = (
            "parameter"
            if "mask" in dict(module.named_parameters())
            else "persistent"
            if "mask" in module.state_dict()
            else "bias"
            if biased
            else "names"
        )
        raise WrongAnswerError("raised", hint, error=said) from None


def _boolean_mask(module: nn.Module) -> None:
    # The task asks for a boolean mask: the book's ones and zeros, made
    # boolean in forward, take four times the memory in every copy of the
    # model, and a float one of 0 and -inf (or -1e9) is added to scores.
    mask = getattr(module, "mask", None)
    if isinstance(mask, torch.Tensor) and mask.dtype != torch.bool:
        got = str(mask.dtype).removeprefix("torch.")
        raise WrongAnswerError(
            "dtype", "bool_mask", what="mask_entries", got=got, expected="bool"
        )


def _left_behind(module: nn.Module, device: torch.device) -> bool:
    mask = getattr(module, "mask", None)
    return isinstance(mask, torch.Tensor) and mask.device != device


#: The error a forward that reads tensor values (``assert w.isfinite().all()``,
#: an ``if`` on a tensor) raises on the meta device, which holds no values.
_NEEDS_VALUES = re.compile(r"meta tensor|data-dependent|data pointer", re.I)


def _causal_buffer(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    untried: list[int] = []

    def once(seed: int) -> None:
        d_in, d_out = 2 + seed % 3, 1 + seed % 4
        context_length = 4 + seed % 5
        # 2 to context_length tokens, 3 on the first seed: with 2, a mask
        # that lets a token see the next one (`diagonal=2`) hides nothing,
        # and is told from no mask only with 3.
        b, n = 1 + seed % 2, 2 + (seed + 1) % (context_length - 1)
        seed_weights(seed)
        module = _causal_head(answer, d_in, d_out, context_length)
        reference = CausalAttention(d_in, d_out, context_length, 0.0)
        _load(module, reference.state_dict())
        _boolean_mask(module)

        g = torch.Generator().manual_seed(seed)
        x = torch.rand(b, n, d_in, generator=g)
        with torch.no_grad():
            q = reference.W_query(x)
            k = reference.W_key(x)
            v = reference.W_value(x)
            expected = reference(x)
        scores = q @ k.transpose(1, 2) / d_out**0.5  # (b, n, n)
        ones = torch.ones(n, n, dtype=torch.bool)
        # The whole (context_length, context_length) mask on the scores of
        # fewer tokens, given to masked_fill or masked_softmax: their errors.
        whole = torch.triu(
            torch.ones(context_length, context_length, dtype=torch.bool), 1
        )
        ways: Ways = {
            "no_mask": [lambda: torch.softmax(scores, dim=-1) @ v],
            "unsliced": [
                lambda: scores.masked_fill(whole, -torch.inf),
                lambda: masked_softmax(scores, whole),
            ],
            **one_head_mistakes(q, k, v, sizes=(d_in, context_length)),
        }
        out = call(module, x, wrong=variants(ways))
        expect(out, expected, "output", variants(ways))
        backward(out, module, "output")
        # The right gradients, not only some: the library's.
        reference(x).sum().backward()
        layers_match(module, reference, ["W_query", "W_key", "W_value"])
        later = [
            2 * torch.rand(size, tokens, d_in, generator=g) - 1
            for size, tokens in (
                (b + 1, min(n + 1, context_length)),
                (1, max(1, n - 1)),
                (b, n),
            )
        ]
        later_calls(module, reference, later, "output")

        # A model converted to float16, as for inference on a GPU.
        def fill_1e9() -> object:
            return scores.half().masked_fill(ones.triu(1), -1e9)

        with torch.no_grad():
            half = call(module.half(), x.half(), wrong={"fill_1e9": fill_1e9})
        if not isinstance(half, torch.Tensor):
            got = type(half).__name__
            raise WrongAnswerError("not_tensor", "compare", got=got)
        if half.dtype != torch.float16:  # as x is, and the module's weights
            raise WrongAnswerError(
                "dtype",
                "dtype",
                what="half_output",
                got=str(half.dtype).removeprefix("torch."),
                expected="float16",
            )
        if not torch.isfinite(half).all():
            raise WrongAnswerError("not_finite", "compare", what="half_output")
        # float16 keeps about 3 decimal digits
        diff = (half.double() - expected.double()).abs().max().item()
        if diff > 1e-2:
            raise WrongAnswerError(
                "values", "compare", what="half_output", diff=diff
            )

        # A GPU where there is one; elsewhere the meta device, which moves a
        # module anywhere CPU-only code runs: a mask that stays on the CPU
        # fails there as it would on a GPU.
        moved = _causal_head(answer, d_in, d_out, context_length).to(DEVICE)
        meta = DEVICE.type == "meta"
        moved_x = (
            torch.empty(b, n, d_in, device=DEVICE) if meta else x.to(DEVICE)
        )
        try:
            call(moved, moved_x)
        except WrongAnswerError as failure:
            if _left_behind(moved, DEVICE):
                failure.hint = "attribute"
                raise
            said = str(failure.fields.get("error", ""))
            if DEVICE.type != "meta" or not _NEEDS_VALUES.search(said):
                raise
            # Right or wrong, the meta device cannot tell: its tensors hold
            # no values for forward's own check to read.
            untried.append(seed)
        if "mask" not in dict(moved.named_buffers()):
            # Right on every device, yet no buffer: forward copies the mask
            # to x's device on every call, or it is not called mask.
            try:
                call(moved.get_buffer, "mask")
            except WrongAnswerError as failure:
                left = _left_behind(moved, DEVICE)
                failure.hint = "attribute" if left else "name"
                raise

    each_seed(once)
    shape = {"what": "output", "shape": "(b, num_tokens, d_out)"}
    values = values_on("lib_causal")
    return [
        ("shape", shape),
        ("values", values),
        ("grad_values", {}),
        ("calls", {}),
        ("loads", {}),
        ("half", {}),
        ("moves_untried", {})
        if untried
        else ("moves", {"device": DEVICE.type}),
    ]


#: The catalogue's mistakes a causal attention head can make (both
#: exercises check the same module).
MISTAKES = CAUSAL_ATTENTION

EXERCISES = [
    Exercise(
        "exercise-causal-buffer",
        _causal_buffer,
        WORDS,
        # The masked attention written out, with the buffer: the find-the-bug
        # below it hands the attention to F.scaled_dot_product_attention.
        Rules(torch_functions=frozenset({"scaled_dot_product_attention"})),
        reference="lib_causal",
        mistakes=MISTAKES,
    ),
    Exercise(
        "exercise-mask-attribute-bug",
        _causal_buffer,
        WORDS,
        reference="lib_causal",
        mistakes=MISTAKES,
    ),
]
