"""CPU benchmark of ``MultiHeadAttention``: speed against PyTorch's own attention, and memory growth.

At batch 1, ``d_in = d_out = 768``, 12 heads, causal, float32, in eval mode under
``torch.inference_mode()``, it measures

* the time of one forward of
  - ours: ``MultiHeadAttention`` with its defaults (the ``scaled_dot_product_attention`` path),
  - bare: the same projections (``F.linear`` with our module's weights) around a plain
    ``F.scaled_dot_product_attention(is_causal=True)``, i.e. the floor ours can reach,
  - ``torch.nn.MultiheadAttention(768, 12, batch_first=True)`` called with its default arguments
    (``need_weights=True``) and a causal boolean ``attn_mask``,
  - ours on the explicit path (``use_sdpa = False``), which materializes the attention weights;
  the candidates run interleaved, round by round, so that drifts of the machine hit all of them;
* the peak extra resident memory of one forward per path and number of tokens, each measured in a
  fresh process so that no path inherits another's memory.

The candidates are first checked to compute the same output; the script exits with status 1 if they do not.
The machine's load average is printed before and after the timing: other processes on a 2-core
machine skew the numbers more than anything else.

Run from the repository root::

    python3 dev.py benchmarks               # full run, a few minutes on 2 cores
    python3 dev.py benchmarks --quick       # small sizes, a smoke run of about ten seconds
    python3 dev.py benchmarks --tokens 2048 --rounds 10 --memory-tokens 256 512 1024
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F
from measure import (
    cpu_model,
    current_rss_kib,
    load_average,
    peak_rss_kib,
    per_round_ratio,
    reset_peak_rss,
    time_interleaved,
)
from torch import nn

from attention_lib import MultiHeadAttention

D_MODEL = 768
NUM_HEADS = 12
TOLERANCE = 1e-4
WARMUP_TOKENS = 16
REQUIRED_TOKENS = 4096
MEMORY_PATHS = {
    "ours": "ours, default (SDPA)",
    "explicit": "ours, explicit",
    "torch_mha": "nn.MultiheadAttention",
}


def build_ours(num_tokens: int, seed: int = 0) -> tuple[MultiHeadAttention, torch.Tensor]:
    torch.manual_seed(seed)
    module = MultiHeadAttention(D_MODEL, D_MODEL, num_tokens, 0.0, NUM_HEADS).eval()
    x = torch.randn(1, num_tokens, D_MODEL)
    return module, x


def torch_mha_like(ours: MultiHeadAttention) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention`` holding the same weights as ``ours``, so that outputs can be compared."""
    mha = nn.MultiheadAttention(ours.d_out, ours.num_heads, batch_first=True).eval()
    projections = (ours.W_query, ours.W_key, ours.W_value)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([p.weight for p in projections]))
        if ours.W_query.bias is None:
            mha.in_proj_bias.zero_()
        else:
            mha.in_proj_bias.copy_(torch.cat([p.bias for p in projections]))
        mha.out_proj.weight.copy_(ours.out_proj.weight)
        mha.out_proj.bias.copy_(ours.out_proj.bias)
    return mha


def torch_causal_mask(num_tokens: int) -> torch.Tensor:
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)  # True = not allowed


def bare_sdpa(x: torch.Tensor, m: MultiHeadAttention) -> torch.Tensor:
    """Our module's computation with nothing around it: no checks, no helpers, no mask buffer."""
    b, t, _ = x.shape
    q = F.linear(x, m.W_query.weight, m.W_query.bias).view(b, t, m.num_heads, m.head_dim).transpose(1, 2)
    k = F.linear(x, m.W_key.weight, m.W_key.bias).view(b, t, m.num_heads, m.head_dim).transpose(1, 2)
    v = F.linear(x, m.W_value.weight, m.W_value.bias).view(b, t, m.num_heads, m.head_dim).transpose(1, 2)
    context = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    context = context.transpose(1, 2).contiguous().view(b, t, m.num_heads * m.head_dim)
    return F.linear(context, m.out_proj.weight, m.out_proj.bias)


def explicit_path(module: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    module.use_sdpa = False
    try:
        return module(x)
    finally:
        module.use_sdpa = True


def candidates(num_tokens: int) -> dict[str, Callable[[], torch.Tensor]]:
    """Zero-argument forwards over one shared input, ours first: the ratios are relative to it."""
    ours, x = build_ours(num_tokens)
    mha = torch_mha_like(ours)
    mask = torch_causal_mask(num_tokens)
    return {
        "ours: MultiHeadAttention, default": lambda: ours(x),
        "bare: F.linear + F.sdpa(is_causal=True)": lambda: bare_sdpa(x, ours),
        "nn.MultiheadAttention, defaults + causal mask": lambda: mha(x, x, x, attn_mask=mask)[0],
        "ours, explicit path (use_sdpa=False)": lambda: explicit_path(ours, x),
    }


def check_agreement(forwards: dict[str, Callable[[], torch.Tensor]]) -> bool:
    names = list(forwards)
    reference = forwards[names[0]]()
    print(f"Agreement with {names[0]!r} (max abs difference, tolerance {TOLERANCE:g}):")
    agree = True
    for name in names[1:]:
        diff = (forwards[name]() - reference).abs().max().item()
        agree &= diff <= TOLERANCE
        print(f"  {name:<48} {diff:.2e}{'' if diff <= TOLERANCE else '  DISAGREES'}")
    print()
    return agree


def print_timing_table(samples: dict[str, list[list[float]]]) -> dict[str, float]:
    flat = {name: [t * 1e3 for times in per_round for t in times] for name, per_round in samples.items()}
    medians = {name: statistics.median(times) for name, times in flat.items()}
    ours = next(iter(medians.values()))
    print(f"{'candidate':<48} {'median ms':>10} {'min ms':>10} {'max ms':>10} {'/ ours':>8}")
    for name, times in flat.items():
        print(
            f"{name:<48} {medians[name]:>10.1f} {min(times):>10.1f} {max(times):>10.1f} {medians[name] / ours:>7.2f}x"
        )
    print()
    return medians


def measure_memory(path: str, num_tokens: int) -> None:
    """Print the peak extra resident memory (KiB) of one forward of ``path``; runs in its own process."""
    ours, x = build_ours(num_tokens)
    forward: Callable[[torch.Tensor], torch.Tensor]
    if path == "ours":
        forward = ours
    elif path == "explicit":
        ours.use_sdpa = False
        forward = ours
    else:
        mha = torch_mha_like(ours)
        masks = {n: torch_causal_mask(n) for n in (WARMUP_TOKENS, num_tokens)}
        forward = lambda x: mha(x, x, x, attn_mask=masks[x.shape[1]])[0]  # noqa: E731
    with torch.inference_mode():
        # A tiny forward first: thread pools, kernel tables and library code are loaded once per
        # process, not per forward, and would otherwise swamp the small sizes.
        forward(x[:, :WARMUP_TOKENS])
        # Setup freed temporaries (e.g. while building the causal mask), so the process may hold less
        # than its peak; measured from that peak, the first part of the forward's memory would not show.
        reset_peak_rss()
        peak_before = peak_rss_kib()
        baseline = current_rss_kib() or peak_before
        forward(x)
        peak_after = peak_rss_kib()
    # Where the peak could not be reset and the forward never rose above it, this is only an upper bound.
    exact = peak_after > peak_before
    print(peak_after - baseline, int(exact))


def measure_in_subprocess(path: str, num_tokens: int) -> tuple[float, bool]:
    """Peak extra MiB of one forward, measured in a fresh process, and whether the figure is exact."""
    out = subprocess.run(
        [sys.executable, __file__, "--measure-memory", path, str(num_tokens)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout.split()
    return int(out[0]) / 1024, out[1] == "1"


def memory_table(token_counts: list[int]) -> dict[str, list[float]]:
    cells = [(path, n) for n in token_counts for path in MEMORY_PATHS]
    # Two processes at a time: each one reads only its own peak, and most of their time is importing torch.
    with ThreadPoolExecutor(max_workers=2) as pool:
        measured = dict(zip(cells, pool.map(lambda cell: measure_in_subprocess(*cell), cells), strict=True))
    results = {path: [measured[path, n][0] for n in token_counts] for path in MEMORY_PATHS}
    bounds_only = not all(exact for _, exact in measured.values())

    print(f"{'tokens':>8}" + "".join(f"{label:>24}" for label in MEMORY_PATHS.values()))
    print(f"{'':>8}" + f"{'MiB':>12}{'x prev row':>12}" * len(MEMORY_PATHS))
    for row, num_tokens in enumerate(token_counts):
        line = ""
        for mib in results.values():
            growth = f"x{mib[row] / mib[row - 1]:.2f}" if row else "-"
            line += f"{mib[row]:>12.1f}{growth:>12}"
        print(f"{num_tokens:>8}{line}")
    if bounds_only:
        print("(some forwards stayed under the setup's peak: those cells are upper bounds)")
    print()
    return results


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tokens", type=int, default=REQUIRED_TOKENS, help="number of tokens for the timing (default 4096)"
    )
    parser.add_argument("--rounds", type=int, default=15, help="timing rounds (default 15)")
    parser.add_argument("--calls", type=int, default=1, help="calls of each candidate per round (default 1)")
    parser.add_argument(
        "--memory-tokens",
        type=int,
        nargs="+",
        default=[512, 1024, 2048, 4096],
        help="token counts of the memory table (default 512 1024 2048 4096)",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes and few rounds: a smoke run")
    parser.add_argument("--measure-memory", nargs=2, metavar=("PATH", "TOKENS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.tokens, args.rounds, args.memory_tokens = 256, 5, [256, 512]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.measure_memory:
        path, num_tokens = args.measure_memory
        measure_memory(path, int(num_tokens))
        return 0

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU: {cpu_model()}, {load_average()}")
    print(f"batch 1, {args.tokens} tokens, d_model {D_MODEL}, {NUM_HEADS} heads, causal, float32, eval, inference_mode")
    print()

    forwards = candidates(args.tokens)
    with torch.inference_mode():
        if not check_agreement(forwards):
            print("the implementations disagree; timings would compare different computations", file=sys.stderr)
            return 1
        print(f"Time per forward ({args.rounds} interleaved rounds x {args.calls} call(s), after warm-up)")
        samples = time_interleaved(forwards, args.rounds, args.calls, warmup=2)
    medians = print_timing_table(samples)
    print(f"after the timing: {load_average()}")
    print()

    print("Peak extra resident memory of one forward (fresh process per cell; x prev row: growth per row)")
    memory = memory_table(args.memory_tokens)

    ours, bare, torch_mha = list(medians.values())[:3]
    ours_rounds, bare_rounds, torch_mha_rounds = list(samples.values())[:3]
    print("Requirements (ratio of the medians above; in brackets, the median of the per-round ratios)")
    if args.tokens != REQUIRED_TOKENS:
        print(f"  (they are stated for {REQUIRED_TOKENS} tokens; this run timed {args.tokens})")
    print(
        f"  1. nn.MultiheadAttention / ours = {torch_mha / ours:.2f}x "
        f"({per_round_ratio(torch_mha_rounds, ours_rounds):.2f}x), needs >= 4"
    )
    print(
        f"  2. ours / bare SDPA = {ours / bare:.3f}x ({per_round_ratio(ours_rounds, bare_rounds):.3f}x), needs <= 1.05"
    )
    if len(args.memory_tokens) > 1:
        growth = {path: mib[-1] / mib[-2] for path, mib in memory.items()}
        factor = args.memory_tokens[-1] / args.memory_tokens[-2]
        print(
            f"  3. memory growth {args.memory_tokens[-2]} -> {args.memory_tokens[-1]} tokens (x{factor:g}): "
            f"ours x{growth['ours']:.2f}, explicit x{growth['explicit']:.2f} "
            f"(linear x{factor:g}, quadratic x{factor**2:g}); explicit at {args.memory_tokens[-1]} tokens: "
            f"{memory['explicit'][-1]:.0f} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
