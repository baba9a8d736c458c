"""The learner's session is safe from the answer it checks: an answer that hangs, exits or changes torch's global
settings gets a ✗ (or, where what it returns is right, a ✓) and leaves the session as it was; Ctrl-C still stops
a check."""

from __future__ import annotations

import _thread
import gc
import itertools
import signal
import sys
import threading
import time

import pytest
import torch
from attention_exercises import diagnose, set_time_limit
from attention_exercises._guard import time_limit

needs_signals = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="the time limit needs SIGALRM")


def _causal(attn_scores: torch.Tensor) -> torch.Tensor:
    n = attn_scores.shape[-1]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=-1)


@pytest.fixture
def short_limit():
    """A limit of 0.5 s, and a backstop should the limit not hold: after 60 s the test is interrupted (as Ctrl-C
    would), rather than hang the suite. The bounds are loose: a busy machine may be slow, never this slow."""
    set_time_limit(0.5)
    backstop = threading.Timer(60, _thread.interrupt_main)
    backstop.start()
    yield
    backstop.cancel()
    set_time_limit(5.0)


def _forever(attn_scores: torch.Tensor) -> torch.Tensor:
    while True:
        pass


def _forever_catching_everything(attn_scores: torch.Tensor) -> torch.Tensor:
    while True:
        try:
            while True:
                pass
        except BaseException:  # a learner's bare except: it must not keep the check running
            pass


def _forever_allocating(attn_scores: torch.Tensor) -> torch.Tensor:
    # Objects made without end: the garbage collector runs, and the callbacks libraries register with it
    # (hypothesis has one) run too, where an exception would be lost.
    return sum(torch.zeros(1) for _ in itertools.count())


def _slow_then_right(attn_scores: torch.Tensor) -> torch.Tensor:
    time.sleep(3)
    return _causal(attn_scores)


class _HangsInForward(torch.nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int) -> None:
        super().__init__()
        self.W_query = torch.nn.Linear(d_in, d_out, bias=False)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=False)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=False)
        mask = torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while True:
            pass


@needs_signals
@pytest.mark.parametrize(
    ("exercise", "answer"),
    [
        ("exercise-causal-weights", _forever),
        ("exercise-causal-weights", _forever_catching_everything),
        ("exercise-causal-weights", _forever_allocating),
        ("exercise-causal-weights", _slow_then_right),
        ("exercise-causal-buffer", _HangsInForward),
    ],
    ids=["loop", "loop-catching-everything", "allocating", "slow", "module"],
)
def test_an_answer_past_the_time_limit_gets_a_cross_saying_so(short_limit: None, exercise: str, answer) -> None:
    started = time.monotonic()
    result = diagnose(exercise, answer)
    assert time.monotonic() - started < 30
    assert not result
    assert result.hint == "slow"
    assert "took longer than 0.5 s" in str(result)
    assert "运行了 0.5 秒（单次调用的时间上限）还没有结束" in str(diagnose(exercise, answer, lang="zh"))


@needs_signals
def test_the_limit_is_settable_and_a_slow_right_answer_passes_under_a_longer_one() -> None:
    def slow(attn_scores: torch.Tensor) -> torch.Tensor:
        time.sleep(0.02)
        return _causal(attn_scores)

    set_time_limit(0.01)
    try:
        assert diagnose("exercise-causal-weights", slow).hint == "slow"
    finally:
        set_time_limit(5.0)
    assert time_limit() == 5.0
    assert diagnose("exercise-causal-weights", slow)


def test_no_limit_at_all() -> None:
    set_time_limit(None)
    try:
        assert diagnose("exercise-causal-weights", _causal)
    finally:
        set_time_limit(5.0)


@pytest.mark.parametrize("seconds", [0, -1, float("nan")])
def test_a_limit_that_is_no_time_is_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="seconds must be a positive number or None"):
        set_time_limit(seconds)
    assert time_limit() == 5.0


def test_the_alarm_the_session_had_is_left_alone() -> None:
    if not hasattr(signal, "setitimer"):
        pytest.skip("no SIGALRM")
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        assert diagnose("exercise-causal-weights", _causal)
        assert signal.getsignal(signal.SIGALRM) is not previous
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        signal.raise_signal(signal.SIGALRM)
        assert fired == [1]
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_in_another_thread_there_is_no_limit_and_no_error() -> None:
    results = []
    thread = threading.Thread(target=lambda: results.append(diagnose("exercise-causal-weights", _causal)))
    thread.start()
    thread.join(60)
    assert results
    assert results[0]


@pytest.mark.parametrize(
    "exit_call",
    ["raise SystemExit", "raise SystemExit(3)", "sys.exit('done')", "exit()", "quit()"],
)
def test_exit_in_an_answer_is_a_cross(exit_call: str) -> None:
    namespace = {"sys": sys, "torch": torch}
    exec(f"def answer(attn_scores):\n    {exit_call}\n", namespace)
    result = diagnose("exercise-causal-weights", namespace["answer"])
    assert not result
    assert result.hint == "no_exit"
    assert "SystemExit" in str(result)


def test_exit_while_making_a_module_is_a_cross() -> None:
    class Exits(torch.nn.Module):
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise SystemExit(1)

    assert diagnose("exercise-causal-buffer", Exits).hint == "no_exit"


def test_ctrl_c_still_stops_a_check() -> None:
    def interrupted(attn_scores: torch.Tensor) -> torch.Tensor:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        diagnose("exercise-causal-weights", interrupted)


def _settings() -> tuple:
    get_device = getattr(torch, "get_default_device", lambda: None)
    return (
        torch.get_default_dtype(),
        get_device(),
        # The modes in force: torch.set_default_device starts one, even for the device in force, and while one
        # runs every torch call is slower and nn.MultiheadAttention never takes its fast path.
        [type(mode) for mode in torch.overrides._get_current_function_mode_stack()],
        torch.is_grad_enabled(),
        torch.get_num_threads(),
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.is_anomaly_enabled(),
    )


CHANGES = {
    "grad off": "torch.set_grad_enabled(False)",
    "float64": "torch.set_default_dtype(torch.float64)",
    "threads": "torch.set_num_threads(max(1, torch.get_num_threads() + 1))",
    "deterministic": "torch.use_deterministic_algorithms(True)",
    "anomaly": "torch.autograd.set_detect_anomaly(True)",
    "device": "torch.set_default_device('cpu')",
    "seed": "torch.manual_seed(0)",
    "random draw": "torch.rand(1000)",
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_an_answer_that_changes_torchs_settings_is_judged_on_its_result_and_changes_nothing(change: str) -> None:
    namespace = {"torch": torch}
    exec(
        "def answer(attn_scores):\n"
        f"    {change}\n"
        "    n = attn_scores.shape[-1]\n"
        "    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)\n"
        "    return torch.softmax(attn_scores.masked_fill(mask, -torch.inf), dim=-1)\n",
        namespace,
    )
    torch.manual_seed(1234)
    before, rng = _settings(), torch.get_rng_state()
    result = diagnose("exercise-causal-weights", namespace["answer"])
    assert result, str(result)
    assert _settings() == before
    assert torch.equal(torch.get_rng_state(), rng)


def test_a_module_that_turns_autograd_off_still_gets_its_gradients_checked() -> None:
    """The check's own backward pass runs with autograd on, whatever the answer did to the global switch."""
    from attention_lib import CausalAttention

    class Switches(CausalAttention):
        def __init__(self, d_in: int, d_out: int, context_length: int) -> None:
            super().__init__(d_in, d_out, context_length, dropout=0.0)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            torch.set_grad_enabled(False)
            torch.set_grad_enabled(True)
            out = super().forward(x)
            torch.set_grad_enabled(False)
            return out

    before = _settings()
    assert diagnose("exercise-causal-buffer", Switches), "a right module whose switch is restored"
    assert _settings() == before


def test_the_checks_run_as_written_whatever_the_session_set() -> None:
    """A notebook that works in float64 with autograd off still gets the same verdicts, and keeps its settings."""
    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)
    torch.set_default_device("cpu")
    try:
        before = _settings()
        assert diagnose("exercise-causal-weights", _causal)
        assert diagnose("exercise-self-attention", _self_attention_class())
        assert _settings() == before
    finally:
        torch.set_default_dtype(torch.float32)
        torch.set_grad_enabled(True)
        torch.set_default_device(None)


def test_a_check_leaves_no_mode_running() -> None:
    """A session that set no default device has no device mode after a check either: one would slow every
    later torch call and keep nn.MultiheadAttention off its fast path."""
    assert not torch.overrides._get_current_function_mode_stack()
    assert diagnose("exercise-causal-weights", _causal)
    assert not torch.overrides._get_current_function_mode_stack()


def _self_attention_class() -> type:
    class SelfAttention(torch.nn.Module):
        def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
            super().__init__()
            self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
            attn_weights = torch.softmax(queries @ keys.mT / keys.shape[-1] ** 0.5, dim=-1)
            return attn_weights @ values

    return SelfAttention


def test_an_answer_that_replaces_torch_allclose_does_not_change_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    def lying(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        monkeypatch.setattr(torch, "allclose", lambda *args, **kwargs: True)
        monkeypatch.setattr(torch, "equal", lambda *args, **kwargs: True)
        return torch.zeros(queries.shape[0], keys.shape[0])

    assert not diagnose("exercise-all-scores", lying)


class _Exits(torch.Tensor):
    """A tensor whose every operation exits: the checker judging it runs the answer's code."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise SystemExit("judged")


def test_a_result_whose_methods_exit_is_judged_on_its_values_without_running_them() -> None:
    def right(attn_scores: torch.Tensor) -> torch.Tensor:
        return torch.Tensor._make_subclass(_Exits, _causal(attn_scores))

    def wrong(attn_scores: torch.Tensor) -> torch.Tensor:
        return torch.Tensor._make_subclass(_Exits, torch.softmax(attn_scores, dim=-1))

    assert diagnose("exercise-causal-weights", right)
    assert not diagnose("exercise-causal-weights", wrong)


def test_a_module_that_exits_when_the_checker_reads_it_is_a_cross() -> None:
    class ExitsWhenRead(_HangsInForward):
        def __getattr__(self, name: str) -> object:
            raise SystemExit(name)

    class ExitsWhenLoaded(_HangsInForward):
        def load_state_dict(self, *args: object, **kwargs: object) -> object:
            raise SystemExit("loaded")

    assert diagnose("exercise-causal-buffer", ExitsWhenRead).hint == "no_exit"
    assert diagnose("exercise-causal-buffer", ExitsWhenLoaded).hint == "no_exit"


@needs_signals
def test_the_alarm_is_never_lost_in_a_garbage_collectors_callback(short_limit: None) -> None:
    """A library's gc callback (hypothesis registers one) runs now and then inside the answer; raised there, the
    alarm would be reported as unraisable and lost. It waits for the answer's own code."""

    def callback(phase: str, info: dict) -> None:
        time.sleep(0.001)

    lost: list[BaseException | None] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: lost.append(unraisable.exc_value)
    gc.callbacks.append(callback)
    try:
        for _ in range(3):
            assert diagnose("exercise-causal-weights", _forever_allocating).hint == "slow"
    finally:
        gc.callbacks.remove(callback)
        sys.unraisablehook = hook
    assert lost == []


def test_watching_torchs_operators_is_paid_for_before_the_answers_time_limit() -> None:
    """torch's first operator under a dispatch mode imports torch._dynamo, seconds on a busy machine: a check
    whose rules watch the operators (here torch's softmax is ruled out) pays for it before the reader's first
    call starts its time limit, or a right answer times out on a loaded machine."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from attention_exercises import diagnose\n"
        "seen = []\n"
        "def answer(x):\n"
        "    seen.append('torch._dynamo' in sys.modules)\n"
        "    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)\n"
        "    return e / e.sum(dim=-1, keepdim=True)\n"
        "print(bool(diagnose('exercise-stable-softmax', answer)), seen[0])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]
