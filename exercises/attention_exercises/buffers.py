"""The exercises of the buffers chapter."""

from __future__ import annotations

import re
from typing import Any

import torch
import torch.nn.functional as F
from attention_lib.causal import CausalAttention
from attention_lib.masks import causal_mask, masked_softmax
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
    gradients_flow,
    hinted,
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
        raise WrongAnswerError(
            "not_loaded", hint, checkpoint="checkpoint_causal", error=said
        ) from None


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


def _plain_tensors(module: nn.Module) -> list[str]:
    """The names of the tensors ``module`` keeps as plain attributes: neither
    parameters nor buffers, which `nn.Module` keeps out of ``vars()``. Not a
    0-dim one (a constant), which torch mixes with tensors of any device."""
    return [
        name
        for name, value in vars(module).items()
        if isinstance(value, torch.Tensor) and value.dim() > 0
    ]


def _left_behind(module: nn.Module, device: torch.device) -> list[str]:
    """The tensors ``module`` keeps as plain attributes that are not on
    ``device``, where ``.to(device)`` moved the module: ``mask`` first."""
    behind = [
        name
        for name in _plain_tensors(module)
        if getattr(module, name).device != device
    ]
    return sorted(behind, key=lambda name: name != "mask")


def _moves(module: nn.Module, inputs: list[torch.Tensor]) -> bool:
    """``module`` moved to `DEVICE`, called on ``inputs`` (on `DEVICE` too):
    a tensor kept as a plain attribute stays behind and fails there. False
    where the move could not be tried: on the meta device, a forward that
    reads tensor values cannot run, right or wrong."""
    try:
        call(module, *inputs)
    except WrongAnswerError as failure:
        behind = _left_behind(module, DEVICE)
        if behind:
            failure.hint = "attribute"
            failure.fields.update(name=behind[0], device=DEVICE.type)
            raise
        said = str(failure.fields.get("error", ""))
        if DEVICE.type != "meta" or not _NEEDS_VALUES.search(said):
            raise
        return False
    return True


def _on_device(*tensors: torch.Tensor) -> list[torch.Tensor]:
    """``tensors`` on `DEVICE`: on the meta device, empty ones of their
    shapes (the meta device holds no values)."""
    if DEVICE.type == "meta":
        return [torch.empty(t.shape, device=DEVICE) for t in tensors]
    return [t.detach().to(DEVICE) for t in tensors]


def _kept_as_buffer(module: nn.Module) -> None:
    """The mask must be a buffer named ``mask``: a plain tensor attribute
    (which a forward that copies it to x's device on every call makes
    work), or a mask built in forward and kept nowhere, is not. Checked on
    a module that gave the right outputs everywhere: this failure is about
    how the module keeps its mask, not about an input."""
    if "mask" in dict(module.named_buffers()):
        return
    plain = _plain_tensors(module)
    if plain:
        name = "mask" if "mask" in plain else plain[0]
        raise WrongAnswerError(
            "not_buffer", "copied", name=name, device=DEVICE.type
        )
    # A buffer of another name, or none: the mask is built in forward.
    hint = "name" if dict(module.named_buffers()) else "mask_in_forward"
    raise WrongAnswerError("no_buffer", hint)


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
        _half_output(half, expected)

        # A GPU where there is one; elsewhere the meta device, which moves a
        # module anywhere CPU-only code runs: a mask that stays on the CPU
        # fails there as it would on a GPU.
        moved = _causal_head(answer, d_in, d_out, context_length).to(DEVICE)
        if not _moves(moved, _on_device(x)):
            untried.append(seed)

    each_seed(once)
    # Right on every device: the mask must still be a buffer, not a plain
    # attribute that forward copies to x's device on every call.
    _kept_as_buffer(_causal_head(answer, 2, 2, 4))
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


def _step_reference(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
) -> torch.Tensor:
    """Causal attention over queries, keys and values, (b, t, d): the right
    result of the find-the-bug's module."""
    t, d = queries.shape[-2], queries.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / d**0.5
    return masked_softmax(scores, causal_mask(t)) @ values


def _step_ways(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    context_length: int,
) -> Ways:
    """The typical wrong answers of the find-the-bug's module, which adds a
    mask of 0 and -inf to the scores (SDPA's float ``attn_mask``): the
    catalogue's mistakes of one causal head, and those of an additive mask,
    where -inf on the diagonal or below it is the mistake."""
    t = queries.shape[-2]

    def added(mask: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=mask
        )

    def additive(diagonal: int, lower: bool = False) -> torch.Tensor:
        full = torch.full((t, t), -torch.inf)
        return full.tril(diagonal) if lower else full.triu(diagonal)

    size = (context_length, context_length)
    whole = torch.full(size, -torch.inf).triu(1)
    ways = one_head_mistakes(queries, keys, values, sizes=(context_length,))
    return {
        "no_mask": [lambda: added(torch.zeros(t, t))],
        # The whole mask, for context_length tokens, on fewer: its error.
        "unsliced": [
            lambda: added(whole),
            lambda: added(whole.bool()),
            lambda: added(~whole.isinf()),
        ],
        **ways,
        "mask_polarity": [
            *ways["mask_polarity"],
            lambda: added(additive(-1, lower=True)),
        ],
        "causal_diagonal": [
            *ways["causal_diagonal"],
            lambda: added(additive(0)),
            lambda: added(additive(2)),
        ],
    }


def _attention_step(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    """The find-the-bug's module: ``answer(context_length)``, called on
    queries, keys and values made elsewhere, (b, num_tokens, d)."""
    untried: list[int] = []
    names = ("queries", "keys", "values")

    def once(seed: int) -> None:
        context_length = 4 + seed % 5
        # 3 tokens on the first seed, as in `_causal_buffer`.
        b, n = 1 + seed % 2, 2 + (seed + 1) % (context_length - 1)
        d = 1 + seed % 4
        module = module_from(answer, context_length)
        _load_nothing(module)
        g = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(b, n, d, generator=g) for _ in names)
        expected = _step_reference(q, k, v)
        ways = variants(_step_ways(q, k, v, context_length))
        given = [t.clone().requires_grad_() for t in (q, k, v)]
        out = call(module, *given, wrong=ways)
        expect(out, expected, "output", ways)
        gradients_flow(
            out,
            dict(zip(names, given, strict=True)),
            "output",
            lambda it: _step_reference(*(it[name] for name in names)),
        )
        # Called again, on other sizes and values: nothing kept from a call.
        for size, tokens in (
            (b + 1, min(n + 1, context_length)),
            (1, max(1, n - 1)),
            (b, n),
        ):
            again = [torch.randn(size, tokens, d, generator=g) for _ in names]
            with hinted("later_call", unless_named=True):
                expect(call(module, *again), _step_reference(*again), "output")

        # A model converted to float16, as for inference on a GPU.
        halves = [t.half() for t in (q, k, v)]
        with torch.no_grad():
            half = call(module.half(), *halves)
        _half_output(half, expected)

        moved = module_from(answer, context_length).to(DEVICE)
        if not _moves(moved, _on_device(q, k, v)):
            untried.append(seed)

    each_seed(once)
    # Right on every device: still, no tensor kept as a plain attribute that
    # forward copies to the inputs' device on every call.
    module = module_from(answer, 4)
    plain = _plain_tensors(module)
    if plain:
        raise WrongAnswerError(
            "not_buffer", "copied", name=plain[0], device=DEVICE.type
        )
    shape = {"what": "output", "shape": "(b, num_tokens, d)"}
    return [
        ("shape", shape),
        ("values", values_on("lib_step")),
        ("grad_inputs", {"names": "step_inputs"}),
        ("calls", {}),
        ("loads_nothing", {}),
        ("half", {}),
        ("moves_untried_all", {})
        if untried
        else ("moves_all", {"device": DEVICE.type}),
    ]


def _load_nothing(module: nn.Module) -> None:
    # The module has no weights, and its checkpoints hold nothing: an empty
    # state_dict loads with strict=True into a module that saves nothing.
    try:
        module.load_state_dict({}, strict=True)
    except Exception as error:  # the reader's bug, reported as a message
        said = " ".join(f"{type(error).__name__}: {error}".split())
        hint = "parameter" if dict(module.named_parameters()) else "persistent"
        raise WrongAnswerError(
            "not_loaded", hint, checkpoint="checkpoint_empty", error=said
        ) from None


def _half_output(half: object, expected: torch.Tensor) -> None:
    """The output of the module converted to float16, as for inference on
    a GPU: a float16 tensor (as its inputs and weights are), finite, and
    within float16's precision of ``expected``."""
    if not isinstance(half, torch.Tensor):
        got = type(half).__name__
        raise WrongAnswerError("not_tensor", "compare", got=got)
    if half.dtype != torch.float16:
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


#: The catalogue's mistakes a causal attention head can make (both
#: exercises compute one).
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
        _attention_step,
        WORDS,
        reference="lib_step",
        mistakes=MISTAKES,
    ),
]
