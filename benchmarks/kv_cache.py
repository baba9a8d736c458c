"""The KV cache, measured: the cost of one generated token with and without the cache, and the cache's size.

One attention layer the size of GPT-2 small's (batch 1, ``d_in = d_out = 768``, 12 heads of 64), float32
(or ``--dtype bfloat16``), eval mode, under ``torch.inference_mode()``. For each context length ``n`` it
times, interleaved round by round,

* recompute: what generating without a cache does for one new token, a forward of all ``n + 1`` tokens;
* cached: one ``forward(x_new, use_cache=True)`` of ``MultiHeadAttention`` with ``n`` tokens in its cache
  (the cache is put back to those ``n`` tokens before every call);
* GQA cached: the same step of ``GroupedQueryAttention`` with 4 key/value heads for the 12 query heads.

Before timing, it checks that the cached step's output equals the last row of the full forward. Then it
fills the caches of ``MultiHeadAttention``, ``GroupedQueryAttention(num_kv_groups=4)`` and
``num_kv_groups=1`` (MQA) with 1,024 tokens and reports their ``nbytes`` against the formula
``2 x batch x kv_heads x tokens x head_dim x bytes``.

Writes ``benchmarks/data/kv-cache-<device>.json`` (``kv-cache-<device>-bfloat16.json`` for bfloat16), with the
machine, torch version and date, which the KV cache and GQA pages show. Run from the repository root::

    python3 dev.py benchmarks kv_cache            # about a minute on 2 cores
    python3 dev.py benchmarks kv_cache --quick    # a smoke run; writes nothing
    python3 dev.py benchmarks kv_cache --device cuda   # a GPU (the GPU CI job, also with --dtype bfloat16)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable

import torch
from measure import load_average, per_round_ratio, provenance, synchronized, time_interleaved, write_data

from attention_lib import GroupedQueryAttention, MultiHeadAttention

D_MODEL, NUM_HEADS, KV_GROUPS = 768, 12, 4
HEAD_DIM = D_MODEL // NUM_HEADS
CONTEXTS = [128, 256, 512, 1024, 2048]
MEMORY_TOKENS = 1024
TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2}


def build(
    max_tokens: int, device: str, dtype: torch.dtype
) -> tuple[MultiHeadAttention, GroupedQueryAttention, torch.Tensor]:
    torch.manual_seed(0)
    mha = MultiHeadAttention(D_MODEL, D_MODEL, max_tokens, 0.0, NUM_HEADS).eval().to(device, dtype)
    gqa = GroupedQueryAttention(D_MODEL, D_MODEL, 0.0, NUM_HEADS, KV_GROUPS).eval().to(device, dtype)
    x = torch.randn(1, max_tokens, D_MODEL, device=device, dtype=dtype)
    return mha, gqa, x


def step_with_cache_of(
    module: MultiHeadAttention | GroupedQueryAttention, context: torch.Tensor, new: torch.Tensor
) -> Callable[[], torch.Tensor]:
    """A function that runs one cached step after ``context``, with the cache reset to ``context`` each time."""
    module.reset_cache()
    module(context, use_cache=True)
    cache_k, cache_v = module.cache_k, module.cache_v

    def step() -> torch.Tensor:
        # The cached step builds new tensors (torch.cat); the saved ones are untouched, so this is free.
        module.cache_k, module.cache_v = cache_k, cache_v
        return module(new, use_cache=True)

    return step


def decode_table(contexts: list[int], rounds: int, calls: int, device: str, dtype: str) -> dict[str, list[float]]:
    mha, gqa, x = build(max(contexts) + 1, device, getattr(torch, dtype))
    synchronize = torch.cuda.synchronize if device == "cuda" else lambda: None
    rows: dict[str, list[float]] = {"recompute_ms": [], "cached_ms": [], "gqa_cached_ms": [], "ratio": []}
    mha(x)  # warm-up: the first calls start thread pools and load kernels
    print(f"{'context':>8} {'recompute ms':>13} {'cached ms':>10} {'GQA cached ms':>14} {'recompute/cached':>17}")
    for n in contexts:
        context, new = x[:, :n], x[:, n : n + 1]

        def recompute(n: int = n) -> torch.Tensor:
            return mha(x[:, : n + 1])

        steps: dict[str, Callable[[], torch.Tensor]] = {
            "recompute": recompute,
            "cached": step_with_cache_of(mha, context, new),
            "gqa_cached": step_with_cache_of(gqa, context, new),
        }
        difference = (steps["cached"]() - mha(x[:, : n + 1])[:, -1:]).abs().max().item()
        if difference > TOLERANCE[dtype]:
            sys.exit(f"the cached step disagrees with the full forward at {n} tokens: {difference:.2e}")
        timed = {name: synchronized(step, synchronize) for name, step in steps.items()}
        samples = time_interleaved(timed, rounds, calls, warmup=2)
        medians = {name: statistics.median(t for r in s for t in r) * 1e3 for name, s in samples.items()}
        ratio = per_round_ratio(samples["recompute"], samples["cached"])
        rows["recompute_ms"].append(round(medians["recompute"], 3))
        rows["cached_ms"].append(round(medians["cached"], 3))
        rows["gqa_cached_ms"].append(round(medians["gqa_cached"], 3))
        rows["ratio"].append(round(ratio, 1))
        print(
            f"{n:>8} {medians['recompute']:>13.2f} {medians['cached']:>10.3f} {medians['gqa_cached']:>14.3f} "
            f"{ratio:>16.1f}x"
        )
    print()
    return rows


def memory_table(num_tokens: int, device: str) -> dict[str, dict[str, int]]:
    torch.manual_seed(0)
    x = torch.randn(1, num_tokens, D_MODEL, device=device)
    modules: dict[str, MultiHeadAttention | GroupedQueryAttention] = {
        "mha": MultiHeadAttention(D_MODEL, D_MODEL, num_tokens, 0.0, NUM_HEADS).to(device),
        "gqa": GroupedQueryAttention(D_MODEL, D_MODEL, 0.0, NUM_HEADS, KV_GROUPS).to(device),
        "mqa": GroupedQueryAttention(D_MODEL, D_MODEL, 0.0, NUM_HEADS, 1).to(device),
    }
    table: dict[str, dict[str, int]] = {}
    print(f"Cache of one layer after {num_tokens} tokens (batch 1, head_dim {HEAD_DIM}, float32)")
    print(f"{'module':>6} {'kv heads':>9} {'measured bytes':>15} {'formula bytes':>14} {'/ MHA':>6}")
    for name, module in modules.items():
        module(x, use_cache=True)
        cache_k, cache_v = module.cache_k, module.cache_v
        if cache_k is None or cache_v is None:
            sys.exit(f"{name} kept no cache after a forward with use_cache=True")
        measured = cache_k.nbytes + cache_v.nbytes
        kv_heads = cache_k.shape[1]
        formula = 2 * 1 * kv_heads * num_tokens * HEAD_DIM * x.element_size()
        table[name] = {"kv_heads": kv_heads, "bytes": measured, "formula_bytes": formula}
        share = measured / table["mha"]["bytes"]
        print(f"{name:>6} {kv_heads:>9} {measured:>15,} {formula:>14,} {share:>6.3f}")
    print()
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--rounds", type=int, default=9, help="timing rounds (default 9)")
    parser.add_argument("--calls", type=int, default=5, help="calls of each candidate per round (default 5)")
    parser.add_argument("--quick", action="store_true", help="two small contexts, three rounds, nothing written")
    args = parser.parse_args(argv)
    contexts = [64, 128] if args.quick else CONTEXTS
    rounds = 3 if args.quick else args.rounds

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"--device cuda: torch {torch.__version__} sees no CUDA device")
    info = provenance(args.device)
    print(f"torch {info['torch']}, {info['threads']} threads, {args.device}: {info['device_name']}, {load_average()}")
    print(f"batch 1, d_model {D_MODEL}, {NUM_HEADS} heads, {args.dtype}, eval, inference_mode")
    print()
    with torch.inference_mode():
        print(f"Time of one new token ({rounds} interleaved rounds x {args.calls} calls, after warm-up)")
        decode = decode_table(contexts, rounds, args.calls, args.device, args.dtype)
        memory = memory_table(64 if args.quick else MEMORY_TOKENS, args.device)
    print(f"after the timing: {load_average()}")
    if args.quick:
        return 0
    config = {"batch": 1, "d_model": D_MODEL, "num_heads": NUM_HEADS, "num_kv_groups": KV_GROUPS, "dtype": args.dtype}
    data = {
        "provenance": info,
        "config": config,
        "decode": {"context": contexts, **decode},
        "cache_tokens": MEMORY_TOKENS,
        "cache": memory,
    }
    write_data(f"kv-cache-{args.device}" + ("" if args.dtype == "float32" else f"-{args.dtype}"), data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
