/* The attention explorer: pick a query, scale the scores or not, mask the future and the padding, split
   into heads, and see the attention scores, the attention weights and the context vector change.

   hooks/interactive.py turns a page's <div data-attention-explorer="NAME"></div> into one carrying
   data-config (the inputs and projection weights, exported from attention_lib by docs_tools/interactive.py)
   and data-strings (the words of the page's language, mkdocs.yml extra.interactive), and loads this script
   right after it, so the explorer is drawn before anything below it is laid out.

   The computation is the library's: queries, keys and values are the inputs times the transposed weights,
   each head takes its head_dim columns, the scores are q · k (divided by sqrt(head_dim) if scaled), masked
   keys get weight exactly 0 (attention_lib.masked_softmax), and the context vector is the weighted sum of
   the values. tests/site/test_interactive.py compares every combination of the controls with attention_lib.

   Contract: the root keeps its current weights in data-weights (JSON, rows = queries, of the head shown),
   the scores in data-scores (null where masked) and the chosen query's context vector, all heads, in
   data-context. */
(() => {
  "use strict";

  const dot = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);
  const project = (inputs, weight) => (weight ? inputs.map((x) => weight.map((w) => dot(x, w))) : inputs);

  function compute(config, state) {
    const queries = project(config.inputs, config.W_query);
    const keys = project(config.inputs, config.W_key);
    const values = project(config.inputs, config.W_value);
    const n = queries.length;
    const headDim = queries[0].length / state.numHeads;
    const heads = [];
    for (let h = 0; h < state.numHeads; h++) {
      const cols = (row) => row.slice(h * headDim, (h + 1) * headDim);
      const q = queries.map(cols), k = keys.map(cols), v = values.map(cols);
      const masked = q.map((_, i) => k.map((_, j) => (state.causal && j > i) || j >= state.validLen));
      const scores = q.map((qi) => k.map((kj) => dot(qi, kj) / (state.scale ? Math.sqrt(headDim) : 1)));
      const weights = scores.map((row, i) => {
        const seen = row.filter((_, j) => !masked[i][j]);
        if (!seen.length) return row.map(() => 0); // nothing to attend to: zeros, never NaN
        const top = Math.max(...seen); // subtracted first: the stable softmax
        const exps = row.map((s, j) => (masked[i][j] ? 0 : Math.exp(s - top)));
        const total = exps.reduce((a, b) => a + b, 0);
        return exps.map((e) => e / total);
      });
      const context = weights.map((row) => v[0].map((_, c) => row.reduce((sum, w, j) => sum + w * v[j][c], 0)));
      heads.push({ masked, scores, weights, values: v, context });
    }
    return { n, headDim, heads };
  }

  const fixed = (x, digits) => {
    const text = x.toFixed(digits);
    return Number(text) === 0 ? (0).toFixed(digits) : text.replace("-", "\u2212");
  };
  const vector = (xs) => "[" + xs.map((x) => fixed(x, 2)).join(", ") + "]";
  const fill = (template, values) => template.replace(/\{(\w+)\}/g, (_, key) => values[key]);

  // The figures' colors (docs_tools/figures/): white to deep indigo, and in the dark palette the same
  // colors with their lightness mirrored; the text is black or white, whichever contrasts more.
  const PALETTES = {
    default: { low: [255, 255, 255], high: [26, 35, 126], masked: "#eceff1", maskedInk: "#4b5563" },
    slate: { low: [36, 36, 36], high: [147, 154, 233], masked: "#2a3339", maskedInk: "#aab2be" },
  };
  const luminance = (rgb) => {
    const [r, g, b] = rgb.map((c) => {
      const s = c / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  // Every write below happens only where the value changed: moving the query changes which row is marked,
  // not the numbers in the grids, and the live region is rewritten only when its sentence changes.
  const put = (target, key, value) => {
    if (target[key] !== value) target[key] = value;
  };
  const painted = new WeakMap();
  function paint(cell, share, palette) {
    let background = palette.masked, color = palette.maskedInk;
    if (share !== null) {
      const rgb = palette.low.map((low, i) => Math.round(low + (palette.high[i] - low) * share));
      background = `rgb(${rgb.join(",")})`;
      // White text contrasts more than black below a luminance of about 0.18.
      color = luminance(rgb) < 0.179 ? "#ffffff" : "#000000";
    }
    if (painted.get(cell) === background + color) return;
    painted.set(cell, background + color);
    cell.style.background = background;
    cell.style.color = color;
  }

  function element(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes)) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    node.append(...children);
    return node;
  }

  let counter = 0;

  function build(root) {
    const config = JSON.parse(root.dataset.config);
    const words = JSON.parse(root.dataset.strings);
    const defaults = config.defaults;
    const id = `explorer-${++counter}`;
    const n = config.words.length;
    const labelled = (text, control) => element("label", { class: "ae-control" }, [text, " ", control]);
    const select = (name, options, value) =>
      element(
        "select",
        { name },
        options.map(([v, text]) => {
          const option = element("option", { value: String(v), text });
          if (v === value) option.selected = true;
          return option;
        }),
      );
    const checkbox = (name, text, checked) => {
      const box = element("input", { type: "checkbox", name });
      box.checked = checked;
      return element("label", { class: "ae-control ae-check" }, [box, " ", text]);
    };

    const query = select("query", config.words.map((word, i) => [i, `${i} ${word}`]), defaults.query);
    const validLen = element("input", { type: "range", name: "valid_len", min: "1", max: String(n), step: "1" });
    validLen.value = String(defaults.valid_len);
    const validLenShown = element("output", { for: `${id}-valid`, text: String(defaults.valid_len) });
    validLen.id = `${id}-valid`;
    const controls = [
      labelled(words.query, query),
      checkbox("scale", words.scale, defaults.scale),
      checkbox("causal", words.causal, defaults.causal),
      element("span", { class: "ae-control" }, [
        element("label", { for: `${id}-valid`, text: words.valid_len }),
        " ",
        validLen,
        " ",
        validLenShown,
      ]),
    ];
    let numHeads = null, head = null;
    if (config.heads.length > 1) {
      numHeads = select("num_heads", config.heads.map((h) => [h, String(h)]), defaults.num_heads);
      head = select("head", [], 0);
      controls.push(labelled(words.num_heads, numHeads), labelled(words.head, head));
    }

    const grid = (kind) => {
      const header = element("tr", {}, [
        element("td"),
        ...config.words.map((word) => element("th", { scope: "col", text: word })),
      ]);
      const rows = config.words.map((word) =>
        element("tr", {}, [element("th", { scope: "row", text: word }), ...config.words.map(() => element("td"))]),
      );
      const table = element("table", { class: "ae-grid", "data-grid": kind }, [
        element("caption", { text: words[kind] }),
        element("thead", {}, [header]),
        element("tbody", {}, rows),
      ]);
      return { table, rows };
    };
    const scores = grid("scores"), weights = grid("weights");

    const sumRows = config.words.map((word) =>
      element("tr", {}, [element("th", { scope: "row", text: word }), element("td"), element("td")]),
    );
    const total = element("tr", {}, [element("th", { scope: "row", text: words.context }), element("td"), element("td")]);
    const sumCaption = element("caption");
    const sum = element("table", { class: "ae-sum" }, [
      sumCaption,
      element("thead", {}, [
        element("tr", {}, [
          element("th", { scope: "col", text: words.key }),
          element("th", { scope: "col", text: words.weight }),
          element("th", { scope: "col", text: words.value }),
        ]),
      ]),
      element("tbody", {}, sumRows),
      element("tfoot", {}, [total]),
    ]);
    const allHeads = element("p", { class: "ae-all-heads" });
    const live = element("p", { class: "ae-live", "aria-live": "polite" });

    root.classList.add("attention-explorer");
    root.setAttribute("role", "group");
    root.setAttribute("aria-label", words.label);
    root.replaceChildren(
      element("div", { class: "ae-controls" }, controls),
      element("p", { class: "ae-hint", text: words.hint }),
      element("div", { class: "ae-grids" }, [
        element("div", { class: "ae-scroll" }, [scores.table]),
        element("div", { class: "ae-scroll" }, [weights.table]),
      ]),
      element("div", { class: "ae-scroll" }, [sum]),
      ...(numHeads ? [allHeads] : []),
      live,
    );

    function state() {
      return {
        query: Number(query.value),
        scale: root.querySelector("input[name=scale]").checked,
        causal: root.querySelector("input[name=causal]").checked,
        validLen: Number(validLen.value),
        numHeads: numHeads ? Number(numHeads.value) : 1,
        head: head ? Number(head.value) : 0,
      };
    }

    function headOptions() {
      if (!numHeads) return;
      const chosen = Math.min(Number(head.value) || 0, Number(numHeads.value) - 1);
      head.replaceChildren(
        ...Array.from({ length: Number(numHeads.value) }, (_, h) => {
          const option = element("option", { value: String(h), text: String(h) });
          if (h === chosen) option.selected = true;
          return option;
        }),
      );
    }

    function update() {
      if (numHeads && head.options.length !== Number(numHeads.value)) headOptions();
      const s = state();
      const result = compute(config, s);
      const shown = result.heads[s.head];
      const palette = PALETTES[document.body.getAttribute("data-md-color-scheme") === "slate" ? "slate" : "default"];
      put(validLenShown, "textContent", String(s.validLen));
      const seen = shown.scores.flat().filter((_, index) => !shown.masked[Math.floor(index / n)][index % n]);
      const low = Math.min(...seen), high = Math.max(...seen);
      const heaviest = Math.max(...shown.weights.flat());
      for (let i = 0; i < n; i++) {
        for (const [table, rows] of [[scores, "scores"], [weights, "weights"]]) {
          const row = table.rows[i];
          row.classList.toggle("ae-current", i === s.query);
          if (i !== s.query) row.removeAttribute("aria-current");
          else if (row.getAttribute("aria-current") !== "true") row.setAttribute("aria-current", "true");
          for (let j = 0; j < n; j++) {
            const cell = row.cells[j + 1];
            const masked = shown.masked[i][j];
            if (rows === "scores") {
              put(cell, "textContent", masked ? "\u2212\u221e" : fixed(shown.scores[i][j], 2));
              paint(cell, masked ? null : high > low ? (shown.scores[i][j] - low) / (high - low) : 0.5, palette);
            } else {
              put(cell, "textContent", fixed(shown.weights[i][j], 2));
              paint(cell, masked ? null : heaviest > 0 ? shown.weights[i][j] / heaviest : 0, palette);
            }
            put(cell, "title", masked ? words.masked : "");
          }
        }
      }
      const word = config.words[s.query];
      put(sumCaption, "textContent", fill(numHeads ? words.context_of_head : words.context_of, { word, head: s.head }));
      for (let j = 0; j < n; j++) {
        put(sumRows[j].cells[1], "textContent", fixed(shown.weights[s.query][j], 2));
        put(sumRows[j].cells[2], "textContent", vector(shown.values[j]));
        sumRows[j].classList.toggle("ae-unused", shown.masked[s.query][j]);
      }
      put(total.cells[2], "textContent", vector(shown.context[s.query]));
      const context = result.heads.flatMap((h) => h.context[s.query]);
      put(allHeads, "textContent", fill(words.all_heads, { word, vector: vector(context) }));
      const visible = shown.masked[s.query].filter((m) => !m).length;
      put(live, "textContent", fill(words.live, { word, visible, n }));
      put(root.dataset, "weights", JSON.stringify(shown.weights));
      const unmasked = shown.scores.map((row, i) => row.map((x, j) => (shown.masked[i][j] ? null : x)));
      put(root.dataset, "scores", JSON.stringify(unmasked));
      put(root.dataset, "context", JSON.stringify(context));
    }

    headOptions();
    root.addEventListener("input", () => update());
    root.addEventListener("change", () => update());
    // The palette toggle changes the body's data-md-color-scheme: the cells take the new palette's colors.
    new MutationObserver(update).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
    update();
  }

  document.querySelectorAll("[data-attention-explorer]:not([data-weights])").forEach(build);
})();
