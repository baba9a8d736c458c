/* The tile stepper: one query's attention over eight keys, computed a tile of keys at a time with a running
   maximum m, a running sum l and a running output o (the online softmax inside FlashAttention's kernels).

   hooks/interactive.py turns the page's <div data-tile-stepper="tiles"></div> into one carrying data-config
   (every step of attention_lib.tile_steps for each tile size, with and without padding, exported by
   docs_tools/tile_stepper.py) and data-strings (the words of the page's language, mkdocs.yml
   extra.interactive), and loads this script right after it, so the stepper is drawn before anything below it
   is laid out. This script computes nothing: it picks the step and writes its numbers, to two decimals.

   Contract: the root carries data-tile-size, data-padding ("true" or "false"), data-step (0 before the first
   tile, then the number of tiles read), data-steps (how many tiles there are) and data-state (JSON: the
   step's numbers as exported, null before the first tile, and the end's result, reference and difference,
   null before the last tile). Each number shown sits in an element with data-quantity (the step's) or in the
   strip of keys; tests/site/test_tile_stepper.py compares them all with tile_steps, for every setting. */
(() => {
  "use strict";

  const MINUS_INFINITY = "\u2212\u221e";
  const NOTHING = "\u2014";
  // null is a masked score (-inf), as docs_tools/tile_stepper.py writes it.
  const fixed = (x, digits = 2) => {
    if (x === null) return MINUS_INFINITY;
    const text = x.toFixed(digits);
    return Number(text) === 0 ? (0).toFixed(digits) : text.replace("-", "\u2212");
  };
  const vector = (xs) => "[" + xs.map((x) => fixed(x)).join(", ") + "]";
  // The largest difference between o / l and the softmax: a few float32 roundings, in Python's notation.
  const tiny = (x) => (x === 0 ? "0" : x.toExponential(1).replace("-", "\u2212"));
  const fill = (template, values) => template.replace(/\{(\w+)\}/g, (_, key) => values[key]);
  const put = (target, key, value) => {
    if (target[key] !== value) target[key] = value;
  };

  function element(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes)) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    node.append(...children);
    return node;
  }
  // A number or a vector that never breaks across lines: the formulas wrap between their terms only.
  const term = (text) => element("span", { class: "tl-term", text });

  let counter = 0;

  function build(root) {
    const config = JSON.parse(root.dataset.config);
    const words = JSON.parse(root.dataset.strings);
    const id = `tile-stepper-${++counter}`;
    const n = config.values.length;

    const sizes = config.tile_sizes.map((size) => {
      const radio = element("input", { type: "radio", name: `${id}-size`, value: String(size) });
      radio.checked = size === config.defaults.tile_size;
      return radio;
    });
    const padding = element("input", { type: "checkbox", name: "padding" });
    padding.checked = config.defaults.padding;
    const button = (name, text) => element("button", { type: "button", class: "tl-button", "data-step": name, text });
    const previous = button("previous", words.previous);
    const next = button("next", words.next);
    const reset = button("reset", words.reset);

    // The strip: a column per key, its index j, its score s and its value v (a column vector, one number a
    // line, with the one decimal the inputs have). The rows are named by their letters, the formulas' below.
    const cells = (make) => config.values.map((_, j) => make(j));
    const keyCells = cells((j) => element("th", { scope: "col", text: String(j) }));
    const scoreCells = cells(() => element("td"));
    const valueCells = cells((j) =>
      element("td", {}, config.values[j].flatMap((x, i) => (i ? [element("br"), fixed(x, 1)] : [fixed(x, 1)]))),
    );
    const row = (letter, name, children) =>
      element("tr", {}, [element("th", { scope: "row", "aria-label": name, title: name, text: letter }), ...children]);
    const legend = ["current", "done", "ahead"].map((state) =>
      element("span", { class: `tl-key tl-${state}` }, [element("span", { class: "tl-swatch" }), words[state]]),
    );
    const strip = element("table", { class: "tl-strip" }, [
      element("caption", { text: words.strip }),
      element("thead", {}, [row("j", words.key, keyCells)]),
      element("tbody", {}, [row("s", words.score, scoreCells), row("v", words.value, valueCells)]),
    ]);

    // The step's quantities: what the loop holds, each under the rule that gives it (words.NAME_rule, where
    // there is one), with the library's numbers put in.
    const quantities = ["tile_scores", "max", "rescale", "exps", "sum", "output", "result", "reference", "difference"];
    const shown = {};
    const facts = element(
      "dl",
      { class: "tl-facts" },
      quantities.flatMap((name) => {
        shown[name] = element("span", { class: "tl-value", "data-quantity": name });
        const rule = words[`${name}_rule`];
        const rules = rule ? [element("span", { class: "tl-rule", text: rule })] : [];
        return [element("dt", { text: words[name] }), element("dd", {}, [...rules, shown[name]])];
      }),
    );
    const heading = element("p", { class: "tl-heading" });
    const live = element("p", { class: "tl-live", "aria-live": "polite" });

    root.classList.add("tile-stepper");
    root.setAttribute("role", "group");
    root.setAttribute("aria-label", words.label);
    root.replaceChildren(
      element("div", { class: "tl-controls" }, [
        element("fieldset", { class: "tl-sizes" }, [
          element("legend", { text: words.tile_size }),
          ...sizes.map((radio) => element("label", { class: "tl-size" }, [radio, " ", radio.value])),
        ]),
        element("label", { class: "tl-check" }, [padding, " ", fill(words.padding, { padded: config.padded })]),
      ]),
      element("div", { class: "tl-scroll" }, [strip]),
      element("p", { class: "tl-legend" }, legend),
      element("div", { class: "tl-buttons" }, [previous, next, reset]),
      heading,
      facts,
      live,
    );

    let step = 0;
    const setting = () => {
      const tileSize = Number(sizes.find((radio) => radio.checked).value);
      return { tileSize, padded: padding.checked, run: config.runs[padding.checked ? "padding" : "none"][tileSize] };
    };
    const keys = (s) =>
      s.stop - s.start === 1
        ? fill(words.key_one, { first: s.start })
        : fill(words.keys, { first: s.start, last: s.stop - 1 });
    const write = (name, parts) => {
      const text = parts.map((part) => (typeof part === "string" ? part : part.textContent)).join("");
      if (shown[name].textContent !== text) shown[name].replaceChildren(...parts);
    };

    function update() {
      const { tileSize, padded, run } = setting();
      const steps = run.steps;
      step = Math.max(0, Math.min(step, steps.length));
      const current = step ? steps[step - 1] : null;
      const before = step > 1 ? steps[step - 2] : null;
      const end = step === steps.length;
      const scores = config.scores[padded ? "padding" : "none"];

      for (let j = 0; j < n; j++) {
        const state = !current || j >= current.stop ? "ahead" : j >= current.start ? "current" : "done";
        const tileStart = j % tileSize === 0 && j > 0;
        for (const cell of [keyCells[j], scoreCells[j], valueCells[j]]) {
          put(cell, "className", `tl-${state}` + (tileStart ? " tl-start" : ""));
        }
        put(scoreCells[j], "textContent", fixed(scores[j]));
        put(scoreCells[j], "title", scores[j] === null ? words.masked : "");
      }

      const oldMax = before ? before.max : null;
      const oldSum = before ? before.sum : 0;
      const oldOutput = before ? before.output : config.values[0].map(() => 0);
      if (!current) {
        put(heading, "textContent", words.start);
        write("tile_scores", [NOTHING]);
        write("max", ["= ", term(MINUS_INFINITY)]);
        write("rescale", [NOTHING]);
        write("exps", [NOTHING]);
        write("sum", ["= ", term(fixed(0))]);
        write("output", ["= ", term(vector(oldOutput))]);
      } else {
        put(heading, "textContent", fill(words.step, { tile: step, tiles: steps.length, keys: keys(current) }));
        write("tile_scores", [term(vector(current.scores))]);
        // The tile's largest score: -inf (null) when the padding masks every key of the tile.
        const seen = current.scores.filter((x) => x !== null);
        const tileMax = seen.length ? Math.max(...seen) : null;
        const raised = oldMax === null || current.max > oldMax;
        write("max", [
          "= ", term(`max(${fixed(oldMax)}, ${fixed(tileMax)})`), " = ",
          fill(raised ? words.raised : words.kept, { value: fixed(current.max) }),
        ]);
        write("rescale", [
          "= ", term(`exp(${fixed(oldMax)} \u2212 ${fixed(current.max)})`), " = ", term(fixed(current.rescale)),
        ]);
        write("exps", [term(vector(current.exps))]);
        write("sum", [
          "= ", term(fixed(oldSum)), " \u00d7 ", term(fixed(current.rescale)), " + ", term(fixed(current.tile_sum)),
          " = ", term(fixed(current.sum)),
        ]);
        write("output", [
          "= ", term(vector(oldOutput)), " \u00d7 ", term(fixed(current.rescale)), " + ",
          term(vector(current.tile_output)), " = ", term(vector(current.output)),
        ]);
      }
      for (const name of ["result", "reference", "difference"]) {
        if (!end) write(name, [words.pending]);
      }
      if (end) {
        write("result", ["= ", term(vector(run.result))]);
        write("reference", ["= ", term(vector(run.reference))]);
        write("difference", [term(tiny(run.difference))]);
      }

      let sentence = words.live_start;
      if (current) {
        const values = {
          tile: step, tiles: steps.length, keys: keys(current), old: fixed(oldMax), new: fixed(current.max),
          rescale: fixed(current.rescale),
        };
        const masked = current.scores.every((x) => x === null);
        const template =
          step === 1 ? "live_first" : masked ? "live_masked" : current.max > oldMax ? "live_raised" : "live_kept";
        sentence = fill(words[template], values);
      }
      if (end) sentence = fill(words.live_end, { step: sentence, n, result: vector(run.result) });
      put(live, "textContent", sentence);

      previous.setAttribute("aria-disabled", String(step === 0));
      reset.setAttribute("aria-disabled", String(step === 0));
      next.setAttribute("aria-disabled", String(end));
      put(root.dataset, "tileSize", String(tileSize));
      put(root.dataset, "padding", String(padded));
      put(root.dataset, "step", String(step));
      put(root.dataset, "steps", String(steps.length));
      const ending = end ? { result: run.result, reference: run.reference, difference: run.difference } : null;
      put(root.dataset, "state", JSON.stringify({ step: current, end: ending }));
    }

    const go = (to) => {
      step = to;
      update();
    };
    previous.addEventListener("click", () => go(step - 1));
    next.addEventListener("click", () => go(step + 1));
    reset.addEventListener("click", () => go(0));
    // The arrow keys step too, once a step button has the focus (the radios keep theirs for the tile size).
    for (const control of [previous, next, reset]) {
      control.addEventListener("keydown", (event) => {
        if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
        event.preventDefault();
        go(step + (event.key === "ArrowRight" ? 1 : -1));
      });
    }
    // Another tile size cuts the keys differently: start again. The mask keeps the tiles, and the step.
    sizes.forEach((radio) => radio.addEventListener("change", () => go(0)));
    padding.addEventListener("change", () => update());
    update();
  }

  document.querySelectorAll("[data-tile-stepper]:not([data-state])").forEach(build);
})();
