"""The decode stepper of the KV-cache page (docs/assets/javascripts/decode.js) in a real browser, in both languages:
every number it shows, at every step, with the toggle off and on, for each head, is what attention_lib's module
computes here step by step with ``use_cache=True`` (and the right output is the full forward's), or what
``F.scaled_dot_product_attention(..., is_causal=True)`` gives over the same cache; it is worked from the keyboard
and with a finger, fits a phone and a desktop, keeps its contrast in both palettes, moves nothing as the page
loads and gives axe-core nothing serious to report. Each check is also shown to fail on a wrong piece.

The numbers here are computed independently of docs_tools/decode_stepper.py, which wrote the piece's: one pass of
the module with ``need_weights=True`` for the weights and outputs, and SDPA itself for the wrong output, whose
weights are rebuilt with a plain ``tril`` mask.
"""

from __future__ import annotations

import functools
import json
import re

import pytest
import torch
import torch.nn.functional as F

import attention_lib as al
from docs_tools import config as site_config

LANGUAGES = {"en": "", "zh": "zh/"}
PAGE = "kv-cache/"
DESKTOP_PAGES = [(prefix + PAGE, "1280") for prefix in LANGUAGES.values()]
WORDS = {lang: site_config.extra(lang)["interactive"]["decode-stepper"] for lang in LANGUAGES}
#: The page's generation: a prompt of 4 tokens, then the other 6 one at a time.
PIECES = [(0, 4)] + [(n, n + 1) for n in range(4, 10)]
NUM_TOKENS, NUM_HEADS = 10, 2
#: The piece's data carries 6 decimals; it shows 2.
DATA_TOL, SHOWN_TOL = 1e-5, 0.005 + 1e-6
MINUS = "\u2212"


@functools.cache
def reference() -> list[dict]:
    """Each step of the page's generation: its right weights (num_heads, num_new, num_keys) and outputs, the
    full forward's rows for its tokens, and the weights and outputs of the same step with is_causal=True."""
    torch.manual_seed(123)
    mha = al.MultiHeadAttention(d_in=8, d_out=8, context_length=16, dropout=0.0, num_heads=NUM_HEADS)
    mha.eval()
    x = torch.randn(1, NUM_TOKENS, 8)  # the page's x: 4 prompt + 6 new
    steps = []
    with torch.no_grad():
        full = mha(x)[0]
        mha.reset_cache()
        for start, stop in PIECES:
            piece = x[:, start:stop]
            output, attn_weights = mha(piece, need_weights=True, use_cache=True)
            queries = al.split_heads(mha.W_query(piece), NUM_HEADS)
            keys, values = mha.cache_k, mha.cache_v
            context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
            # What is_causal=True kept: the mask aligned top-left, query i sees keys 0..i.
            keep = torch.ones(stop - start, stop, dtype=torch.bool).tril()
            attn_scores = queries @ keys.transpose(2, 3) / mha.head_dim**0.5
            wrong_weights = torch.softmax(attn_scores.masked_fill(~keep, -torch.inf), dim=-1)
            assert torch.allclose(wrong_weights @ values, context, atol=1e-6)  # the weights SDPA used
            steps.append(
                {
                    "tokens": list(range(start, stop)),
                    "cache_shape": list(keys.shape),
                    "weights": attn_weights[0],
                    # The right mask: query i, at position start + i, sees keys 0..start + i.
                    "seen": torch.ones(stop - start, stop, dtype=torch.bool).tril(diagonal=start),
                    "output": output[0],
                    "full": full[start:stop],
                    "wrong_weights": wrong_weights[0],
                    "wrong_seen": keep,
                    "wrong_output": mha.out_proj(al.merge_heads(context))[0],
                }
            )
    return steps


def expected_rows(step: int, head: int, wrong: bool) -> list[list[float | None]]:
    """The grid: every query so far over the keys cached at ``step``, None where masked or not cached yet."""
    rows = []
    num_keys = PIECES[step][1]
    for earlier in reference()[: step + 1]:
        weights = earlier["wrong_weights" if wrong else "weights"][head]
        seen = earlier["wrong_seen" if wrong else "seen"]
        for i, row in enumerate(weights.tolist()):
            shown = [w if seen[i, j] else None for j, w in enumerate(row)]
            rows.append(shown + [None] * (num_keys - len(shown)))
    return rows


def _number(text: str) -> float:
    assert re.fullmatch(rf"{MINUS}?\d\.\d\d", text), f"not a number with 2 decimals: {text!r}"
    return float(text.replace(MINUS, "-"))


def _close(shown: list, expected: list, tol: float) -> bool:
    return len(shown) == len(expected) and all(abs(a - b) <= tol for a, b in zip(shown, expected, strict=True))


def problems(state: dict, lang: str) -> list[str]:
    """What the piece shows in ``state`` (read by SWEEP) that differs from attention_lib's numbers: [] if nothing."""
    words = WORDS[lang]
    step, head, wrong = state["step"], state["head"], state["isCausal"]
    ref = reference()[step]
    found = []

    def check(ok: bool, what: str) -> None:
        if not ok:
            found.append(f"step {step}, head {head}, is_causal {wrong}: {what}")

    check(state["tokens"] == ref["tokens"], f"tokens {state['tokens']}")
    check(state["cacheShape"] == ref["cache_shape"], f"cache shape {state['cacheShape']}")
    check(state["shapes"] == [f"({', '.join(map(str, ref['cache_shape']))})"] * 2, f"shapes shown {state['shapes']}")
    num_keys = ref["cache_shape"][2]
    for name, slots in state["slots"].items():
        filled = [i for i, cls in enumerate(slots) if "dc-filled" in cls]
        new = [i for i, cls in enumerate(slots) if "dc-new" in cls]
        check(filled == list(range(num_keys)) and new == ref["tokens"], f"{name}'s slots {slots}")
    # The weights, in the data and in the grid.
    rows = expected_rows(step, head, wrong)
    right_rows = expected_rows(step, head, False)
    data = state["weights"]
    check(
        len(data) == len(rows)
        and all(
            [w is None for w in a] == [w is None for w in b]
            and _close([w for w in a if w is not None], [w for w in b if w is not None], DATA_TOL)
            for a, b in zip(data, rows, strict=True)
        ),
        "data-weights",
    )
    for i, cells in enumerate(state["cells"]):
        for j, (cls, text) in enumerate(cells):
            if i >= len(rows) or j >= num_keys:
                ok = (cls, text) == ("dc-empty", "")
            elif rows[i][j] is not None:
                ok = cls == "dc-seen" and abs(_number(text) - rows[i][j]) <= SHOWN_TOL
            elif right_rows[i][j] is not None:  # hidden by the top-left mask only
                ok = (cls, text) == ("dc-cut", "\u00d7")
            else:
                ok = (cls, text) == ("dc-masked", "\u00b7")
            check(ok, f"cell q{i} k{j}: {cls} {text!r}")
    check(state["current"] == ref["tokens"], f"rows marked current {state['current']}")
    # The outputs: the right one equals the full forward; the wrong one is SDPA's with is_causal=True.
    output, wrong_output = ref["output"].tolist(), ref["wrong_output"].tolist()
    check(torch.allclose(ref["output"], ref["full"], atol=1e-6), "the cached output is not the full forward's")
    for t, row in enumerate(state["output"]):
        check(_close(row, output[t], DATA_TOL), f"data-output row {t}")
        check(_close(row, ref["full"][t].tolist(), DATA_TOL), f"data-output row {t} is not the full forward's")
    check(len(state["output"]) == len(output), "data-output rows")
    table = [[row[0], *row[1:]] for row in state["table"]]
    expected_labels = []
    for t, token in enumerate(ref["tokens"]):
        expected_labels.append((words["token"].format(token=token), output[t]))
        if wrong:
            expected_labels.append(("is_causal=True", wrong_output[t]))
    check(len(table) == len(expected_labels), f"{len(table)} output rows shown")
    for row, (label, values) in zip(table, expected_labels, strict=False):
        check(row[0] == label and _close([_number(x) for x in row[1:]], values, SHOWN_TOL), f"output row {row}")
    distance = max(abs(a - b) for r, w in zip(output, wrong_output, strict=True) for a, b in zip(r, w, strict=True))
    if wrong:
        check(state["wrongOutput"] is not None and len(state["wrongOutput"]) == len(wrong_output), "data-wrong-output")
        for t, row in enumerate(state["wrongOutput"] or []):
            check(_close(row, wrong_output[t], DATA_TOL), f"data-wrong-output row {t}")
        check(state["distance"] is not None and abs(float(state["distance"]) - distance) <= DATA_TOL, "data-distance")
        check(state["distanceText"] == words["distance"].format(distance=f"{distance:.2f}"), state["distanceText"])
    else:
        check(state["wrongOutput"] is None and state["distance"] is None, "wrong output without the toggle")
        check(state["distanceHidden"], "the distance shown without the toggle")
    # The sentence a screen reader hears.
    shape = f"({', '.join(map(str, ref['cache_shape']))})"
    values = {
        "step": step,
        "steps": len(PIECES) - 1,
        "token": ref["tokens"][-1],
        "count": len(ref["tokens"]),
        "n": num_keys,
        "shape": shape,
        "distance": f"{distance:.2f}",
    }
    said = [words["prefill" if step == 0 else "decode"].format(**values)]
    if wrong:
        said.append(words["prefill_wrong" if step == 0 else "decode_wrong"].format(**values))
    gap = "" if said[0].endswith("。") else " "  # no space after a Chinese full stop
    check(state["live"] == gap.join(said), f"live: {state['live']!r}")
    return found


#: Every step, the toggle off and on, each head, read back from the piece as the buttons leave it; then back
#: with Previous, and the ends, where Previous and Next do nothing.
SWEEP = """root => {
  const click = name => root.querySelector(`[data-control=${name}]`).click();
  const head = h => root.querySelector(`[data-control=head][data-head="${h}"]`).click();
  const json = value => value === undefined ? null : JSON.parse(value);
  const read = () => ({
    step: Number(root.dataset.step), head: Number(root.dataset.head), isCausal: root.dataset.isCausal === "true",
    tokens: json(root.dataset.tokens), cacheShape: json(root.dataset.cacheShape), weights: json(root.dataset.weights),
    output: json(root.dataset.output), wrongOutput: json(root.dataset.wrongOutput),
    distance: root.dataset.distance ?? null,
    cells: [...root.querySelectorAll(".dc-grid tbody tr")].map(tr =>
      [...tr.cells].slice(1).map(td => [td.className, td.textContent])),
    current: [...root.querySelectorAll(".dc-grid tbody tr[aria-current=true]")].map(tr => tr.rowIndex - 1),
    table: [...root.querySelectorAll(".dc-output tbody tr")].map(tr => [...tr.cells].map(c => c.textContent)),
    distanceText: root.querySelector(".dc-distance").textContent,
    distanceHidden: root.querySelector(".dc-distance").hidden,
    slots: Object.fromEntries([...root.querySelectorAll(".dc-slots")].map(ol =>
      [ol.getAttribute("aria-label"), [...ol.children].map(li => li.className)])),
    shapes: [...root.querySelectorAll(".dc-shape")].map(code => code.textContent),
    live: root.querySelector(".dc-live").textContent,
  });
  click("reset");
  const numHeads = JSON.parse(root.dataset.config).num_heads;
  const steps = Number(root.dataset.steps);
  const forward = [];
  for (let s = 0; s < steps; s++) {
    if (s > 0) click("next");
    for (const on of [false, true]) {
      if ((root.dataset.isCausal === "true") !== on) click("is-causal");
      for (let h = 0; h < numHeads; h++) { head(h); forward.push(read()); }
    }
    click("is-causal");
    head(0);
  }
  click("next");  // at the last step: nothing happens
  const last = read();
  const back = [];
  for (let s = steps - 1; s > 0; s--) { click("previous"); back.push(read()); }
  click("previous");  // at the prefill: nothing happens
  const first = read();
  return { forward, last, back, first };
}"""


def _sweep(visited) -> dict:
    root = visited.tab.locator("[data-decode-stepper]")
    assert root.count() == 1
    return root.evaluate(SWEEP)


@pytest.mark.parametrize("visited", DESKTOP_PAGES, indirect=True, ids=[url for url, _ in DESKTOP_PAGES])
def test_every_number_at_every_step_is_attention_libs(visited) -> None:
    lang = "zh" if visited.url.startswith("zh/") else "en"
    result = _sweep(visited)
    forward = result["forward"]
    assert len(forward) == len(PIECES) * 2 * NUM_HEADS  # every step x toggle x head
    settings = [(s["step"], s["isCausal"], s["head"]) for s in forward]
    assert settings == [(step, on, h) for step in range(len(PIECES)) for on in (False, True) for h in range(NUM_HEADS)]
    for state in forward:
        assert problems(state, lang) == []
    # Next at the end and Previous at the start do nothing; Previous shows each step again as it was.
    assert result["last"] == forward[-2 * NUM_HEADS]
    assert result["first"] == forward[0]
    by_step = {s["step"]: s for s in forward if not s["isCausal"] and s["head"] == 0}
    assert [s["step"] for s in result["back"]] == list(range(len(PIECES) - 2, -1, -1))
    for state in result["back"]:
        assert state == by_step[state["step"]]
    # What the toggle shows: the prompt is right either way, every later step is wrong, and by as much as the
    # page says: the newest token's output becomes token 0's.
    distances = {s["step"]: float(s["distance"]) for s in forward if s["isCausal"]}
    assert distances[0] == 0
    assert min(distances[step] for step in range(1, len(PIECES))) > 0.1
    token_0 = forward[0]["output"][0]
    assert all(_close(s["wrongOutput"][0], token_0, DATA_TOL) for s in forward if s["isCausal"] and s["step"] > 0)


@pytest.mark.parametrize("visited", [DESKTOP_PAGES[0]], indirect=True, ids=["en"])
def test_the_number_checks_fail_on_a_wrong_piece(visited) -> None:
    """A piece that ignored the toggle, the head or the step, drew the right mask as is_causal's, showed a number
    off by 0.01, or said the wrong sentence would be caught: each change to a state the browser read is found."""
    forward = _sweep(visited)["forward"]

    def state(step: int, on: bool, head: int) -> dict:
        return json.loads(
            json.dumps(next(s for s in forward if (s["step"], s["isCausal"], s["head"]) == (step, on, head)))
        )

    assert problems(state(2, True, 1), "en") == []
    ignored_toggle = state(2, True, 1) | {"table": state(2, False, 1)["table"]}
    ignored_head = state(2, True, 1) | {"weights": state(2, True, 0)["weights"]}
    wrong_step = state(3, False, 0) | {"output": state(2, False, 0)["output"]}
    right_mask_drawn = state(2, True, 0) | {"cells": state(2, False, 0)["cells"]}
    off_by = state(4, False, 1)
    off_by["cells"][4][0][1] = f"{_number(off_by['cells'][4][0][1]) + 0.01:.2f}"
    wrong_output = state(5, True, 0)
    wrong_output["wrongOutput"][0][3] += 0.001
    cache = state(1, False, 0) | {"cacheShape": [1, 2, 4, 4]}
    said = state(1, True, 0) | {"live": state(1, False, 0)["live"]}
    zh_words = state(0, False, 0)  # the English piece's words are not the Chinese ones
    for wrong in (ignored_toggle, ignored_head, wrong_step, right_mask_drawn, off_by, wrong_output, cache, said):
        assert problems(wrong, "en") != []
    assert problems(zh_words, "zh") != []
    # And the reference itself tells the masks apart: is_causal=True's output differs from the right one.
    assert not torch.allclose(reference()[1]["wrong_output"], reference()[1]["output"], atol=0.1)


#: The focused element, and the outline it shows, where a keyboard user looks for the focus.
FOCUS = """() => {
  const active = document.activeElement;
  const style = getComputedStyle(active);
  return { control: active.dataset.control ?? null, head: active.dataset.head ?? null,
           inside: active.closest("[data-decode-stepper]") !== null,
           style: style.outlineStyle, width: parseFloat(style.outlineWidth) };
}"""


def _ring_ok(focus: dict) -> bool:
    return focus["inside"] and focus["style"] != "none" and focus["width"] >= 2


@pytest.mark.parametrize("visited", DESKTOP_PAGES, indirect=True, ids=[url for url, _ in DESKTOP_PAGES])
def test_the_stepper_works_from_the_keyboard(visited) -> None:
    lang = "zh" if visited.url.startswith("zh/") else "en"
    words = WORDS[lang]
    page = visited.tab
    root = page.locator("[data-decode-stepper]")
    root.locator("[data-control=reset]").click()
    buttons = root.locator("button")
    names = buttons.evaluate_all("bs => bs.map(b => b.textContent.trim())")
    assert names == [
        words["previous"],
        words["next"],
        words["reset"],
        words["top_left"].format(code="is_causal=True"),
        *(words["head"].format(head=h) for h in range(NUM_HEADS)),
    ]
    # Tab walks the controls in order, each showing a ring of 2 px or more; the one before the piece is outside.
    buttons.first.focus()
    page.keyboard.press("Shift+Tab")
    assert not page.evaluate(FOCUS)["inside"]
    order = []
    for _ in range(buttons.count()):
        page.keyboard.press("Tab")
        focus = page.evaluate(FOCUS)
        assert _ring_ok(focus), focus
        order.append((focus["control"], focus["head"]))
    assert order == [("previous", None), ("next", None), ("reset", None), ("is-causal", None)] + [
        ("head", str(h)) for h in range(NUM_HEADS)
    ]
    no_ring = None
    try:
        root.locator("[data-control=next]").focus()
        page.keyboard.press("Enter")
        assert root.get_attribute("data-step") == "1"
        page.keyboard.press("Space")
        assert root.get_attribute("data-step") == "2"
        page.keyboard.press("ArrowRight")
        assert root.get_attribute("data-step") == "3"
        page.keyboard.press("ArrowLeft")
        assert root.get_attribute("data-step") == "2"
        toggle = root.locator("[data-control=is-causal]")
        toggle.focus()
        page.keyboard.press("Space")
        assert root.get_attribute("data-is-causal") == "true"
        assert toggle.get_attribute("aria-pressed") == "true"
        page.keyboard.press("Enter")
        assert root.get_attribute("data-is-causal") == "false"
        assert toggle.get_attribute("aria-pressed") == "false"
        root.locator("[data-control=head][data-head='1']").focus()
        page.keyboard.press("Enter")
        assert root.get_attribute("data-head") == "1"
        root.locator("[data-control=reset]").focus()
        page.keyboard.press("Space")
        assert root.get_attribute("data-step") == "0"
        # The ring check fails where a page loses the outline.
        no_ring = page.add_style_tag(content=".decode-stepper button:focus-visible { outline: none !important; }")
        buttons.first.focus()
        page.keyboard.press("Tab")
        assert not _ring_ok(page.evaluate(FOCUS))
    finally:
        if no_ring is not None:
            no_ring.evaluate("style => style.remove()")
        page.evaluate("r => { r.querySelector('[data-control=reset]').click(); }", root.element_handle())
        root.locator("[data-control=head][data-head='0']").click()
        if root.get_attribute("data-is-causal") == "true":
            root.locator("[data-control=is-causal]").click()


#: What would make the page or the piece scroll sideways: the page's width, the piece's box, and each of its
#: scrolling boxes whose content is wider than it.
FITS = """root => ({
  page: document.documentElement.scrollWidth,
  left: root.getBoundingClientRect().left, right: root.getBoundingClientRect().right,
  inner: [...root.querySelectorAll(".dc-scroll")].filter(s => s.scrollWidth > s.clientWidth).length,
})"""


def _overflow(root, width: int) -> list[str]:
    fits = root.evaluate(FITS)
    found = []
    if fits["page"] > width:
        found.append(f"the page is {fits['page']} px wide")
    if fits["left"] < 0 or fits["right"] > width:
        found.append(f"the piece spans {fits['left']}..{fits['right']} px")
    if fits["inner"]:
        found.append(f"{fits['inner']} table(s) scroll sideways")
    return found


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", [390, 1280])
def test_the_stepper_fits_moves_nothing_as_it_loads_and_answers_touch(
    browser, base_url, largest_shift, font_shift_px, lang, width
) -> None:
    """On a phone (touch) and a desktop (pointer): no layout shift while the page loads, every step fits in
    both states of the toggle, and taps or clicks drive it."""
    context = browser.new_context(
        viewport={"width": width, "height": 844}, has_touch=width == 390, is_mobile=width == 390
    )
    try:
        page = context.new_page()
        page.goto(base_url + LANGUAGES[lang] + PAGE, wait_until="load")
        page.evaluate("document.fonts.ready.then(() => null)")
        assert largest_shift(page) <= font_shift_px
        root = page.locator("[data-decode-stepper]")
        press = (lambda locator: locator.tap()) if width == 390 else (lambda locator: locator.click())
        press(root.locator("[data-control=head][data-head='1']"))
        assert root.get_attribute("data-head") == "1"
        for step in range(len(PIECES)):
            for _ in range(2):
                assert _overflow(root, width) == [], (step, root.get_attribute("data-is-causal"))
                press(root.locator("[data-control=is-causal]"))
            assert root.get_attribute("data-step") == str(step)
            if step < len(PIECES) - 1:  # Next is off at the last step (aria-disabled), and Playwright waits on it
                press(root.locator("[data-control=next]"))
        press(root.locator("[data-control=previous]"))
        assert root.get_attribute("data-step") == str(len(PIECES) - 2)
        # The check fails on a grid too wide for the screen.
        page.add_style_tag(content=".md-typeset .dc-grid td { min-width: 8em !important; }")
        assert _overflow(root, width) != []
    finally:
        context.close()


@pytest.mark.parametrize("visited", DESKTOP_PAGES, indirect=True, ids=[url for url, _ in DESKTOP_PAGES])
def test_the_stepper_keeps_its_contrast_in_both_palettes(visited, dark_palette, axe_violations, text_contrasts) -> None:
    """Step 2 with is_causal=True shows every kind of cell (weights, masked, hidden by the toggle, empty), the
    wrong output and the distance: all at 4.5:1 or more, light and dark, the head switched on too; and axe-core
    finds nothing serious or critical on the page, in either palette."""
    page = visited.tab
    root = page.locator("[data-decode-stepper]")
    root.locator("[data-control=reset]").click()
    root.locator("[data-control=next]").click()
    root.locator("[data-control=next]").click()
    root.locator("[data-control=is-causal]").click()
    try:
        page.mouse.move(0, 0)
        light = text_contrasts(root)
        assert [item for item in light if item["contrast"] < 4.5] == []
        assert axe_violations(page) == []
        with dark_palette(page):
            page.mouse.move(0, 0)
            dark = text_contrasts(root)
            assert [item for item in dark if item["contrast"] < 4.5] == []
            assert axe_violations(page) == []
        kinds = {item["what"] for item in light}
        assert {"dc-seen", "dc-masked", "dc-cut", "dc-distance"} <= kinds, kinds
        # The cells take the palette: none keeps its light background in the dark one.
        cells = [(a, b) for a, b in zip(light, dark, strict=True) if a["what"] in ("dc-seen", "dc-masked", "dc-cut")]
        assert cells
        assert all(a["background"] != b["background"] for a, b in cells)
        # The checks fail: on text drawn in its background's color, and on a control without a name.
        root.locator(".dc-cut").first.evaluate("cell => cell.style.color = getComputedStyle(cell).backgroundColor")
        assert [item["what"] for item in text_contrasts(root) if item["contrast"] < 4.5] == ["dc-cut"]
        root.locator(".dc-controls").evaluate("controls => controls.append(document.createElement('button'))")
        try:
            assert [line.split(" ")[0] for line in axe_violations(page)] == ["button-name"]
        finally:
            root.locator(".dc-controls > button:last-child").evaluate("button => button.remove()")
    finally:
        root.locator("[data-control=is-causal]").click()
        root.locator("[data-control=reset]").click()


def test_the_page_shows_the_stepper_and_its_notebook_links_to_it() -> None:
    from docs_tools import notebooks
    from docs_tools.pages import INTERACTIVE
    from docs_tools.project import ROOT

    for lang in LANGUAGES:
        text = (ROOT / "docs" / lang / "kv-cache.md").read_text(encoding="utf-8")
        assert [m["kind"] + ":" + m["name"] for m in INTERACTIVE.finditer(text)] == ["decode-stepper:kv-cache"]
        # In its own section, after the one on the alignment the toggle shows going wrong.
        section = re.search(r"^## [^\n]*\{ #decode-stepper \}\n(.*?)^## ", text, re.S | re.M)
        assert section, lang
        assert '\n<div data-decode-stepper="kv-cache"></div>\n' in section[1], lang
        assert text.index("{ #alignment }") < section.start(), lang
        cells = json.loads(notebooks.target("kv-cache", lang).read_text(encoding="utf-8"))["cells"]
        sources = ["".join(cell["source"]) for cell in cells]
        assert not any(INTERACTIVE.search(source) for source in sources)
        assert any("/kv-cache/#" in source and "](http" in source for source in sources), lang
