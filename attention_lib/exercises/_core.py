"""What every exercise's check is made of: calling the reader's code, comparing
with the library and with the typical wrong answers, and saying what failed in
the reader's language."""

from __future__ import annotations

import inspect
import math
import re
import unicodedata
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

LANGUAGES = ("en", "zh")

#: How many random inputs each check tries.
COUNT = 20


def values_on(reference: str) -> dict[str, Any]:
    """The fields of a "values" line: equal to ``reference`` on COUNT inputs."""
    return {"reference": reference, "count": COUNT}


#: Each message in every language: {key: {lang: template}}.
Messages = Mapping[str, Mapping[str, str]]

#: What can go wrong whatever the exercise; {fields} are filled in.
PROBLEMS: Messages = {
    "missing": {
        "en": "there is no answer to check yet (got {got})",
        "zh": "还没有可以检查的答案（收到的是 {got}）",
    },
    "raised": {
        "en": "calling it raised {error}",
        "zh": "调用它时抛出了 {error}",
    },
    "returned_none": {
        "en": "it returned None",
        "zh": "它返回了 None",
    },
    "not_tensor": {
        "en": "it returned a {got}, not a tensor",
        "zh": "它返回的是 {got}，不是张量",
    },
    "shape": {
        "en": "the {what} have shape {got}, expected {expected}",
        "zh": "{what}的形状是 {got}，应为 {expected}",
    },
    "values": {
        "en": "the {what} differ from the right ones by up to {diff:.3g}",
        "zh": "{what}与正确结果最多相差 {diff:.3g}",
    },
    "not_module": {
        "en": "{name}(...) made a {got}, not an nn.Module",
        "zh": "{name}(...) 创建的是 {got}，不是 nn.Module",
    },
    "no_linear": {
        "en": "it has no nn.Linear({d_in}, {d_out}) called {name}",
        "zh": "它没有名为 {name} 的 nn.Linear({d_in}, {d_out})",
    },
    "not_finite": {
        "en": "the {what} contain nan or inf",
        "zh": "{what}中出现了 nan 或 inf",
    },
    "rows": {
        "en": "row {row} of the weights sums to {total:.4f}, not 1",
        "zh": "注意力权重的第 {row} 行之和是 {total:.4f}，不是 1",
    },
    "future": {
        "en": "token {i}'s output changes when you change token {j}",
        "zh": "改变词元 {j} 时，词元 {i} 的输出也变了",
    },
    "no_grad": {
        "en": "no gradient reaches {name}",
        "zh": "梯度没有传到 {name}",
    },
    "backward": {
        "en": "the backward pass through it raised {error}",
        "zh": "对它做反向传播时抛出了 {error}",
    },
    "detached": {
        "en": "the {what} carry no gradient: they are cut off from the "
        "weights",
        "zh": "{what}不带梯度：它们已经和权重断开了",
    },
    "mutated": {
        "en": "it changed its argument `{name}` in place",
        "zh": "它原地修改了传给它的 `{name}`",
    },
    "dtype": {
        "en": "the {what} are {got}, expected {expected}",
        "zh": "{what}的数据类型是 {got}，应为 {expected}",
    },
    "layout": {
        "en": "the {what} are a {kind} tensor, not an ordinary one on the CPU",
        "zh": "{what}是 {kind} 张量，不是 CPU 上的普通张量",
    },
    "instance": {
        "en": "it is a module already made ({name}), not the class to make "
        "one",
        "zh": "它是一个已经创建好的模块（{name}），而不是用来创建模块的类",
    },
}

#: What the checks compare, named in the reader's language; an exercise's
#: own words add to these.
NOUNS: Messages = {
    "scores": {"en": "attention scores", "zh": "注意力分数"},
    "weights": {"en": "attention weights", "zh": "注意力权重"},
    "context": {"en": "context vectors", "zh": "上下文向量"},
    "output": {"en": "outputs", "zh": "输出"},
}

#: The hints every exercise may give.
HINTS: Messages = {
    "return": {
        "en": "end the function with `return` and the result.",
        "zh": "在函数末尾用 `return` 返回结果。",
    },
    "define": {
        "en": "define your function or class first, under the name the "
        "exercise asks for, then pass it to check.",
        "zh": "先用练习要求的名字定义你的函数或类，再把它传给 check。",
    },
    "names": {
        "en": "keep the names the page uses (W_query, W_key, W_value), so "
        "that the check can give your module the library's weights.",
        "zh": "沿用页面上的名字（W_query、W_key、W_value），"
        "这样检查时才能把库中模块的权重放进你的模块。",
    },
    "compare": {
        "en": "print your result next to the library's for one small "
        "input, and compare them step by step.",
        "zh": "对同一个小输入，把你的结果和库的结果并排打印出来，一步一步对比。",
    },
    "inplace_op": {
        "en": "an in-place operation (`masked_fill_`, `mul_`, `+=`, `/=`) "
        "changed a tensor that autograd still needs for the backward pass: "
        "use the out-of-place form (`masked_fill`, `*`, `x = x / s`).",
        "zh": "原地操作（`masked_fill_`、`mul_`、`+=`、`/=`）改动了 autograd "
        "在反向传播时还要用到的张量：改用非原地的写法"
        "（`masked_fill`、`*`、`x = x / s`）。",
    },
    "detached": {
        "en": "do not `.detach()` the result, or compute it under "
        "`torch.no_grad()`: training needs the gradients to reach the "
        "weights.",
        "zh": "不要对结果调用 `.detach()`，也不要在 `torch.no_grad()` "
        "下计算它：训练需要梯度一路传回权重。",
    },
    "frozen": {
        "en": "every parameter must be able to train: do not "
        "`requires_grad_(False)` a layer or make it under `torch.no_grad()`.",
        "zh": "每个参数都必须能够训练：不要对某一层调用 `requires_grad_(False)`，"
        "也不要在 `torch.no_grad()` 下创建它。",
    },
    "pass_class": {
        "en": "pass the class itself (`MyModule`), not a module made from it "
        "(`MyModule(3, 2)`): the check makes its own, with sizes of its "
        "choosing.",
        "zh": "传入类本身（`MyModule`），而不是用它创建的模块（`MyModule(3, 2)`）："
        "检查器会自己用它选定的尺寸创建模块。",
    },
    "keep_inputs": {
        "en": "compute on new tensors (`x = x / s`, not `x /= s`): the "
        "caller's tensors, a module's weights or the page's inputs, must "
        "stay as they were.",
        "zh": "在新张量上计算（写 `x = x / s`，不要写 `x /= s`）：调用者的张量，"
        "比如模块的权重或页面上的输入，必须保持原样。",
    },
    "dtype": {
        "en": "keep the dtype of the inputs: no `.double()`, `.half()` or "
        "`.float()` on the result, and no tensor made in another dtype "
        "that promotes it.",
        "zh": "保持输入的数据类型：不要对结果调用 `.double()`、`.half()` 或 "
        "`.float()`，也不要用别的数据类型新建张量而让结果被提升。",
    },
}

#: What a passed check says it checked.
CHECKED: Messages = {
    "shape": {
        "en": "{what}: shape {shape}",
        "zh": "{what}：形状 {shape}",
    },
    "values": {
        "en": "equal to {reference} on {count} random inputs",
        "zh": "在 {count} 组随机输入上与 {reference} 相等",
    },
    "rows": {
        "en": "every row of the weights sums to 1",
        "zh": "注意力权重每一行之和都是 1",
    },
    "future": {
        "en": "no token sees a later one",
        "zh": "没有词元能看到它之后的词元",
    },
    "grad": {
        "en": "gradients reach every parameter",
        "zh": "梯度能传到每一个参数",
    },
    "large": {
        "en": "no nan for scores as large as {size}",
        "zh": "分数大到 {size} 时也不出现 nan",
    },
}


class WrongAnswerError(Exception):
    """The first property the reader's answer does not have."""

    def __init__(
        self, problem: str, hint: str | None = None, **fields: Any
    ) -> None:
        super().__init__(problem)
        self.problem, self.hint, self.fields = problem, hint, fields


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
    message: str
    hint: str | None = None

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


def say(messages: Messages, key: str, lang: str, **fields: Any) -> str:
    text = messages[key]
    said = text.get(lang, text["en"]).format(**fields)
    return _CHINESE_SPACE.sub("", said) if lang == "zh" else said


def call(
    answer: Callable[..., Any],
    *args: Any,
    wrong: Mapping[str, Callable[[], object]] = {},
    changes: tuple[int, ...] = (),
) -> Any:
    """``answer(*args)``; if it raises, and one of the ``wrong`` answers
    raises the same error, the failure names that wrong answer's hint. The
    tensors and modules among ``args`` must come back unchanged, but for
    those at the indices ``changes`` (a module the answer is to copy into)."""
    before = [
        (index, state)
        for index, arg in enumerate(args)
        if index not in changes and (state := _state(arg)) is not None
    ]
    try:
        # Warnings are not failures (a test run may turn them into errors),
        # and a message that depends on the filters in force would vary.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = answer(*args)
    except Exception as error:  # the reader's bug, reported as a message
        said = f"{type(error).__name__}: {error}"
        hint = next(
            (key for key, make in wrong.items() if _raises(make, said)),
            "compare",
        )
        raise WrongAnswerError("raised", hint, error=said) from None
    for index, state in before:
        if not _same(_state(args[index]), state):
            name = _parameter_name(answer, index)
            raise WrongAnswerError("mutated", "keep_inputs", name=name)
    return result


#: A copy of what an argument holds: a tensor's values, a module's state.
State = torch.Tensor | dict[str, torch.Tensor]


def _state(arg: object) -> State | None:
    if isinstance(arg, torch.Tensor):
        # A meta tensor has no values to compare.
        return None if arg.is_meta else arg.detach().clone()
    if isinstance(arg, nn.Module):
        return {
            key: value.detach().clone()
            for key, value in arg.state_dict().items()
        }
    return None


def _same(a: State | None, b: State) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        both_nan = torch.isnan(a) & torch.isnan(b)
        return a.shape == b.shape and bool(((a == b) | both_nan).all())
    return False


def _parameter_name(answer: Callable[..., Any], index: int) -> str:
    try:
        names = list(inspect.signature(answer).parameters)
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


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(
        a.double(), b.double(), rtol=1e-4, atol=1e-5, equal_nan=False
    )


def expect(
    out: object,
    expected: torch.Tensor,
    what: str,
    wrong: Mapping[str, Callable[[], torch.Tensor]] = {},
) -> torch.Tensor:
    """``out`` must be ``expected``; if it is one of the ``wrong`` answers
    (hint key -> the wrong answer's result), the failure names its hint."""
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
        return out
    hint = next(
        (key for key, make in wrong.items() if _is(out, make)), "compare"
    )
    if out.shape != expected.shape:
        raise WrongAnswerError(
            "shape",
            hint,
            what=what,
            got=tuple(out.shape),
            expected=tuple(expected.shape),
        )
    if not torch.isfinite(out).all():
        raise WrongAnswerError("not_finite", hint, what=what)
    diff = (out.double() - expected.double()).abs().max().item()
    raise WrongAnswerError("values", hint, what=what, diff=diff)


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
    return torch.allclose(
        out.double(), wrong.double(), rtol=1e-4, atol=1e-5, equal_nan=True
    )


def module_from(answer: Any, *args: int) -> nn.Module:
    """``answer(*args)``, which must make an ``nn.Module``."""
    if isinstance(answer, nn.Module):
        name = type(answer).__name__
        raise WrongAnswerError("instance", "pass_class", name=f"{name}(...)")
    module = call(answer, *args)
    if not isinstance(module, nn.Module):
        name = getattr(answer, "__name__", "answer")
        raise WrongAnswerError(
            "not_module", "compare", name=name, got=type(module).__name__
        )
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
        raise WrongAnswerError("detached", "detached", what=what)
    try:
        out.sum().backward()
    except RuntimeError as error:  # the reader's graph, reported
        said = f"{type(error).__name__}: {error}"
        hint = "inplace_op" if "inplace operation" in str(error) else "compare"
        raise WrongAnswerError("backward", hint, error=said) from None
    gradients_reach(module)


def gradients_reach(module: nn.Module) -> None:
    """After a backward pass: every trainable parameter has a gradient."""
    for name, parameter in module.named_parameters():
        if not parameter.requires_grad:
            raise WrongAnswerError("no_grad", "frozen", name=name)
        if parameter.grad is None:
            raise WrongAnswerError("no_grad", "detached", name=name)


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
    problem = say(PROBLEMS, failure.problem, lang, **fields)
    lines = [wrap(f"✗ {exercise.id}: {problem}", "  ")]
    if failure.hint is not None:
        hint = say({**HINTS, **exercise.words}, failure.hint, lang)
        label = "提示：" if lang == "zh" else "Hint: "
        lines.append(wrap(f"  {label}{hint}", "    "))
    return Result(exercise.id, False, "\n".join(lines), failure.hint)


#: A token of text to wrap: a Chinese character (a line may break after any),
#: a word, or the spaces between words. Chinese punctuation stays with its
#: neighbour, as Chinese typesetting wants: a line never starts with ，。：；）
#: and never ends with （.
_TOKEN = re.compile(
    r"[（“]*"
    rf"(?:[{_HAN}{_CJK_PUNCTUATION}]"
    rf"|[^\s{_HAN}{_CJK_PUNCTUATION}“”]+)"
    r"[，。：；）、！？”]*"
    r"|\s+"
)


def wrap(text: str, indent: str, width: int = 79) -> str:
    """``text`` in lines of at most ``width`` columns (a wide character
    counts two), every line but the first indented by ``indent``."""
    lines, line, used = [], indent[:0], 0
    for token in _TOKEN.findall(text):
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
