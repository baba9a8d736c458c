"""Predict-then-reveal: every predict-the-output exercise asks its question in the page, in both languages, and
the choice the page calls right is what attention_lib computes, and no other choice is.

Each question's entry below gives the value of each of its choices, in the page's order, and computes the
answer with attention_lib (or PyTorch, where the question is about PyTorch). A choice whose label is one code
span (`` `4` ``, `` `(3, 2)` ``) must show its value exactly, so the table and the page cannot drift apart.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import attention_lib as al
from docs_tools import config as site_config
from docs_tools.interactive import real_model
from docs_tools.pages import PREDICT, exercises, predictions

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = tuple(site_config.complete_locales())
CHAPTERS = tuple(site_config.notebook_chapters())
CODE_LABEL = re.compile(r"^`(?P<code>[^`]+)`$")
CODE_SPAN = re.compile(r"`[^`]+`")


@dataclass(frozen=True)
class Question:
    values: tuple[object, ...]
    compute: Callable[[], object]


QUESTIONS: dict[str, Question] = {}


def question(id: str, *values: object) -> Callable[[Callable[[], object]], Callable[[], object]]:
    """Register a question: the values of its choices in the page's order, and the function that computes the
    right one."""

    def register(compute: Callable[[], object]) -> Callable[[], object]:
        if id in QUESTIONS:
            raise ValueError(f"{id} registered twice")
        QUESTIONS[id] = Question(values, compute)
        return compute

    return register


# --- attention-scores -----------------------------------------------------------------------------------------


@question("exercise-predict-doubled", 2, 4, "depends on the pair")
def _doubled() -> object:
    inputs = al.journey_inputs()
    ratio = al.attn_scores_all(2 * inputs) / al.attn_scores_all(inputs)
    return round(ratio[0, 0].item()) if torch.allclose(ratio, ratio[0, 0]) else "depends on the pair"


# --- why-attention --------------------------------------------------------------------------------------------


@question("exercise-predict-zero-query", "torch.zeros(3)", "nan", "summary", "inputs[0]")
def _zero_query() -> object:
    inputs = al.journey_inputs()
    attn_weights = torch.softmax(al.attn_scores_for_query(inputs, torch.zeros(3)), dim=0)
    context_vec = al.context_vector_loop(inputs, attn_weights)
    if context_vec.isnan().any():
        return "nan"
    # The vectors the page shows before the exercise, under the names it gives them.
    shown = {"torch.zeros(3)": torch.zeros(3), "summary": inputs.mean(dim=0), "inputs[0]": inputs[0]}
    return next((name for name, vector in shown.items() if torch.allclose(context_vec, vector)), context_vec)


@question(
    "exercise-predict-shuffled-keys",
    "same weights, same context",
    "new weights, new context",
    "reordered weights, new context",
    "reordered weights, same context",
)
def _shuffled_keys() -> object:
    inputs = al.journey_inputs()
    order = [5, 2, 0, 4, 1, 3]
    shuffled = inputs[order]
    query = inputs[1]
    attn_weights = torch.softmax(al.attn_scores_for_query(inputs, query), dim=0)
    shuffled_weights = torch.softmax(al.attn_scores_for_query(shuffled, query), dim=0)
    if torch.allclose(shuffled_weights, attn_weights):
        weights = "same weights"
    elif torch.allclose(shuffled_weights, attn_weights[order]):
        weights = "reordered weights"
    else:
        weights = "new weights"
    same = torch.allclose(
        al.context_vector_loop(shuffled, shuffled_weights), al.context_vector_loop(inputs, attn_weights)
    )
    return f"{weights}, {'same' if same else 'new'} context"


# --- attention-weights ----------------------------------------------------------------------------------------


@question("exercise-predict-dim0", 6, "six 1s", 1)
def _dim0() -> object:
    row_sums = torch.softmax(al.attn_scores_all(al.journey_inputs()), dim=0).sum(dim=-1)
    if torch.allclose(row_sums, torch.ones(6)):
        return "six 1s"
    total = row_sums.sum().item()
    return round(total) if abs(total - round(total)) < 1e-4 else total


# --- context-vectors ------------------------------------------------------------------------------------------


@question("exercise-predict-uniform", "inputs[1]", "inputs.mean(dim=0)", "inputs.sum(dim=0)")
def _uniform() -> object:
    inputs = al.journey_inputs()
    context_vec = al.context_vectors(inputs, torch.full((6, 6), 1 / 6))[1]  # "journey"
    candidates = {
        "inputs[1]": inputs[1],
        "inputs.mean(dim=0)": inputs.mean(dim=0),
        "inputs.sum(dim=0)": inputs.sum(dim=0),
    }
    return next((name for name, vector in candidates.items() if torch.allclose(context_vec, vector)), context_vec)


# --- trainable-weights ----------------------------------------------------------------------------------------


@question(
    "exercise-predict-shapes",
    ("queries", "attn_scores", "attn_weights", "context"),
    ("queries",),
    ("queries", "context"),
)
def _shapes() -> object:
    inputs = al.journey_inputs()

    def shapes(d_out: int) -> dict[str, torch.Size]:
        torch.manual_seed(123)
        sa = al.SelfAttentionV2(d_in=3, d_out=d_out)
        with torch.no_grad():
            queries = sa.W_query(inputs)
            keys = sa.W_key(inputs)
            attn_scores = queries @ keys.T
            attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
            context = sa(inputs)
        return {
            "queries": queries.shape,
            "attn_scores": attn_scores.shape,
            "attn_weights": attn_weights.shape,
            "context": context.shape,
        }

    # the page's d_out against the exercise's wider one
    narrow, wide = shapes(2), shapes(5)
    return tuple(name for name in wide if wide[name] != narrow[name])


# --- masks ----------------------------------------------------------------------------------------------------


@question(
    "exercise-predict-rows",
    ("unmasked weight, then zeros", "unchanged"),
    ("one-hot", "unchanged"),
    ("one-hot", "changed"),
)
def _rows() -> object:
    inputs = al.journey_inputs()
    torch.manual_seed(789)
    sa_v2 = al.SelfAttentionV2(d_in=3, d_out=2)
    with torch.no_grad():
        attn_scores = sa_v2.W_query(inputs) @ sa_v2.W_key(inputs).T
    causal = al.masked_softmax(attn_scores, al.causal_mask(6))
    unmasked = torch.softmax(attn_scores, dim=-1)
    only_itself = torch.eye(6)[0]
    if torch.allclose(causal[0], only_itself):
        first = "one-hot"
    elif torch.allclose(causal[0], unmasked[0] * only_itself):
        first = "unmasked weight, then zeros"
    else:
        first = "other"
    return first, "unchanged" if torch.allclose(causal[5], unmasked[5]) else "changed"


# --- scoring-functions ----------------------------------------------------------------------------------------


@question("exercise-predict-divide-by-d-k", 1, "the same at every size", 0.125, 0)
def _divide_by_d_k() -> object:
    # The page's experiment (same seed, 1000 queries of 8 keys), with the scores divided by d_k.
    torch.manual_seed(123)
    max_weight = []
    for d_k in (4, 64, 1024):
        q = torch.randn(1000, 1, d_k)
        k = torch.randn(1000, 8, d_k)
        attn_scores = q @ k.transpose(-2, -1)
        max_weight.append(torch.softmax(attn_scores / d_k, dim=-1).amax(dim=-1).mean().item())
    if max(max_weight) - min(max_weight) < 0.05:
        return "the same at every size"
    # Divided by d_k the scores shrink like 1/sqrt(d_k), towards all zeros, where every key gets the same weight:
    # the measured averages must fall towards that weight, each closer than the last, never below it.
    limit = torch.softmax(torch.zeros(8), dim=-1).max().item()
    gaps = [weight - limit for weight in max_weight]
    assert all(a > b > 0 for a, b in itertools.pairwise(gaps)), max_weight
    return limit


# --- dropout --------------------------------------------------------------------------------------------------


@question(
    "exercise-predict-dropout-sums",
    [1.0],  # the rows still sum to 1
    [0.0, 0.4833, 0.5167, 1.0],  # the survivors not scaled
    [0.0, 0.6444, 0.6889, 1.3333],
    [0.0, 1.9332, 2.0668, 4.0],  # the survivors divided by p instead of 1 - p
)
def _dropout_sums() -> object:
    row_1 = torch.tensor([0.4833, 0.5167, 0.0, 0.0, 0.0, 0.0])  # the page's "journey" row
    with torch.random.fork_rng():
        torch.manual_seed(123)
        rows = torch.nn.Dropout(0.25)(row_1.expand(100_000, 6))
    return [round(row_sum, 4) for row_sum in torch.unique(rows.sum(dim=-1)).tolist()]


# --- buffers --------------------------------------------------------------------------------------------------


@question(
    "exercise-predict-buffer-dtypes",
    (torch.float64, torch.float64),  # every tensor of the module converted
    (torch.bool, torch.float64),  # the plain attribute converted
    (torch.float64, torch.float32),  # the boolean buffer converted
    (torch.bool, torch.float32),
)
def _buffer_dtypes() -> object:
    class MaskAndScale(torch.nn.Module):  # the page's module
        def __init__(self) -> None:
            super().__init__()
            self.W_query = torch.nn.Linear(3, 2, bias=False)
            self.register_buffer("mask", al.causal_mask(4), persistent=False)
            self.register_buffer("scale", torch.tensor(2**-0.5))
            self.offset = torch.zeros(2)  # a plain attribute

    mixed = MaskAndScale().double()
    return (mixed.mask.dtype, mixed.offset.dtype)


# --- multi-head -----------------------------------------------------------------------------------------------


@question(
    "exercise-wrapper-2d-output",
    ("d_out=1", "column h from head h"),
    ("d_out=1", "columns mix the heads"),  # as out_proj mixes them in MultiHeadAttention
    "no d_out",  # MultiHeadAttention's rule that d_out be a multiple of num_heads
)
def _wrapper_2d_output() -> object:
    inputs = al.journey_inputs()
    batch = torch.stack((inputs, inputs))  # (2, 6, 3)
    for d_out in range(1, 5):
        try:
            wrapper = al.MultiHeadAttentionWrapper(d_in=3, d_out=d_out, context_length=6, dropout=0.0, num_heads=2)
        except ValueError:  # a size the module refuses, as MultiHeadAttention refuses d_out=1 for 2 heads
            continue
        with torch.no_grad():
            context_vecs = wrapper(batch)
            if context_vecs.shape != (2, 6, 2):
                continue
            by_head = all(
                torch.equal(context_vecs[..., h * d_out : (h + 1) * d_out], head(batch))
                for h, head in enumerate(wrapper.heads)
            )
        return (f"d_out={d_out}", "column h from head h" if by_head else "columns mix the heads")
    return "no d_out"


@question(
    "exercise-gpt2-parameters",
    f"{4 * 768 * 768:,}",  # out_proj's bias forgotten
    f"{4 * 768 * 768 + 768:,}",
    f"{4 * 768 * 768 + 768 + 1024 * 1024:,}",  # the causal mask of context_length counted
    f"{12 * 3 * 768 * 768 + 768 * 768 + 768:,}",  # each of the 12 heads with its own (768, 768) projections
)
def _gpt2_parameters() -> object:
    mha_gpt2 = al.MultiHeadAttention(d_in=768, d_out=768, context_length=1024, dropout=0.0, num_heads=12)
    return f"{sum(p.numel() for p in mha_gpt2.parameters()):,}"


# --- cross-attention ------------------------------------------------------------------------------------------


@question(
    "exercise-predict-cross-swap",
    ((8, 6), "the old weights transposed"),
    ((6, 8), "as before"),  # the weights' rows taken to follow the sentence
    ((8, 6), "new"),
    ((8, 6), "the old scores transposed"),  # W_query and W_key taken to play the same part
)
def _cross_swap() -> object:
    embedded = al.dessert_embedding()  # (6, 3)
    with torch.random.fork_rng():
        torch.manual_seed(123)
        cross_attn = al.CrossAttention(d_in=3, d_out_kq=2, d_out_v=4)
        second_input = torch.rand(8, 3)

    def scores(x_q: torch.Tensor, x_kv: torch.Tensor) -> torch.Tensor:
        return (x_q @ cross_attn.W_query) @ (x_kv @ cross_attn.W_key).T / cross_attn.d_out_kq**0.5

    with torch.no_grad():
        swapped = torch.softmax(scores(second_input, embedded), dim=-1)
        # these are the weights the module uses: they reproduce its context vectors
        assert torch.allclose(swapped @ (embedded @ cross_attn.W_value), cross_attn(second_input, embedded))
        old_scores = scores(embedded, second_input)
        if swapped.shape != (8, 6):
            return (tuple(swapped.shape), "as before")
        if torch.allclose(swapped, torch.softmax(old_scores, dim=-1).T):
            return ((8, 6), "the old weights transposed")
        if torch.allclose(swapped, torch.softmax(old_scores.T, dim=-1)):
            return ((8, 6), "the old scores transposed")
        return ((8, 6), "new")


# --- pytorch-equivalence --------------------------------------------------------------------------------------


@question(
    "exercise-predict-sdpa-mask",
    [0.0, 0.3333, 0.3333, 0.3333],
    [1.0, 0.0, 0.0, 0.0],  # SDPA taken to read True as masked out, as we do
    [0.25, 0.25, 0.25, 0.25],  # the mask ignored, or flipped with the diagonal
)
def _sdpa_mask() -> object:
    flat = torch.zeros(1, 1, 4, 2)  # queries and keys of zeros: every score the same
    as_is = torch.nn.functional.scaled_dot_product_attention(flat, flat, torch.eye(4), attn_mask=al.causal_mask(4))
    return [round(weight, 4) for weight in as_is[0, 0, 0].tolist()]


# --- pitfalls -------------------------------------------------------------------------------------------------


@question(
    "exercise-predict-wrong-split",
    # (the same heads for single tokens in 2 heads, the same heads for 3 tokens in 1 head)
    (False, False),
    (True, False),
    (False, True),
    (True, True),
)
def _wrong_split() -> object:
    def same_heads(x: torch.Tensor, num_heads: int) -> bool:
        b, num_tokens, d_out = x.shape
        wrong = x.view(b, num_heads, num_tokens, d_out // num_heads)  # the page's split_heads_wrong
        return torch.equal(wrong, al.split_heads(x, num_heads))

    return (same_heads(torch.rand(2, 1, 4), 2), same_heads(torch.rand(2, 3, 4), 1))


# --- kv-cache -------------------------------------------------------------------------------------------------


def _kv_cache_mha() -> al.MultiHeadAttention:
    """The kv-cache page's exercises' module: 2 heads of 4, 16 positions, no dropout."""
    torch.manual_seed(123)
    return al.MultiHeadAttention(d_in=8, d_out=8, context_length=16, dropout=0.0, num_heads=2)


@question("exercise-predict-cache-shapes", (3, 7, 2, 4), (3, 2, 5, 4), (3, 2, 7, 4), (3, 2, 16, 4))
def _cache_shapes() -> object:
    mha = _kv_cache_mha()
    mha.reset_cache()
    with torch.no_grad():
        mha(torch.randn(3, 5, 8), use_cache=True)  # prefill: 3 prompts of 5
        for _ in range(2):  # decode: one token a step
            mha(torch.randn(3, 1, 8), use_cache=True)
    assert mha.cache_k is not None
    return tuple(mha.cache_k.shape)


@question("exercise-predict-no-reset", "raises", "same, 4", "same, 8", "different, 8")
def _no_reset() -> object:
    mha = _kv_cache_mha()
    prompt = torch.randn(1, 10, 8)[:, :4]
    mha.reset_cache()
    with torch.no_grad():
        first = mha(prompt, use_cache=True)
        try:
            again = mha(prompt, use_cache=True)  # no reset_cache() before it
        except (ValueError, RuntimeError):
            return "raises"
    assert mha.cache_k is not None
    same = "same" if torch.allclose(again, first) else "different"
    return f"{same}, {mha.cache_k.shape[2]}"


# --- grouped-query --------------------------------------------------------------------------------------------


@question("exercise-predict-gqa-sizes", (2, 1), (2, 2), (1, 2))
def _gqa_head_9() -> object:
    """The key/value head query head 9 uses, and the one `repeat` would hand it. The first is read from the module:
    its value weights zeroed but for one key/value head's and its out_proj made the identity, the output's columns
    of query head 9, its context vectors, are non-zero only for the head it uses."""
    torch.manual_seed(0)
    gqa = al.GroupedQueryAttention(512, 512, 0.0, num_heads=16, num_kv_groups=4)
    weights = gqa.W_value.weight.detach().clone()  # (num_kv_groups * head_dim, d_in)
    x = torch.randn(1, 10, 512)
    used = []
    with torch.no_grad():
        gqa.out_proj.weight.copy_(torch.eye(512))
        for kv_head in range(gqa.num_kv_groups):
            rows = slice(kv_head * gqa.head_dim, (kv_head + 1) * gqa.head_dim)
            gqa.W_value.weight.zero_()
            gqa.W_value.weight[rows] = weights[rows]
            context_vec = gqa(x)[..., 9 * gqa.head_dim : 10 * gqa.head_dim]  # query head 9's columns
            if context_vec.abs().max() > 0:
                used.append(kv_head)
    (kv_head,) = used
    tiled = torch.arange(gqa.num_kv_groups).repeat(gqa.group_size)  # 0, 1, 2, 3, 0, 1, ...
    return kv_head, tiled[9].item()


# --- attention-backends ---------------------------------------------------------------------------------------


@question(
    "exercise-predict-flash-only",
    (),
    ("train",),
    ("train", "train, need_weights"),
    ("eval", "train", "train, need_weights"),
)
def _flash_only() -> object:
    """Which of the three calls raise, on the CPU that runs the test, as the answer runs them."""
    import warnings

    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    mha = al.MultiHeadAttention(d_in=8, d_out=8, context_length=16, dropout=0.1, num_heads=2)
    x = torch.randn(1, 6, 8)
    calls = {"eval": ("eval", {}), "train": ("train", {}), "train, need_weights": ("train", {"need_weights": True})}
    raised = []
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for name, (mode, kwargs) in calls.items():
            mha.train(mode == "train")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # PyTorch's reasons for skipping a kernel
                try:
                    mha(x, **kwargs)
                except RuntimeError:
                    raised.append(name)
    return tuple(raised)


# --- positions ------------------------------------------------------------------------------------------------


@question(
    "exercise-predict-rope-shift",
    ("score(7, 5)", "score(0, 2)"),
    ("score(7, 5)",),
    ("score(7, 5)", "rotated twice"),
    ("score(7, 5)", "learned"),
)
def _rope_shift() -> object:
    """Which of the exercise's scores equal score(2, 0), and whether the learned table's two scores are equal."""
    torch.manual_seed(1)
    q, k = torch.randn(1, 8), torch.randn(1, 8)  # (1, head_dim): one token each

    def score(m: int, n: int, q: torch.Tensor = q) -> float:
        return (al.apply_rope(q, torch.tensor([m])) @ al.apply_rope(k, torch.tensor([n])).T).item()

    e = torch.randn(8, 8)  # a learned table: one vector per position
    pairs = {
        "score(7, 5)": (score(7, 5), score(2, 0)),
        "score(0, 2)": (score(0, 2), score(2, 0)),
        "rotated twice": (score(5, 3, q=al.apply_rope(q, torch.tensor([5]))), score(2, 0)),
        "learned": (((q + e[7]) @ (k + e[5]).T).item(), ((q + e[2]) @ (k + e[0]).T).item()),
    }
    return tuple(name for name, (a, b) in pairs.items() if abs(a - b) < 1e-5)


# --- masks-beyond-causal --------------------------------------------------------------------------------------


@question("exercise-predict-ring-buffer", [5, 6, 7, 8], [6, 7, 8, 5], [8, 5, 6, 7])
def _ring_buffer() -> object:
    """The position each slot holds after position 8, for keys that hold their own positions."""

    def at(positions: list[int]) -> torch.Tensor:
        return torch.tensor(positions, dtype=torch.float32).view(1, 1, -1, 1)

    ring = al.SlidingWindowKVCache(batch=1, num_kv_heads=1, window=4, head_dim=1)
    ring.update(at(list(range(6))), at(list(range(6))))  # the prompt
    for p in (6, 7, 8):
        ring.update(at([p]), at([p]))
    return [int(p) for p in ring.keys.flatten().tolist()]


# --- real-model -----------------------------------------------------------------------------------------------


@question("exercise-real-model-left-padding", "same", "padding", "nan", "positions")
def _left_padding() -> object:
    """Whether layer 0's weights of the four real tokens after two left pads are those they get alone, and if not,
    why: weight on the padding, a NaN, or the positions (which position ids counted from the first real token
    mend)."""
    pytest.importorskip("transformers", reason="needs transformers")
    model = real_model()  # the page's GPT-2
    left_ids, left_mask = torch.tensor([[0, 0, 1, 2, 3, 4]]), torch.tensor([[0, 0, 1, 1, 1, 1]])
    with torch.no_grad():
        left = model(left_ids, attention_mask=left_mask, output_attentions=True).attentions[0][0]
        alone = model(left_ids[:, 2:], output_attentions=True).attentions[0][0]
        position_ids = (left_mask.cumsum(dim=-1) - 1).clamp(min=0)
        fixed = model(left_ids, attention_mask=left_mask, position_ids=position_ids, output_attentions=True)
    if torch.allclose(left[:, 2:, 2:], alone):
        return "same"
    if left.isnan().any():
        return "nan"
    if (left[:, 2:, :2] != 0).any():
        return "padding"
    assert torch.allclose(fixed.attentions[0][0, :, 2:, 2:], alone, atol=1e-6), "neither padding nor positions"
    return "positions"


# --- softmax-in-tiles -----------------------------------------------------------------------------------------


@question("exercise-predict-tiles-rescale", "exp(-2), 1", "exp(2), 1", "exp(-2), exp(-1)", "1, 1")
def _tiles_rescale() -> object:
    # The page's scores [2, 0], [4, 1], [3, 1] as keys of head_dim 1 against the query 1: the factors of
    # tile_steps' second and third steps, named as the choices write them.
    keys = torch.tensor([[2.0], [0.0], [4.0], [1.0], [3.0], [1.0]])
    steps = list(al.tile_steps(torch.ones(1, 1), keys, torch.ones(6, 1), tile_size=2))
    names = {"exp(-2)": math.exp(-2), "exp(2)": math.exp(2), "exp(-1)": math.exp(-1), "1": 1.0}

    def name(factor: float) -> str:
        return next((key for key, value in names.items() if math.isclose(factor, value, rel_tol=1e-6)), str(factor))

    return ", ".join(name(step.rescale.item()) for step in steps[1:])


# --- the tests ------------------------------------------------------------------------------------------------


def _text(lang: str, page: str) -> str:
    return (ROOT / "docs" / lang / f"{page}.md").read_text(encoding="utf-8")


@functools.cache  # parsed once per language, not once per question
def _all(lang: str) -> dict[str, tuple[str, object]]:
    """Every question of a language's chapters: id -> (page, Prediction)."""
    found = {}
    for page in CHAPTERS:
        for prediction in predictions(_text(lang, page)):
            assert prediction.id not in found, f"{lang}: {prediction.id} asked twice"
            found[prediction.id] = (page, prediction)
    return found


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_predict_exercise_asks_its_question_above_its_answer(lang: str) -> None:
    for page in CHAPTERS:
        text = _text(lang, page)
        asked = predictions(text)
        for exercise in exercises(text):
            mine = [p for p in asked if exercise.section[0] <= p.span[0] and p.span[1] <= exercise.solution[0]]
            if exercise.kind == PREDICT:
                assert mine, f"{lang}/{page}: {exercise.id} asks no question (<div data-predict=...>)"
                assert all(p.id == exercise.id or p.id.startswith(exercise.id + "-") for p in mine), (
                    f"{lang}/{page}: {[p.id for p in mine]} under {exercise.id}"
                )
            else:
                assert not mine, f"{lang}/{page}: a question under {exercise.kind} exercise {exercise.id}"
        placed = sum(
            1
            for p in asked
            for e in exercises(text)
            if e.kind == PREDICT and e.section[0] <= p.span[0] and p.span[1] <= e.solution[0]
        )
        assert placed == len(asked), f"{lang}/{page}: a question outside a predict exercise, above its answer"


def test_every_question_has_its_entry_here_and_every_entry_a_question() -> None:
    assert sorted(_all("en")) == sorted(QUESTIONS)


@pytest.mark.parametrize("id", sorted(QUESTIONS))
def test_the_right_choice_is_what_attention_lib_computes(id: str) -> None:
    entry = QUESTIONS[id]
    computed = entry.compute()
    assert entry.values.count(computed) == 1, f"{id}: attention_lib gives {computed!r}; the choices: {entry.values}"
    for lang in LANGUAGES:
        page, prediction = _all(lang)[id]
        assert len(prediction.choices) == len(entry.values), f"{lang}/{page}: {id}"
        assert entry.values[prediction.answer] == computed, (
            f"{lang}/{page}: {id} calls choice {prediction.answer + 1} ({prediction.choices[prediction.answer].label}) "
            f"right; attention_lib gives {computed!r}"
        )
        for choice, value in zip(prediction.choices, entry.values, strict=True):
            code = CODE_LABEL.match(choice.label)
            if code is not None:
                assert code["code"] == str(value), f"{lang}/{page}: {id}: the label {choice.label} for {value!r}"


def test_the_languages_ask_the_same_questions() -> None:
    english = _all("en")
    for lang in LANGUAGES:
        translated = _all(lang)
        assert sorted(translated) == sorted(english), lang
        for id, (page, prediction) in english.items():
            other = translated[id][1]
            assert other.answer == prediction.answer, f"{lang}/{page}: {id}"
            assert [CODE_SPAN.findall(c.label) for c in other.choices] == [
                CODE_SPAN.findall(c.label) for c in prediction.choices
            ], f"{lang}/{page}: {id}: the choices' code differs from the English"


def test_the_format_check_can_fail() -> None:
    block = '<div data-predict="exercise-x" data-answer="{answer}" markdown>\n\n{body}\n</div>\n'
    good = "Which?\n\n- `1`\n\n    No.\n\n- `2`\n\n    Yes.\n"
    (found,) = predictions(block.format(answer=2, body=good))
    assert (found.answer, [c.label for c in found.choices]) == (1, ["`1`", "`2`"])
    for answer, body, problem in [
        (3, good, "data-answer=3"),
        (1, "- `1`\n\n    No.\n\n- `2`\n\n    Yes.\n", "no question"),
        (1, "Which?\n\n- `1`\n\n    No.\n", "1 choices"),
        (1, "Which?\n\n- `1`\n\n- `2`\n\n    Yes.\n", "without an explanation"),
    ]:
        with pytest.raises(ValueError, match=problem):
            predictions(block.format(answer=answer, body=body))
    with pytest.raises(AssertionError):
        assert QUESTIONS["exercise-predict-doubled"].values[0] == _doubled()  # a wrong choice is not the computed
