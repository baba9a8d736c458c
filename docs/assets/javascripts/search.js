// The search dialog of overrides/partials/search.html, on Pagefind's search API. The engine and the
// index of the page's language (<html lang>) are fetched the first time a reader opens the dialog.
//
// English queries are ranked by Pagefind. Chinese is indexed one character per word (hooks/search.py
// says why), so a Chinese query is looked up by its characters, and the pages where they stand together
// as the reader typed them are kept and ranked here: by how often the phrase occurs for the page's length
// (BM25), with a bonus where it is in the title or a heading.
(() => {
  const root = document.querySelector(".site-search");
  if (!root) return;
  const dialog = root.querySelector("dialog");
  const input = dialog.querySelector("input");
  const status = dialog.querySelector(".site-search__status");
  const list = dialog.querySelector(".site-search__results");
  const site = new URL(`${root.dataset.searchBase}/`, location); // the site's root, wherever it is served
  const bundle = new URL("pagefind/", site);

  const HAN = "\\u3400-\\u4dbf\\u4e00-\\u9fff";
  const hanRun = new RegExp(`[${HAN}]+`, "gu");
  const spaceBetweenHan = new RegExp(`(?<=[${HAN}](?:</?mark>)*) (?=(?:</?mark>)*[${HAN}])`, "gu");
  const unspaced = (text) => (text ?? "").replace(spaceBetweenHan, "");
  const escape = (text) => text.replace(/[&<>"]/g, (c) => `&${{ "&": "amp", "<": "lt", ">": "gt", '"': "quot" }[c]};`);

  let engine;
  function pagefind() {
    engine ??= import(new URL("pagefind.js", bundle).href).then(async (module) => {
      await module.options({ baseUrl: site.pathname, excerptLength: 24 });
      await module.init();
      return module;
    });
    return engine;
  }

  // Where each phrase (its characters joined by spaces, as indexed) occurs in a page's text.
  function occurrences(page, phrases) {
    const found = [];
    for (const phrase of phrases) {
      for (let at = page.content.indexOf(phrase); at !== -1; at = page.content.indexOf(phrase, at + phrase.length)) {
        found.push({ phrase, at });
      }
    }
    return found.sort((a, b) => a.at - b.at);
  }

  // The page's headings, each with where its text starts in the page's text (they come in order).
  function headingsOf(page) {
    const headings = [];
    let from = 0;
    for (const anchor of page.anchors) {
      if (!/^h[1-6]$/.test(anchor.element) || !anchor.id || !anchor.text) continue;
      const at = page.content.indexOf(anchor.text, from);
      if (at === -1) continue;
      headings.push({ ...anchor, at });
      from = at + anchor.text.length;
    }
    return headings;
  }

  function chineseRanking(pages, phrases) {
    const kept = [];
    for (const page of pages) {
      const found = occurrences(page, phrases);
      if (!phrases.every((phrase) => found.some((hit) => hit.phrase === phrase))) continue;
      const headings = headingsOf(page);
      const inTitle = phrases.some((phrase) => page.meta.title.includes(phrase));
      const inHeadings = headings.filter((h) => phrases.some((phrase) => h.text.includes(phrase))).length;
      const bonus = (inTitle ? 3 : 0) + Math.min(inHeadings, 3);
      kept.push({ page, found, headings, tf: found.length, bonus, weight: Number(page.meta.weight ?? 1) });
    }
    const average = kept.reduce((sum, item) => sum + item.page.word_count, 0) / (kept.length || 1);
    for (const item of kept) {
      const norm = 1.2 * (0.25 + (0.75 * item.page.word_count) / average);
      item.score = ((item.tf * 2.2) / (item.tf + norm) + item.bonus) * item.weight;
    }
    return kept.sort((a, b) => b.score - a.score);
  }

  // An excerpt of a page's text around a place in it, whole words only, with the phrases marked.
  function excerpt(content, at, phrases) {
    const start = Math.max(0, content.lastIndexOf(" ", Math.max(0, at - 40)) + 1);
    const end = content.indexOf(" ", Math.min(content.length, at + 160));
    const text = escape(content.slice(start, end === -1 ? undefined : end));
    const marked = phrases.reduce((html, phrase) => html.split(escape(phrase)).join(`<mark>${escape(phrase)}</mark>`), text);
    return unspaced(`${start > 0 ? "… " : ""}${marked}${end === -1 ? "" : " …"}`);
  }

  function chineseResult({ page, found, headings }, phrases) {
    const sections = [];
    for (const hit of found) {
      const heading = headings.filter((h) => h.at <= hit.at).at(-1);
      if (!heading || heading.element === "h1" || sections.some((s) => s.id === heading.id)) continue;
      sections.push({ id: heading.id, title: unspaced(heading.text), excerpt: excerpt(page.content, hit.at, phrases) });
    }
    return {
      url: page.url,
      title: unspaced(page.meta.title),
      excerpt: excerpt(page.content, found[0].at, phrases),
      sections: sections.slice(0, 3).map((s) => ({ ...s, url: `${page.url}#${s.id}` })),
    };
  }

  function pagefindResult(page) {
    // The page's own title is the result itself, not one of its sections.
    const title = `#${page.anchors.find((anchor) => anchor.element === "h1")?.id}`;
    const sections = page.sub_results.filter((sub) => sub.url !== page.url && !sub.url.endsWith(title));
    return {
      url: page.url,
      title: page.meta.title,
      excerpt: page.excerpt,
      sections: sections.slice(0, 3).map((sub) => ({ url: sub.url, title: sub.title, excerpt: sub.excerpt })),
    };
  }

  async function search(query) {
    const engine = await pagefind();
    const phrases = (query.match(hanRun) ?? []).map((run) => [...run].join(" "));
    // As indexed (hooks/search.py): Chinese characters apart, qualified names (nn.Linear) split at the dot.
    const spaced = query
      .replace(hanRun, (run) => ` ${[...run].join(" ")} `)
      .replace(/(?<=\w)\.(?=[A-Za-z_])/g, " ")
      .trim();
    const found = await engine.debouncedSearch(spaced, {}, 150);
    if (found === null) return null; // a newer query took its place
    const pages = await Promise.all(found.results.slice(0, phrases.length ? 40 : 10).map((result) => result.data()));
    if (!phrases.length) return pages.map(pagefindResult);
    return chineseRanking(pages, phrases)
      .slice(0, 10)
      .map((item) => chineseResult(item, phrases));
  }

  function link(url, query) {
    const target = new URL(url, location);
    target.searchParams.set("highlight", query); // the page opened marks the words searched for
    return target.href;
  }

  function show(results, query) {
    const template = results.length === 0 ? "noResults" : results.length === 1 ? "oneResult" : "results";
    status.textContent = root.dataset[template].replace("{query}", query).replace("{count}", results.length);
    list.replaceChildren(
      ...results.map((result) => {
        const item = document.createElement("li");
        item.className = "site-search__result";
        const sections = result.sections
          .map((s) => `<li><a href="${link(s.url, query)}"><span class="site-search__section">${escape(s.title)}</span><span class="site-search__excerpt">${s.excerpt}</span></a></li>`)
          .join("");
        item.innerHTML =
          `<a href="${link(result.url, query)}"><span class="site-search__title">${escape(result.title)}</span>` +
          `<span class="site-search__excerpt">${result.excerpt}</span></a>` +
          (sections ? `<ol class="site-search__sections">${sections}</ol>` : "");
        return item;
      }),
    );
  }

  let latest = "";
  input.addEventListener("input", async () => {
    const query = input.value.trim();
    latest = query;
    if (!query) {
      status.textContent = "";
      list.replaceChildren();
      return;
    }
    const results = await search(query);
    if (results !== null && query === latest) show(results, query);
  });
  // Enter opens the first result; the arrow keys move between results.
  dialog.addEventListener("keydown", (event) => {
    const links = [...list.querySelectorAll("a")];
    const at = links.indexOf(document.activeElement);
    if (event.key === "Enter" && event.target === input && links.length) {
      event.preventDefault();
      links[0].click();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (!links.length) return;
      event.preventDefault();
      const next = event.key === "ArrowDown" ? at + 1 : at - 1;
      (next < 0 ? input : links[Math.min(next, links.length - 1)]).focus();
    }
  });

  async function open() {
    if (!dialog.open) dialog.showModal();
    input.focus();
    input.select();
    pagefind();
  }

  root.querySelector(".site-search__open").addEventListener("click", open);
  root.querySelector(".site-search__close").addEventListener("click", () => dialog.close());
  // A click on the backdrop (outside the dialog's box) closes it, as Esc does; so does following a result
  // to another section of the page already open (only the hash changes).
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog || event.target.closest("a[href]")) dialog.close();
  });
  // "/", "s" or "f" opens search from anywhere but a text field, as in Material.
  document.addEventListener("keydown", (event) => {
    const typing = event.target.closest?.("input, textarea, select, [contenteditable]");
    if (typing || event.ctrlKey || event.metaKey || event.altKey || dialog.open) return;
    if (["/", "s", "f"].includes(event.key)) {
      event.preventDefault();
      open();
    }
  });

  // Arriving from a result: mark the words searched for on this page.
  if (new URLSearchParams(location.search).has("highlight")) {
    import(new URL("pagefind-highlight.js", bundle).href).then(
      ({ default: PagefindHighlight }) => new PagefindHighlight({ highlightParam: "highlight" }),
    );
  }
})();
