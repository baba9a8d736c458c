"""The rows of the pages' benchmark tables, from the data that ``benchmarks/`` writes.

    python3 -m docs_tools.benchmark_tables            # print every table's rows, to paste into the pages
    python3 -m docs_tools.benchmark_tables --lang zh  # ... with the row labels of the Chinese pages
    python3 -m docs_tools.benchmark_tables --check    # exit 1 if a page's table differs from the data

A page shows its measurements as ordinary Markdown tables (translated headers and row labels, the same numbers
in every language), followed by a sentence that names the machine, the torch version and the date. The rows are
written by this module from ``benchmarks/data/*.json``, and ``tests/pages/test_benchmark_tables.py``
fails when a page's rows or provenance no longer match the data, say after the benchmark ran again.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docs_tools.project import DOCS, ROOT

DATA = ROOT / "benchmarks" / "data"

#: A row's label: its parts, code (a string) or words ({language: words}; English where a language has none),
#: joined as a list is in each language.
Label = tuple[str | dict[str, str], ...]
SEPARATORS = {"zh": "，"}


def label(parts: Label, lang: str) -> str:
    words = [part if isinstance(part, str) else part.get(lang, part["en"]) for part in parts]
    return SEPARATORS.get(lang, ", ").join(words)


#: The paths of benchmarks/attention_paths.py, in the order and with the names its page shows.
PATH_LABELS: dict[str, Label] = {
    "ours": ("`MultiHeadAttention`",),
    "ours_explicit": ("`MultiHeadAttention`", "`use_sdpa=False`"),
    "torch_mha": ("`nn.MultiheadAttention`", "`attn_mask`"),
    "torch_mha_is_causal": ("`nn.MultiheadAttention`", "`attn_mask`", "`is_causal=True`"),
    "torch_mha_weights": ("`nn.MultiheadAttention`", "`need_weights=True`"),
    "sdpa_is_causal": ("`sdpa`", "`is_causal=True`"),
    "sdpa_bool_mask": ("`sdpa`", "`attn_mask`"),
    "sdpa_math": ("`sdpa`", "`SDPBackend.MATH`"),
}


def load(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def kv_cache_decode(name: str = "kv-cache-cpu") -> list[str]:
    """One new token's time, recomputing and cached, per context (a GPU's times, all under a millisecond or
    two, with two decimals)."""
    data = load(name)
    gpu = data["provenance"]["device"] == "cuda"
    recompute_ms, ratio_x = (".2f", ".1f") if gpu else (".1f", ".0f")
    decode = data["decode"]
    return [
        _row(f"{n:,}", format(recompute, recompute_ms), f"{cached:.2f}", f"{format(ratio, ratio_x)}×")
        for n, recompute, cached, ratio in zip(
            decode["context"], decode["recompute_ms"], decode["cached_ms"], decode["ratio"], strict=True
        )
    ]


def kv_cache_decode_gpu() -> list[str]:
    return kv_cache_decode("kv-cache-cuda")


def gqa_decode() -> list[str]:
    decode = load("kv-cache-cpu")["decode"]
    return [
        _row(f"{n:,}", f"{mha:.2f}", f"{gqa:.2f}")
        for n, mha, gqa in zip(decode["context"], decode["cached_ms"], decode["gqa_cached_ms"], strict=True)
    ]


def gqa_decode_gpu() -> list[str]:
    """GQA's cached step against MHA's on the GPU: float32 and bfloat16 side by side."""
    fp32, bf16 = load("kv-cache-cuda")["decode"], load("kv-cache-cuda-bfloat16")["decode"]
    return [
        _row(f"{n:,}", f"{a:.2f}", f"{b:.2f}", f"{c:.2f}", f"{d:.2f}")
        for n, a, b, c, d in zip(
            fp32["context"],
            fp32["cached_ms"],
            fp32["gqa_cached_ms"],
            bf16["cached_ms"],
            bf16["gqa_cached_ms"],
            strict=True,
        )
    ]


#: The candidates of benchmarks/fast_decoding.py, in the order and with the names its tables show; the CPU has
#: no graphs.
DECODING_LABELS: dict[str, Label] = {
    "recompute": ({"en": "recompute", "zh": "重新计算"},),
    "cat": ({"en": "`torch.cat` cache", "zh": "`torch.cat` 缓存"},),
    "static": ("`StaticKVCache`",),
    "static_shapes": ("`static_shapes=True`",),
    "graph": ("`CUDAGraph`",),
    "graph_explicit": ("`CUDAGraph`", "`use_sdpa=False`"),
}
#: The contexts the pages show, the shortest and the longest (the data holds 128 to 4,096).
DECODING_CONTEXTS = [128, 4096]


def fast_decoding(name: str, dtype: str, lang: str = "en") -> list[str]:
    """Per-token milliseconds of each candidate, batch 1 then batch 8, at the contexts the page shows."""
    tables = load(name)["tables"]
    rows = []
    for candidate, parts in DECODING_LABELS.items():
        if candidate not in tables[f"{dtype}/1"]["ms"]:
            continue
        cells = [label(parts, lang)]
        for batch in (1, 8):
            table = tables[f"{dtype}/{batch}"]
            for n in DECODING_CONTEXTS:
                ms = table["ms"][candidate][table["context"].index(n)]
                cells.append(f"{ms:.3f}" if ms < 1 else f"{ms:,.1f}" if ms >= 10 else f"{ms:.2f}")
        rows.append(_row(*cells))
    return rows


def decoding_ratio(name: str, dtype: str, batch: int, candidate: str, n: int) -> float:
    """How many times cheaper per token ``candidate`` is than the torch.cat cache (median of per-round ratios)."""
    table = load(name)["tables"][f"{dtype}/{batch}"]
    return float(table["ratios"][f"cat/{candidate}"][table["context"].index(n)])


def attention_paths(name: str = "attention-cpu", lang: str = "en") -> list[str]:
    """Each path at the largest number of tokens: forward ms and MiB, forward + backward ms and MiB (a GPU's
    milliseconds with two decimals, its MiB whole)."""
    data = load(name)
    gpu = data["provenance"]["device"] == "cuda"
    ms, mib = (",.2f", ",.0f") if gpu else (",.0f", ",.1f")
    rows = []
    for path, parts in PATH_LABELS.items():
        cells = [label(parts, lang)]
        for mode in ("forward", "forward_backward"):
            cells += [format(data["ms"][mode][path][-1], ms), format(data["mib"][mode][path][-1], mib)]
        rows.append(_row(*cells))
    return rows


def attention_paths_gpu(lang: str = "en") -> list[str]:
    return attention_paths("attention-cuda-bfloat16", lang)


def training_ratios() -> list[str]:
    data = load("attention-cpu")
    ratios = data["ratios"]
    return [
        _row(f"{n:,}", f"{plain:.2f}×", f"{hinted:.2f}×")
        for n, plain, hinted in zip(
            data["tokens"],
            ratios["forward_backward_torch_mha"],
            ratios["forward_backward_torch_mha_is_causal"],
            strict=True,
        )
    ]


def provenance(name: str) -> list[str]:
    """What the sentence under a table must name: the torch version, the threads, the CPU, the date."""
    info = load(name)["provenance"]
    return [f"torch {info['torch'].split('+')[0]}", f"{info['threads']}", info["device_name"], info["date"]]


def attention_numbers() -> list[str]:
    """The numbers the page's prose takes from the data: the mask's cost on SDPA alone, the training ratio at
    the most tokens, and our module's and SDPA's forward times there."""
    data = load("attention-cpu")
    forward = data["ms"]["forward"]
    return [
        f"{forward['sdpa_bool_mask'][-1] / forward['sdpa_is_causal'][-1]:.1f}",
        f"{data['ratios']['forward_backward_torch_mha'][-1]:.1f}",
        f"{forward['ours'][-1]:.0f}",
        f"{forward['sdpa_is_causal'][-1]:.0f}",
    ]


def gpu_numbers() -> list[str]:
    """What the GPU paragraph takes from the GPU data, at the most tokens: the mask's cost on SDPA alone, and
    how much slower and larger the explicit path's forward is than our module's."""
    data = load("attention-cuda-bfloat16")
    forward, memory = data["ms"]["forward"], data["mib"]["forward"]
    return [
        f"{data['tokens'][-1]:,}",
        f"{forward['sdpa_bool_mask'][-1] / forward['sdpa_is_causal'][-1]:.1f}",
        f"{forward['ours_explicit'][-1] / forward['ours'][-1]:.0f}",
        f"{memory['ours_explicit'][-1] / memory['ours'][-1]:.0f}",
    ]


def claims(page: str) -> list[str]:
    """What the page's words say about the data that no longer holds (its sentences are not numbers)."""
    found = []
    if page == "kv-cache.md":
        decode = load("kv-cache-cpu")["decode"]
        at_1024 = decode["ratio"][decode["context"].index(1024)]
        if not 10 <= at_1024 < 100:
            found.append(f"the summary says a cached step at 1,024 tokens is tens of times cheaper: {at_1024}x")
        gpu = load("kv-cache-cuda")["decode"]
        ratios = dict(zip(gpu["context"], gpu["ratio"], strict=True))
        if not (0.9 <= ratios[128] <= 1.1 and min(ratios.values()) >= 0.9):
            found.append(f"the page says the GPU's cached step costs what recomputing does at 128 tokens: {ratios}")
        cpu = load("fast-decoding-cpu")["tables"]
        slower = [r for t in cpu.values() for r in t["ratios"]["cat/static"] if r < 1]
        if slower:
            found.append(f"the page says StaticKVCache is cheaper than the torch.cat cache on the CPU: {slower}")
        cuda = load("fast-decoding-cuda")["tables"]["bfloat16/1"]
        if min(cuda["ratios"]["cat/recompute"]) >= min(cuda["ratios"]["cat/graph"]) or any(
            g >= r for g, r in zip(cuda["ms"]["graph"], cuda["ms"]["recompute"], strict=True)
        ):
            found.append("the page says the CUDA graph is cheaper than recomputing at every context")
        one, eight = (load("fast-decoding-cuda")["tables"][f"bfloat16/{b}"]["ms"] for b in (1, 8))
        if any(r >= c for r, c in zip(one["recompute"], one["cat"], strict=True)) or any(
            r <= c for r, c in zip(eight["recompute"][-2:], eight["cat"][-2:], strict=True)
        ):
            found.append(
                "the page says that in bfloat16 recomputing is cheaper than the eager cached step for one "
                "sequence, and dearer for 8 from 2,048 tokens on"
            )
    if page == "attention-backends.md":
        hinted = load("attention-cpu")["ratios"]["forward_backward_torch_mha_is_causal"][-1]
        if abs(hinted - 1) > 0.1:
            found.append(f"the page says both take the same time given is_causal=True; measured {hinted}x")
    return found


def fast_decoding_numbers() -> list[str]:
    """What the fast-decoding prose takes from the data: the CPU's StaticKVCache against torch.cat (one
    sequence at 128 and 4,096 tokens, eight at 4,096), the graph's range against torch.cat in
    bfloat16, and the two float32 graphs."""
    cpu = [decoding_ratio("fast-decoding-cpu", "float32", 1, "static", n) for n in (128, 4096)]
    cpu.append(decoding_ratio("fast-decoding-cpu", "float32", 8, "static", 4096))
    graph = load("fast-decoding-cuda")["tables"]["bfloat16/1"]["ratios"]["cat/graph"]
    fp32 = load("fast-decoding-cuda")["tables"]["float32/1"]["ms"]
    return [f"{r:.2f}" for r in cpu] + [
        f"{min(graph):.1f}",
        f"{max(graph):.1f}",
        f"{fp32['graph'][0]:.2f} ms",
        f"{fp32['graph_explicit'][0]:.3f} ms",
    ]


#: The numbers each page's prose takes from the data (they must appear in the page, in every language).
NUMBERS: dict[str, Callable[[], list[str]]] = {
    "attention-backends.md": lambda: attention_numbers() + gpu_numbers(),
    "kv-cache.md": fast_decoding_numbers,
}


@dataclass(frozen=True)
class Table:
    name: str
    rows: Callable[..., list[str]]  # lang= for the tables whose labels are words
    data: str  # the data file (benchmarks/data/<data>.json)
    labelled: bool = False  # whether its rows take the page's language

    def shown(self, lang: str) -> list[str]:
        return self.rows(lang=lang) if self.labelled else self.rows()


#: The tables of each page (file name within a language's folder).
TABLES = {
    "kv-cache.md": [
        Table("decode", kv_cache_decode, "kv-cache-cpu"),
        Table("GPU decode", kv_cache_decode_gpu, "kv-cache-cuda"),
        Table(
            "fast decoding, CPU",
            lambda lang: fast_decoding("fast-decoding-cpu", "float32", lang),
            "fast-decoding-cpu",
            labelled=True,
        ),
        Table(
            "fast decoding, GPU bfloat16",
            lambda lang: fast_decoding("fast-decoding-cuda", "bfloat16", lang),
            "fast-decoding-cuda",
            labelled=True,
        ),
        Table(
            "fast decoding, GPU float32",
            lambda lang: fast_decoding("fast-decoding-cuda", "float32", lang),
            "fast-decoding-cuda",
            labelled=True,
        ),
    ],
    "grouped-query.md": [
        Table("decode", gqa_decode, "kv-cache-cpu"),
        Table("GPU decode", gqa_decode_gpu, "kv-cache-cuda-bfloat16"),
    ],
    "attention-backends.md": [
        Table("paths", lambda lang: attention_paths("attention-cpu", lang), "attention-cpu", labelled=True),
        Table("training", training_ratios, "attention-cpu"),
        Table("GPU paths", attention_paths_gpu, "attention-cuda-bfloat16", labelled=True),
    ],
}


def problems(page: Path, text: str | None = None) -> list[str]:
    """How the tables of ``page`` (docs/<lang>/<name>.md; its ``text``, read from it by default) differ from
    the data; empty if they match."""
    text = page.read_text(encoding="utf-8") if text is None else text
    shown = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
    found = []
    for table in TABLES.get(page.name, []):
        missing = [row for row in table.shown(page.parent.name) if row not in text.splitlines()]
        if missing:
            found.append(
                f"{shown}: the {table.name} table does not show benchmarks/data/{table.data}.json; "
                f"rows missing: {missing} (python3 -m docs_tools.benchmark_tables prints them)"
            )
    for data in dict.fromkeys(table.data for table in TABLES.get(page.name, [])):
        absent = [word for word in provenance(data) if word not in text]
        if absent:
            found.append(f"{shown}: the page does not name {absent} from {data}.json")
    numbers = NUMBERS.get(page.name, lambda: [])()
    missing_numbers = [number for number in numbers if number not in text]
    if missing_numbers:
        found.append(f"{shown}: the prose should say {missing_numbers} (from the data)")
    found += [f"{shown}: {claim}" for claim in claims(page.name)]
    return found


def main(argv: list[str]) -> int:
    if "--check" in argv:
        found = [p for page in sorted(DOCS.glob("*/*.md")) for p in problems(page)]
        print("\n".join(found) or "Every benchmark table matches its data.")
        return 1 if found else 0
    lang = argv[argv.index("--lang") + 1] if "--lang" in argv else "en"
    for page, tables in TABLES.items():
        for table in tables:
            print(f"{lang}/{page}, {table.name} ({', '.join(provenance(table.data))}):")
            print("\n".join(table.shown(lang)))
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
