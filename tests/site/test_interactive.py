"""The interactive pieces in a real browser: every number an attention explorer shows is attention_lib's, for
every setting of its controls; every step of the stride tracer is PyTorch's, message included when PyTorch
refuses; both are worked from the keyboard, fit a phone, keep their contrast in both palettes, move nothing
as the page loads, and weigh on the pages that show them only.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
import torch

import attention_lib as al
from docs_tools.pages import INTERACTIVE

ROOT = Path(__file__).resolve().parents[2]
DATA = json.loads((ROOT / "docs_tools" / "data" / "explorers.json").read_text(encoding="utf-8"))
#: The pages with an explorer, and its name in docs_tools/data/explorers.json.
EXPLORERS = {"attention-weights/": "weights", "masks/": "masks", "multi-head/": "multi-head", "real-model/": "gpt2"}
LANGUAGES = ("", "zh/")
EXPLORER_PAGES = [(prefix + url, "1280") for prefix in LANGUAGES for url in EXPLORERS]
TRACER_PAGES = [(prefix + "multi-head/", "1280") for prefix in LANGUAGES]
#: What the pieces may add to a page that shows them, compressed (the issue's budget).
BUDGET_KB = 30


def reference(config: dict, num_heads: int, scale: bool, causal: bool, valid_len: int):
    """The scores, mask, weights (1, h, t, t) and context vectors (t, d_out) that attention_lib computes."""
    inputs = torch.tensor(config["inputs"], dtype=torch.float64)

    def projected(name: str) -> torch.Tensor:
        weight = config[name]
        return inputs if weight is None else inputs @ torch.tensor(weight, dtype=torch.float64).T

    # (t, d_out) -> (1, t, d_out) -> (1, num_heads, t, head_dim)
    queries, keys, values = (
        al.split_heads(projected(name)[None], num_heads) for name in ("W_query", "W_key", "W_value")
    )
    score = al.scaled_dot_product_scores if scale else al.dot_product_scores
    attn_scores = score(queries, keys)
    num_tokens = inputs.shape[0]
    mask = al.padding_mask(torch.tensor([valid_len]), num_tokens)[:, None]  # (1, 1, 1, t)
    if causal:
        mask = mask | al.causal_mask(num_tokens)
    attn_weights = al.masked_softmax(attn_scores, mask)
    context_vecs = al.merge_heads(attn_weights @ values)[0]
    return attn_scores, mask.expand_as(attn_scores), attn_weights, context_vecs


def test_the_explorers_numbers_are_the_pages_modules() -> None:
    """The multi-head explorer's starting point is the page's seeded MultiHeadAttention: its weights, to float32
    rounding, are the ones the module returns with need_weights=True."""
    torch.manual_seed(123)
    mha = al.MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2)
    with torch.no_grad():
        _, attn_weights = mha(al.journey_inputs()[None], need_weights=True)
    _, _, expected, _ = reference(DATA["multi-head"], 2, scale=True, causal=True, valid_len=6)
    assert torch.allclose(expected.float(), attn_weights, atol=1e-6)
    # Changing a control changes the numbers: the comparison below cannot pass on constant data.
    _, _, uncausal, _ = reference(DATA["multi-head"], 2, scale=True, causal=False, valid_len=6)
    assert not torch.allclose(uncausal.float(), attn_weights, atol=1e-3)


def test_the_gpt2_explorer_starts_from_the_real_model_pages_gpt2() -> None:
    """The real-model page's explorer is layer 0 of the page's GPT-2: its inputs are what the layer is fed, and at
    the defaults (the model's 2 heads, scaled, causal, every token) its weights are the model's output_attentions,
    head by head, to float32 rounding. Built here as the page builds it, with transformers."""
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    config = transformers.GPT2Config(
        vocab_size=16,
        n_positions=16,
        n_embd=8,
        n_layer=2,
        n_head=2,
        initializer_range=0.5,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(123)
    model = transformers.GPT2LMHeadModel(config).eval()
    model.set_attn_implementation("eager")
    captured = []
    handle = model.transformer.h[0].attn.register_forward_hook(lambda module, args, output: captured.append(args[0]))
    with torch.no_grad():
        out = model(torch.tensor([[1, 2, 3, 4, 5, 6]]), output_attentions=True)
    handle.remove()
    explorer = DATA["gpt2"]
    assert explorer["words"] == list(al.JOURNEY_WORDS)
    assert torch.equal(torch.tensor(explorer["inputs"]), captured[0][0])
    assert not model.transformer.h[0].attn.c_attn.bias.any()  # explorer.js adds no biases
    defaults = explorer["defaults"]
    assert defaults["num_heads"] == model.config.n_head
    _, _, expected, _ = reference(explorer, defaults["num_heads"], defaults["scale"], defaults["causal"], 6)
    assert torch.allclose(expected.float(), out.attentions[0], atol=1e-6)
    _, _, uncausal, _ = reference(explorer, 2, scale=True, causal=False, valid_len=6)
    assert not torch.allclose(uncausal.float(), out.attentions[0], atol=1e-3)


#: Every setting of an explorer's controls, read back from its data- attributes; the controls are set as the
#: browser sets them for a reader (their value, then a change event), and put back to the defaults after.
SWEEP = """root => {
  const config = JSON.parse(root.dataset.config);
  const n = config.words.length;
  const set = (name, value) => {
    const control = root.querySelector(`[name=${name}]`);
    if (!control) return;
    if (control.type === "checkbox") control.checked = value;
    else control.value = String(value);
    control.dispatchEvent(new Event("change", { bubbles: true }));
  };
  const seen = [];
  for (const numHeads of config.heads) {
    set("num_heads", numHeads);
    for (let head = 0; head < numHeads; head++) {
      set("head", head);
      for (const scale of [false, true]) {
        set("scale", scale);
        for (const causal of [false, true]) {
          set("causal", causal);
          for (let validLen = 1; validLen <= n; validLen++) {
            set("valid_len", validLen);
            const contexts = [];
            for (let query = 0; query < n; query++) {
              set("query", query);
              contexts.push(JSON.parse(root.dataset.context));
            }
            seen.push({ numHeads, head, scale, causal, validLen, contexts,
                        weights: JSON.parse(root.dataset.weights), scores: JSON.parse(root.dataset.scores) });
          }
        }
      }
    }
  }
  const d = config.defaults;
  set("num_heads", d.num_heads); set("head", 0); set("scale", d.scale); set("causal", d.causal);
  set("valid_len", d.valid_len); set("query", d.query);
  return seen;
}"""


@pytest.mark.parametrize("visited", EXPLORER_PAGES, indirect=True, ids=[url for url, _ in EXPLORER_PAGES])
def test_the_explorer_computes_what_attention_lib_computes_for_every_setting(visited) -> None:
    page = visited.tab
    name = EXPLORERS[visited.url.removeprefix("zh/")]
    config = DATA[name]
    root = page.locator("[data-attention-explorer]")
    assert root.count() == 1
    assert json.loads(root.get_attribute("data-config")) == config
    seen = root.evaluate(SWEEP)
    settings = sum(h for h in config["heads"]) * 2 * 2 * len(config["words"])
    assert len(seen) == settings  # every combination: heads shown x scaling x causal x valid length
    for state in seen:
        label = {key: state[key] for key in ("numHeads", "head", "scale", "causal", "validLen")}
        attn_scores, mask, attn_weights, context_vecs = reference(
            config, state["numHeads"], state["scale"], state["causal"], state["validLen"]
        )
        head = state["head"]
        weights = torch.tensor(state["weights"], dtype=torch.float64)
        assert torch.allclose(weights, attn_weights[0, head], rtol=0, atol=1e-9), label
        scores = state["scores"]
        assert [[x is None for x in row] for row in scores] == mask[0, head].tolist(), label
        shown = torch.tensor([[0.0 if x is None else x for x in row] for row in scores], dtype=torch.float64)
        assert torch.allclose(shown, attn_scores[0, head].masked_fill(mask[0, head], 0.0), rtol=0, atol=1e-9), label
        contexts = torch.tensor(state["contexts"], dtype=torch.float64)
        assert torch.allclose(contexts, context_vecs, rtol=0, atol=1e-9), label
    # Back at the defaults, the grid shows the weights rounded to two decimals, masked cells and all.
    defaults = config["defaults"]
    _, mask, attn_weights, _ = reference(
        config, defaults["num_heads"], defaults["scale"], defaults["causal"], defaults["valid_len"]
    )
    cells = root.locator("table[data-grid=weights] tbody tr").evaluate_all(
        "rows => rows.map(row => [...row.cells].slice(1).map(cell => cell.textContent))"
    )
    expected = [[f"{w:.2f}" for w in row] for row in attn_weights[0, 0].tolist()]
    assert cells == expected
    scores = root.locator("table[data-grid=scores] tbody tr").evaluate_all(
        "rows => rows.map(row => [...row.cells].slice(1).map(cell => cell.textContent))"
    )
    assert [[cell == "\u2212\u221e" for cell in row] for row in scores] == mask[0, 0].tolist()
    current = root.locator("tr[aria-current=true] th").all_text_contents()
    assert current == [config["words"][defaults["query"]]] * 2  # the chosen query's row, in both grids


#: The tracer's buttons, every sequence of four (all shorter ones are their beginnings), from a fresh start;
#: after each click, what the tracer shows.
TRACE = """root => {
  const steps = [...root.querySelectorAll("button[data-step]")].filter(b => b.dataset.step !== "reset");
  const reset = root.querySelector("button[data-step=reset]");
  const read = () => ({
    ops: root.dataset.ops, shape: JSON.parse(root.dataset.shape), stride: JSON.parse(root.dataset.stride),
    storage: JSON.parse(root.dataset.storage), walk: JSON.parse(root.dataset.walk), error: root.dataset.error ?? null,
    printed: root.querySelector(".st-print").textContent, scrambled: root.dataset.scrambled,
    facts: [...root.querySelectorAll(".st-facts dd")].map(dd => dd.textContent),
    shownError: root.querySelector(".st-error").textContent,
  });
  const states = [];
  for (let number = 0; number < steps.length ** 4; number++) {
    reset.click();
    for (let k = 0, rest = number; k < 4; k++, rest = Math.floor(rest / steps.length)) {
      const step = steps[rest % steps.length];
      const before = root.dataset.ops;
      step.click();
      states.push({ before, step: step.querySelector("code").textContent, ...read() });
    }
  }
  reset.click();
  return { states, start: read() };
}"""


def _storage(tensor: torch.Tensor) -> list[int]:
    """The whole memory a tensor reads, in memory order."""
    return torch.empty(0, dtype=tensor.dtype).set_(tensor.untyped_storage()).tolist()


@pytest.mark.parametrize("visited", TRACER_PAGES, indirect=True)
def test_every_step_of_the_stride_tracer_is_what_pytorch_does(visited) -> None:
    root = visited.tab.locator("[data-stride-tracer]")
    result = root.evaluate(TRACE)
    states, start = result["states"], result["start"]
    assert start["ops"] == "torch.arange(12).view(1, 3, 4)"
    assert start["error"] is None
    assert len(states) == 4 * 4**4
    refused = 0
    checked = {}
    for state in states:
        key = (state["before"], state["step"])
        if key in checked:
            assert state == checked[key]  # the same step from the same tensor shows the same, every time
            continue
        checked[key] = state
        # The tracer's expressions, in PyTorch syntax, evaluated by PyTorch.
        before = eval(state["before"], {"torch": torch})
        try:
            tensor, message = eval(state["before"] + state["step"], {"torch": torch}), None
        except RuntimeError as error:
            tensor, message = before, str(error)
        if message is not None:
            # PyTorch refuses: so does the tracer, with PyTorch's message, and the tensor stays as it was.
            refused += 1
            assert state["error"] == message, key
            assert state["shownError"] == f"RuntimeError: {message}"
            assert state["ops"] == state["before"]
        else:
            assert state["error"] is None, key
            assert state["shownError"] == "", key
            assert state["ops"] == state["before"] + state["step"]
        assert state["shape"] == list(tensor.shape), key
        assert state["stride"] == list(tensor.stride()), key
        assert tensor.storage_offset() == 0
        assert state["storage"] == _storage(tensor), key
        # Under each cell of memory: when reading the tensor in the order of its shape gets to it.
        offsets = torch.as_strided(torch.arange(12), tensor.shape, tensor.stride()).flatten().tolist()
        assert [offsets.index(cell) for cell in range(12)] == state["walk"], key
        assert state["printed"] == repr(tensor), key
        # Merged without moving the heads back: the start's shape, not its order, which the tracer says.
        assert (
            state["scrambled"]
            == str(list(tensor.shape) == [1, 3, 4] and tensor.flatten().tolist() != list(range(12))).lower()
        ), key
        assert state["facts"] == [
            f"torch.Size({list(tensor.shape)})",
            str(tensor.stride()),
            str(tensor.is_contiguous()),
        ]
    # The steps of the page all happen: a refused merge, and copies that make it work.
    assert refused > 0
    assert any(state["ops"].endswith(".transpose(1, 2).contiguous().view(1, 3, 4)") for state in states)


#: The focused control's outline, where a keyboard user looks for the focus.
FOCUS_RING = """(() => {
  const style = getComputedStyle(document.activeElement);
  return { tag: document.activeElement.tagName + ":" + (document.activeElement.type || ""),
           style: style.outlineStyle, width: parseFloat(style.outlineWidth) };
})()"""


@pytest.mark.parametrize("visited", [("multi-head/", "1280"), ("zh/multi-head/", "1280")], indirect=True)
def test_the_pieces_work_from_the_keyboard(visited) -> None:
    """Every control takes the focus with Tab, in order, has a name, and works with the keys a reader uses."""
    page = visited.tab
    for selector in ("[data-attention-explorer]", "[data-stride-tracer]"):
        controls = page.locator(f"{selector} :is(select, input, button)")
        names = controls.evaluate_all(
            "cs => cs.map(c => (c.labels && c.labels.length ? c.labels[0].textContent : c.textContent).trim())"
        )
        assert all(names), f"{selector}: a control without a name: {names}"
        controls.first.focus()
        reached = [controls.first.evaluate("c => c === document.activeElement")]
        rings = []  # each control reached with Tab shows where the focus is (the review of 2026-11-26 found none)
        for _ in range(controls.count() - 1):
            page.keyboard.press("Tab")
            reached.append(page.evaluate(f"document.activeElement.closest('{selector}') !== null"))
            rings.append(page.evaluate(FOCUS_RING))
        assert all(reached), f"{selector}: Tab left the piece early: {reached}"
        assert all(ring["width"] >= 2 and ring["style"] != "none" for ring in rings), f"{selector}: {rings}"
    explorer = page.locator("[data-attention-explorer]")
    causal = explorer.locator("input[name=causal]")
    assert causal.is_checked()
    causal.focus()
    page.keyboard.press("Space")
    try:
        weights = json.loads(explorer.get_attribute("data-weights"))
        assert weights[0][5] > 0  # "Your" now sees "step"
    finally:
        page.keyboard.press("Space")
    assert json.loads(explorer.get_attribute("data-weights"))[0][5] == 0
    slider = explorer.locator("input[name=valid_len]")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    try:
        assert slider.input_value() == "5"
        assert json.loads(explorer.get_attribute("data-weights"))[5][5] == 0
    finally:
        page.keyboard.press("ArrowRight")
    tracer = page.locator("[data-stride-tracer]")
    tracer.locator("button[data-step=split]").focus()
    page.keyboard.press("Enter")
    try:
        assert tracer.get_attribute("data-ops").endswith(".view(1, 3, 2, 2)")
        assert tracer.get_attribute("data-shape") == "[1,3,2,2]"
    finally:
        tracer.locator("button[data-step=reset]").click()


#: WCAG's contrast ratio of two CSS colors (rgb() or rgba(), whose alpha it ignores), as a JavaScript function.
RATIO = """(fg, bg) => {
  const linear = v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  const luminance = color => {
    const [r, g, b] = color.match(/[\\d.]+/g).slice(0, 3).map(Number).map(linear);
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [a, b] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""
CONTRAST = f"""root => {{
  const ratio = {RATIO};
  return [...root.querySelectorAll(".ae-grid tbody td")].map(cell => {{
    const style = getComputedStyle(cell);
    return {{ background: style.backgroundColor, contrast: ratio(style.color, style.backgroundColor) }};
  }});
}}"""


@pytest.mark.parametrize("visited", [("masks/", "1280"), ("zh/masks/", "1280")], indirect=True)
def test_the_explorer_takes_the_palette_and_keeps_its_contrast(visited, dark_palette) -> None:
    page = visited.tab
    explorer = page.locator("[data-attention-explorer]")
    light = explorer.evaluate(CONTRAST)
    with dark_palette(page):
        dark = explorer.evaluate(CONTRAST)
    for cells in (light, dark):
        assert len(cells) == 72
        assert min(cell["contrast"] for cell in cells) >= 4.5
    # Every cell changes color with the palette: no white cell on the dark page.
    assert all(a["background"] != b["background"] for a, b in zip(light, dark, strict=True))
    assert "rgb(255, 255, 255)" not in {cell["background"] for cell in dark}


#: A button's text color against its fill, once its transition to the state it is in (hover, focus) has run.
FILL_CONTRAST = f"""async button => {{
  await Promise.all(button.getAnimations().map(animation => animation.finished));
  const style = getComputedStyle(button);
  const alpha = style.backgroundColor.match(/[\\d.]+/g)[3];
  const ratio = {RATIO};
  return {{ opaque: alpha === undefined || Number(alpha) === 1, contrast: ratio(style.color, style.backgroundColor) }};
}}"""


@pytest.mark.parametrize("visited", TRACER_PAGES, indirect=True)
def test_the_tracers_buttons_keep_their_contrast_when_hovered_or_focused(visited, dark_palette) -> None:
    """A hovered or focused button is filled, and its text (14 px, bold: not large text) keeps 4.5:1 on the fill,
    in both palettes; axe-core checks the buttons as they rest."""
    page = visited.tab
    tracer = page.locator("[data-stride-tracer]")
    reset, split = tracer.locator("button[data-step=reset]"), tracer.locator("button[data-step=split]")

    def states() -> dict[str, dict]:
        reset.hover()
        hovered = reset.evaluate(FILL_CONTRAST)
        page.mouse.move(0, 0)
        split.focus()
        try:
            focused = split.evaluate(FILL_CONTRAST)
        finally:
            split.evaluate("button => button.blur()")
        return {"hover": hovered, "focus": focused}

    seen = {"light": states()}
    try:
        with dark_palette(page):
            seen["dark"] = states()
    finally:
        page.mouse.move(0, 0)
    for palette, buttons in seen.items():
        for state, button in buttons.items():
            assert button["opaque"], (palette, state)
            assert button["contrast"] >= 4.5, (palette, state, button)


@pytest.mark.parametrize("url", ["multi-head/", "zh/masks/"])
@pytest.mark.parametrize("width", [1280, 390])
def test_the_pieces_move_nothing_while_the_page_loads_and_fit_a_phone(
    page, load, base_url, url, width, largest_shift, font_shift_px
) -> None:
    page.set_viewport_size({"width": width, "height": 844})
    load(page, base_url + url)
    # A piece drawn after the text below it was shown would push that text down by its whole height (hundreds of
    # pixels): each is drawn by a script right after it, before the browser lays out anything below.
    assert largest_shift(page) <= font_shift_px
    # Nothing is wider than the screen: the page does not scroll sideways, and each piece fits in it.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for piece in page.locator("[data-attention-explorer], [data-stride-tracer]").all():
        box = piece.bounding_box()
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= width
    # The grids show whole, without scrolling sideways: on a phone they stand one under the other.
    for scroller in page.locator(".ae-scroll").all():
        assert scroller.evaluate("s => s.scrollWidth <= s.clientWidth"), f"{url} at {width} px"


def test_the_shift_check_can_fail(page, load, base_url, largest_shift) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    load(page, base_url + "masks/")
    # What a piece drawn late would do: content appears above the text already shown.
    page.evaluate(
        "document.querySelector('.md-content h1')"
        ".after(Object.assign(document.createElement('div'), {style: 'height: 300px'}))"
    )
    page.wait_for_timeout(100)
    assert largest_shift(page) > 100


def test_the_pieces_load_only_where_a_page_shows_them_and_weigh_little(site: Path) -> None:
    from hooks.interactive import CSS, PIECES

    def compressed(data: bytes) -> int:
        return len(gzip.compress(data, compresslevel=6))

    kinds_pattern = "|".join(PIECES)
    showing: dict[str, int] = {}
    for path in site.rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        kinds = set(re.findall(rf'<div class="({kinds_pattern})" data-', html))
        for kind, piece in PIECES.items():
            script = Path(piece.script).name
            assert (f'/{script}"' in html) == (kind in kinds), f"{path}: {script}"
            if piece.css is not None:
                stylesheet = Path(piece.css).name
                assert (f'/{stylesheet}"' in html) == (kind in kinds), f"{path}: {stylesheet}"
        assert ("interactive.css" in html) == bool(kinds), path
        if not kinds:
            continue
        for kind in kinds:
            showing[kind] = showing.get(kind, 0) + 1
        # What the pieces add: their scripts and stylesheets, and their markup (the numbers and words they carry)
        # beyond the one line the page's source has.
        plain = re.sub(rf'<div class="({kinds_pattern})" data-[^>]*></div>\n<script src="[^"]*"></script>', "", html)
        shipped = {CSS} | {PIECES[kind].script for kind in kinds} | {PIECES[kind].css for kind in kinds}
        added = sum(compressed((site / name).read_bytes()) for name in shipped if name is not None)
        added += compressed(html.encode()) - compressed(plain.encode())
        assert added <= BUDGET_KB * 1024, f"{path}: the interactive pieces add {added / 1024:.1f} KB"
    assert showing["attention-explorer"] == 2 * len(EXPLORERS)  # each page in each language
    assert showing["stride-tracer"] == 2


def test_the_notebooks_link_to_the_pieces_and_keep_the_figures() -> None:
    for lang in ("en", "zh"):
        for url in EXPLORERS:
            page = url.rstrip("/")
            text = (ROOT / "docs" / lang / f"{page}.md").read_text(encoding="utf-8")
            assert INTERACTIVE.search(text), f"{lang}/{page}"
            notebook = json.loads((ROOT / "docs" / lang / "notebooks" / f"{page}.ipynb").read_text(encoding="utf-8"))
            cells = notebook["cells"]
            assert not any(INTERACTIVE.search("".join(cell["source"])) for cell in cells)
            links = [
                cell
                for cell in cells
                if f"/{page}/#" in "".join(cell["source"]) and "](http" in "".join(cell["source"])
            ]
            assert len(links) >= len(INTERACTIVE.findall(text)), f"{lang}/{page}: no link to the piece"
            assert any("attachments" in cell for cell in cells), f"{lang}/{page}: no static figure"
