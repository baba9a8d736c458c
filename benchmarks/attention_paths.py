"""How PyTorch runs attention, measured: time and peak memory of each path as the sequence grows.

One causal attention layer the size of GPT-2 small's (batch 1, ``d_in = d_out = 768``, 12 heads of 64),
dropout off. For each number of tokens it measures, forward only (an inference: the modules in ``eval()``, under
``torch.inference_mode()``, where nn.MultiheadAttention takes its fast path, ``torch._native_multi_head_attention``,
which ignores the hint ``is_causal`` and applies the mask it is given) and forward + backward (a training step's
attention, the modules in training mode: ``out.sum().backward()``),

* ``ours``: ``MultiHeadAttention`` with its defaults (``scaled_dot_product_attention``, ``is_causal=True``);
* ``ours_explicit``: the same module with ``use_sdpa = False`` (scores, ``masked_softmax``, weighted sum);
* ``torch_mha``: ``nn.MultiheadAttention(need_weights=False)`` with a boolean causal ``attn_mask``;
* ``torch_mha_is_causal``: the same, also passing the hint ``is_causal=True``;
* ``torch_mha_weights``: ``nn.MultiheadAttention`` with its default ``need_weights=True``;
* on the ``(1, 12, tokens, 64)`` queries, keys and values alone, ``scaled_dot_product_attention`` with
  ``is_causal=True`` (``sdpa_is_causal``), with the same mask as a boolean ``attn_mask``
  (``sdpa_bool_mask``), and with ``is_causal=True`` inside ``sdpa_kernel(SDPBackend.MATH)`` (``sdpa_math``).

Times are medians of interleaved rounds; memory is the peak extra memory of one call: on the CPU the
resident size of a fresh process per cell (``VmHWM``), on CUDA ``torch.cuda.max_memory_allocated``.
Before timing, every module path is checked to compute the same output.

Writes ``benchmarks/data/attention-<device>.json`` (with the machine, torch version and date): the page
"How PyTorch runs attention" shows its tables, and ``python3 dev.py figures`` draws its plot from it.

    python3 dev.py benchmarks attention_paths                  # CPU, about five minutes on 2 cores
    python3 dev.py benchmarks attention_paths --quick          # a smoke run; writes nothing
    python3 dev.py benchmarks attention_paths --device cuda --dtype bfloat16   # a GPU (the GPU CI job)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, overload

import torch
import torch.nn.functional as F
from measure import (
    current_rss_kib,
    load_average,
    peak_rss_kib,
    per_round_ratio,
    provenance,
    reset_peak_rss,
    synchronized,
    time_interleaved,
    write_data,
)
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from attention_lib import MultiHeadAttention, causal_mask

D_MODEL, NUM_HEADS = 768, 12
TOKENS = [256, 512, 1024, 2048]
MODULE_PATHS = ["ours", "ours_explicit", "torch_mha", "torch_mha_is_causal", "torch_mha_weights"]
SDPA_PATHS = ["sdpa_is_causal", "sdpa_bool_mask", "sdpa_math"]
MODES = ["forward", "forward_backward"]


def build(num_tokens: int, device: str, dtype: torch.dtype) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    torch.manual_seed(0)
    ours = MultiHeadAttention(D_MODEL, D_MODEL, num_tokens, 0.0, NUM_HEADS, qkv_bias=True)
    theirs = nn.MultiheadAttention(D_MODEL, NUM_HEADS, batch_first=True)
    with torch.no_grad():  # the same weights, so that the outputs can be compared
        theirs.in_proj_weight.copy_(torch.cat([ours.W_query.weight, ours.W_key.weight, ours.W_value.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.W_query.bias, ours.W_key.bias, ours.W_value.bias]))
        theirs.out_proj.load_state_dict(ours.out_proj.state_dict())
    return ours.to(device, dtype), theirs.to(device, dtype)


@overload
def path_function(
    path: str, num_tokens: int, mode: Literal["forward"], device: str, dtype: torch.dtype
) -> Callable[[], torch.Tensor]: ...
@overload
def path_function(path: str, num_tokens: int, mode: str, device: str, dtype: torch.dtype) -> Callable[[], object]: ...
def path_function(path: str, num_tokens: int, mode: str, device: str, dtype: torch.dtype) -> Callable[[], object]:
    """A function that runs ``path`` once in ``mode``; it returns the output (forward) or None."""
    ours, theirs = build(num_tokens, device, dtype)
    training = mode == "forward_backward"
    generator = torch.Generator(device).manual_seed(1)
    if path.startswith("sdpa_"):
        shape = (1, NUM_HEADS, num_tokens, D_MODEL // NUM_HEADS)
        qkv = [torch.randn(shape, device=device, dtype=dtype, generator=generator) for _ in range(3)]
        inputs = [t.requires_grad_(training) for t in qkv]
    else:
        x = torch.randn(1, num_tokens, D_MODEL, device=device, dtype=dtype, generator=generator)
        inputs = [x.requires_grad_(training)]
    allowed = causal_mask(num_tokens, device=device).logical_not()  # SDPA's convention: True = may attend
    ours.use_sdpa = path != "ours_explicit"
    forwards: dict[str, Callable[[], torch.Tensor]] = {
        "ours": lambda: ours(inputs[0]),
        "ours_explicit": lambda: ours(inputs[0]),
        "torch_mha": lambda: theirs(*inputs * 3, attn_mask=~allowed, need_weights=False)[0],
        "torch_mha_is_causal": lambda: theirs(*inputs * 3, attn_mask=~allowed, need_weights=False, is_causal=True)[0],
        "torch_mha_weights": lambda: theirs(*inputs * 3, attn_mask=~allowed)[0],
        "sdpa_is_causal": lambda: F.scaled_dot_product_attention(inputs[0], inputs[1], inputs[2], is_causal=True),
        "sdpa_bool_mask": lambda: F.scaled_dot_product_attention(inputs[0], inputs[1], inputs[2], attn_mask=allowed),
        "sdpa_math": lambda: math_sdpa(*inputs),
    }
    forward = forwards[path]
    if not training:
        ours.eval()
        theirs.eval()
        return forward
    ours.train()
    theirs.train()

    def step() -> None:
        forward().sum().backward()
        for t in (*inputs, *ours.parameters(), *theirs.parameters()):
            t.grad = None

    return step


def math_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def check_agreement(num_tokens: int, device: str, dtype: torch.dtype, tolerance: float) -> None:
    with torch.inference_mode():
        outputs = {p: path_function(p, num_tokens, "forward", device, dtype)() for p in MODULE_PATHS}
        sdpa = {p: path_function(p, num_tokens, "forward", device, dtype)() for p in SDPA_PATHS}
    for group in (outputs, sdpa):
        first, *others = group
        for name in others:
            difference = (group[name] - group[first]).abs().max().item()
            if difference > tolerance:
                sys.exit(f"{name} disagrees with {first} at {num_tokens} tokens: {difference:.2e}")
    print(f"every path computes the same output at {num_tokens} tokens (tolerance {tolerance:g})")


def measure_memory(path: str, num_tokens: int, mode: str, device: str, dtype: torch.dtype) -> float:
    """Peak extra MiB of one call of ``path``, measured where this function runs."""
    small = path_function(path, 16, mode, device, dtype)
    run = path_function(path, num_tokens, mode, device, dtype)
    with torch.inference_mode(mode == "forward"):
        small()  # thread pools and kernel tables are loaded once per process, not per call
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            run()
            torch.cuda.synchronize()
            return (torch.cuda.max_memory_allocated() - before) / 2**20
        reset_peak_rss()
        baseline = current_rss_kib() or peak_rss_kib()
        run()
        return (peak_rss_kib() - baseline) / 1024


def memory_in_fresh_process(cell: tuple[str, int, str], dtype: str) -> float:
    path, num_tokens, mode = cell
    out = subprocess.run(
        [sys.executable, __file__, "--measure-memory", path, str(num_tokens), mode, "--dtype", dtype],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    return float(out.split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds (default 5)")
    parser.add_argument("--tokens", type=int, nargs="+", default=TOKENS, help="token counts (default 256 .. 2048)")
    parser.add_argument("--quick", action="store_true", help="small sizes, two rounds, nothing written")
    parser.add_argument("--measure-memory", nargs=3, metavar=("PATH", "TOKENS", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    if args.measure_memory:
        path, num_tokens, mode = args.measure_memory
        print(measure_memory(path, int(num_tokens), mode, "cpu", dtype))
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"--device cuda: torch {torch.__version__} sees no CUDA device")
    tokens = [128, 256] if args.quick else args.tokens
    rounds = 2 if args.quick else args.rounds
    synchronize = torch.cuda.synchronize if args.device == "cuda" else lambda: None

    info = provenance(args.device)
    print(f"torch {info['torch']}, {info['threads']} threads, {args.device}: {info['device_name']}, {load_average()}")
    print(f"batch 1, d_model {D_MODEL}, {NUM_HEADS} heads, causal, {args.dtype}, dropout off")
    check_agreement(tokens[0], args.device, dtype, 1e-4 if args.dtype == "float32" else 5e-2)
    print()

    paths = MODULE_PATHS + SDPA_PATHS
    times: dict[str, dict[str, list[float]]] = {mode: {p: [] for p in paths} for mode in MODES}
    ratios: dict[str, list[float]] = {"forward_backward_torch_mha": [], "forward_backward_torch_mha_is_causal": []}
    for mode in MODES:
        print(f"{mode.replace('_', ' + ')}: median ms of {rounds} interleaved rounds")
        print(f"{'tokens':>7}" + "".join(f"{p:>21}" for p in paths))
        for n in tokens:
            functions = {p: path_function(p, n, mode, args.device, dtype) for p in paths}
            timed = {p: synchronized(f, synchronize) for p, f in functions.items()}
            with torch.inference_mode(mode == "forward"):
                samples = time_interleaved(timed, rounds, calls=1, warmup=1)
            for p in paths:
                times[mode][p].append(round(statistics.median(t for r in samples[p] for t in r) * 1e3, 2))
            print(f"{n:>7}" + "".join(f"{times[mode][p][-1]:>21.2f}" for p in paths))
            if mode == "forward_backward":
                for other in ("torch_mha", "torch_mha_is_causal"):
                    ratio = per_round_ratio(samples[other], samples["ours"])
                    ratios[f"forward_backward_{other}"].append(round(ratio, 2))
        print()
    print("forward + backward, nn.MultiheadAttention(need_weights=False) / ours (median of per-round ratios):")
    for name, values in ratios.items():
        print(f"  {name.removeprefix('forward_backward_'):<22}" + "".join(f"{v:>7.2f}x" for v in values))
    print()

    cells = [(p, n, mode) for mode in MODES for n in tokens for p in paths]
    print("peak extra memory, MiB (" + ("a fresh process per cell" if args.device == "cpu" else "CUDA allocator") + ")")
    if args.device == "cpu":
        with ThreadPoolExecutor(max_workers=2) as pool:
            measured = list(pool.map(lambda cell: memory_in_fresh_process(cell, args.dtype), cells))
    else:
        measured = [measure_memory(*cell, args.device, dtype) for cell in cells]
    memory: dict[str, dict[str, list[float]]] = {mode: {p: [] for p in paths} for mode in MODES}
    for (p, _, mode), mib in zip(cells, measured, strict=True):
        memory[mode][p].append(round(mib, 1))
    for mode in MODES:
        print(mode.replace("_", " + "))
        print(f"{'tokens':>7}" + "".join(f"{p:>21}" for p in paths))
        for row, n in enumerate(tokens):
            print(f"{n:>7}" + "".join(f"{memory[mode][p][row]:>21.1f}" for p in paths))
    print(f"after the measurements: {load_average()}")
    if args.quick:
        return 0
    config = {"batch": 1, "d_model": D_MODEL, "num_heads": NUM_HEADS, "dtype": args.dtype, "rounds": rounds}
    data = {"provenance": info, "config": config, "tokens": tokens, "ms": times, "mib": memory, "ratios": ratios}
    write_data(f"attention-{args.device}" + ("" if args.dtype == "float32" else f"-{args.dtype}"), data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
