"""The mask composer of masks-beyond-causal.md in a real browser: for every subset of its four masks, under four
settings of their parameters (64 combinations, which take every branch of composer.js's code writer), the grid
it shows is attention_lib's composition, and each of the five snippets it emits, run with ``exec``, builds that
mask in its convention and gives, through the real consumer (attention_lib's masked_softmax, SDPA,
nn.MultiheadAttention, a Hugging Face model), the attention that masked_softmax gives with the grid. Then: the
keyboard, touch, a phone's width, both palettes, no shift while loading, axe-core, and the copy button.
"""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import yaml

import attention_lib as al

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
PAGES = {"en": "masks-beyond-causal/", "zh": "zh/masks-beyond-causal/"}
N = 8
MASKS = ("causal", "padding", "window", "documents")
#: The parameters each subset of the masks is tried with: both padding sides, one and two sequences, windows from
#: 1 (each query sees itself only) to 8 (the causal mask), one document and several.
PARAMETERS = [
    {"batch": 2, "lens": [5, 8], "side": "right", "size": 3, "lengths": "3,2,3"},
    {"batch": 2, "lens": [3, 6], "side": "left", "size": 1, "lengths": "4,4"},
    {"batch": 1, "lens": [6, 8], "side": "right", "size": 8, "lengths": "8"},
    {"batch": 1, "lens": [4, 8], "side": "left", "size": 2, "lengths": "2,2,2,2"},
]
COMBINATIONS = [
    {**dict(zip(MASKS, chosen, strict=True)), **parameters}
    for chosen in itertools.product([False, True], repeat=len(MASKS))
    for parameters in PARAMETERS
]
CONVENTIONS = ("attention_lib", "mha", "sdpa", "additive", "hf")


def _words() -> dict[str, dict]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)  # mkdocs.yml's !!python/name tags
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    i18n = next(plugin["i18n"] for plugin in config["plugins"] if isinstance(plugin, dict) and "i18n" in plugin)
    zh = next(language for language in i18n["languages"] if language["locale"] == "zh")
    return {"en": config["extra"]["interactive"]["mask-composer"], "zh": zh["extra"]["interactive"]["mask-composer"]}


WORDS = _words()

#: Sets the composer's controls as a reader does (a value, then a change event) for each combination, and reads
#: back what it shows: the grid, the empty rows, every snippet, and the Hugging Face note.
SWEEP = """(root, combinations) => {
  const set = (name, value) => {
    const control = root.querySelector(`[name=${name}]`);
    if (control.type === "checkbox") control.checked = value;
    else control.value = String(value);
    control.dispatchEvent(new Event("change", { bubbles: true }));
  };
  const hf = root.querySelector("input[value=hf]");
  hf.checked = true;
  hf.dispatchEvent(new Event("change", { bubbles: true }));
  const seen = combinations.map((c) => {
    for (const name of ["causal", "padding", "window", "documents", "batch", "side", "size", "lengths"]) {
      set(name, c[name]);
    }
    set("len0", c.lens[0]);
    set("len1", c.lens[1]);
    const codes = Object.fromEntries([...root.querySelectorAll("pre[data-convention]")]
      .map((pre) => [pre.dataset.convention, pre.textContent]));
    return { state: JSON.parse(root.dataset.state), grid: JSON.parse(root.dataset.grid),
             empty: JSON.parse(root.dataset.empty), codes, note: root.querySelector(".mc-note").textContent,
             emptyNote: root.querySelector(".mc-empty").hidden ? "" : root.querySelector(".mc-empty").textContent };
  });
  root.querySelector("input[value=attention_lib]").click();
  return seen;
}"""


def composed(state: dict) -> torch.Tensor:
    """The composition, from attention_lib: (batch, 8, 8), True = masked out; one sequence without padding."""
    batch = state["batch"] if state["padding"] else 1
    mask = torch.zeros(batch, N, N, dtype=torch.bool)
    if state["causal"]:
        mask = mask | al.causal_mask(N)
    if state["padding"]:
        lens = torch.tensor(state["lens"][:batch])
        padding = al.left_padding_mask if state["side"] == "left" else al.padding_mask
        mask = mask | padding(lens, N)
    if state["window"]:
        mask = mask | al.sliding_window_mask(N, state["size"])
    if state["documents"]:
        mask = mask | al.document_mask(al.document_ids_from_lengths(state["lengths"]))
    return mask


def columns(line: str) -> int:
    """How wide a line of code is in a monospace font: an East Asian wide character takes two columns."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)


def run(code: str) -> dict:
    """A snippet, run as a reader runs what they pasted: in a namespace of its own."""
    namespace: dict = {"__name__": "__main__"}
    torch.manual_seed(0)
    exec(compile(code, "<snippet>", "exec"), namespace)
    return namespace


def reference(grid: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Attention with attention_lib's masked_softmax and the grid: (batch, heads, 8, head_dim)."""
    attn_scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return al.masked_softmax(attn_scores, grid[:, None]) @ v


def mha_reference(mha: torch.nn.MultiheadAttention, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """What nn.MultiheadAttention computes, with attention_lib's masked_softmax and the grid."""
    projections = zip(mha.in_proj_weight.chunk(3), mha.in_proj_bias.chunk(3), strict=True)
    queries, keys, values = (x @ weight.T + bias for weight, bias in projections)
    split = [al.split_heads(t, mha.num_heads) for t in (queries, keys, values)]
    context_vecs = al.merge_heads(reference(grid, *split))
    return mha.out_proj(context_vecs)


_MODELS: dict[str, object] = {}


def hf_model(kind: str, implementation: str = "eager"):
    """A tiny Llama (a decoder) or BERT (an encoder), built from a config, nothing downloaded."""
    transformers = pytest.importorskip("transformers")
    key = f"{kind}-{implementation}"
    if key not in _MODELS:
        torch.manual_seed(0)
        if kind == "llama":
            config = transformers.LlamaConfig(
                vocab_size=16, hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=2, max_position_embeddings=16,
            )  # fmt: skip
            model = transformers.LlamaModel(config)
        else:
            config = transformers.BertConfig(
                vocab_size=16, hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                max_position_embeddings=16,
            )  # fmt: skip
            model = transformers.BertModel(config)
        model.set_attn_implementation(implementation)
        _MODELS[key] = model.eval()
    return _MODELS[key]


def check(seen: dict, words: dict) -> None:
    """Everything the composer shows for one combination, against attention_lib and the real consumers."""
    state, codes = seen["state"], seen["codes"]
    label = json.dumps(state)
    grid = composed(state)
    batch = grid.shape[0]
    assert torch.equal(torch.tensor(seen["grid"], dtype=torch.bool), grid), label
    empty = grid.all(-1)  # (batch, 8): the rows with no key left
    assert seen["empty"] == [torch.nonzero(row).flatten().tolist() for row in empty], label
    assert bool(seen["emptyNote"]) == bool(empty.any()), label
    assert sorted(codes) == sorted(CONVENTIONS), label
    for convention, code in codes.items():
        for line in code.splitlines():
            assert columns(line) <= 79, f"{label} {convention}: {line!r} is {columns(line)} columns"
    torch.manual_seed(1)
    q, k, v = (torch.randn(batch, 2, N, 4) for _ in range(3))
    expected = reference(grid, q, k, v)

    # (a) attention_lib: True = masked out; what masked_softmax gives with it is what it gives with the grid.
    mask = run(codes["attention_lib"])["mask"]
    assert mask.dtype == torch.bool, label
    assert torch.equal(torch.broadcast_to(mask, grid.shape), grid), label
    assert str(tuple(mask.shape)) in codes["attention_lib"], f"{label}: the shape in the comment"
    heads = mask[:, None] if mask.dim() == 3 else mask  # (batch, 1, ...) over the heads
    got = al.masked_softmax(q @ k.transpose(-2, -1) / 2, heads) @ v
    assert torch.allclose(got, expected, atol=1e-6), label

    # (b) nn.MultiheadAttention: bool, True = masked out, attn_mask (L, S) and key_padding_mask (N, S).
    namespace = run(codes["mha"])
    attn_mask, key_padding_mask = namespace.get("attn_mask"), namespace.get("key_padding_mask")
    built = torch.zeros(batch, N, N, dtype=torch.bool)
    if attn_mask is not None:
        assert attn_mask.dtype == torch.bool, label
        assert attn_mask.shape == (N, N), label
        built = built | attn_mask
    if key_padding_mask is not None:
        assert key_padding_mask.dtype == torch.bool, label
        assert key_padding_mask.shape == (batch, N), label
        built = built | key_padding_mask[:, None, :]
    assert torch.equal(built, grid), label
    mha, x = namespace["mha"], namespace["x"]
    assert x.shape == (batch, N, 16), label
    out = namespace["out"]  # what the snippet's own call gave
    with torch.no_grad():
        want = mha_reference(mha, x, grid)
        assert torch.allclose(out[~empty], want[~empty], atol=1e-5), label
        assert out[empty].isnan().all(), f"{label}: the note says nn.MultiheadAttention gives nan there"

    # (c) SDPA: bool, True = may attend: the opposite of the grid.
    attn_mask = run(codes["sdpa"])["attn_mask"]
    if attn_mask is None:
        assert not grid.any(), label
        got = F.scaled_dot_product_attention(q, k, v)
    else:
        assert attn_mask.dtype == torch.bool, label
        assert torch.equal(torch.broadcast_to(attn_mask, (batch, 1, N, N)), ~grid[:, None]), label
        assert str(tuple(attn_mask.shape)) in codes["sdpa"], f"{label}: the shape in the comment"
        got = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    # Zeros for the rows with no key, on a CPU, as the note says: the same as masked_softmax everywhere.
    assert torch.allclose(got, expected, atol=1e-6), label

    # (d) additive float: 0.0 where attended, -inf where masked out; for SDPA, and for nn.MultiheadAttention as
    # one (L, S) mask per sequence and head.
    namespace = run(codes["additive"])
    attn_mask = namespace["attn_mask"]
    if attn_mask is None:
        assert not grid.any(), label
    else:
        assert attn_mask.dtype == torch.float32, label
        bias = torch.zeros(batch, 1, N, N).masked_fill(grid[:, None], float("-inf"))
        assert torch.equal(torch.broadcast_to(attn_mask, bias.shape), bias), label
        got = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        assert torch.allclose(got, expected, atol=1e-6), label
    mha, x = namespace["mha"], namespace["x"]
    mha_mask = namespace.get("mha_mask", attn_mask)
    if "mha_mask" in namespace:
        per_head = torch.zeros(batch * mha.num_heads, N, N).masked_fill(
            grid.repeat_interleave(mha.num_heads, 0), float("-inf")
        )
        assert torch.equal(mha_mask, per_head), label
    with torch.no_grad():
        out, _ = mha(x, x, x, attn_mask=mha_mask)
        want = mha_reference(mha, x, grid)
        assert torch.allclose(out[~empty], want[~empty], atol=1e-5), label
        assert out[empty].isnan().all(), label
        assert torch.equal(namespace["out"].isnan(), out.isnan()), label

    # (e) Hugging Face: what a model does with the attention_mask emitted, read from its attention weights
    # (eager attention, output_attentions): exactly zero on the keys masked out, and only there.
    attention_mask = run(codes["hf"])["attention_mask"]
    four_d = state["window"] or state["documents"]
    if four_d:
        assert seen["note"] == words["hf_4d"], label
        assert attention_mask.shape == (batch, 1, N, N), label
        assert attention_mask.dtype == torch.float32, label
        lowest = torch.finfo(torch.float32).min
        assert torch.equal(attention_mask, torch.zeros(batch, 1, N, N).masked_fill(grid[:, None], lowest)), label
        kind = "llama"
    else:
        assert seen["note"] == words["hf_decoder" if state["causal"] else "hf_encoder"], label
        assert attention_mask.shape == (batch, N), label
        assert attention_mask.dtype == torch.long, label
        assert set(attention_mask.flatten().tolist()) <= {0, 1}, label
        # A decoder adds the causal mask itself; an encoder attends both ways.
        kind = "llama" if state["causal"] else "bert"
    input_ids = torch.arange(batch * N).view(batch, N) % 16
    with torch.no_grad():
        outputs = hf_model(kind)(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True)
    attn_weights = outputs.attentions[0]  # (batch, heads, 8, 8)
    rows = ~empty[:, None].expand(-1, attn_weights.shape[1], -1)  # (batch, heads, 8)
    assert torch.equal((attn_weights == 0)[rows], grid[:, None].expand_as(attn_weights)[rows]), label
    if four_d:
        # SDPA's implementation in transformers takes the same 4-D mask to the same outputs.
        with torch.no_grad():
            sdpa_out = hf_model(kind, "sdpa")(input_ids=input_ids, attention_mask=attention_mask)
        hidden, hidden_sdpa = outputs.last_hidden_state, sdpa_out.last_hidden_state
        assert torch.allclose(hidden[~empty], hidden_sdpa[~empty], atol=1e-5), label


def sweep(page) -> list[dict]:
    root = page.locator("[data-mask-composer]")
    assert root.count() == 1
    return root.evaluate(SWEEP, COMBINATIONS)


@pytest.mark.parametrize("visited", [(PAGES[lang], "1280") for lang in PAGES], indirect=True)
def test_every_combination_builds_attention_libs_mask_in_every_convention(visited) -> None:
    lang = "zh" if visited.url.startswith("zh/") else "en"
    seen = sweep(visited.tab)
    assert len(seen) == len(COMBINATIONS) == 64
    for state in seen:
        check(state, WORDS[lang])
    # Every branch of the code writer: each snippet differs with each mask and parameter (a parameter of a mask
    # that is off changes nothing).
    # attention_lib's code names each mask: 14 subsets have a parameter, taken 4 ways, and no mask and the causal
    # mask alone have none: 58 snippets. The plain PyTorch code hides the future once, whichever of the causal
    # mask, the window or the documents asks for it, so a window or documents with or without the causal mask are
    # the same mask and the same code: 34. Hugging Face's code for the causal mask alone is no padding, as for
    # no mask (a decoder adds the causal mask itself), and a window or documents take its 4-D mask: 29.
    distinct = {convention: len({state["codes"][convention] for state in seen}) for convention in CONVENTIONS}
    assert distinct == {"attention_lib": 58, "mha": 34, "sdpa": 34, "additive": 34, "hf": 29}
    assert not visited.errors


def _code_only(code: str) -> str:
    return re.sub(r"\s*#.*", "", code)


def test_the_chinese_composer_writes_the_same_code_with_chinese_comments(page, load, base_url) -> None:
    """Code is never translated, only its comments: the Chinese piece's snippets are the English ones but for
    the comments, which are Chinese."""
    snippets = {}
    for lang, url in PAGES.items():
        load(page, base_url + url)
        snippets[lang] = sweep(page)
    for english, chinese in zip(snippets["en"], snippets["zh"], strict=True):
        assert english["state"] == chinese["state"]
        for convention in CONVENTIONS:
            assert _code_only(chinese["codes"][convention]) == _code_only(english["codes"][convention])
            # Each comment is Chinese, but for a shape or a call, `# (N, L, embed_dim)`, `# model(input_ids, ...)`.
            pairs = zip(
                *(re.findall(r"#.*", snippet["codes"][convention]) for snippet in (english, chinese)), strict=True
            )
            for in_english, in_chinese in pairs:
                assert re.search(r"[\u4e00-\u9fff]", in_chinese) or (
                    in_chinese == in_english and re.fullmatch(r"# [\w.]*\([^()]*\)(, \([^()]*\))*", in_english)
                ), (convention, in_chinese)


def test_the_checks_fail_on_a_wrong_grid_or_a_wrong_snippet(page, load, base_url) -> None:
    """Each check can fail: a grid one cell off, and snippets with the usual mistakes, are each caught."""
    load(page, base_url + PAGES["en"])
    seen = sweep(page)
    # Two sequences, right padding, a window and documents: every convention has every part.
    full = next(s for s in seen if all(s["state"][m] for m in MASKS) and s["state"]["batch"] == 2)
    check(full, WORDS["en"])
    wrong_grid = json.loads(json.dumps(full))
    wrong_grid["grid"][1][7][7] = 1 - wrong_grid["grid"][1][7][7]
    mistakes = {
        "attention_lib": ("window=3", "window=2"),
        "mha": ("key_padding_mask = pos >= valid_lens", "key_padding_mask = pos > valid_lens"),
        "sdpa": ("attn_mask = ~masked", "attn_mask = masked"),
        "additive": ('torch.where(masked, float("-inf"), 0.0)', 'torch.where(masked, 0.0, float("-inf"))'),
        "hf": ("lowest = torch.finfo(torch.float32).min", "lowest = -1.0"),
    }
    cases = [wrong_grid]
    for convention, (right, wrong) in mistakes.items():
        case = json.loads(json.dumps(full))
        assert right in case["codes"][convention], convention
        case["codes"][convention] = case["codes"][convention].replace(right, wrong)
        cases.append(case)
    # The Hugging Face 2-D mask: padding on the wrong side, with a decoder.
    chosen = {"causal": True, "padding": True, "window": False, "documents": False, "side": "right", "batch": 2}
    padding_only = next(s for s in seen if all(s["state"][key] == value for key, value in chosen.items()))
    check(padding_only, WORDS["en"])
    case = json.loads(json.dumps(padding_only))
    case["codes"]["hf"] = case["codes"]["hf"].replace("torch.arange(8) < valid_lens", "torch.arange(8) >= valid_lens")
    cases.append(case)
    case = json.loads(json.dumps(full))
    case["codes"]["mha"] += "# " + "a comment one column too wide " * 2 + "for a line of 80!!\n"
    assert max(len(line) for line in case["codes"]["mha"].splitlines()) == 80
    cases.append(case)
    for case in cases:
        with pytest.raises(AssertionError):
            check(case, WORDS["en"])


#: Where the keyboard's focus is, and what shows it.
FOCUSED = """() => {
  const e = document.activeElement;
  const style = getComputedStyle(e);
  const name = e.labels && e.labels.length ? e.labels[0].textContent : e.getAttribute("aria-label") || e.textContent;
  return { key: e.name && e.name.endsWith("-convention") ? "convention:" + e.value : e.name || e.dataset.convention
             || (e.classList.contains("mc-copy") ? "copy" : e.tagName),
           inside: e.closest("[data-mask-composer]") !== null, name: name.trim(),
           ring: style.outlineStyle !== "none" ? parseFloat(style.outlineWidth) : 0 };
}"""


def _set(root, name: str, value) -> None:
    control = root.locator(f"[name={name}]")
    if isinstance(value, bool):
        control.set_checked(value)
    else:
        control.select_option(str(value))


def _grid(root) -> list:
    return json.loads(root.get_attribute("data-grid"))


@pytest.mark.parametrize("visited", [(PAGES[lang], "1280") for lang in PAGES], indirect=True)
def test_the_composer_works_from_the_keyboard(visited) -> None:
    """Tab reaches every control that takes part, in order, each with a name and a focus ring of 2 px or more;
    Space toggles a mask, the arrow keys change a select and the convention, Enter and Space copy."""
    page = visited.tab
    root = page.locator("[data-mask-composer]")
    for name, value in [("causal", True), ("padding", True), ("batch", 2), ("len0", 5), ("len1", 8)]:
        _set(root, name, value)
    for name, value in [("side", "right"), ("window", False), ("documents", False)]:
        _set(root, name, value)
    root.locator("input[value=attention_lib]").check()
    root.locator("[name=causal]").focus()
    stops = [page.evaluate(FOCUSED)]
    for _ in range(10):
        page.keyboard.press("Tab")
        stops.append(page.evaluate(FOCUSED))
    # The window's and the documents' parameters are off while their masks are; one stop for the conventions.
    assert [stop["key"] for stop in stops] == [
        "causal", "padding", "batch", "len0", "len1", "side", "window", "documents", "convention:attention_lib",
        "copy", "attention_lib",
    ]  # fmt: skip
    assert all(stop["inside"] and stop["name"] for stop in stops), stops
    assert all(stop["ring"] >= 2 for stop in stops[1:]), stops
    # Space on a checkbox: without the causal mask, query 0 sees key 1.
    assert _grid(root)[0][0][1] == 1
    root.locator("[name=causal]").focus()
    page.keyboard.press("Space")
    assert _grid(root)[0][0][1] == 0
    page.keyboard.press("Space")
    assert _grid(root)[0][0][1] == 1
    # An arrow key on a select: a valid length of 6 lets the last query of sequence 1 see key 5.
    root.locator("[name=len0]").focus()
    page.keyboard.press("ArrowDown")
    assert root.locator("[name=len0]").input_value() == "6"
    assert _grid(root)[0][7][5] == 0
    page.keyboard.press("ArrowUp")
    assert _grid(root)[0][7][5] == 1
    # The arrow keys move between the conventions, and only the chosen one's code shows.
    root.locator("input[value=attention_lib]").focus()
    page.keyboard.press("ArrowRight")
    shown = root.locator("pre[data-convention]:visible")
    assert shown.count() == 1
    assert shown.get_attribute("data-convention") == "mha"
    # Enter and Space on the copy button copy the code shown, and say so.
    lang = "zh" if visited.url.startswith("zh/") else "en"
    for key in ("Enter", "Space"):
        page.evaluate("navigator.clipboard.writeText('')")
        root.locator(".mc-copy").focus()
        page.keyboard.press(key)
        page.wait_for_function("document.querySelector('.mc-status').textContent !== ''")
        assert page.evaluate("navigator.clipboard.readText()") == shown.text_content()
        expected = WORDS[lang]["copied"].replace("{convention}", "nn.MultiheadAttention")
        assert root.locator(".mc-status").text_content() == expected
        root.locator("input[value=mha]").focus()
        page.keyboard.press("ArrowLeft")  # the status is cleared when the convention changes
        page.keyboard.press("ArrowRight")
        assert root.locator(".mc-status").text_content() == ""
    root.locator("input[value=attention_lib]").check()


def test_the_composer_works_by_touch_on_a_phone(browser, base_url) -> None:
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True,
        permissions=["clipboard-read", "clipboard-write"],
    )  # fmt: skip
    try:
        page = context.new_page()
        page.goto(base_url + PAGES["en"], wait_until="load")
        root = page.locator("[data-mask-composer]")
        assert not root.locator("[name=window]").is_checked()
        root.locator("label", has_text=WORDS["en"]["window"]).tap()
        assert root.locator("[name=window]").is_checked()
        assert json.loads(root.get_attribute("data-state"))["window"] is True
        root.locator("label", has_text="Hugging Face").tap()
        assert root.locator("pre[data-convention=hf]").is_visible()
        assert root.locator(".mc-note").text_content() == WORDS["en"]["hf_4d"]
        root.locator(".mc-copy").tap()
        page.wait_for_function("document.querySelector('.mc-status').textContent !== ''")
        assert page.evaluate("navigator.clipboard.readText()") == root.locator("pre[data-convention=hf]").text_content()
    finally:
        context.close()


#: The widest state: every mask, two sequences, the longest code.
WIDEST = {"causal": True, "padding": True, "window": True, "documents": True, "batch": 2, "side": "left"}


@pytest.mark.parametrize(
    "visited", [(PAGES[lang], width) for lang in PAGES for width in ("390", "1280")], indirect=True
)
def test_the_composer_fits_the_screen(visited) -> None:
    """The page never scrolls sideways and the grids show whole; only the code may scroll, inside its block."""
    page = visited.tab
    width = int(visited.width)
    root = page.locator("[data-mask-composer]")
    for name, value in WIDEST.items():
        _set(root, name, value)
    for convention in CONVENTIONS:
        root.locator(f"input[value={convention}]").check()
        assert page.evaluate("document.documentElement.scrollWidth") <= width, convention
        box = root.bounding_box()
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= width
        for table in root.locator("table.mc-grid").all():
            cell = table.bounding_box()
            assert box["x"] <= cell["x"]
            assert cell["x"] + cell["width"] <= box["x"] + box["width"], convention
        code = root.locator(f"pre[data-convention={convention}]")
        assert code.bounding_box()["x"] + code.bounding_box()["width"] <= box["x"] + box["width"]
    if width == 390:
        # Some of the code is wider than a phone: its block scrolls, and takes the focus (tabindex) to be scrolled.
        assert root.locator("pre[data-convention=hf]").evaluate("pre => pre.scrollWidth > pre.clientWidth")
        assert root.locator("pre[data-convention=hf]").get_attribute("tabindex") == "0"
    root.locator("input[value=attention_lib]").check()


@pytest.mark.parametrize("visited", [(PAGES[lang], "1280") for lang in PAGES], indirect=True)
def test_the_composer_keeps_its_contrast_in_both_palettes(visited, dark_palette, text_contrasts) -> None:
    page = visited.tab
    root = page.locator("[data-mask-composer]")
    for name, value in WIDEST.items():
        _set(root, name, value)
    light = text_contrasts(root)
    with dark_palette(page):
        dark = text_contrasts(root)
    for seen in (light, dark):
        cells = [item for item in seen if item["what"] in ("mc-masked", "mc-kept")]
        assert len(cells) == 2 * 64  # two grids of 8 x 8
        assert {"mc-swatch mc-masked", "mc-swatch mc-kept"} <= {item["what"] for item in seen}  # the legend
        assert [item for item in seen if item["contrast"] < 4.5] == []
    # Every cell takes the palette: none keeps its light background in the dark one.
    pairs = [(a, b) for a, b in zip(light, dark, strict=True) if a["what"] in ("mc-masked", "mc-kept")]
    assert all(a["background"] != b["background"] for a, b in pairs)


@pytest.mark.parametrize("url", list(PAGES.values()))
@pytest.mark.parametrize("width", [1280, 390])
def test_the_composer_moves_nothing_while_the_page_loads(
    page, load, base_url, url, width, largest_shift, font_shift_px
) -> None:
    """Opened at the composer's section, so that the composer and what follows it are on the screen as the page
    loads (the browser reports the shifts of what is on the screen only): a composer drawn late would push them
    down. (The figure at the top of the page has no size until it loads; the browser's scroll anchoring keeps
    the section in place when it does.)"""
    page.set_viewport_size({"width": width, "height": 844})
    load(page, base_url + url + "#mask-composer")
    root = page.locator("[data-mask-composer]")
    assert root.evaluate("root => root.getBoundingClientRect().top") < 844  # on the screen
    assert root.locator("table.mc-grid").count() >= 1
    assert largest_shift(page) <= font_shift_px
    assert page.locator("#mask-composer + p + [data-mask-composer]").count() == 1  # drawn where the line is


def test_the_shift_check_can_fail(page, load, base_url, largest_shift) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    load(page, base_url + PAGES["en"] + "#mask-composer")
    # What a composer drawn late would do: its height appears above what is already shown.
    page.evaluate(
        "document.querySelector('[data-mask-composer]')"
        ".prepend(Object.assign(document.createElement('div'), {style: 'height: 300px'}))"
    )
    page.wait_for_timeout(100)
    assert largest_shift(page) > 100


@pytest.fixture(scope="module")
def axe() -> Path:
    if not AXE.is_file():
        pytest.skip(f"axe-core is not installed at {AXE.relative_to(ROOT)}")
    return AXE


def _serious(page, axe: Path) -> list[str]:
    page.add_script_tag(path=str(axe))
    violations = page.evaluate(
        "async () => (await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', "
        "'wcag21aa', 'wcag22aa', 'best-practice']}, resultTypes: ['violations']})).violations"
    )
    page.evaluate("gc()")
    return [
        f"{violation['id']} ({violation['impact']}): {' '.join(map(str, node['target']))}"
        for violation in violations
        if violation["impact"] in ("serious", "critical")
        for node in violation["nodes"]
    ]


@pytest.mark.parametrize(
    "visited", [(PAGES[lang], width) for lang in PAGES for width in ("390", "1280")], indirect=True
)
def test_axe_finds_no_serious_violation_in_the_composer(visited, axe, dark_palette) -> None:
    """In a state that shows everything (two grids, rows with no key, the Hugging Face note), in both palettes."""
    page = visited.tab
    root = page.locator("[data-mask-composer]")
    for name, value in WIDEST.items():
        _set(root, name, value)
    root.locator("input[value=hf]").check()
    assert root.locator(".mc-empty").is_visible()
    try:
        assert _serious(page, axe) == []
        with dark_palette(page):
            assert _serious(page, axe) == []
    finally:
        root.locator("input[value=attention_lib]").check()


def test_the_copy_button_copies_exactly_the_code_shown(page, load, base_url) -> None:
    """With the Clipboard API; with the old execCommand when the API refuses; and a message when both fail."""
    load(page, base_url + PAGES["en"])
    root = page.locator("[data-mask-composer]")
    root.locator("input[value=sdpa]").check()
    shown = root.locator("pre[data-convention=sdpa]").text_content()
    status = root.locator(".mc-status")
    root.locator(".mc-copy").click()
    page.wait_for_function("document.querySelector('.mc-status').textContent !== ''")
    assert page.evaluate("navigator.clipboard.readText()") == shown
    assert status.text_content() == "Copied the SDPA code."
    # The Clipboard API refuses (no secure context, no permission): the old way, a selected textarea.
    page.evaluate(
        "navigator.clipboard.writeText = () => Promise.reject(new Error('denied'));"
        "document.addEventListener('copy', event => { window.copied = event.target.value; });"
    )
    root.locator("input[value=additive]").check()
    root.locator(".mc-copy").click()
    page.wait_for_function("document.querySelector('.mc-status').textContent !== ''")
    assert page.evaluate("window.copied") == root.locator("pre[data-convention=additive]").text_content()
    assert status.text_content() == "Copied the float −inf code."
    assert page.locator("textarea.mc-offscreen").count() == 0  # removed again
    # Both refuse: the reader is told to copy by hand.
    page.evaluate("document.execCommand = () => false")
    root.locator("input[value=hf]").check()
    root.locator(".mc-copy").click()
    page.wait_for_function("document.querySelector('.mc-status').textContent !== ''")
    assert status.text_content() == WORDS["en"]["copy_failed"]
