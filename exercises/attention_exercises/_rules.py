"""The rules a task states ("without a loop", "rather than torch.softmax",
"call it once"), enforced while the reader's code runs: a rule broken is a ✗
with a hint that names it, whatever the numbers."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode


@dataclass(frozen=True)
class Rules:
    """What an exercise's task forbids.

    Attributes:
        no_loop: no Python loop (``for``, ``while``, a comprehension) runs
            in the reader's own code.
        functions: Python functions that must not run, such as the library
            function that *is* the exercise, by the name the hint shows.
        torch_functions: torch functions that must not run, by name
            (``softmax`` covers ``torch.softmax``, ``F.softmax``,
            ``Tensor.softmax`` and ``nn.Softmax``).
        sdpa_calls: how many times ``F.scaled_dot_product_attention`` must
            run in one call of the answer, if the task says.
        no_enable_gqa: ``enable_gqa=True`` must not be passed to it.
        causal_alone: called without its optional mask (its fourth
            argument), the answer calls it with ``is_causal=True`` and no
            ``attn_mask``: the fast path the task asks for.
        shared_kv: the answer's keys and values (its second and third
            arguments) are shared with the query heads, not repeated: no
            `repeat`, `repeat_interleave` or `tile` on them, a view of them
            or a copy of them (a floating-point tensor of three dimensions
            or more outside the queries' memory; a mask may be tiled). Told
            once the results are right.
        graph_safe: the answer could be recorded as a CUDA graph: it reads
            no tensor's value into Python (``.item()``, ``int()``,
            ``.tolist()``, ``.numpy()``, a tensor as a slice bound,
            ``torch.tensor`` of tensors) and makes no shape that depends on
            values (``nonzero``, a boolean index).
    """

    no_loop: bool = False
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    torch_functions: frozenset[str] = frozenset()
    sdpa_calls: int | None = None
    no_enable_gqa: bool = False
    causal_alone: bool = False
    shared_kv: bool = False
    graph_safe: bool = False


#: Every exercise: ``is_causal=True`` with an ``attn_mask`` is an error in
#: PyTorch's documentation, raised by some releases and quietly combined by
#: others, so it is refused on all of them.
NONE = Rules()


@dataclass
class Broken:
    """The first rule the reader's code broke: a hint key and its fields."""

    hint: str
    fields: dict[str, Any]
    #: The problem to name, when it is not the hint's own key.
    problem: str | None = None


#: The rules of the exercise being checked (``ruling``).
_active = [NONE]
#: Rules of how, not of what, broken so far: told once the answer's results
#: are right, so that a wrong result gets its own hint first.
_later: list[Broken] = []


@contextlib.contextmanager
def ruling(rules: Rules) -> Iterator[list[Broken]]:
    """Check every call of the reader's code under ``rules``; the list it
    gives holds the rules of how that were broken, once the checks are
    done."""
    _active[0] = rules
    _later.clear()
    try:
        yield _later
    finally:
        _active[0] = NONE


def active() -> Rules:
    return _active[0]


#: What repeats a tensor's entries into new memory (`Rules.shared_kv`).
_REPEATS = frozenset({"repeat", "repeat_interleave", "tile"})


def _memory(arg: Any) -> int | None:
    if not isinstance(arg, torch.Tensor) or arg.is_meta:
        return None
    return int(arg.untyped_storage().data_ptr())


class _Watch(TorchFunctionMode):
    def __init__(
        self, rules: Rules, found: list[Broken], args: tuple[Any, ...] = ()
    ) -> None:
        super().__init__()
        self.rules, self.found, self.sdpa = rules, found, 0
        #: shared_kv: the memory of the queries and of the keys and values
        self.queries = _memory(args[0]) if args else None
        self.kv = {_memory(arg) for arg in args[1:3]} - {None}
        #: (whether it got an attn_mask, whether is_causal) for each call
        self.masks: list[tuple[bool, bool]] = []
        #: graph_safe: tensor values read into Python, and shapes made from
        #: values (the operators' share is counted by _Ops)
        self.host_reads = self.dynamic_shapes = 0

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if func is F.scaled_dot_product_attention:
            self.sdpa += 1
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            causal = kwargs.get(
                "is_causal", args[5] if len(args) > 5 else False
            )
            self.masks.append((mask is not None, bool(causal)))
            if causal and mask is not None:
                self.found.append(Broken("rule_causal_and_mask", {}))
            if self.rules.no_enable_gqa and kwargs.get("enable_gqa"):
                self.found.append(Broken("rule_enable_gqa", {}))
            if name in self.rules.torch_functions:
                self.found.append(Broken("rule_function", {"name": name}))
        elif name.lstrip("_") in self.rules.torch_functions:
            self.found.append(Broken("rule_function", {"name": name}))
        elif self.rules.shared_kv and name in _REPEATS and self._kv(args):
            _later.append(
                Broken("share_heads", {"name": name}, "rule_function")
            )
        elif self.rules.graph_safe and _reads_without_an_operator(name, args):
            self.host_reads += 1
        return func(*args, **kwargs)

    def _kv(self, args: tuple[Any, ...]) -> bool:
        """Whether a repeat is called on the keys or the values: a tensor
        in their memory, or a floating-point one of three dimensions or more
        outside the queries' (a copy of them)."""
        tensor = args[0] if args else None
        if not isinstance(tensor, torch.Tensor):
            return False
        memory = _memory(tensor)
        copy = tensor.dim() >= 3 and tensor.is_floating_point()
        return memory in self.kv or (copy and memory != self.queries)


def _reads_without_an_operator(name: str, args: tuple[Any, ...]) -> bool:
    """``.tolist()``, ``.numpy()`` and ``torch.tensor`` of tensors read
    values into Python below the operators that ``_Ops`` sees."""
    data = args[0] if args else None
    from_tensors = isinstance(data, (list, tuple)) and any(
        isinstance(item, torch.Tensor) for item in data
    )
    return name in ("tolist", "numpy") or (name == "tensor" and from_tensors)


# torch leaves TorchDispatchMode's __init_subclass__ and __init__ untyped.
class _Idle(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """A dispatch mode that changes nothing (`prepare`)."""

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        return func(*args, **(kwargs or {}))


def prepare(rules: Rules) -> None:
    """What watching ``rules`` costs once per process, paid before the
    answer's time limit starts: torch's first operator under a dispatch mode
    (`_Ops`) imports torch._dynamo, seconds on a busy machine, which would
    be counted against the reader's first call."""
    if rules.torch_functions or rules.graph_safe:
        _first_dispatch()


@functools.cache
def _first_dispatch() -> None:
    with _Idle():  # type: ignore[no-untyped-call]
        torch.zeros(1).add(1)


# torch leaves TorchDispatchMode's __init_subclass__ and __init__ untyped.
class _Ops(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Sees the operators torch runs, below its functions: a softmax inside
    ``F.softmin``, or called as ``torch.ops.aten``, is one too."""

    def __init__(self, rules: Rules, watch: _Watch) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.names, self.graph_safe = rules.torch_functions, rules.graph_safe
        self.watch = watch

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        name = func._schema.name.split("::")[-1].lstrip("_")
        if name in self.names:
            self.watch.found.append(Broken("rule_function", {"name": name}))
        if self.graph_safe:
            if name == "local_scalar_dense":  # .item(), int(), a slice bound
                self.watch.host_reads += 1
            elif name in (
                "nonzero",
                "masked_select",
                "unique2",
                "unique_dim",
            ) or (name.startswith("index") and _has_boolean_index(args)):
                self.watch.dynamic_shapes += 1
        return func(*args, **(kwargs or {}))


def _has_boolean_index(args: tuple[Any, ...]) -> bool:
    return any(
        isinstance(index, torch.Tensor) and index.dtype == torch.bool
        for arg in args
        if isinstance(arg, (list, tuple))
        for index in arg
    )


@contextlib.contextmanager
def watched(
    rules: Rules, answer: Any, args: tuple[Any, ...] = ()
) -> Iterator[list[Broken]]:
    """Run the code inside under ``rules``; the list it gives holds what was
    broken, once the code is done."""
    found: list[Broken] = []
    mode = _Watch(rules, found, args)
    codes = {fn.__code__: name for name, fn in rules.functions.items()}
    traced = _tracer(rules, codes, found) if (rules.no_loop or codes) else None
    previous = sys.gettrace()
    if traced is not None:
        sys.settrace(traced)
    ops = (
        _Ops(rules, mode)
        if rules.torch_functions or rules.graph_safe
        else contextlib.nullcontext()
    )
    try:
        with mode, ops:
            yield found
    finally:
        if traced is not None:
            # Run under the tracer it replaces: coverage cannot see it.
            sys.settrace(previous)  # pragma: no cover
    if mode.host_reads:
        found.append(
            Broken("reads_position", {"count": mode.host_reads}, "reads_value")
        )
    elif mode.dynamic_shapes:
        found.append(Broken("every_slot", {}, "dynamic_shape"))
    # A count of calls is a function's rule, not its class's constructor's.
    counted = rules.sdpa_calls is not None and not isinstance(answer, type)
    if counted and mode.sdpa != rules.sdpa_calls:
        found.append(Broken("rule_sdpa_calls", {"count": mode.sdpa}))
    unmasked = len(args) < 4 or args[3] is None
    if (
        rules.causal_alone
        and unmasked
        and mode.masks != [(False, True)] * mode.sdpa
    ):
        _later.append(Broken("rule_causal_alone", {}))


@functools.cache  # the same for every call of every answer
def _library_folders() -> tuple[str, ...]:
    """Where code that is not the reader's lives: Python's own library,
    installed packages, torch, attention_lib and the checker (editable
    installs live elsewhere)."""
    import attention_lib

    paths = sysconfig.get_paths()
    folders = {paths["stdlib"], paths["platstdlib"], paths["purelib"]}
    folders.add(paths["platlib"])
    for module in (torch, attention_lib, sys.modules[__package__ or ""]):
        folders.add(os.path.dirname(str(module.__file__)))
    return tuple(os.path.realpath(folder) + os.sep for folder in folders)


def _readers(  # pragma: no cover (called by the trace function below)
    filename: str, library: tuple[str, ...]
) -> bool:
    """Whether code from ``filename`` is the reader's: a notebook cell, a
    script, a module of their own, not a library's."""
    if filename.startswith("<frozen"):
        return False
    return not os.path.realpath(filename).startswith(library)


def _tracer(
    rules: Rules,
    codes: dict[CodeType, str],
    found: list[Broken],
) -> Callable[[FrameType, str, Any], Any]:
    """A trace function: it names a forbidden function the moment it is
    called, and, in the reader's own code (any cell or file of theirs), a
    jump back to an instruction a frame has run already, which only a loop
    makes. A generator's frame keeps what it ran across its resumptions."""
    library = _library_folders()
    readers: dict[str, bool] = {}
    furthest: dict[int, int] = {}
    frames: list[FrameType] = []  # alive while traced, so ids stay theirs
    sites: set[Any] = set()

    # The trace function itself: coverage, one too, cannot see it run.
    def call(  # pragma: no cover
        frame: FrameType, event: str, arg: Any
    ) -> Any:
        if event != "call":
            return None
        if frame.f_code in codes:
            found.append(
                Broken("rule_function", {"name": codes[frame.f_code]})
            )
        if not rules.no_loop:
            return None
        name = frame.f_code.co_filename
        if name not in readers:
            readers[name] = _readers(name, library)
        if not readers[name]:
            return None
        if id(frame) not in furthest:
            furthest[id(frame)] = -1
            frames.append(frame)
            # Called again from the same place (map over a lambda, a
            # generator consumed), or from inside itself (recursion): a loop.
            caller = frame.f_back
            site = (
                (id(caller), caller.f_lasti, frame.f_code) if caller else None
            )
            outer = caller
            while outer is not None and outer.f_code is not frame.f_code:
                outer = outer.f_back
            if outer is not None or site in sites:
                found.append(Broken("rule_loop", {}))
            sites.add(site)

        def line(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                if frame.f_lasti <= furthest[id(frame)]:
                    found.append(Broken("rule_loop", {}))
                    return None
                furthest[id(frame)] = frame.f_lasti
            return line

        return line

    return call
