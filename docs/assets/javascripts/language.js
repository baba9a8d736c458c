// The language switcher keeps the reader's place. mkdocs-static-i18n links each page to the same page in
// the other language, and the section ids are the same in both languages (a test checks it), so the
// switch goes to that page and to the section the reader is reading, in one request.
(() => {
  // Material would look for a sitemap.xml beside each alternate-language <link> (it expects the link to
  // name a language's root, not a page), log a 404 for each, and then send the reader to the page's URL
  // without its trailing slash and without the section: one more redirect, and back to the top. The
  // links stay in the page as sent (search engines read them there); only Material's lookup, which runs
  // once the document has loaded, no longer finds them.
  for (const link of document.querySelectorAll('link[rel="alternate"][hreflang]')) {
    link.setAttribute("rel", "alternate "); // the same link type; no longer matches [rel=alternate]
  }

  // The section being read: the last heading scrolled up to where a link to it leaves it, which is its scroll
  // margin below the top (Material's, which clears the header), or under the header, whichever is lower.
  // A link, a TOC click and a search result all leave their heading there; a reader who scrolled on has
  // taken it higher. (Measuring from the header alone, a reader who came by a link was one section early.)
  function currentSection() {
    const header = document.querySelector(".md-header")?.getBoundingClientRect().bottom ?? 0;
    const headings = [...document.querySelectorAll(".md-content article :is(h1, h2, h3, h4, h5, h6)[id]")];
    let current = null;
    for (const heading of headings) {
      const margin = parseFloat(getComputedStyle(heading).scrollMarginTop) || 0;
      if (heading.getBoundingClientRect().top <= Math.max(header, margin) + 8) current = heading;
      else break;
    }
    // A link to a section near the end of a page cannot scroll it up that far: while the section the address
    // names is on screen below the one found above, that is the one the reader came to read.
    const named = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    if (named && headings.indexOf(named) > headings.indexOf(current)) {
      const top = named.getBoundingClientRect().top;
      if (top >= header && top < window.innerHeight) current = named;
    }
    return current && current.tagName !== "H1" ? current.id : null;
  }

  // In the capture phase, before Material's own handler on the document body.
  window.addEventListener(
    "click",
    (event) => {
      const link = event.target.closest?.("a.md-select__link[hreflang]");
      if (!link || event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
      event.preventDefault();
      event.stopPropagation();
      const target = new URL(link.href);
      const section = currentSection();
      target.hash = section ? `#${section}` : "";
      location.assign(target.href);
    },
    true,
  );
})();
