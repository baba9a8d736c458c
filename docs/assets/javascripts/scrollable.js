/* A region that scrolls must take keyboard focus, so that a reader without a mouse can scroll it with the
 * arrow keys (WCAG 2.1.1; axe-core's rule scrollable-region-focusable). Material does this for its own
 * code blocks; this does it for the rest of the page: the notebooks' code cells and outputs
 * (mkdocs-jupyter), a table wider than a phone, display math.
 *
 * Whether a region scrolls depends on the width of the screen, so this runs in the browser, on load and
 * whenever the window changes size or the page's content changes: a region that overflows and holds
 * nothing focusable gets tabindex="0", one that no longer overflows loses it again, so a region that fits
 * is never an extra tab stop. Only what this script added is ever removed. (A build-time tabindex on
 * every cell would make each of a notebook's cells a tab stop, scrolling or not.)
 */
(function () {
  "use strict";

  var MARK = "data-scroll-focus";
  var SCROLLS = /^(auto|scroll)$/;
  var FOCUSABLE = "a[href], button, input, select, textarea, [tabindex]";
  var CANDIDATES = ".md-content div, .md-content pre, .md-content code, .md-content table, .md-content .katex-display";

  function scrolls(element) {
    var style = getComputedStyle(element);
    return (
      (SCROLLS.test(style.overflowX) && element.scrollWidth > element.clientWidth) ||
      (SCROLLS.test(style.overflowY) && element.scrollHeight > element.clientHeight)
    );
  }

  function update() {
    var elements = document.querySelectorAll(CANDIDATES);
    for (var i = 0; i < elements.length; i++) {
      var element = elements[i];
      var ours = element.hasAttribute(MARK);
      if (!ours && element.hasAttribute("tabindex")) continue; // Material's own, or the page's
      if (scrolls(element) && !element.querySelector(FOCUSABLE)) {
        if (!ours) {
          element.setAttribute("tabindex", "0");
          element.setAttribute(MARK, "");
        }
      } else if (ours) {
        element.removeAttribute("tabindex");
        element.removeAttribute(MARK);
      }
    }
  }

  var timer = null;
  function later() {
    clearTimeout(timer);
    timer = setTimeout(update, 100);
  }

  update();
  window.addEventListener("load", update);
  window.addEventListener("resize", later);
  // Widths change after the first layout: Material wraps tables, KaTeX typesets formulas (math.js), web
  // fonts arrive.
  new MutationObserver(later).observe(document.body, { childList: true, subtree: true });
  if (document.fonts) document.fonts.ready.then(later);
})();
