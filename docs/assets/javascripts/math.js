// Typeset formulas with the KaTeX copy the site serves itself. document$ is Material's page
// observable, so this also runs after instant navigation.
document$.subscribe(() => {
  // Pages: pymdownx.arithmatex leaves \( ... \) (inline) or \[ ... \] (display) in .arithmatex elements.
  for (const element of document.querySelectorAll(".arithmatex")) {
    const source = element.textContent.trim();
    katex.render(source.slice(2, -2), element, {
      displayMode: source.startsWith("\\["),
      throwOnError: false,
    });
  }
  // Notebooks: their Markdown cells keep $ ... $ and $$ ... $$ as text.
  for (const cell of document.querySelectorAll(".jupyter-wrapper .jp-RenderedMarkdown")) {
    renderMathInElement(cell, {
      delimiters: [
        { left: "$$", right: "$$", display: true },
        { left: "$", right: "$", display: false },
      ],
      throwOnError: false,
    });
  }
});
