/* The mask composer: causal, padding, sliding-window and packed-document masks over 8 tokens, combined as
   attention_lib combines them (a key is masked out when any chosen mask hides it), drawn as grids (1 = masked
   out, as print(mask.int()) shows it), and the code that builds the same mask in five conventions.

   hooks/interactive.py turns a page's <div data-mask-composer="masks"></div> into one carrying data-strings (the
   words of the page's language) and loads this script right after it; the piece needs no numbers: the grid is
   computed here, from the same rules as attention_lib/masks.py and masks_beyond.py.

   Contract: the root carries data-state (the settings, JSON), data-grid (one 8 x 8 grid of 0/1 per sequence,
   JSON; one grid when nothing differs between sequences) and data-empty (the rows with no key left, JSON); each
   convention's code is the text of its <pre data-convention>. tests/site/test_mask_composer.py runs that code
   with PyTorch (and transformers) and checks it against attention_lib for every branch. */
(() => {
  "use strict";

  const N = 8;
  const CONVENTIONS = [
    ["attention_lib", "attention_lib"],
    ["mha", "nn.MultiheadAttention"],
    ["sdpa", "SDPA"],
    ["additive", "float −inf"],
    ["hf", "Hugging Face"],
  ];
  const DOCUMENTS = ["8", "4,4", "3,5", "6,2", "3,2,3", "1,3,4", "2,2,2,2"];
  const range = (n) => Array.from({ length: n }, (_, i) => i);
  const fill = (template, values) => template.replace(/\{(\w+)\}/g, (_, key) => values[key]);
  const list = (xs) => "[" + xs.join(", ") + "]";

  function element(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes)) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    node.append(...children);
    return node;
  }

  // The rules of attention_lib, True (1) = masked out: causal_mask, padding_mask / left_padding_mask,
  // sliding_window_mask, document_mask; combined with |.
  function grids(s) {
    const docs = s.lengths.flatMap((length, d) => new Array(length).fill(d));
    return range(s.padding ? s.batch : 1).map((b) =>
      range(N).map((i) =>
        range(N).map((j) => {
          const padded = s.side === "left" ? j < N - s.lens[b] : j >= s.lens[b];
          const back = i - j;
          return Number(
            (s.causal && j > i) ||
              (s.padding && padded) ||
              (s.window && (back < 0 || back >= s.size)) ||
              (s.documents && (j > i || docs[i] !== docs[j])),
          );
        }),
      ),
    );
  }

  // One expression over several lines, as ruff formats it: `name = a | b` when it fits in 79 columns, else
  // each term on its line, a comment after each.
  function orLines(name, terms) {
    if (terms.length === 1) return [`${name} = ${terms[0][0]}` + (terms[0][1] ? `  # ${terms[0][1]}` : "")];
    const one = `${name} = ${terms.map(([t]) => t).join(" | ")}`;
    if (one.length <= 79 && terms.every(([, c]) => !c)) return [one];
    return [
      `${name} = (`,
      ...terms.map(([term, comment], k) => `    ${k ? "| " : ""}${term}` + (comment ? `  # ${comment}` : "")),
      ")",
    ];
  }

  // The code of each convention for the settings s, in the words w (its comments).
  function code(s, w) {
    const B = s.padding ? s.batch : 1;
    const lens = list(s.lens.slice(0, B));
    const lengths = list(s.lengths);
    const future = s.causal || s.window || s.documents;
    const pairs = future || s.padding;
    // The (8, 8) part: what is the same for every sequence, in plain PyTorch.
    const terms = [];
    if (future) terms.push(["(key_pos > query_pos)", w.c_future]);
    if (s.window) terms.push([`(query_pos - key_pos >= ${s.size})`, fill(w.c_window, { n: s.size })]);
    if (s.documents) terms.push(["(document_ids[:, None] != document_ids[None, :])", w.c_document]);
    if (terms.length === 1) terms[0][0] = terms[0][0].slice(1, -1);
    const positions = [];
    if (pairs) positions.push(`pos = torch.arange(${N})  # ${w.c_positions}`);
    if (future) positions.push("query_pos, key_pos = pos[:, None], pos[None, :]  # (8, 1), (1, 8)");
    if (s.documents) {
      positions.push(`# ${w.c_ids}`, `document_ids = torch.repeat_interleave(torch.tensor(${lengths}))`);
    }
    const validLens = `valid_lens = torch.tensor(${lens})  # ${w.c_valid}`;
    const padding =
      s.side === "left"
        ? `padding = pos < ${N} - valid_lens[:, None]  # (${B}, 8): ${w.c_padding}`
        : `padding = pos >= valid_lens[:, None]  # (${B}, 8): ${w.c_padding}`;
    // masked: (8, 8), or (B, 1, 8, 8) with the padding, for SDPA and Hugging Face.
    function masked4d(hf) {
      const lines = [...positions];
      if (terms.length) lines.push(...orLines("masked", terms));
      if (s.padding) {
        lines.push(validLens, padding);
        if (terms.length) {
          lines.push(`# (8, 8) | (${B}, 1, 1, 8) -> (${B}, 1, 8, 8): ${w.c_dims}`);
          lines.push("masked = masked | padding[:, None, None, :]");
        } else {
          lines.push(`masked = padding[:, None, None, :]  # (${B}, 1, 1, 8): ${w.c_dims}`);
        }
      } else if (hf) {
        lines.push(`masked = masked[None, None]  # (1, 1, 8, 8): ${w.c_dims}`);
      }
      return lines;
    }
    const shape = s.padding ? (terms.length ? `(${B}, 1, 8, 8)` : `(${B}, 1, 1, 8)`) : "(8, 8)";
    const qkv = [
      `# ${w.c_qkv}`,
      `query, key, value = (torch.randn(${B}, 2, 8, 4) for _ in range(3))`,
      "out = F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask)",
    ];
    const mhaLines = (args) => [
      "mha = torch.nn.MultiheadAttention(16, num_heads=2, batch_first=True)",
      `x = torch.randn(${B}, 8, 16)  # (N, L, embed_dim)`,
      ...(args.length === 0
        ? ["out, attn_weights = mha(x, x, x)"]
        : `out, attn_weights = mha(x, x, x, ${args.join(", ")})`.length <= 79
          ? [`out, attn_weights = mha(x, x, x, ${args.join(", ")})`]
          : ["out, attn_weights = mha(", `    x, x, x, ${args.join(", ")}`, ")"]),
    ];
    const out = {};

    // (a) attention_lib.
    const lib = [];
    if (s.padding) lib.push(`valid_lens = torch.tensor(${lens})  # ${w.c_valid}`);
    if (s.documents) lib.push(`document_ids = al.document_ids_from_lengths(${lengths})`);
    const libTerms = [];
    if (s.causal) libTerms.push(["al.causal_mask(8)"]);
    if (s.padding) libTerms.push([`al.${s.side === "left" ? "left_" : ""}padding_mask(valid_lens, 8)`]);
    if (s.window) libTerms.push([`al.sliding_window_mask(8, window=${s.size})`]);
    if (s.documents) libTerms.push(["al.document_mask(document_ids)"]);
    const libShape = !s.padding ? "(8, 8)" : libTerms.length > 1 ? `(${B}, 8, 8)` : `(${B}, 1, 8)`;
    lib.push(`# ${w.c_true}: ${libShape}`);
    if (libTerms.length) lib.push(...orLines("mask", libTerms));
    else lib.push(`mask = torch.zeros(8, 8, dtype=torch.bool)  # ${w.c_nothing}`);
    out.attention_lib = [
      ...(s.padding || !libTerms.length ? ["import torch", ""] : []),
      "import attention_lib as al",
      "",
      ...lib,
    ];

    // (b) nn.MultiheadAttention: bool, True = masked out; the padding apart, per sequence.
    const mha = ["import torch", "", ...positions];
    const args = [];
    if (terms.length) {
      mha.push(`# ${w.c_true}: (L, S) = (8, 8), ${w.c_same}`, `# ${w.c_per_head}`);
      mha.push(...orLines("attn_mask", terms));
      args.push("attn_mask=attn_mask");
    }
    if (s.padding) {
      mha.push(validLens, `# ${w.c_is_padding}: (N, S) = (${B}, 8)`);
      mha.push(
        s.side === "left"
          ? `key_padding_mask = pos < ${N} - valid_lens[:, None]`
          : "key_padding_mask = pos >= valid_lens[:, None]",
      );
      args.push("key_padding_mask=key_padding_mask");
    }
    out.mha = [...mha, "", ...mhaLines(args)];

    // (c) SDPA's bool mask: True = may attend, the opposite.
    const sdpa = ["import torch", "import torch.nn.functional as F", ""];
    if (pairs) sdpa.push(...masked4d(false), `# ${w.c_keep}: ${shape}`, "attn_mask = ~masked");
    else sdpa.push(`attn_mask = None  # ${w.c_nothing}`);
    out.sdpa = [...sdpa, "", ...qkv];

    // (d) Additive: 0.0 where attended, -inf where masked out.
    const additive = ["import torch", "import torch.nn.functional as F", ""];
    let mhaMask = "attn_mask";
    if (pairs) {
      additive.push(...masked4d(false), `# ${w.c_additive}: ${shape}`);
      additive.push('attn_mask = torch.where(masked, float("-inf"), 0.0)');
    } else {
      additive.push(`attn_mask = None  # ${w.c_nothing}`);
    }
    additive.push("", ...qkv, "");
    if (s.padding) {
      additive.push(`# ${w.c_mha_float}: (N * num_heads, L, S)`);
      // Padding alone is (B, 1, 1, 8): nn.MultiheadAttention wants every query's row.
      const rows = terms.length ? "" : ".expand(-1, 8, -1)";
      const line = `mha_mask = attn_mask[:, 0]${rows}.repeat_interleave(2, dim=0)`;
      const shapeComment = `  # (${2 * B}, 8, 8)`;
      additive.push(line.length + shapeComment.length <= 79 ? line + shapeComment : line);
      mhaMask = "mha_mask";
    }
    out.additive = [...additive, ...mhaLines(pairs ? [`attn_mask=${mhaMask}`] : [])];

    // (e) Hugging Face: a 2-D attention_mask holds the padding only (1 = a real token); the rest needs a 4-D mask.
    if (s.window || s.documents) {
      out.hf = [
        "import torch",
        "",
        ...masked4d(true),
        `# ${w.c_hf_4d}: (${B}, 1, 8, 8)`,
        "lowest = torch.finfo(torch.float32).min",
        "attention_mask = torch.where(masked, lowest, 0.0)",
        "# model(input_ids, attention_mask=attention_mask)",
      ];
    } else {
      const real =
        s.side === "left"
          ? `attention_mask = (torch.arange(8) >= ${N} - valid_lens[:, None]).long()`
          : "attention_mask = (torch.arange(8) < valid_lens[:, None]).long()";
      out.hf = [
        "import torch",
        "",
        ...(s.padding
          ? [validLens, `# ${w.c_hf}: (${B}, 8)`, real]
          : [`attention_mask = torch.ones(1, 8, dtype=torch.long)  # ${w.c_hf_none}`]),
        "# model(input_ids, attention_mask=attention_mask)",
      ];
    }
    // One blank line at most, where a part was left out.
    return Object.fromEntries(
      Object.entries(out).map(([key, lines]) => [key, lines.join("\n").replace(/\n{3,}/g, "\n\n") + "\n"]),
    );
  }

  function copyText(text) {
    // The Clipboard API needs a secure context (https, localhost); elsewhere, or if it refuses, the old way.
    const fallback = () => {
      const area = element("textarea", { readonly: "", "aria-hidden": "true", class: "mc-offscreen" });
      area.value = text;
      document.body.append(area);
      area.select();
      const done = document.execCommand("copy");
      area.remove();
      if (!done) throw new Error("copy refused");
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      return navigator.clipboard.writeText(text).catch(fallback);
    }
    return new Promise((resolve) => resolve(fallback()));
  }

  function build(root) {
    const w = JSON.parse(root.dataset.strings);
    const uid = "mc" + Math.random().toString(36).slice(2, 8);
    const select = (name, label, options, value) => {
      const control = element("select", { name, id: `${uid}-${name}` });
      options.forEach(([v, text]) => control.append(element("option", { value: v, text })));
      control.value = value;
      return element("span", { class: "mc-param" }, [element("label", { for: control.id, text: label }), control]);
    };
    const check = (name, label, checked) => {
      const box = element("input", { type: "checkbox", name, id: `${uid}-${name}` });
      box.checked = checked;
      return element("span", { class: "mc-mask" }, [box, element("label", { for: box.id, text: label })]);
    };
    const numbers = range(N).map((i) => [String(i + 1), String(i + 1)]);
    const rows = [
      [check("causal", w.causal, true)],
      [
        check("padding", w.padding, true),
        select("batch", w.sequences, [["1", "1"], ["2", "2"]], "2"),
        select("len0", fill(w.valid_len, { b: 1 }), numbers, "5"),
        select("len1", fill(w.valid_len, { b: 2 }), numbers, "8"),
        select("side", w.side, [["right", w.right], ["left", w.left]], "right"),
      ],
      [check("window", w.window, false), select("size", w.window_size, numbers, "3")],
      [
        check("documents", w.documents, false),
        select("lengths", w.lengths, DOCUMENTS.map((d) => [d, list(d.split(","))]), "3,2,3"),
      ],
    ];
    const controls = element("fieldset", { class: "mc-controls" }, [
      element("legend", { text: w.masks }),
      ...rows.map((row) => element("div", { class: "mc-row" }, row)),
    ]);
    const legend = element("p", { class: "mc-legend" }, [
      element("span", { class: "mc-swatch mc-masked", "aria-hidden": "true", text: "1" }),
      element("span", { text: w.masked }),
      element("span", { class: "mc-swatch mc-kept", "aria-hidden": "true", text: "0" }),
      element("span", { text: w.kept }),
    ]);
    const gridArea = element("div", { class: "mc-grids" });
    const empty = element("p", { class: "mc-empty" });
    const tabs = element("fieldset", { class: "mc-conventions" }, [
      element("legend", { text: w.convention }),
      ...CONVENTIONS.map(([key, label], k) => {
        const radio = element("input", { type: "radio", name: `${uid}-convention`, value: key, id: `${uid}-${key}` });
        radio.checked = k === 0;
        return element("span", { class: "mc-tab" }, [radio, element("label", { for: radio.id, text: label })]);
      }),
    ]);
    const blocks = CONVENTIONS.map(([key, label]) =>
      // tabindex: the code scrolls sideways on a phone, and a keyboard scrolls what has the focus.
      element("pre", {
        class: "mc-code",
        "data-convention": key,
        tabindex: "0",
        "aria-label": fill(w.code_of, { convention: label }),
      }),
    );
    const copy = element("button", { type: "button", class: "md-button mc-copy", text: w.copy });
    const hfNote = element("p", { class: "mc-note" });
    const status = element("p", { class: "mc-status", role: "status", "aria-live": "polite" });

    root.setAttribute("role", "group");
    root.setAttribute("aria-label", w.label);
    root.replaceChildren(
      element("p", { class: "mc-hint", text: w.hint }),
      controls,
      legend,
      gridArea,
      empty,
      element("div", { class: "mc-code-head" }, [tabs, copy]),
      ...blocks,
      hfNote,
      status,
    );
    const control = (name) => root.querySelector(`[name=${name}]`);
    const current = () => root.querySelector(`[name=${uid}-convention]:checked`).value;

    function state() {
      return {
        causal: control("causal").checked,
        padding: control("padding").checked,
        batch: Number(control("batch").value),
        lens: [Number(control("len0").value), Number(control("len1").value)],
        side: control("side").value,
        window: control("window").checked,
        size: Number(control("size").value),
        documents: control("documents").checked,
        lengths: control("lengths").value.split(",").map(Number),
      };
    }

    function show() {
      const s = state();
      // A mask's parameters take part only while it is chosen; a disabled control keeps its place.
      ["batch", "len0", "side"].forEach((name) => (control(name).disabled = !s.padding));
      control("len1").disabled = !s.padding || s.batch < 2;
      control("size").disabled = !s.window;
      control("lengths").disabled = !s.documents;
      const g = grids(s);
      gridArea.replaceChildren(
        ...g.map((grid, b) =>
          element("table", { class: "mc-grid", "data-sequence": String(b) }, [
            element("caption", { text: g.length > 1 ? fill(w.grid, { b: b + 1 }) : w.grid_all }),
            element("thead", {}, [
              element("tr", {}, [
                element("td"),
                ...range(N).map((j) => element("th", { scope: "col", text: String(j) })),
              ]),
            ]),
            element(
              "tbody",
              {},
              grid.map((row, i) =>
                element("tr", {}, [
                  element("th", { scope: "row", text: String(i) }),
                  ...row.map((cell) => element("td", { class: cell ? "mc-masked" : "mc-kept", text: String(cell) })),
                ]),
              ),
            ),
          ]),
        ),
      );
      const emptyRows = g.map((grid) => range(N).filter((i) => grid[i].every((cell) => cell)));
      const said = emptyRows
        .map((keyless, b) =>
          keyless.length ? fill(g.length > 1 ? w.empty_in : w.empty_rows, { b: b + 1, rows: keyless.join(w.sep) }) : "",
        )
        .filter(Boolean);
      empty.textContent = said.length ? said.join("") + w.empty : "";
      empty.hidden = !said.length;
      const texts = code(s, w);
      blocks.forEach((block) => {
        block.textContent = texts[block.dataset.convention];
        block.hidden = block.dataset.convention !== current();
      });
      hfNote.hidden = current() !== "hf";
      hfNote.textContent =
        s.window || s.documents ? w.hf_4d : s.causal ? w.hf_decoder : w.hf_encoder;
      root.dataset.state = JSON.stringify({ ...s, lens: s.lens.slice(0, s.padding ? s.batch : 1) });
      root.dataset.grid = JSON.stringify(g);
      root.dataset.empty = JSON.stringify(emptyRows);
    }

    root.addEventListener("change", (event) => {
      if (event.target.name === `${uid}-convention`) status.textContent = "";
      show();
    });
    copy.addEventListener("click", () => {
      const block = blocks.find((b) => b.dataset.convention === current());
      const label = CONVENTIONS.find(([key]) => key === current())[1];
      copyText(block.textContent).then(
        () => (status.textContent = fill(w.copied, { convention: label })),
        () => (status.textContent = w.copy_failed),
      );
    });
    show();
  }

  document.querySelectorAll("[data-mask-composer]:not([data-grid])").forEach(build);
})();
