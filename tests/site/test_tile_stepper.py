"""The tile stepper of the softmax-in-tiles page, in a real browser, in every language: every number of every step,
for every tile size, with and without the padding mask, is what attention_lib.tile_steps holds after that tile, and
the end is masked_softmax attention; the stepper works from the keyboard and by touch, fits a phone, keeps its
contrast in both palettes, moves nothing as the page loads or as the reader steps, and axe-core finds nothing
serious or critical on its page.

tiles.js computes nothing: it shows the numbers docs_tools/tile_stepper.py exported. So the checks below take
each number from the page (its data-state and the text a reader sees) and compare it with tile_steps run here, and
``test_each_check_fails_on_a_wrong_number`` shows that every kind of wrong number or text is caught.
"""

from __future__ import annotations

import copy
import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
import torch

import attention_lib as al
from docs_tools import config
from docs_tools import tile_stepper as example

ROOT = Path(__file__).resolve().parents[2]
DATA = json.loads((ROOT / "docs_tools" / "data" / "tile_stepper.json").read_text(encoding="utf-8"))["tiles"]
PAGE = "softmax-in-tiles.md"
URLS = [config.url(lang, PAGE) for lang in config.complete_locales()]
WIDTHS = ("1280", "390")
#: The words of each language's stepper, as the page gets them (mkdocs.yml extra.interactive).
WORDS = {
    config.url(lang, PAGE): config.extra(lang)["interactive"]["tile-stepper"] for lang in config.complete_locales()
}

# ---------------------------------------------------------------------------------------------------
# What the stepper must show: tile_steps run here, and the numbers formatted as JavaScript formats them
# ---------------------------------------------------------------------------------------------------


def fixed(x: float | None, digits: int = 2) -> str:
    """``x.toFixed(digits)`` as tiles.js shows it: ties away from zero on the double's exact value, the minus sign
    U+2212, no negative zero; None (a masked score, -inf) is −∞."""
    if x is None or x == float("-inf"):
        return "\u2212\u221e"
    text = str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    return (f"{0:.{digits}f}" if Decimal(text) == 0 else text).replace("-", "\u2212")


def tiny(x: float) -> str:
    """``x.toExponential(1)``, as tiles.js shows the largest difference: ``1.2e−7``."""
    if x == 0:
        return "0"
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}".replace("-", "\u2212")


def vector(xs) -> str:
    return "[" + ", ".join(fixed(x) for x in xs) + "]"


#: The numbers in a text: −∞, and decimals with their sign (an operator's minus has a space after it).
NUMBERS = re.compile(r"\u2212\u221e|\u2212?\d+\.\d+(?:e\u2212?\d+)?")


def numbers(text: str) -> list[str]:
    return NUMBERS.findall(text)


def fill(template: str, **values: object) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m[1]]), template)


def library_walk(tile_size: int, padded: bool) -> dict:
    """What attention_lib computes for one setting: every TileStep as plain numbers (float32 as the doubles they
    are, -inf as None), the output o / l of the last step, and masked_softmax attention over all the scores."""
    query, keys, values = example.inputs()
    mask = example.padding(keys.shape[0]) if padded else None

    def plain(tensor: torch.Tensor) -> list[float | None]:
        return [None if x == float("-inf") else x for x in tensor.double().flatten().tolist()]

    steps = []
    for step in al.tile_steps(query, keys, values, mask, tile_size):
        exps = torch.exp(step.scores - step.running_max)
        (running_max,), (rescale,) = plain(step.running_max), plain(step.rescale)
        steps.append(
            {
                "start": step.start,
                "stop": step.stop,
                "scores": plain(step.scores),
                "max": running_max,
                "rescale": rescale,
                "exps": plain(exps),
                "tile_sum": plain(exps.sum(dim=-1))[0],
                "tile_output": plain(exps @ values[step.start : step.stop]),
                "sum": plain(step.running_sum)[0],
                "output": plain(step.output),
            }
        )
    result = al.tiled_attention(query, keys, values, mask, tile_size)
    attn_weights = al.masked_softmax(al.scaled_dot_product_scores(query, keys), mask)
    reference = attn_weights @ values
    all_scores = al.scaled_dot_product_scores(query, keys)
    if mask is not None:
        all_scores = all_scores.masked_fill(mask, float("-inf"))
    last = steps[-1]
    # tiled_attention's output is the last step's o / l.
    assert torch.allclose(
        result.double()[0], torch.tensor(last["output"], dtype=torch.float64) / last["sum"], rtol=0, atol=1e-7
    )
    return {
        "steps": steps,
        "result": plain(result),
        "reference": plain(reference),
        "difference": (result - reference).abs().max().item(),
        "scores": plain(all_scores),
        "values": values.tolist(),
    }


def problems(seen: list[dict], words: dict) -> list[str]:
    """Everything the stepper showed that differs from attention_lib: one line per wrong number, text or state.
    ``seen`` is what ``WALK`` read after every click."""
    found: list[str] = []

    def expect(label: str, shown: object, wanted: object) -> None:
        if shown != wanted:
            found.append(f"{label}: shown {shown!r}, expected {wanted!r}")

    walks = {}
    for state in seen:
        size, padded, step = state["tileSize"], state["padding"], state["step"]
        key = (size, padded)
        if key not in walks:
            walks[key] = library_walk(size, padded)
        walk = walks[key]
        steps = walk["steps"]
        at = f"tile size {size}, padding {padded}, step {step}"
        expect(f"{at}: number of steps", state["steps"], len(steps))
        current = steps[step - 1] if step else None
        before = steps[step - 2] if step > 1 else None
        end = step == len(steps)
        # The state the page exposes: the library's numbers, to the last bit (float32 values, as doubles).
        expect(f"{at}: data-state step", state["state"]["step"], current)
        wanted_end = {name: walk[name] for name in ("result", "reference", "difference")} if end else None
        expect(f"{at}: data-state end", state["state"]["end"], wanted_end)
        # o / l is the softmax, to float32 rounding: the tiles change how it is computed, not what.
        if not walk["difference"] < 1e-6:
            found.append(f"{at}: o / l is {walk['difference']} away from masked_softmax attention")

        # The strip: every key's score and value, and which tile each key is in.
        keys_row, scores_row, values_row = state["strip"]
        expect(f"{at}: scores", [text for _, text in scores_row], [fixed(x) for x in walk["scores"]])
        expect(
            f"{at}: values",
            [text.split() for _, text in values_row],
            [[fixed(x, 1) for x in value] for value in walk["values"]],
        )
        wanted_classes = []
        for j in range(len(walk["scores"])):
            where = (
                "ahead" if current is None or j >= current["stop"] else "current" if j >= current["start"] else "done"
            )
            wanted_classes.append(f"tl-{where}" + (" tl-start" if j and j % size == 0 else ""))
        for row_name, row in (("keys", keys_row), ("scores", scores_row), ("values", values_row)):
            expect(f"{at}: {row_name} row's tiles", [cls for cls, _ in row], wanted_classes)

        # The quantities a reader reads, number by number, each to two decimals.
        quantities = state["quantities"]
        old_max = before["max"] if before else None
        old_sum = before["sum"] if before else 0.0
        old_output = before["output"] if before else [0.0] * len(walk["values"][0])
        if current is None:
            expect(f"{at}: heading", state["heading"], words["start"])
            expect(f"{at}: max", numbers(quantities["max"]), [fixed(None)])
            expect(f"{at}: sum", numbers(quantities["sum"]), [fixed(0.0)])
            expect(f"{at}: output", numbers(quantities["output"]), [fixed(x) for x in old_output])
            for name in ("tile_scores", "rescale", "exps"):
                expect(f"{at}: {name}", numbers(quantities[name]), [])
            expect(f"{at}: live", state["live"], words["live_start"])
        else:
            keys_text = (
                fill(words["key_one"], first=current["start"])
                if current["stop"] - current["start"] == 1
                else fill(words["keys"], first=current["start"], last=current["stop"] - 1)
            )
            expect(f"{at}: heading", state["heading"], fill(words["step"], tile=step, tiles=len(steps), keys=keys_text))
            seen_scores = [x for x in current["scores"] if x is not None]
            tile_max = max(seen_scores) if seen_scores else None
            expect(f"{at}: tile scores", numbers(quantities["tile_scores"]), [fixed(x) for x in current["scores"]])
            expect(
                f"{at}: max",
                numbers(quantities["max"]),
                [fixed(old_max), fixed(tile_max), fixed(current["max"])],
            )
            raised = old_max is None or current["max"] > old_max
            wording = fill(words["raised" if raised else "kept"], value=fixed(current["max"]))
            if not quantities["max"].endswith(wording):
                found.append(f"{at}: max says {quantities['max']!r}, not {wording!r}")
            expect(
                f"{at}: rescale",
                numbers(quantities["rescale"]),
                [fixed(old_max), fixed(current["max"]), fixed(current["rescale"])],
            )
            expect(f"{at}: exps", numbers(quantities["exps"]), [fixed(x) for x in current["exps"]])
            expect(
                f"{at}: sum",
                numbers(quantities["sum"]),
                [fixed(old_sum), fixed(current["rescale"]), fixed(current["tile_sum"]), fixed(current["sum"])],
            )
            expect(
                f"{at}: output",
                numbers(quantities["output"]),
                [
                    *map(fixed, old_output),
                    fixed(current["rescale"]),
                    *map(fixed, current["tile_output"]),
                    *map(fixed, current["output"]),
                ],
            )
            # The formulas hold: the running sum and output are the old ones rescaled, plus the tile's.
            if abs(old_sum * current["rescale"] + current["tile_sum"] - current["sum"]) > 1e-5:
                found.append(f"{at}: l_old × factor + Σ exp(s − m) is not l")
            template = (
                "live_first"
                if step == 1
                else "live_masked"
                if not seen_scores
                else "live_raised"
                if current["max"] > old_max
                else "live_kept"
            )
            sentence = fill(
                words[template],
                tile=step,
                tiles=len(steps),
                keys=keys_text,
                old=fixed(old_max),
                new=fixed(current["max"]),
                rescale=fixed(current["rescale"]),
            )
            if end:
                sentence = fill(words["live_end"], step=sentence, n=len(walk["scores"]), result=vector(walk["result"]))
            expect(f"{at}: live", state["live"], sentence)
        for name, wanted in (
            ("result", [fixed(x) for x in walk["result"]]),
            ("reference", [fixed(x) for x in walk["reference"]]),
        ):
            expect(
                f"{at}: {name}",
                numbers(quantities[name]) if end else quantities[name],
                wanted if end else words["pending"],
            )
        if end:
            expect(f"{at}: difference", quantities["difference"], tiny(walk["difference"]))
            # Both round to the same two decimals: the reader sees them equal.
            expect(f"{at}: o / l against the softmax", quantities["result"], quantities["reference"])
        else:
            expect(f"{at}: difference", quantities["difference"], words["pending"])
        # The buttons that can do nothing at either end say so.
        expect(f"{at}: spent buttons", state["spent"], {"previous": step == 0, "next": end, "reset": step == 0})
    return found


# ---------------------------------------------------------------------------------------------------
# The browser
# ---------------------------------------------------------------------------------------------------

#: Every setting (padding off and on, each tile size), walked from the first step to past the last and back to
#: the start with the buttons; after each click, what the stepper shows and exposes. The clicks are the
#: buttons' own (element.click()); the keyboard and touch tests below press and tap them as a reader does.
WALK = """root => {
  const radios = [...root.querySelectorAll("input[type=radio]")];
  const box = root.querySelector("input[name=padding]");
  const button = name => root.querySelector(`button[data-step=${name}]`);
  const read = () => ({
    tileSize: Number(root.dataset.tileSize), padding: root.dataset.padding === "true",
    step: Number(root.dataset.step), steps: Number(root.dataset.steps), state: JSON.parse(root.dataset.state),
    heading: root.querySelector(".tl-heading").textContent, live: root.querySelector(".tl-live").textContent,
    quantities: Object.fromEntries([...root.querySelectorAll("[data-quantity]")].map(e => [e.dataset.quantity,
                                                                                        e.textContent])),
    strip: [...root.querySelectorAll(".tl-strip tr")].map(row => [...row.cells].slice(1).map(cell =>
      [cell.className, cell.innerText])),
    spent: Object.fromEntries(["previous", "next", "reset"].map(name =>
      [name, button(name).getAttribute("aria-disabled") === "true"])),
    height: root.getBoundingClientRect().height,
  });
  const forward = [], backward = [], toggled = [];
  for (const padded of [false, true]) {
    if (box.checked !== padded) box.click();
    for (const radio of radios) {
      radio.click();
      forward.push(read());
      for (let k = 0; k <= radios.length * 8 && root.dataset.step !== root.dataset.steps; k++) {
        button("next").click();
        forward.push(read());
      }
      button("next").click();  // at the end: nothing changes
      forward.push(read());
      while (root.dataset.step !== "0") {
        button("previous").click();
        backward.push(read());
      }
      // The mask keeps the tiles and the step: the other run's numbers at the same step.
      if (Number(root.dataset.steps) > 1) {
        button("next").click();
        box.click();
        toggled.push(read());
        box.click();
        button("reset").click();
      }
    }
  }
  const start = radios.find(radio => Number(radio.value) === JSON.parse(root.dataset.config).defaults.tile_size);
  box.checked && box.click();
  start.click();
  return { forward, backward, toggled, end: read() };
}"""

STEPPER_PAGES = [(url, "1280") for url in URLS]


def walk(visited) -> dict:
    root = visited.tab.locator("[data-tile-stepper]")
    assert root.count() == 1
    return root.evaluate(WALK)


@pytest.mark.parametrize("visited", STEPPER_PAGES, indirect=True, ids=URLS)
def test_every_step_of_every_setting_is_what_tile_steps_holds(visited) -> None:
    root = visited.tab.locator("[data-tile-stepper]")
    assert json.loads(root.get_attribute("data-config")) == DATA  # the page carries the exported numbers
    words = WORDS[visited.url]
    assert json.loads(root.get_attribute("data-strings")) == words
    seen = walk(visited)
    forward = seen["forward"]
    settings = {(state["tileSize"], state["padding"]) for state in forward}
    assert settings == {(size, padded) for size in example.TILE_SIZES for padded in (False, True)}
    # Every step of every setting: sum over the tile sizes of (tiles + the start + one click past the end).
    assert len(forward) == 2 * sum(-(-8 // size) + 2 for size in example.TILE_SIZES)
    found = problems(forward + seen["backward"] + seen["toggled"], words)
    assert found == [], "\n".join(found[:20])
    # Walking back shows each step as walking forward did; the mask's toggle kept the step.
    shown = {(s["tileSize"], s["padding"], s["step"]): {**s, "height": None} for s in forward}
    for state in seen["backward"]:
        assert {**state, "height": None} == shown[(state["tileSize"], state["padding"], state["step"])]
    assert seen["toggled"]
    assert all(state["step"] == 1 for state in seen["toggled"])
    # The stepper is back at its defaults, before the first tile.
    end = seen["end"]
    assert (end["tileSize"], end["padding"], end["step"]) == (example.DEFAULT_TILE_SIZE, False, 0)


#: Wrong numbers and texts, one of each kind, put into what the browser showed: each must be reported.
def _perturbations(state_at) -> list[tuple[str, callable]]:
    def in_state(field, change):
        def apply(seen):
            state = state_at(seen, lambda s: s["state"]["step"] is not None and s["step"] == 2)
            state["state"]["step"][field] = change(state["state"]["step"][field])

        return apply

    def in_text(name, at_end=False):
        def apply(seen):
            state = state_at(seen, lambda s: s["step"] == s["steps"] if at_end else s["step"] == 2)
            text = state["quantities"][name]
            # The last digit of the last number, one more.
            last = list(re.finditer(r"\d", text))[-1]
            state["quantities"][name] = text[: last.start()] + str((int(last[0]) + 1) % 10) + text[last.end() :]

        return apply

    def in_end(field, change):
        def apply(seen):
            state = state_at(seen, lambda s: s["step"] == s["steps"])
            state["state"]["end"][field] = change(state["state"]["end"][field])

        return apply

    def in_strip(row, column, change):
        def apply(seen):
            state = state_at(seen, lambda s: s["step"] == 2)
            cls, text = state["strip"][row][column]
            state["strip"][row][column] = list(change(cls, text))

        return apply

    def other(field, value):
        def apply(seen):
            state_at(seen, lambda s: s["step"] == 2)[field] = value

        return apply

    bump = lambda x: x + 1e-3  # noqa: E731
    return [
        ("a running max", in_state("max", bump)),
        ("a rescale factor", in_state("rescale", bump)),
        ("a running sum", in_state("sum", bump)),
        ("a running output", in_state("output", lambda xs: [xs[0] + 1e-3, *xs[1:]])),
        ("a tile's scores", in_state("scores", lambda xs: xs[::-1])),
        ("a tile's exponentials", in_state("exps", lambda xs: [x * 1.01 for x in xs])),
        ("a tile's sum", in_state("tile_sum", bump)),
        ("a tile's output", in_state("tile_output", lambda xs: [x + 1e-3 for x in xs])),
        ("where a tile starts", in_state("start", lambda x: x + 1)),
        ("the tile's scores as shown", in_text("tile_scores")),
        ("the max as shown", in_text("max")),
        ("the rescale as shown", in_text("rescale")),
        ("the exponentials as shown", in_text("exps")),
        ("the sum as shown", in_text("sum")),
        ("the output as shown", in_text("output")),
        ("the result as shown", in_text("result", at_end=True)),
        ("the reference as shown", in_text("reference", at_end=True)),
        ("the difference as shown", in_text("difference", at_end=True)),
        ("the result", in_end("result", lambda xs: [xs[0] + 1e-3, *xs[1:]])),
        ("the reference", in_end("reference", lambda xs: [xs[0] + 1e-3, *xs[1:]])),
        ("the difference", in_end("difference", lambda x: x + 1e-3)),
        ("a score in the strip", in_strip(1, 3, lambda cls, text: (cls, text.replace("7", "8")))),
        ("a value in the strip", in_strip(2, 3, lambda cls, text: (cls, text.replace("1", "2")))),
        ("which tile a key is in", in_strip(0, 0, lambda cls, text: ("tl-current", text))),
        ("where a tile starts in the strip", in_strip(1, 2, lambda cls, text: ("tl-current", text))),
        ("the live sentence", other("live", "")),
        ("the heading", other("heading", "")),
        ("a spent button", other("spent", {"previous": True, "next": False, "reset": True})),
        ("the number of steps", other("steps", 3)),
    ]


@pytest.mark.parametrize("visited", STEPPER_PAGES[:1], indirect=True, ids=URLS[:1])
def test_each_check_fails_on_a_wrong_number(visited) -> None:
    """The comparison above is not one that passes anyway: each kind of wrong number, exposed or shown, in a state
    where it matters (tiles of 2 keys: the second tile, or the end), is reported."""
    words = WORDS[visited.url]
    forward = walk(visited)["forward"]
    real = [s for s in forward if s["tileSize"] == 2 and not s["padding"]]
    assert problems(real, words) == []

    def state_at(seen, where):
        return next(s for s in seen if where(s))

    for name, perturb in _perturbations(state_at):
        seen = copy.deepcopy(real)
        perturb(seen)
        assert problems(seen, words), f"a wrong {name} went unnoticed"


# ---------------------------------------------------------------------------------------------------
# What the exported example teaches (no browser)
# ---------------------------------------------------------------------------------------------------


def test_the_example_raises_the_maximum_in_a_later_tile() -> None:
    """The example is chosen to teach: with tiles of 2 or 4 keys, a later tile raises the running maximum and the
    sum and output so far shrink by a visible factor; some tiles leave it (factor 1); the padding masks whole
    tiles of 1 or 2 keys; and o / l equals masked_softmax attention in every setting."""
    for size in example.TILE_SIZES:
        for padded in (False, True):
            walk_ = library_walk(size, padded)
            steps = walk_["steps"]
            assert len(steps) == -(-8 // size)
            assert walk_["difference"] < 1e-6
            assert DATA["runs"]["padding" if padded else "none"][str(size)]["steps"] == steps
            if size in (2, 4):
                later = [step["rescale"] for step in steps[1:]]
                assert min(later) < 0.5, later  # the jump a reader sees, after the first tile
            if size in (1, 2):
                assert 1.0 in [step["rescale"] for step in steps[1:]]
                if padded:
                    assert all(x is None for x in steps[-1]["scores"])  # a tile the padding masks whole
    scores = library_walk(8, False)["scores"]
    assert scores.index(max(scores)) >= 4  # the largest score is in the second half
    assert len(set(scores)) == len(scores)


# ---------------------------------------------------------------------------------------------------
# A reader's hands: keyboard and touch
# ---------------------------------------------------------------------------------------------------

#: The focused control's outline, where a keyboard user looks for the focus.
FOCUS = """(() => {
  const element = document.activeElement, style = getComputedStyle(element);
  return { inside: element.closest("[data-tile-stepper]") !== null, tag: element.tagName, type: element.type || "",
           step: element.dataset.step || null, value: element.value || null,
           ring: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2 };
})()"""


@pytest.mark.parametrize("visited", STEPPER_PAGES, indirect=True, ids=URLS)
def test_the_stepper_works_from_the_keyboard(visited) -> None:
    """Tab reaches the tile sizes (one stop, the checked radio), the mask, then Previous, Next and Start again,
    each with a name and a focus ring of 2 px or more; the arrows pick the tile size; Enter and Space press the
    buttons, and the arrows step too once a button has the focus; at the end, the focus stays on Next."""
    page = visited.tab
    root = page.locator("[data-tile-stepper]")
    words = WORDS[visited.url]
    names = root.locator("input, button").evaluate_all(
        "cs => cs.map(c => (c.labels && c.labels.length ? c.labels[0].textContent : c.textContent).trim())"
    )
    assert names == [str(size) for size in example.TILE_SIZES] + [
        fill(words["padding"], padded=example.PADDED),
        words["previous"],
        words["next"],
        words["reset"],
    ]
    assert root.locator("fieldset legend").text_content() == words["tile_size"]
    # The radio reached from the keyboard (a focus() from a script shows no ring after a mouse click).
    root.locator("input[type=radio]:checked").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    order = [page.evaluate(FOCUS)]
    for _ in range(4):
        page.keyboard.press("Tab")
        order.append(page.evaluate(FOCUS))
    assert [(f["type"], f["step"]) for f in order] == [
        ("radio", None),
        ("checkbox", None),
        ("button", "previous"),
        ("button", "next"),
        ("button", "reset"),
    ]
    assert all(f["inside"] and f["ring"] for f in order), order
    try:
        # The tile size, with the arrow keys: from 2 to 1.
        root.locator("input[type=radio]:checked").focus()
        page.keyboard.press("ArrowLeft")
        assert root.get_attribute("data-tile-size") == "1"
        # The mask, with Space.
        root.locator("input[name=padding]").focus()
        page.keyboard.press("Space")
        assert root.get_attribute("data-padding") == "true"
        page.keyboard.press("Space")
        assert root.get_attribute("data-padding") == "false"
        # Next, with Enter, Space and the right arrow; back with the left arrow.
        root.locator("button[data-step=next]").focus()
        page.keyboard.press("Enter")
        page.keyboard.press("Space")
        page.keyboard.press("ArrowRight")
        assert root.get_attribute("data-step") == "3"
        page.keyboard.press("ArrowLeft")
        assert root.get_attribute("data-step") == "2"
        for _ in range(10):
            page.keyboard.press("Enter")
        assert root.get_attribute("data-step") == "8"
        assert page.evaluate(FOCUS)["step"] == "next"  # a spent button keeps the focus
        assert root.locator("button[data-step=next]").get_attribute("aria-disabled") == "true"
        root.locator("button[data-step=reset]").focus()
        page.keyboard.press("Enter")
        assert root.get_attribute("data-step") == "0"
    finally:
        root.locator("input[type=radio]").nth(example.TILE_SIZES.index(example.DEFAULT_TILE_SIZE)).check()
        root.locator("button[data-step=reset]").evaluate("button => button.click()")


@pytest.mark.parametrize("url", URLS)
def test_the_stepper_works_by_touch_on_a_phone(browser, base_url: str, load, url: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        load(page, base_url + url)
        root = page.locator("[data-tile-stepper]")
        root.locator("label.tl-size", has_text="4").tap()
        assert root.get_attribute("data-tile-size") == "4"
        root.locator("button[data-step=next]").tap()
        root.locator("button[data-step=next]").tap()
        assert root.get_attribute("data-step") == "2"
        assert json.loads(root.get_attribute("data-state"))["end"] is not None
        root.locator("label.tl-check").tap()
        assert root.get_attribute("data-padding") == "true"
        assert json.loads(root.get_attribute("data-state"))["step"] == DATA["runs"]["padding"]["4"]["steps"][1]
        root.locator("button[data-step=previous]").tap()
        assert root.get_attribute("data-step") == "1"
        root.locator("button[data-step=reset]").tap()
        assert root.get_attribute("data-step") == "0"
        # Each target is a finger's size: 2rem, 40 px at Material's root size, or more, for the labels and buttons.
        heights = root.locator("label.tl-size, label.tl-check, button").evaluate_all(
            "targets => targets.map(t => t.getBoundingClientRect().height)"
        )
        assert min(heights) >= 32, heights
    finally:
        context.close()


# ---------------------------------------------------------------------------------------------------
# The page around it: fit, no movement, contrast, axe-core
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("width", [int(width) for width in WIDTHS])
def test_the_stepper_fits_and_moves_nothing(
    page, load, base_url: str, url: str, width: int, largest_shift, font_shift_px
) -> None:
    page.set_viewport_size({"width": width, "height": 844})
    load(page, base_url + url)
    assert largest_shift(page) <= font_shift_px
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # the page never scrolls sideways
    root = page.locator("[data-tile-stepper]")
    box = root.bounding_box()
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= width
    # The strip shows whole: all eight keys without scrolling inside it.
    assert root.locator(".tl-scroll").evaluate("s => s.scrollWidth <= s.clientWidth")
    # Stepping through every setting changes no height: nothing below the stepper moves as the reader steps.
    heights = {state["height"] for state in root.evaluate(WALK)["forward"]}
    assert len(heights) == 1, f"{url} at {width} px: heights {sorted(heights)}"


def _contrast(page, text_contrasts) -> list[dict]:
    """The contrast of the stepper's text mid-walk (a tile read, one current, one ahead, masked keys) and at the
    end (Next spent), and of a hovered button's fill."""
    root = page.locator("[data-tile-stepper]")
    button = lambda name: root.locator(f"button[data-step={name}]")  # noqa: E731
    root.locator("input[type=radio]").nth(example.TILE_SIZES.index(2)).check()
    root.locator("input[name=padding]").check()
    try:
        button("next").click()
        button("next").click()
        page.mouse.move(0, 0)
        seen = text_contrasts(root)
        for _ in range(4):
            button("next").evaluate("b => b.click()")
        seen += text_contrasts(root)
        # A button under the pointer is filled with the primary color.
        button("previous").hover()
        seen += text_contrasts(button("previous").locator("xpath=.."))
    finally:
        page.mouse.move(0, 0)
        root.locator("input[name=padding]").uncheck()
        button("reset").evaluate("b => b.click()")
    return seen


@pytest.mark.parametrize("visited", STEPPER_PAGES, indirect=True, ids=URLS)
def test_the_stepper_keeps_its_contrast_in_both_palettes(visited, dark_palette, text_contrasts) -> None:
    page = visited.tab
    light = _contrast(page, text_contrasts)
    with dark_palette(page):
        dark = _contrast(page, text_contrasts)
    for palette, seen in (("light", light), ("dark", dark)):
        assert len(seen) > 60, palette  # the strip's cells, the labels, the formulas, the buttons
        low = [item for item in seen if item["contrast"] < 4.5]
        assert low == [], f"{palette}: {low}"


def test_the_contrast_check_can_fail(page, load, base_url: str, text_contrasts) -> None:
    load(page, base_url + URLS[0])
    root = page.locator("[data-tile-stepper]")
    root.evaluate("root => { root.querySelector('.tl-heading').style.color = '#bbbbbb'; }")
    low = [item for item in text_contrasts(root) if item["contrast"] < 4.5]
    assert [item["what"] for item in low] == ["tl-heading"]


@pytest.mark.parametrize("visited", [(url, width) for url in URLS for width in WIDTHS], indirect=True)
def test_axe_finds_no_serious_violation_on_the_stepper_page(visited, axe_violations, dark_palette) -> None:
    """Mid-walk (a tile read, one current, masked keys shown), in the light palette and in the dark one."""
    page = visited.tab
    root = page.locator("[data-tile-stepper]")
    root.locator("input[name=padding]").check()
    try:
        root.locator("button[data-step=next]").click()
        root.locator("button[data-step=next]").click()
        violations = axe_violations(page)
        with dark_palette(page):
            violations += axe_violations(page)
    finally:
        root.locator("input[name=padding]").uncheck()
        root.locator("button[data-step=reset]").evaluate("b => b.click()")
    assert violations == [], f"{len(violations)} serious or critical violations:\n" + "\n".join(violations)
