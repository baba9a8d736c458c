/* The decode stepper: the KV-cache page's generation, a prompt (prefill) and then one token a step, with the
   cache growing, the attention weights of every query so far over the cached keys, and each step's output;
   a toggle shows what F.scaled_dot_product_attention(..., is_causal=True) would give instead, its causal mask
   aligned top-left, next to the right output.

   hooks/interactive.py turns a page's <div data-decode-stepper="NAME"></div> into one carrying data-config
   (every step's numbers, computed by attention_lib: docs_tools/decode_stepper.py) and data-strings (the
   words of the page's language, mkdocs.yml extra.interactive), and loads this script right after it, so the
   stepper is drawn before anything below it is laid out. It computes nothing but the largest difference
   between two outputs it was given.

   Contract: the root carries data-step (from 0, the prefill), data-steps, data-head, data-is-causal
   ("true" with the top-left mask), data-tokens (the step's new tokens), data-cache-shape, data-weights (the
   rows shown: every query so far over the cached keys, null where masked), data-output (the step's right
   outputs) and, with the toggle on, data-wrong-output and data-distance. tests/site/test_decode_stepper.py
   compares them, and the text shown, with attention_lib. */
(() => {
  "use strict";

  const fixed = (x, digits) => {
    const text = x.toFixed(digits);
    return Number(text) === 0 ? (0).toFixed(digits) : text.replace("-", "\u2212");
  };
  const fill = (template, values) => template.replace(/\{(\w+)\}/g, (_, key) => values[key]);
  const tuple = (xs) => "(" + xs.join(", ") + ")";

  // The explorer's colors (explorer.js, the figures'): white to deep indigo, mirrored in the dark palette; the
  // text black or white, whichever contrasts more. Masked cells take theirs from decode.css.
  const PALETTES = {
    default: { low: [255, 255, 255], high: [26, 35, 126] },
    slate: { low: [36, 36, 36], high: [147, 154, 233] },
  };
  const luminance = (rgb) => {
    const [r, g, b] = rgb.map((c) => {
      const s = c / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  function paint(cell, share, palette) {
    if (share === null) {
      cell.style.removeProperty("background");
      cell.style.removeProperty("color");
      return;
    }
    const rgb = palette.low.map((low, i) => Math.round(low + (palette.high[i] - low) * share));
    cell.style.background = `rgb(${rgb.join(",")})`;
    cell.style.color = luminance(rgb) < 0.179 ? "#ffffff" : "#000000";
  }

  // A sentence of the page's language with code in it, where its template says {code}.
  const withCode = (template, code) => {
    const [before, after] = template.split("{code}");
    return [before, element("code", { text: code }), after];
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

  function build(root) {
    const config = JSON.parse(root.dataset.config);
    const words = JSON.parse(root.dataset.strings);
    const steps = config.steps, n = config.num_tokens;
    let step = 0, head = 0, isCausal = false;

    const button = (text, name, extra = {}) =>
      element("button", { type: "button", class: "md-button", "data-control": name, text, ...extra });
    const previous = button(words.previous, "previous");
    const next = button(words.next, "next");
    const reset = button(words.reset, "reset");
    const toggle = button("", "is-causal", { "aria-pressed": "false" });
    toggle.append(...withCode(words.top_left, "is_causal=True"));
    const heads = Array.from({ length: config.num_heads }, (_, h) =>
      button(fill(words.head, { head: h }), "head", { "aria-pressed": String(h === 0), "data-head": String(h) }),
    );

    // The cache as slots for the whole text: the tokens cached so far filled, this step's marked as new.
    const slots = (name) => {
      const list = element("ol", { class: "dc-slots", "aria-label": name });
      list.style.gridTemplateColumns = `repeat(${n}, var(--dc-slot))`;
      list.append(...Array.from({ length: n }, (_, i) => element("li", { class: "dc-slot", text: String(i) })));
      const shape = element("code", { class: "dc-shape" });
      const row = element("div", { class: "dc-cache-row" }, [element("code", { text: name }), list, shape]);
      return { list, shape, row };
    };
    const cacheK = slots("cache_k"), cacheV = slots("cache_v");

    const headerRow = (labels) =>
      element("tr", {}, [element("td"), ...labels.map((text) => element("th", { scope: "col", text }))]);
    const gridCaption = element("caption");
    const gridRows = Array.from({ length: n }, (_, i) =>
      element("tr", {}, [
        element("th", { scope: "row", text: `q${i}` }),
        ...Array.from({ length: n }, () => element("td")),
      ]),
    );
    const grid = element("table", { class: "dc-grid" }, [
      gridCaption,
      element("thead", {}, [headerRow(Array.from({ length: n }, (_, j) => `k${j}`))]),
      element("tbody", {}, gridRows),
    ]);
    const legend = element("p", { class: "dc-legend" }, [
      element("span", { class: "dc-swatch dc-masked", "aria-hidden": "true", text: "\u00b7" }),
      " " + words.masked_legend + " ",
      element("span", { class: "dc-swatch dc-cut", "aria-hidden": "true", text: "\u00d7" }),
      " " + words.cut_legend,
    ]);

    const outCaption = element("caption");
    const outBody = element("tbody");
    const width = steps[0].output[0].length;
    const output = element("table", { class: "dc-output" }, [
      outCaption,
      element("thead", {}, [headerRow(Array.from({ length: width }, (_, c) => String(c)))]),
      outBody,
    ]);
    const same = element("p", { class: "dc-note" });
    const distance = element("p", { class: "dc-distance" });
    const live = element("p", { class: "dc-live", "aria-live": "polite" });

    root.classList.add("decode-stepper");
    root.setAttribute("role", "group");
    root.setAttribute("aria-label", words.label);
    root.replaceChildren(
      element("div", { class: "dc-controls" }, [
        previous,
        next,
        reset,
        toggle,
        element("span", { class: "dc-heads", role: "group", "aria-label": words.heads }, heads),
      ]),
      element("p", { class: "dc-hint", text: words.hint }),
      live,
      element("div", { class: "dc-cache", role: "group", "aria-label": words.cache }, [
        element("p", { class: "dc-title", text: words.cache }),
        cacheK.row,
        cacheV.row,
      ]),
      element("div", { class: "dc-scroll" }, [grid]),
      legend,
      element("div", { class: "dc-scroll" }, [output]),
      same,
      distance,
    );

    // Every query so far, over the keys cached now: each row as its step computed it, null where masked (a key
    // in its future, or not cached yet when it was computed).
    function rowsSoFar(wrong) {
      const numKeys = steps[step].cache_shape[2];
      return steps.slice(0, step + 1).flatMap((s) =>
        (wrong ? s.wrong_weights : s.weights)[head].map((row) => [
          ...row,
          ...new Array(numKeys - row.length).fill(null),
        ]),
      );
    }

    function update() {
      const current = steps[step];
      const numKeys = current.cache_shape[2];
      const [first] = current.tokens, last = current.tokens[current.tokens.length - 1];
      const palette = PALETTES[document.body.getAttribute("data-md-color-scheme") === "slate" ? "slate" : "default"];
      const rows = rowsSoFar(isCausal), right = rowsSoFar(false);
      const heaviest = Math.max(...rows.flat().filter((w) => w !== null));

      previous.setAttribute("aria-disabled", String(step === 0));
      next.setAttribute("aria-disabled", String(step === steps.length - 1));
      toggle.setAttribute("aria-pressed", String(isCausal));
      heads.forEach((b, h) => b.setAttribute("aria-pressed", String(h === head)));

      for (const cache of [cacheK, cacheV]) {
        [...cache.list.children].forEach((slot, i) => {
          slot.className = "dc-slot" + (i < numKeys ? " dc-filled" : "") + (i >= first && i <= last ? " dc-new" : "");
        });
        cache.shape.textContent = tuple(current.cache_shape);
      }

      gridCaption.textContent = fill(words.weights, { head });
      gridRows.forEach((tr, i) => {
        const now = i >= first && i <= last;
        tr.classList.toggle("dc-current", now);
        if (now) tr.setAttribute("aria-current", "true");
        else tr.removeAttribute("aria-current");
        [...tr.cells].slice(1).forEach((cell, j) => {
          let kind = "dc-empty", text = "", share = null;
          if (i < rows.length && j < numKeys) {
            const w = rows[i][j];
            if (w !== null) [kind, text, share] = ["dc-seen", fixed(w, 2), heaviest > 0 ? w / heaviest : 0];
            else if (right[i][j] !== null) [kind, text] = ["dc-cut", "\u00d7"];
            else [kind, text] = ["dc-masked", "\u00b7"];
          }
          cell.className = kind;
          cell.textContent = text;
          cell.title = kind === "dc-masked" ? words.masked : kind === "dc-cut" ? words.cut : "";
          // A screen reader reads the name, not the symbol, which a title alone does not give it.
          if (cell.title) cell.setAttribute("aria-label", cell.title);
          else cell.removeAttribute("aria-label");
          paint(cell, share, palette);
        });
      });

      const range = first === 0 ? `:${last + 1}` : `${first}:${last + 1}`;
      outCaption.replaceChildren(...withCode(words.output, `mha(x[:, ${range}], use_cache=True)`));
      let largest = 0;
      outBody.replaceChildren(
        ...current.tokens.flatMap((token, t) => {
          const rowOf = (label, values, extra) =>
            element("tr", extra, [
              element("th", { scope: "row" }, label),
              ...values.map((x) => element("td", { text: fixed(x, 2) })),
            ]);
          const shown = [rowOf([fill(words.token, { token })], current.output[t], {})];
          if (isCausal) {
            const wrong = current.wrong_output[t];
            wrong.forEach((x, c) => (largest = Math.max(largest, Math.abs(x - current.output[t][c]))));
            // May break on a phone, where the 8 numbers leave little room for the label.
            shown.push(rowOf(["is_", element("wbr"), "causal=", element("wbr"), "True"], wrong, { class: "dc-wrong" }));
          }
          return shown;
        }),
      );
      same.textContent = fill(current.tokens.length > 1 ? words.same_prefill : words.same, { first, last });
      distance.hidden = !isCausal;
      distance.textContent = isCausal ? fill(words.distance, { distance: fixed(largest, 2) }) : "";

      const values = {
        step,
        steps: steps.length - 1,
        token: last,
        count: current.tokens.length,
        n: numKeys,
        shape: tuple(current.cache_shape),
        distance: fixed(largest, 2),
      };
      const said = [fill(step === 0 ? words.prefill : words.decode, values)];
      if (isCausal) said.push(fill(step === 0 ? words.prefill_wrong : words.decode_wrong, values));
      // Sentences after a full stop of Chinese or Japanese go on without a space; after a Latin one, with one.
      const fullWidth = /[\u3000-\u303f\uff00-\uffef]$/;
      const sentence = said.reduce((text, next) => text + (fullWidth.test(text) ? "" : " ") + next);
      // Rewritten only when it changes: a palette switch must not make a screen reader say it again.
      if (live.textContent !== sentence) live.textContent = sentence;

      root.dataset.step = String(step);
      root.dataset.steps = String(steps.length);
      root.dataset.head = String(head);
      root.dataset.isCausal = String(isCausal);
      root.dataset.tokens = JSON.stringify(current.tokens);
      root.dataset.cacheShape = JSON.stringify(current.cache_shape);
      root.dataset.weights = JSON.stringify(rows);
      root.dataset.output = JSON.stringify(current.output);
      if (isCausal) {
        root.dataset.wrongOutput = JSON.stringify(current.wrong_output);
        root.dataset.distance = String(largest);
      } else {
        delete root.dataset.wrongOutput;
        delete root.dataset.distance;
      }
    }

    const go = (to) => {
      if (to < 0 || to >= steps.length || to === step) return;
      step = to;
      update();
    };
    previous.addEventListener("click", () => go(step - 1));
    next.addEventListener("click", () => go(step + 1));
    reset.addEventListener("click", () => {
      step = 0;
      update();
    });
    toggle.addEventListener("click", () => {
      isCausal = !isCausal;
      update();
    });
    heads.forEach((b, h) =>
      b.addEventListener("click", () => {
        head = h;
        update();
      }),
    );
    // The arrow keys step too, from any of the three step buttons, as on a media player.
    for (const b of [previous, next, reset]) {
      b.addEventListener("keydown", (event) => {
        if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
          event.preventDefault();
          go(step + (event.key === "ArrowRight" ? 1 : -1));
        }
      });
    }
    // The palette toggle changes the body's data-md-color-scheme: the cells take the new palette's colors.
    new MutationObserver(update).observe(document.body, {
      attributes: true,
      attributeFilter: ["data-md-color-scheme"],
    });
    update();
  }

  document.querySelectorAll("[data-decode-stepper]:not([data-step])").forEach(build);
})();
