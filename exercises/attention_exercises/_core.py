"""What every exercise's check is made of: calling the reader's code, comparing
with the library and with the typical wrong answers, and saying what failed in
the reader's language."""

from __future__ import annotations

import contextlib
import inspect
import math
import re
import unicodedata
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, TypeVar

import torch
from torch import nn

from ._guard import TimeUp, kept, limited, time_limit
from ._messages import Messages, messages
from ._rules import NONE, Broken, Rules, active, prepare, watched

#: How many random inputs each check tries.
COUNT = 20

T = TypeVar("T")


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    dim: int = -1,
) -> torch.Tensor:
    """Scaled dot-product attention as the chapters write it, softmax over
    ``dim``: the library's result, or with other arguments, a typical
    mistake's. The steps come in the reader's order, so that a wrong
    answer's raises the same error as the reader's code."""
    # (..., t_q, d) @ (..., d, t_k) -> (..., t_q, t_k)
    return torch.softmax(q @ k.transpose(-2, -1) / scale, dim=dim) @ v


def values_on(reference: str) -> dict[str, Any]:
    """The fields of a "values" line: equal to ``reference`` on COUNT inputs."""
    return {"reference": reference, "count": COUNT}


#: The word before a hint.
LABELS: Messages = messages("labels")

#: What can go wrong whatever the exercise; {fields} are filled in.
PROBLEMS: Messages = messages("problems")

#: What the checks compare, named in the reader's language; an exercise's
#: own words add to these.
NOUNS: Messages = messages("nouns")

#: The hints every exercise may give.
HINTS: Messages = messages("hints")

#: What a passed check says it checked.
CHECKED: Messages = messages("checked")

#: The catalogue of typical mistakes, each with its hint: the same words in
#: every exercise where the mistake can happen (``Exercise.mistakes``).
MISTAKES: Messages = messages("mistakes")
CATALOGUE: tuple[str, ...] = tuple(MISTAKES)

#: The catalogue's mistakes that go together: dividing the scores by the
#: wrong number, the three ways a mask goes wrong, and all a causal head
#: written out can get wrong (an exercise's `mistakes` are made of these).
SCALING = frozenset({"scale_missing", "scale_by_d_k", "scale_wrong_size"})
MASKING = frozenset({"mask_polarity", "causal_diagonal", "mask_fill_zero"})
CAUSAL_ATTENTION = SCALING | MASKING | {"softmax_dim", "dot_T"}


@dataclass
class Example:
    """An input the reader's code failed on: the arguments it was called
    with, by the names of its parameters (first, for a module the check
    made, ``"module"``: how it made it, `Built`), and what it should have
    returned next to what it returned (``None`` where it raised)."""

    inputs: dict[str, object]
    expected: torch.Tensor | None = None
    got: torch.Tensor | None = None

    @property
    def size(self) -> int:
        """How large the input is: the elements of its tensors, and the
        sizes the module it went through was made with (`Built`)."""
        return sum(
            value.numel()
            if isinstance(value, torch.Tensor)
            else value.size
            if isinstance(value, Built)
            else 0
            for value in self.inputs.values()
        )


@dataclass(frozen=True)
class Built:
    """How the check made the reader's module (`module_from`), which the
    input of a failure shows before what the module was called with: the
    name of the class, and its arguments, each ``(name, value)`` (the name
    ``None`` for one passed by position only)."""

    name: str
    arguments: tuple[tuple[str | None, object], ...]

    def __repr__(self) -> str:
        shown = (
            repr(value) if key is None else f"{key}={value!r}"
            for key, value in self.arguments
        )
        return f"{self.name}({', '.join(shown)})"

    @property
    def size(self) -> int:
        """The sum of its whole-number arguments (sizes, numbers of heads)."""
        return sum(
            value
            for _, value in self.arguments
            if isinstance(value, int) and not isinstance(value, bool)
        )


class WrongAnswerError(Exception):
    """The first property the reader's answer does not have, and the input
    it was found on (`Example`) where one shows it."""

    def __init__(
        self, problem: str, hint: str | None = None, **fields: Any
    ) -> None:
        super().__init__(problem)
        self.problem, self.hint, self.fields = problem, hint, fields
        self.example: Example | None = None


@dataclass(frozen=True)
class Exercise:
    """An exercise that ``check`` can check.

    ``run(answer)`` raises `WrongAnswerError` at the first property the answer lacks
    and otherwise returns what it checked, as ``(key, fields)`` pairs of
    ``CHECKED`` or of ``words``, the exercise's own messages (hints, and the
    names of what it compares)."""

    id: str
    run: Callable[[Any], list[tuple[str, dict[str, Any]]]]
    words: Messages = field(default_factory=dict)
    #: What the task forbids, checked while the answer runs.
    rules: Rules = NONE
    #: The key, in ``words``, of what the answer is compared with: the
    #: library call, which every ✗ names.
    reference: str = ""
    #: The mistakes of the catalogue (`CATALOGUE`) that can happen in this
    #: exercise: its check recognises each and gives it its hint.
    mistakes: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = sorted(self.mistakes - set(CATALOGUE))
        if unknown:
            raise ValueError(
                f"mistakes of {self.id} must be in CATALOGUE, got {unknown}"
            )


@dataclass(frozen=True)
class Result:
    """What ``check`` found about an answer.

    Attributes:
        exercise: the exercise's id.
        passed: whether every check passed; also the result's truth value.
        message: what ``check`` prints (also ``str(result)``): ✓ and what
            was checked, or ✗, the first thing that failed and a hint.
        hint: the key of the hint given, ``None`` when none was.
    """

    exercise: str
    passed: bool
    message: str = field(repr=False)
    hint: str | None = None
    #: The lines of the message that give the hint, which a notebook folds.
    tip: str = field(default="", repr=False)
    #: The smallest input a ✗ was found on, with the expected and the
    #: returned values (``None`` on ✓, or where no input shows the failure).
    example: Example | None = field(default=None, repr=False)

    def __str__(self) -> str:
        return self.message

    def __bool__(self) -> bool:
        return self.passed


#: Chinese characters, and the CJK and full-width punctuation beside them: one
#: definition for the spaces Chinese text drops and for wrapping it.
_HAN = "\u4e00-\u9fff"
_CJK_PUNCTUATION = "\u3000-\u303f\uff00-\uffef"

#: A space that Chinese text does not take: between two Chinese characters
#: ("与 权重相同的", where a field starts with Chinese), or beside Chinese
#: punctuation. A space between Chinese and a word or code stays.
_CHINESE_SPACE = re.compile(
    rf"(?<=[{_HAN}]) +(?=[{_HAN}])"
    rf"|(?<=[{_CJK_PUNCTUATION}]) +"
    rf"| +(?=[{_CJK_PUNCTUATION}])"
)


def seed_weights(seed: int) -> None:
    """Seed the CPU's generator, which a check's modules draw their
    weights from (the checks run on the CPU). Not ``torch.manual_seed``:
    it also queues the seed for every CUDA device, with the stack that
    asked (1.7 ms a call in a test), and the queued seed would set the
    learner's CUDA generator once CUDA starts, after the check had put
    everything else back."""
    torch.default_generator.manual_seed(seed)


def say(messages: Messages, key: str, lang: str, **fields: Any) -> str:
    text = messages[key]
    said = text.get(lang, text["en"]).format(**fields)
    return _CHINESE_SPACE.sub("", said) if lang == "zh" else said


def call(
    answer: Callable[..., Any],
    *args: Any,
    wrong: Mapping[str, Callable[[], object]] = {},
    changes: tuple[int, ...] = (),
    watch: bool = True,
) -> Any:
    """``answer(*args)``; if it raises, and one of the ``wrong`` answers
    raises the same error, the failure names that wrong answer's hint. The
    tensors and modules among ``args`` must come back unchanged, but for
    those at the indices ``changes`` (a module the answer is to copy into).
    ``watch=False`` runs it without enforcing the task's rules: torch takes
    no fast path while a torch function mode watches, and some checks need
    the path a reader's code takes outside the checker."""
    before = [
        (index, state)
        for index, arg in enumerate(args)
        if index not in changes and (state := _state(arg)) is not None
    ]
    # What it is called with, as the reader's code sees it (a copy, which
    # the call cannot change): the failure after it shows this input.
    _last_inputs[:] = [
        *_made_with(answer),
        *(
            (_parameter_name(answer, index), _copy(arg))
            for index, arg in enumerate(args)
        ),
    ]
    broken: list[Broken] = []
    if watch:
        prepare(active())
    try:
        # Warnings are not failures (a test run may turn them into errors),
        # and a message that depends on the filters in force would vary.
        with warnings.catch_warnings(), kept(), limited():
            warnings.simplefilter("ignore")
            watcher = (
                watched(active(), answer, args)
                if watch
                else contextlib.nullcontext(broken)
            )
            with watcher as broken:
                result = answer(*args)
                if isinstance(result, torch.Tensor) and (
                    type(result) is not torch.Tensor
                ):
                    # A subclass's own methods are the answer's code: they
                    # run here, guarded, and the checks see a plain tensor.
                    result = result.as_subclass(torch.Tensor)
    except (TimeUp, SystemExit) as error:
        raise stopped(error) from None
    except Exception as error:  # the reader's bug, reported as a message
        if broken:  # a broken rule that some torch releases raise for
            raise broke(broken[0]) from None
        said = f"{type(error).__name__}: {error}"
        # Changing in place a tensor it was given that requires grad.
        leaf = "leaf Variable that requires grad" in said
        hint = _mistake(
            next(
                (key for key, make in wrong.items() if _raises(make, said)),
                "keep_inputs" if leaf else "compare",
            )
        )
        failure = WrongAnswerError("raised", hint, error=said)
        failure.example = Example(dict(_last_inputs))
        raise failure from None
    if broken:
        raise broke(broken[0])
    for index, state in before:
        if not _same(_state(args[index]), state):
            name = _parameter_name(answer, index)
            raise WrongAnswerError("mutated", "keep_inputs", name=name)
    return result


#: The ways of making each mistake: a mistake's key, and the wrong answers
#: that make it (a softmax over dim=0 and over dim=-2), each computing what
#: the reader's code returns, or raising the error it raises.
Ways = Mapping[str, Sequence[Callable[[], Any]]]


def variants(ways: Ways) -> dict[str, Callable[[], Any]]:
    """``ways`` as the wrong answers of `call` and `expect`, one entry each,
    keyed ``"mistake:number"``: each names its mistake's hint."""
    return {
        f"{key}:{number}": way
        for key, each in ways.items()
        for number, way in enumerate(each)
    }


def fill_zero_ways(
    scores: torch.Tensor, mask: torch.Tensor
) -> list[Callable[[], torch.Tensor]]:
    """The two ways of ``mask_fill_zero`` on ``scores`` and a mask whose True
    means masked out: the masked scores filled with 0 before the softmax, or
    their weights zeroed after it (rows that no longer sum to 1)."""
    return [
        lambda: torch.softmax(scores.masked_fill(mask, 0.0), dim=-1),
        lambda: torch.softmax(scores, dim=-1).masked_fill(mask, 0.0),
    ]


def _mistake(key: str) -> str:
    """The hint of a wrong answer's key: ``"mistake:way"`` is one of the
    ways of making ``mistake`` (`variants`)."""
    return key.partition(":")[0]


#: The inputs of the reader's last call (`call`), by parameter name.
_last_inputs: list[tuple[str, object]] = []

#: The modules that `module_from` made, by ``id``, each with how it was
#: made: a call of one shows that first, as ``module = ...``.
_built: dict[int, tuple[weakref.ref[nn.Module], Built]] = {}


def _made_with(answer: object) -> list[tuple[str, object]]:
    entry = _built.get(id(answer))
    if entry is None or entry[0]() is not answer:
        return []
    return [("module", entry[1])]


def _remember(
    module: nn.Module, answer: Any, args: tuple[object, ...]
) -> None:
    """Keep how ``module`` was made, ``answer(*args)``, while it lives."""
    try:
        parameters = list(inspect.signature(answer).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature
        parameters = []
    named = (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )
    arguments = tuple(
        (
            parameters[index].name
            if index < len(parameters) and parameters[index].kind in named
            else None,
            arg,
        )
        for index, arg in enumerate(args)
    )
    name = getattr(answer, "__name__", type(answer).__name__)
    try:
        ref = weakref.ref(module)
    except TypeError:  # a module that cannot be referred to weakly
        return
    key = id(module)
    _built[key] = (ref, Built(name, arguments))
    weakref.finalize(module, _built.pop, key, None)


def _copy(arg: object) -> object:
    """``arg`` as it is before the call: a tensor's values, and those of an
    object that holds tensors (a cache, which the call fills)."""
    if isinstance(arg, torch.Tensor) and not arg.is_meta:
        return arg.detach().clone()
    if isinstance(arg, SimpleNamespace):
        return SimpleNamespace(**{k: _copy(v) for k, v in vars(arg).items()})
    return arg


def each_seed(once: Callable[[int], T], kept: bool = True) -> list[T]:
    """``once(seed)`` for each of the COUNT seeds, and what each returned.
    At the first failure the rest still run, so that the failure shows the
    smallest input that fails the same way (a learner reads a 2 x 2 example
    more easily than a 7 x 7 one); what failed and the hint stay the
    first's, which the checks order to be the most precise. ``kept``: the
    results the answer returned must keep their values after later calls
    (not where a result is a view of state the task has it overwrite)."""
    results: list[T] = []
    first: WrongAnswerError | None = None
    _returned.clear()
    for seed in range(COUNT):
        try:
            results.append(once(seed))
        except WrongAnswerError as failure:
            if failure.example is None and not _structural(failure.problem):
                failure.example = Example(dict(_last_inputs))
            if first is None:
                if failure.example is None:
                    raise  # a rule, a time-up: nothing to compare sizes of
                first = failure
            elif (
                failure.example is not None
                and failure.problem == first.problem
                and first.example is not None
                and failure.example.size < first.example.size
            ):
                # The same problem on a smaller input: its numbers.
                first.example, first.fields = failure.example, failure.fields
    if first is not None:
        raise first
    if kept:
        _unchanged_since_returned()
    _returned.clear()
    return results


#: What `expect` accepted during `each_seed`: the tensor the reader's code
#: returned, a copy of its values then, and what it is called.
_returned: list[tuple[torch.Tensor, torch.Tensor, str]] = []


def _unchanged_since_returned() -> None:
    """A result must keep its values once returned: an answer that writes
    every result into one tensor (``out=`` a buffer of its own) returns
    right numbers each time, and the caller's earlier ones change."""
    for out, then, what in _returned:
        if not torch.equal(out.detach(), then):
            _returned.clear()
            raise WrongAnswerError("overwritten", "later_call", what=what)


#: Failures about how the answer is made, not about what it computes from
#: an input: they show no input.
_STRUCTURAL = {
    "missing",
    "overwritten",
    "instance",
    "not_module",
    "no_linear",
    "slow",
    "exited",
    "reads_value",
    "dynamic_shape",
}


def _structural(problem: str) -> bool:
    return problem in _STRUCTURAL or problem.startswith("rule_")


def stopped(error: TimeUp | SystemExit) -> WrongAnswerError:
    """What the reader's code stopped by the time limit, or by ``exit()``
    (which in a notebook cell ends nothing), is reported as."""
    if isinstance(error, SystemExit):
        return WrongAnswerError("exited", "no_exit", code=error.code)
    return WrongAnswerError("slow", "slow", seconds=time_limit())


def broke(rule: Broken) -> WrongAnswerError:
    """A rule of the task the reader's code broke, as a failure."""
    return WrongAnswerError(
        rule.problem or rule.hint, rule.hint, **rule.fields
    )


#: A copy of what an argument holds: a tensor's values, a module's state.
State = torch.Tensor | dict[str, torch.Tensor]


def _state(arg: object) -> State | None:
    if isinstance(arg, torch.Tensor):
        # A meta tensor has no values to compare.
        return None if arg.is_meta else arg.detach().clone()
    if isinstance(arg, nn.Module):
        state = {
            key: value.detach().clone()
            for key, value in arg.state_dict().items()
        }
        # Its mode too: an answer that calls `.eval()` on the caller's
        # module leaves dropout off in the caller's training loop.
        modes = [module.training for module in arg.modules()]
        return {**state, "(training)": torch.tensor(modes)}
    return None


def _same(a: State | None, b: State) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        # Shapes first: an answer that transposes its argument in place
        # leaves a tensor that may not broadcast with the copy.
        if a.shape != b.shape:
            return False
        both_nan = torch.isnan(a) & torch.isnan(b)
        return bool(((a == b) | both_nan).all())
    return False


def _parameter_name(answer: Callable[..., Any], index: int) -> str:
    # A module is called through forward, whose names the reader wrote.
    function = answer.forward if isinstance(answer, nn.Module) else answer
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):  # a builtin without a signature
        names = []
    return names[index] if index < len(names) else f"argument {index + 1}"


def _raises(make: Callable[[], object], said: str) -> bool:
    try:
        with warnings.catch_warnings():  # a wrong answer's, not the reader's
            warnings.simplefilter("ignore")
            make()
    except Exception as error:
        return f"{type(error).__name__}: {error}" == said
    return False


#: The comparison the checks make, kept as it was when the checker was
#: imported: an answer that replaces torch.allclose does not change verdicts.
_allclose = torch.allclose


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and _allclose(
        a.double(), b.double(), rtol=1e-4, atol=1e-5, equal_nan=False
    )


def expect(
    out: object,
    expected: torch.Tensor,
    what: str,
    wrong: Mapping[str, Callable[[], torch.Tensor]] = {},
) -> torch.Tensor:
    """``out`` must be ``expected``; if it is one of the ``wrong`` answers
    (hint key -> the wrong answer's result), the failure names its hint,
    and it shows the input of the call that returned ``out``."""
    try:
        return _expect(out, expected, what, wrong)
    except WrongAnswerError as failure:
        if failure.example is None:
            failure.example = Example(dict(_last_inputs), expected.detach())
        raise


def _expect(
    out: object,
    expected: torch.Tensor,
    what: str,
    wrong: Mapping[str, Callable[[], torch.Tensor]],
) -> torch.Tensor:
    if out is None:
        raise WrongAnswerError("returned_none", "return")
    if not isinstance(out, torch.Tensor):
        raise WrongAnswerError("not_tensor", "compare", got=type(out).__name__)
    if out.layout != torch.strided or out.device != expected.device:
        kind = out.device.type if out.layout == torch.strided else out.layout
        raise WrongAnswerError(
            "layout",
            "compare",
            what=what,
            kind=str(kind).removeprefix("torch."),
        )
    if out.dtype != expected.dtype:
        raise WrongAnswerError(
            "dtype",
            "dtype",
            what=what,
            got=str(out.dtype).removeprefix("torch."),
            expected=str(expected.dtype).removeprefix("torch."),
        )
    if close(out, expected):
        _returned.append((out, out.detach().clone(), what))
        return out
    hint = _mistake(
        next((key for key, make in wrong.items() if _is(out, make)), "compare")
    )
    if out.shape != expected.shape:
        failure = WrongAnswerError(
            "shape",
            hint,
            what=what,
            got=tuple(out.shape),
            expected=tuple(expected.shape),
        )
    elif not torch.isfinite(out).all():
        failure = WrongAnswerError("not_finite", hint, what=what)
    else:
        diff = (out.double() - expected.double()).abs().max().item()
        failure = WrongAnswerError("values", hint, what=what, diff=diff)
    failure.example = Example(
        dict(_last_inputs), expected.detach().clone(), out.detach().clone()
    )
    raise failure


def _is(out: torch.Tensor, make: Callable[[], torch.Tensor]) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wrong = make()
    except Exception:  # a wrong answer that cannot even be computed here
        return False
    if wrong.shape != out.shape:
        return False
    # A wrong answer's nan and inf must be in the same places, and its other
    # entries equal too.
    return _allclose(
        out.double(), wrong.double(), rtol=1e-4, atol=1e-5, equal_nan=True
    )


def module_from(answer: Any, *args: float, hint: str = "compare") -> nn.Module:
    """``answer(*args)``, which must make an ``nn.Module`` (else a failure
    with ``hint``). A failure found by calling the module shows how it was
    made, ``module = answer(d_in=..., ...)``, before its input."""
    if isinstance(answer, nn.Module):
        name = type(answer).__name__
        raise WrongAnswerError("instance", "pass_class", name=f"{name}(...)")
    module = call(answer, *args)
    if not isinstance(module, nn.Module):
        name = getattr(answer, "__name__", "answer")
        raise WrongAnswerError(
            "not_module", hint, name=name, got=type(module).__name__
        )
    _remember(module, answer, args)
    return module


def linear_named(
    module: nn.Module,
    name: str,
    d_in: int,
    d_out: int,
    wrong_layer: str = "names",
) -> nn.Linear:
    """The reader's ``nn.Linear(d_in, d_out)`` called ``name``: the checks
    copy the library's weights into it. No attribute of that name gets the
    hint ``names``; one that is not an ``nn.Linear`` of these sizes (an
    ``nn.Parameter``, a Linear with its sizes swapped) gets
    ``wrong_layer``, an exercise's own hint where it has one."""
    layer = getattr(module, name, None)
    if not isinstance(layer, nn.Linear) or layer.weight.shape != (
        d_out,
        d_in,
    ):
        hint = "names" if layer is None else wrong_layer
        raise WrongAnswerError(
            "no_linear", hint, name=name, d_in=d_in, d_out=d_out
        )
    return layer


def copy_weights(
    module: nn.Module,
    reference: nn.Module,
    names: tuple[str, ...],
    d_in: int,
    d_out: int,
) -> None:
    """Give the reader's layers called ``names`` the library module's
    weights; a bias the reader added starts at zero, as the library has none."""
    with torch.no_grad():
        for name in names:
            layer = linear_named(module, name, d_in, d_out)
            layer.weight.copy_(getattr(reference, name).weight)
            if layer.bias is not None:
                layer.bias.zero_()


def backward(out: torch.Tensor, module: nn.Module, what: str) -> None:
    """Backpropagate from the reader's ``out`` (the ``what``); every
    trainable parameter of ``module`` must get a gradient."""
    if not out.requires_grad:
        # Nothing to train at all, or a result cut off from the weights.
        frozen = [
            n for n, p in module.named_parameters() if not p.requires_grad
        ]
        if frozen:
            raise WrongAnswerError("no_grad", "frozen", name=frozen[0])
        raise WrongAnswerError("detached", "detached", what=what)
    _backpropagate(out.sum())
    gradients_reach(module)


def _backpropagate(loss: torch.Tensor) -> None:
    """``loss.backward()`` through the reader's graph, guarded: a time-up,
    or an error there, is the reader's ✗."""
    try:
        with kept(), limited():
            loss.backward()
    except TimeUp as error:
        raise stopped(error) from None
    except RuntimeError as error:  # the reader's graph, reported
        said = f"{type(error).__name__}: {error}"
        hint = "inplace_op" if "inplace operation" in str(error) else "compare"
        raise WrongAnswerError("backward", hint, error=said) from None


#: A result of the reader's function, the inputs a model trains through it
#: (by the names the task gives them), what the result is called, and the
#: right result as a function of those inputs: `gradients_flow`'s
#: arguments. The checks test every value first and the gradients after,
#: so that a result remembered from another call is told by its values,
#: whichever call it came from.
Flow = tuple[
    torch.Tensor,
    dict[str, torch.Tensor],
    str,
    Callable[[dict[str, torch.Tensor]], torch.Tensor],
]

#: How far a gradient may be from the right one, by dtype (absolute, and
#: relative to the largest entry): half precision rounds each step.
GRAD_TOLERANCE = {
    torch.float64: 1e-6,
    torch.float32: 1e-4,
    torch.float16: 2e-2,
    torch.bfloat16: 1e-1,
}


def gradients_flow(
    out: torch.Tensor,
    inputs: Mapping[str, torch.Tensor],
    what: str,
    expected: Callable[[dict[str, torch.Tensor]], torch.Tensor],
) -> None:
    """Backpropagate a random gradient from the reader's ``out`` (the
    ``what``): each of the ``inputs`` (by the name the task gives it), which
    a model trains through, must get the gradient it gets through
    ``expected``, the right result computed from copies of the inputs."""
    if not out.requires_grad:
        raise WrongAnswerError("detached", "detached", what=what)
    upstream = torch.rand(
        out.shape, generator=torch.Generator().manual_seed(0)
    )
    _backpropagate((out * upstream.to(out.dtype)).sum())
    copies = {
        name: tensor.detach().clone().requires_grad_()
        for name, tensor in inputs.items()
    }
    right = expected(copies)
    (right * upstream.to(right.dtype)).sum().backward()
    for name, tensor in inputs.items():
        if tensor.grad is None:
            raise WrongAnswerError("no_grad", "detached", name=name)
        if not torch.isfinite(tensor.grad).all():
            raise WrongAnswerError("grad_not_finite", "compare", name=name)
        grad_matches(name, tensor.grad, copies[name].grad)


def grad_matches(
    name: str, grad: torch.Tensor, right: torch.Tensor | None
) -> None:
    """The gradient that reached ``name`` must be the ``right`` one: a part of
    the computation cut off from autograd (a `.detach()`, a step under
    `torch.no_grad()`) leaves a gradient, and the wrong one."""
    if right is None or grad.shape != right.shape:
        return  # the reference's own graph: not the reader's to answer for
    tolerance = GRAD_TOLERANCE.get(grad.dtype, 1e-4)
    diff = (grad.double() - right.double()).abs().max().item()
    scale = max(1.0, right.double().abs().max().item())
    if diff > tolerance * scale:
        raise WrongAnswerError("grad_values", "grad_cut", name=name, diff=diff)


def layers_match(
    module: nn.Module, reference: nn.Module, names: list[str]
) -> None:
    """After a backward pass through both: each of the reader's layers
    called ``names`` has the gradients of the library's layer of that
    name."""
    for name in names:
        layer, lib_layer = getattr(module, name), getattr(reference, name)
        for part in ("weight", "bias"):
            tensor = getattr(layer, part, None)
            right = getattr(lib_layer, part, None)
            if tensor is None or tensor.grad is None or right is None:
                continue  # a part the library has not, or nothing reached
            grad_matches(f"{name}.{part}", tensor.grad, right.grad)


def gradients_reach(module: nn.Module) -> None:
    """After a backward pass: every trainable parameter has a gradient."""
    for name, parameter in module.named_parameters():
        if not parameter.requires_grad:
            raise WrongAnswerError("no_grad", "frozen", name=name)
        if parameter.grad is None:
            raise WrongAnswerError("no_grad", "detached", name=name)


#: A module to call again, the module it must agree with, the inputs and
#: what its outputs are called: `later_calls`'s arguments.
Later = tuple[
    nn.Module, Callable[[torch.Tensor], Any], list[torch.Tensor], str
]


def later_calls(
    module: nn.Module,
    reference: Callable[[torch.Tensor], Any],
    inputs: list[torch.Tensor],
    what: str,
    eval_too: bool = False,
) -> None:
    """Call the reader's ``module`` again, on ``inputs`` of other shapes and
    values (another number of tokens, another batch size, negative values,
    the first shape again): state built lazily, sized by the first call or
    remembered from it gives outputs other than the ``reference``'s. With
    ``eval_too`` (a module without dropout), once more in eval mode under
    ``torch.no_grad()``, as a model generates: the same outputs."""
    # The last shape twice in a row, with other values: a result kept for
    # the shape of the call before shows.
    for x in [*inputs, 0.5 - inputs[-1].flip(0)]:
        with torch.no_grad():
            expected = reference(x)
        with hinted("later_call", unless_named=True):
            expect(call(module, x), expected, what)
    if eval_too:
        x = 1.0 - inputs[0]
        module.eval()
        try:
            with torch.no_grad():
                expected = reference(x)
                with hinted("eval_mode", unless_named=True):
                    expect(call(module, x), expected, what)
        finally:
            module.train()


@contextlib.contextmanager
def hinted(hint: str, unless_named: bool = False) -> Iterator[None]:
    """A failure inside gets ``hint``: what the checks there try tells the
    mistake (``unless_named``: unless a more precise hint named it)."""
    try:
        yield
    except WrongAnswerError as failure:
        if not unless_named or failure.hint in ("compare", None):
            failure.hint = hint
        raise


def shares_memory(target: nn.Module, source: nn.Module) -> bool:
    """Whether a parameter of ``target`` lives in the memory of one of
    ``source``'s: a copy that is not one."""
    sources = {p.untyped_storage().data_ptr() for p in source.parameters()}
    return any(
        p.untyped_storage().data_ptr() in sources for p in target.parameters()
    )


def rows_sum_to_one(weights: torch.Tensor, hint: str) -> None:
    totals = weights.sum(dim=-1).reshape(-1)
    for row, total in enumerate(totals.tolist()):
        if not math.isclose(total, 1.0, abs_tol=1e-4):
            raise WrongAnswerError("rows", hint, row=row, total=total)


def _named(
    exercise: Exercise, lang: str, fields: dict[str, Any]
) -> dict[str, Any]:
    # A field that names one of the exercise's words ("scores") is shown in
    # the reader's language ("the attention scores", "注意力分数").
    words = {**NOUNS, **exercise.words}
    return {
        key: say(words, value, lang)
        if isinstance(value, str) and value in words
        else value
        for key, value in fields.items()
    }


def message(
    exercise: Exercise,
    lang: str,
    checked: list[tuple[str, dict[str, Any]]],
    failure: WrongAnswerError | None,
) -> Result:
    words = {**CHECKED, **exercise.words}
    if failure is None:
        done = [
            say(words, key, lang, **_named(exercise, lang, fields))
            for key, fields in checked
        ]
        lines = [
            f"✓ {exercise.id}",
            *(wrap(f"  - {item}", "    ") for item in done),
        ]
        return Result(exercise.id, True, "\n".join(lines))
    fields = _named(exercise, lang, failure.fields)
    # A failure may name what it was compared with (the same module in
    # another mode): one of the exercise's words, in place of its reference.
    reference = fields.setdefault(
        "reference", say(exercise.words, exercise.reference, lang)
    )
    problem = say(
        {**PROBLEMS, **exercise.words}, failure.problem, lang, **fields
    )
    lines = [wrap(f"✗ {exercise.id}: {problem}", "  ")]
    lines.append(
        wrap(
            "  " + say(LABELS, "reference", lang, reference=reference), "    "
        )
    )
    if failure.example is not None:
        lines += _example_lines(failure.example, lang)
    tip = ""
    if failure.hint is not None:
        hints = {**HINTS, **exercise.words, **MISTAKES}
        hint = say(hints, failure.hint, lang, **fields)
        label = say(LABELS, "hint", lang)
        tip = wrap(f"  {label}{hint}", "    ")
    text = "\n".join([*lines, tip] if tip else lines)
    return Result(exercise.id, False, text, failure.hint, tip, failure.example)


#: An input, or a result, is shown whole up to this many numbers; a larger
#: one by its shape, and the results by their first difference.
_SHOWN = 16


def _example_lines(example: Example, lang: str) -> list[str]:
    """The input a failure was found on, and what the answer returned next
    to what it should have, in a few lines."""
    lines = [wrap("  " + say(LABELS, "example", lang), "    ")]
    for name, value in example.inputs.items():
        lines += _value_lines(f"    {name} = ", value, lang)
    expected, got = example.expected, example.got
    if expected is None or got is None:
        return lines
    if (_small(expected) and _small(got)) or expected.shape != got.shape:
        # Two decimals, or four where the results differ by less.
        near = expected.shape == got.shape and torch.allclose(
            expected.double(), got.double(), atol=0.05, rtol=0, equal_nan=True
        )
        labels = [say(LABELS, key, lang) for key in ("expected", "got")]
        width = max(_columns(label) for label in labels) + 1
        for label, tensor in zip(labels, (expected, got), strict=True):
            prefix = "  " + label + " " * (width - _columns(label))
            lines += _value_lines(prefix, tensor, lang, 4 if near else 2)
        return lines
    index = _first_difference(expected, got)
    at = ", ".join(str(i) for i in index)
    lines.append(
        wrap(
            "  "
            + say(
                LABELS,
                "difference",
                lang,
                index=f"[{at}]",
                expected=_number(expected[index]),
                got=_number(got[index]),
            ),
            "    ",
        )
    )
    return lines


def _small(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is printed whole: a few numbers in a few rows."""
    rows = tensor.numel() // max(1, tensor.shape[-1]) if tensor.dim() else 1
    return not tensor.is_meta and tensor.numel() <= _SHOWN and rows <= 3


def _columns(text: str) -> int:
    return sum(
        2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text
    )


def _value_lines(
    prefix: str, value: object, lang: str, precision: int = 2
) -> list[str]:
    if isinstance(value, torch.Tensor):
        if not _small(value):
            shape = tuple(value.shape)
            text = say(LABELS, "shape", lang, shape=shape)
            return [prefix + text]
        # Without the blank line torch prints between the matrices of a
        # 3-D tensor: an indented block reads as well without it.
        pad = " " * _columns(prefix)
        printed = _printed(value, precision, 79 - len(pad))
        shown = [line for line in printed.split("\n") if line]
        return [prefix + shown[0], *(pad + line for line in shown[1:])]
    if isinstance(value, nn.Module):
        return [
            prefix + say(LABELS, "module", lang, name=type(value).__name__)
        ]
    if isinstance(value, Built):  # how the module was made: code to run
        return [wrap(prefix + repr(value), " " * (_columns(prefix) + 4))]
    if isinstance(value, SimpleNamespace):  # a cache: what it holds
        name = prefix.strip().removesuffix("=").strip()
        indent = prefix[: len(prefix) - len(prefix.lstrip())]
        return [
            line
            for key, held in vars(value).items()
            for line in _value_lines(
                f"{indent}{name}.{key} = ", held, lang, precision
            )
        ]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return [prefix + repr(value)]
    return [prefix + type(value).__name__]


def _printed(tensor: torch.Tensor, precision: int, width: int) -> str:
    """``repr`` of ``tensor`` with ``precision`` decimals, torch's print
    options as they were afterwards."""
    options = torch._tensor_str.PRINT_OPTS
    saved = dict(vars(options))
    # What torch.set_printoptions sets, without its defaults for the rest.
    options.precision, options.sci_mode, options.linewidth = (
        precision,
        False,
        width,
    )
    try:
        return repr(tensor.detach().cpu())
    finally:
        vars(options).update(saved)


def _number(value: torch.Tensor) -> str:
    return f"{value.item():.4g}"


def _first_difference(
    expected: torch.Tensor, got: torch.Tensor
) -> tuple[int, ...]:
    differ = ~torch.isclose(
        got.double(), expected.double(), rtol=1e-4, atol=1e-5
    )
    where = differ.nonzero()
    if len(where) == 0:  # the difference is in a place only allclose sees
        where = torch.zeros(1, expected.dim(), dtype=torch.long)
    return tuple(int(i) for i in where[0])


#: A token of text to wrap: a Chinese character (a line may break after any),
#: a word, or the spaces between words. Inline code in backticks is part of
#: its word, spaces and all, so that a printed hint can be copied as it is.
#: Chinese punctuation stays with its neighbour, as Chinese typesetting
#: wants: a line never starts with ，。：；） and never ends with （.
_TOKEN = re.compile(
    r"[（“]*"
    rf"(?:[{_HAN}{_CJK_PUNCTUATION}]"
    rf"|(?:`[^`\n]*`|[^\s{_HAN}{_CJK_PUNCTUATION}“”`])+)"
    r"[，。：；）、！？”]*"
    r"|\s+"
)


#: How long a Latin expression inside Chinese text may be and still be kept
#: on one line (``t1 != t2``, ``dim = -1``): longer ones break as words do.
_EXPRESSION = 24


def _latin(token: str) -> bool:
    return (
        not token.isspace()
        and re.match(rf"[（“]*[{_HAN}{_CJK_PUNCTUATION}]", token) is None
    )


def _tokens(text: str) -> list[str]:
    """``text``'s tokens, a short Latin expression that sits inside Chinese
    (between Chinese characters, words separated by single spaces) made one."""
    tokens, i = _TOKEN.findall(text), 0
    merged: list[str] = []
    while i < len(tokens):
        end = i
        if (
            _latin(tokens[i])
            and merged[-2:-1]
            and not _latin(merged[-2])
            and merged[-1] == " "
        ):
            while (
                end + 2 < len(tokens)
                and tokens[end + 1] == " "
                and _latin(tokens[end + 2])
                and len("".join(tokens[i : end + 3])) <= _EXPRESSION
            ):
                end += 2
            after = tokens[end + 1 : end + 3]
            if after[:1] == [" "]:
                after = after[1:]
            if after and _latin(after[0]):
                end = i  # it runs on in Latin: a phrase, which breaks as words do
        merged.append("".join(tokens[i : end + 1]))
        i = end + 1
    return merged


def wrap(text: str, indent: str, width: int = 79) -> str:
    """``text`` in lines of at most ``width`` columns (a wide character
    counts two), every line but the first indented by ``indent``."""
    lines, line, used = [], indent[:0], 0
    for token in _tokens(text):
        size = sum(
            2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in token
        )
        if used + size > width and line.strip():
            lines.append(line.rstrip())
            line, used = indent, len(indent)
            if token.isspace():
                continue
        line += token
        used += size
    lines.append(line.rstrip())
    return "\n".join(lines)
