/* The stride tracer: the steps of splitting and merging heads on 12 numbers, with the memory they sit in.

   hooks/interactive.py turns a page's <div data-stride-tracer="heads"></div> into one carrying data-strings
   (the words of the page's language) and loads this script right after it.

   A tensor here is what it is in PyTorch: a storage (a strip of numbers) and, per dimension, a size and a
   stride. view() and transpose() only compute new strides over the same storage; view() refuses, with
   PyTorch's message, when no strides can describe the new shape (PyTorch's computeStride, below);
   contiguous() copies the numbers into a new storage in reading order, unless they already are.

   Contract: after every step the root carries data-ops (a PyTorch expression that rebuilds the tensor shown),
   data-shape and data-stride (JSON lists), data-storage (the strip) and data-walk (for each cell of the
   strip, when reading the tensor in the order of its shape gets to it); data-error holds PyTorch's message
   after a step PyTorch refuses. tests/site/test_interactive.py evaluates data-ops with torch after every
   button and compares. */
(() => {
  "use strict";

  const START = { ops: "torch.arange(12).view(1, 3, 4)", shape: [1, 3, 4], stride: [12, 4, 1] };
  const STEPS = [
    { name: "split", code: ".view(1, 3, 2, 2)", apply: (t) => view(t, [1, 3, 2, 2]) },
    { name: "transpose", code: ".transpose(1, 2)", apply: (t) => transpose(t, 1, 2) },
    { name: "contiguous", code: ".contiguous()", apply: (t) => contiguous(t) },
    { name: "merge", code: ".view(1, 3, 4)", apply: (t) => view(t, [1, 3, 4]) },
  ];
  const VIEW_ERROR =
    "view size is not compatible with input tensor's size and stride (at least one dimension spans across " +
    "two contiguous subspaces). Use .reshape(...) instead.";

  const product = (xs) => xs.reduce((a, b) => a * b, 1);
  const contiguousStrides = (shape) => shape.map((_, d) => product(shape.slice(d + 1)));

  // The storage offset of every element, in reading order (the last index moving fastest).
  function offsets(shape, stride) {
    let result = [0];
    shape.forEach((size, d) => {
      result = result.flatMap((base) => Array.from({ length: size }, (_, i) => base + i * stride[d]));
    });
    return result;
  }

  // PyTorch's test: sizes of 1 aside, each stride is the product of the sizes after it.
  function isContiguous(t) {
    let expected = 1;
    for (let d = t.shape.length - 1; d >= 0; d--) {
      if (t.shape[d] === 1) continue;
      if (t.stride[d] !== expected) return false;
      expected *= t.shape[d];
    }
    return true;
  }

  // PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp): the old dimensions fall into chunks that are
  // contiguous among themselves; the new shape must split or merge only within a chunk. null: impossible.
  function viewStrides(shape, stride, newShape) {
    const newStride = new Array(newShape.length);
    let viewD = newShape.length - 1;
    let chunkBaseStride = stride[stride.length - 1];
    let tensorNumel = 1, viewNumel = 1;
    for (let d = shape.length - 1; d >= 0; d--) {
      tensorNumel *= shape[d];
      if (d === 0 || (shape[d - 1] !== 1 && stride[d - 1] !== tensorNumel * chunkBaseStride)) {
        while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] === 1)) {
          newStride[viewD] = viewNumel * chunkBaseStride;
          viewNumel *= newShape[viewD];
          viewD--;
        }
        if (viewNumel !== tensorNumel) return null;
        if (d > 0) {
          chunkBaseStride = stride[d - 1];
          tensorNumel = 1;
          viewNumel = 1;
        }
      }
    }
    return viewD === -1 ? newStride : null;
  }

  function view(t, shape) {
    const stride = viewStrides(t.shape, t.stride, shape);
    if (stride === null) throw new Error(VIEW_ERROR);
    return { storage: t.storage, shape, stride, copied: false };
  }

  function transpose(t, a, b) {
    const shape = [...t.shape], stride = [...t.stride];
    [shape[a], shape[b]] = [shape[b], shape[a]];
    [stride[a], stride[b]] = [stride[b], stride[a]];
    return { storage: t.storage, shape, stride, copied: false };
  }

  function contiguous(t) {
    if (isContiguous(t)) return { ...t, copied: "already" }; // PyTorch returns the tensor itself: no copy
    const storage = offsets(t.shape, t.stride).map((offset) => t.storage[offset]);
    return { storage, shape: t.shape, stride: contiguousStrides(t.shape), copied: true };
  }

  // The tensor as print() shows it: torch's layout for integer tensors.
  function printed(t) {
    const values = offsets(t.shape, t.stride).map((offset) => t.storage[offset]);
    const width = Math.max(...values.map((v) => String(v).length));
    let next = 0;
    function nested(depth, indent) {
      const dims = t.shape.length - depth;
      const count = t.shape[depth];
      if (dims === 1) {
        return "[" + Array.from({ length: count }, () => String(values[next++]).padStart(width)).join(", ") + "]";
      }
      const parts = Array.from({ length: count }, () => nested(depth + 1, indent + 1));
      return "[" + parts.join("," + "\n".repeat(dims - 1) + " ".repeat(indent + 1)) + "]";
    }
    return "tensor(" + nested(0, "tensor(".length) + ")";
  }

  const tuple = (xs) => "(" + xs.join(", ") + (xs.length === 1 ? ",)" : ")");
  const fill = (template, values) => template.replace(/\{(\w+)\}/g, (_, key) => values[key]);

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
    const words = JSON.parse(root.dataset.strings);
    let tensor, ops, message;
    const buttons = STEPS.map((step) =>
      element("button", { type: "button", class: "md-button st-step", "data-step": step.name }, [
        element("code", { text: step.code }),
        element("span", { class: "st-why", text: words[step.name] }),
      ]),
    );
    const reset = element("button", { type: "button", class: "md-button st-reset", "data-step": "reset", text: words.reset });
    const code = element("code");
    const facts = element("dl", { class: "st-facts" });
    const strip = element("ol", { class: "st-strip", "aria-label": words.storage });
    const stripNote = element("p", { class: "st-note" });
    const print = element("pre", { class: "st-print", tabindex: "0", "aria-label": words.printed });
    const error = element("p", { class: "st-error", role: "alert" });
    const scrambled = element("p", { class: "st-scrambled", role: "status" });
    const live = element("p", { class: "st-live", "aria-live": "polite" });

    root.classList.add("stride-tracer");
    root.setAttribute("role", "group");
    root.setAttribute("aria-label", words.label);
    root.replaceChildren(
      element("div", { class: "st-buttons" }, [...buttons, reset]),
      element("p", { class: "st-code" }, [element("span", { text: "x = " }), code]),
      facts,
      element("p", { class: "st-strip-title", text: words.storage }),
      strip,
      stripNote,
      error,
      print,
      scrambled,
      live,
    );

    function show(step) {
      const walk = new Array(tensor.storage.length);
      offsets(tensor.shape, tensor.stride).forEach((offset, k) => (walk[offset] = k));
      code.textContent = ops;
      const contiguousNow = isContiguous(tensor);
      facts.replaceChildren(
        ...[
          ["x.shape", `torch.Size([${tensor.shape.join(", ")}])`],
          ["x.stride()", tuple(tensor.stride)],
          ["x.is_contiguous()", contiguousNow ? "True" : "False"],
        ].flatMap(([term, value]) => [element("dt", {}, [element("code", { text: term })]), element("dd", {}, [element("code", { text: value })])]),
      );
      strip.replaceChildren(
        ...tensor.storage.map((value, i) =>
          element("li", { class: `st-cell st-head-${Math.floor(value / 2) % 2}` }, [
            element("span", { class: "st-value", text: String(value) }),
            element("span", { class: "st-walk", title: words.walk, text: String(walk[i]) }),
          ]),
        ),
      );
      stripNote.textContent = message
        ? words.unchanged
        : tensor.copied === "already"
          ? words.already
          : tensor.copied
            ? words.copied
            : ops === START.ops
              ? words.start
              : words.same_memory;
      print.textContent = printed(tensor);
      error.textContent = message ? `RuntimeError: ${message}` : "";
      error.hidden = !message;
      root.dataset.ops = ops;
      root.dataset.shape = JSON.stringify(tensor.shape);
      root.dataset.stride = JSON.stringify(tensor.stride);
      root.dataset.storage = JSON.stringify(tensor.storage);
      root.dataset.walk = JSON.stringify(walk);
      if (message) root.dataset.error = message;
      else delete root.dataset.error;
      // Back in the start's shape, but not in its order: the heads were merged without being moved back, so each
      // row mixes two tokens' numbers (the bug of the page's exercise). PyTorch raises nothing; the tracer says it.
      const reading = offsets(tensor.shape, tensor.stride).map((offset) => tensor.storage[offset]);
      const mixed =
        tuple(tensor.shape) === tuple(START.shape) && reading.some((value, k) => value !== k);
      root.dataset.scrambled = String(mixed);
      scrambled.textContent = mixed
        ? fill(words.scrambled, { row: `[${reading.slice(4, 8).join(", ")}]` })
        : "";
      scrambled.hidden = !mixed;
      live.textContent = message
        ? words.refused
        : fill(words.after, {
            step,
            shape: tuple(tensor.shape),
            stride: tuple(tensor.stride),
            contiguous: contiguousNow ? words.yes : words.no,
          });
    }

    function start() {
      tensor = { storage: Array.from({ length: 12 }, (_, i) => i), shape: START.shape, stride: START.stride, copied: false };
      ops = START.ops;
      message = "";
      show(START.ops);
    }

    buttons.forEach((button, index) =>
      button.addEventListener("click", () => {
        const step = STEPS[index];
        try {
          tensor = step.apply(tensor);
          ops += step.code;
          message = "";
        } catch (failure) {
          message = failure.message; // the tensor stays as it was, as in PyTorch
        }
        show(step.code);
      }),
    );
    reset.addEventListener("click", start);
    start();
  }

  document.querySelectorAll("[data-stride-tracer]:not([data-ops])").forEach(build);
})();
