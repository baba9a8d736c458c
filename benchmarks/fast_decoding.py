"""Fast decoding, measured: one generated token's time with each kind of cache, and as a CUDA graph.

One attention layer the size of GPT-2 small's (``d_in = d_out = 768``, 12 heads of 64), eval mode, under
``torch.inference_mode()``. For each dtype, batch size and context length ``n`` it times, interleaved round by
round, the next tokens after ``n`` cached ones (8 per timed call on CUDA, as a decoding loop queues them, then
one synchronisation; 1 on the CPU, where recomputing 8 long contexts would take minutes), and reports the time
per token:

* ``recompute``: no cache, a forward of all ``n + 1`` tokens;
* ``cat``: ``MultiHeadAttention(..., use_cache=True)``, whose cache grows with ``torch.cat`` (a new tensor and a
  copy of the whole cache at every step);
* ``static``: a ``StaticKVCache`` allocated once for the longest context, written in place; attention reads the
  ``n + 1`` filled slots;
* ``static_shapes``: the same cache with ``static_shapes=True``: attention reads every slot, with a mask, as a
  CUDA graph needs;
* ``graph`` (CUDA only): that step captured once with ``torch.cuda.graph`` and replayed: per token, one copy of
  the token into the graph's input and one replay;
* ``graph_explicit`` (CUDA only): the same, captured with ``use_sdpa = False`` (scores, ``masked_softmax``,
  weighted sum: plain matrix products instead of SDPA's fused kernel).

The caches are put back to ``n`` tokens before every call (for the graphs, one small kernel sets the position).
Before timing, each candidate's last output is checked against the matching row of the full forward.

Writes ``benchmarks/data/fast-decoding-<device>.json`` (with the machine, torch version and date), which the KV
cache page shows. Run from the repository root::

    python3 dev.py benchmarks fast_decoding                 # the CPU, float32: a few minutes on 2 cores
    python3 dev.py benchmarks fast_decoding --quick         # a smoke run; writes nothing
    python3 dev.py benchmarks fast_decoding --device cuda   # a GPU, float32 and bfloat16 (the GPU CI job)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable

import torch
from measure import load_average, per_round_ratio, provenance, synchronized, time_interleaved, write_data

from attention_lib import MultiHeadAttention, StaticKVCache, capture_decode_step

D_MODEL, NUM_HEADS = 768, 12
HEAD_DIM = D_MODEL // NUM_HEADS
CONTEXTS = [128, 256, 512, 1024, 2048, 4096]
BATCHES = [1, 8]
#: Tokens generated per timed call (the default of --tokens-per-call), per device.
TOKENS_PER_CALL = {"cpu": 1, "cuda": 8}
TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2}


def cache_size(max_context: int, per_call: int) -> int:
    """Slots for the longest context and the tokens a call adds, in whole blocks of 16: a mask whose last
    dimension is not a multiple of 16 is padded by SDPA's memory-efficient kernel at every step."""
    return -(-(max_context + per_call) // 16) * 16


class Candidates:
    """The one-token steps of one dtype and batch size, for any context up to ``max_context``."""

    def __init__(self, max_context: int, per_call: int, batch: int, device: str, dtype: torch.dtype) -> None:
        torch.manual_seed(0)
        self.per_call = per_call
        max_tokens = cache_size(max_context, per_call)
        self.module = MultiHeadAttention(D_MODEL, D_MODEL, max_tokens, 0.0, NUM_HEADS).to(device, dtype).eval()
        self.x = torch.randn(batch, max_tokens, D_MODEL, device=device, dtype=dtype)
        self.device = device
        shape = (batch, NUM_HEADS, max_tokens, HEAD_DIM)
        self.static = StaticKVCache(*shape, dtype=dtype, device=device)
        self.static_shapes = StaticKVCache(*shape, static_shapes=True, dtype=dtype, device=device)
        self.token = torch.zeros(batch, 1, D_MODEL, device=device, dtype=dtype)
        self.graphs: dict[str, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        if device == "cuda":
            self.graphs["graph"] = self._capture()
            self.module.use_sdpa = False  # read when the graph records; the graph keeps what it recorded
            self.graphs["graph_explicit"] = self._capture()
            self.module.use_sdpa = True

    def _capture(self) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
        return capture_decode_step(self.module, self.static_shapes, self.token)

    def steps(self, n: int) -> dict[str, Callable[[], torch.Tensor]]:
        """Functions that generate the ``per_call`` tokens after ``n`` cached ones; each returns the last output."""
        module, x = self.module, self.x
        context = x[:, :n]
        new = [x[:, i : i + 1] for i in range(n, n + self.per_call)]
        # Fill every cache with the n context tokens once; each step below starts from them again.
        module.reset_cache()
        module(context, use_cache=True)
        cache_k, cache_v = module.cache_k, module.cache_v
        for cache in (self.static, self.static_shapes):
            cache.reset()
            module(context, cache=cache)

        def recompute() -> torch.Tensor:
            for i in range(n + 1, n + 1 + self.per_call):
                output = module(x[:, :i])[:, -1:]
            return output

        def cat() -> torch.Tensor:
            module.cache_k, module.cache_v = cache_k, cache_v  # torch.cat left these untouched
            for token in new:
                output = module(token, use_cache=True)
            return output

        def static() -> torch.Tensor:
            self.static.num_filled = n  # slots n, n + 1, ... are written again, with the same tokens
            for token in new:
                output = module(token, cache=self.static)
            return output

        def static_shapes() -> torch.Tensor:
            self.static_shapes.position.fill_(n)
            for token in new:
                output = module(token, cache=self.static_shapes)
            return output

        steps = {"recompute": recompute, "cat": cat, "static": static, "static_shapes": static_shapes}
        for name, (graph, graph_output) in self.graphs.items():

            def replay(graph: torch.cuda.CUDAGraph = graph, graph_output: torch.Tensor = graph_output) -> torch.Tensor:
                self.static_shapes.position.fill_(n)
                for token in new:
                    self.token.copy_(token)
                    graph.replay()
                return graph_output

            steps[name] = replay
        return steps


def table(
    dtype_name: str, batch: int, contexts: list[int], per_call: int, rounds: int, calls: int, device: str
) -> dict[str, object]:
    dtype = getattr(torch, dtype_name)
    candidates = Candidates(max(contexts), per_call, batch, device, dtype)
    synchronize = torch.cuda.synchronize if device == "cuda" else lambda: None
    names = list(candidates.steps(contexts[0]))
    ms: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {f"cat/{name}": [] for name in names if name != "cat"}
    print(f"{dtype_name}, batch {batch}: median ms per token ({rounds} rounds x {calls} calls of {per_call})")
    print(
        f"{'context':>8}"
        + "".join(f"{name:>14}" for name in names)
        + f"{'cat/graph' if device == 'cuda' else 'cat/static':>12}"
    )
    for n in contexts:
        steps = candidates.steps(n)
        expected = candidates.module(candidates.x[:, : n + per_call])[:, -1:]
        for name, step in steps.items():
            difference = (step() - expected).abs().max().item()
            if difference > TOLERANCE[dtype_name]:
                sys.exit(f"{name} disagrees with the full forward at {n} tokens, {dtype_name}: {difference:.2e}")
        timed = {name: synchronized(step, synchronize) for name, step in steps.items()}
        samples = time_interleaved(timed, rounds, calls, warmup=2)
        for name in names:
            ms[name].append(round(statistics.median(t for r in samples[name] for t in r) * 1e3 / per_call, 4))
        for name in names:
            if name != "cat":
                ratios[f"cat/{name}"].append(round(per_round_ratio(samples["cat"], samples[name]), 2))
        shown = ratios["cat/graph" if device == "cuda" else "cat/static"][-1]
        print(f"{n:>8}" + "".join(f"{ms[name][-1]:>14.3f}" for name in names) + f"{shown:>11.2f}x")
    print()
    return {"context": contexts, "ms": ms, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument(
        "--dtype", nargs="+", choices=["float32", "bfloat16"], help="default: float32 on the CPU, both on CUDA"
    )
    parser.add_argument("--rounds", type=int, help="timing rounds (default 5 on the CPU, 9 on CUDA)")
    parser.add_argument("--calls", type=int, default=3, help="calls of each candidate per round (default 3)")
    parser.add_argument("--tokens-per-call", type=int, help="tokens generated per timed call (default: 1 CPU, 8 CUDA)")
    parser.add_argument("--quick", action="store_true", help="two small contexts, two rounds, nothing written")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"--device cuda: torch {torch.__version__} sees no CUDA device")
    dtypes = args.dtype or (["float32", "bfloat16"] if args.device == "cuda" else ["float32"])
    contexts = [64, 128] if args.quick else CONTEXTS
    rounds = 2 if args.quick else args.rounds or (9 if args.device == "cuda" else 5)
    per_call = args.tokens_per_call or TOKENS_PER_CALL[args.device]

    info = provenance(args.device)
    print(f"torch {info['torch']}, {info['threads']} threads, {args.device}: {info['device_name']}, {load_average()}")
    max_tokens = cache_size(max(contexts), per_call)
    print(f"d_model {D_MODEL}, {NUM_HEADS} heads, eval, inference_mode, caches for {max_tokens} tokens")
    print()
    tables = {}
    with torch.inference_mode():
        for dtype_name in dtypes:
            for batch in [1] if args.quick else BATCHES:
                tables[f"{dtype_name}/{batch}"] = table(
                    dtype_name, batch, contexts, per_call, rounds, args.calls, args.device
                )
    print(f"after the timing: {load_average()}")
    if args.quick:
        return 0
    config = {
        "d_model": D_MODEL,
        "num_heads": NUM_HEADS,
        "max_tokens": max_tokens,
        "rounds": rounds,
        "calls": args.calls,
        "tokens_per_call": per_call,
    }
    write_data(f"fast-decoding-{args.device}", {"provenance": info, "config": config, "tables": tables})
    return 0


if __name__ == "__main__":
    sys.exit(main())
