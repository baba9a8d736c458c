// Typeset the formulas that pymdownx.arithmatex leaves in .arithmatex elements as \( ... \) (inline)
// or \[ ... \] (display), with the KaTeX copy the site serves itself. document$ is Material's page
// observable, so this also runs after instant navigation.
document$.subscribe(() => {
  for (const element of document.querySelectorAll(".arithmatex")) {
    const source = element.textContent.trim();
    katex.render(source.slice(2, -2), element, {
      displayMode: source.startsWith("\\["),
      throwOnError: false,
    });
  }
});
