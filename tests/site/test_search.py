"""Search, as a reader uses it: open the dialog, type a word a chapter teaches, and that chapter comes first
or second, in the reader's own language, with its notebook never ahead of it.

The queries are typed with key events (English) or through an input method's composition events
(Chinese), in the real browser; the index is the one ``hooks/search.py`` builds into the site.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from docs_tools import records

#: (the page the reader is on, the query, the page that teaches it). Each chapter's own words.
ENGLISH = [
    ("", "attention scores", "attention-scores/"),
    ("", "dot product", "attention-scores/"),
    # "softmax" alone also finds masks/ (masked_softmax) and softmax-in-tiles/ (the online softmax) first.
    ("", "stable softmax", "attention-weights/"),
    ("", "attention weights", "attention-weights/"),
    ("", "context vector", "context-vectors/"),
    ("", "scaled dot product", "scoring-functions/"),
    ("", "additive attention", "scoring-functions/"),
    ("", "W_query", "trainable-weights/"),
    ("", "causal mask", "masks/"),
    ("", "masked_fill", "masks/"),
    ("", "dropout", "dropout/"),
    ("", "register_buffer", "buffers/"),
    ("", "state_dict", "buffers/"),
    ("", "transpose", "multi-head/"),
    ("", "contiguous", "multi-head/"),
    ("", "head_dim", "multi-head/"),
    ("", "cross-attention", "cross-attention/"),
    ("", "scaled_dot_product_attention", "pytorch-equivalence/"),
    ("", "F.scaled_dot_product_attention", "pytorch-equivalence/"),
    ("", "pitfalls", "pitfalls/"),
    ("", "KV cache", "kv-cache/"),
    ("", "grouped-query attention", "grouped-query/"),
    ("", "sdpa_kernel", "attention-backends/"),
    ("", "online softmax", "softmax-in-tiles/"),
    ("masks/", "is_causal", "pytorch-equivalence/"),
    ("", "RoPE", "positions/"),
    ("", "rotary position embeddings", "positions/"),
    ("", "sliding window", "masks-beyond-causal/"),
    ("", "FlexAttention", "masks-beyond-causal/"),
    ("", "output_attentions", "real-model/"),
]
CHINESE = [
    ("zh/", "注意力分数", "zh/attention-scores/"),
    ("zh/", "点积", "zh/attention-scores/"),
    ("zh/", "注意力权重", "zh/attention-weights/"),
    ("zh/", "归一化", "zh/attention-weights/"),
    ("zh/", "上下文向量", "zh/context-vectors/"),
    ("zh/", "评分函数", "zh/scoring-functions/"),
    ("zh/", "加性注意力", "zh/scoring-functions/"),
    ("zh/", "可训练的权重", "zh/trainable-weights/"),
    ("zh/", "掩码", "zh/masks/"),
    ("zh/", "因果掩码", "zh/masks/"),
    ("zh/", "缓冲区", "zh/buffers/"),
    ("zh/", "多头注意力", "zh/multi-head/"),
    ("zh/", "拆分多头", "zh/multi-head/"),
    ("zh/", "交叉注意力", "zh/cross-attention/"),
    ("zh/", "常见错误", "zh/pitfalls/"),
    ("zh/", "预填充", "zh/kv-cache/"),
    ("zh/", "分组查询注意力", "zh/grouped-query/"),
    ("zh/", "后端", "zh/attention-backends/"),
    ("zh/", "在线 softmax", "zh/softmax-in-tiles/"),
    ("zh/", "术语表", "zh/glossary/"),
    ("zh/", "填充", "zh/masks/"),
    ("zh/", "旋转位置编码", "zh/positions/"),
    ("zh/", "滑动窗口", "zh/masks-beyond-causal/"),
    ("zh/", "打包", "zh/masks-beyond-causal/"),
    ("zh/", "真实模型", "zh/real-model/"),
]


def _within(base_url: str, url: str) -> str:
    """``url``'s path within the site: ``zh/masks/``."""
    return urlsplit(url).path.removeprefix(urlsplit(base_url).path)


def _type_with_an_input_method(page, query: str) -> None:
    """What a Chinese input method does: the reader types pinyin, which the field shows while it is being
    composed, then picks the word, which replaces it."""
    cdp = page.context.new_cdp_session(page)
    pinyin = "zhuru"
    for end in range(1, len(pinyin) + 1):
        cdp.send("Input.imeSetComposition", {"text": pinyin[:end], "selectionStart": end, "selectionEnd": end})
    cdp.send("Input.insertText", {"text": query})
    cdp.detach()


def _search(page, base_url: str, query: str, *, typed: bool) -> list[str]:
    """Search ``query`` on the page open in ``page``: open the dialog if it is closed, empty the field (what a
    reader searching again does), type the query and wait for its results."""
    if not page.locator("dialog.site-search__dialog").evaluate("dialog => dialog.open"):
        page.locator(".site-search__open").click()
    search = page.locator("dialog.site-search__dialog input")
    search.wait_for(state="visible")
    search.fill("")  # also empties the status line, so the wait below sees this query's
    if typed:
        page.keyboard.type(query)
    else:
        _type_with_an_input_method(page, query)
    status = page.locator(".site-search__status")
    status.filter(has_text=query).wait_for(timeout=10_000)
    links = page.locator(".site-search__result > a")
    return [_within(base_url, href) for href in links.evaluate_all("links => links.map(link => link.href)")]


@pytest.fixture
def reader(visited):
    """The tab of the visited page, for one search; the dialog closed again after it, so that the page's
    other tests (clicking its copy buttons, say) find it as it loaded."""
    yield visited.tab
    visited.tab.evaluate("document.querySelector('dialog.site-search__dialog').close()")


def _from_its_page(cases: list[tuple[str, str, str]]) -> list:
    """The ranking cases, each searched by a reader on its start page (conftest.py's ``visited``): the page,
    Pagefind and the index are loaded once for all the words searched from it, one after another."""
    return [pytest.param((start, "1280"), query, expected, id=query) for start, query, expected in cases]


@pytest.mark.parametrize(("visited", "query", "expected"), _from_its_page(ENGLISH), indirect=["visited"])
def test_english_search_puts_the_chapter_first_or_second(reader, base_url: str, query: str, expected: str):
    found = _search(reader, base_url, query, typed=True)
    assert expected in found[:2], f"{query!r}: {found}"
    assert not [path for path in found if path.startswith("zh/")], f"{query!r}: Chinese pages in {found}"


@pytest.mark.parametrize(("visited", "query", "expected"), _from_its_page(CHINESE), indirect=["visited"])
def test_chinese_search_puts_the_chapter_first_or_second(reader, base_url: str, query: str, expected: str):
    found = _search(reader, base_url, query, typed=False)
    assert expected in found[:2], f"{query!r}: {found}"
    assert all(path.startswith("zh/") for path in found), f"{query!r}: pages of another language in {found}"
    # The whole query, not all but its last character: every result shows it as typed.
    excerpts = reader.locator(".site-search__results .site-search__excerpt").all_inner_texts()
    assert all(query in text for text in excerpts), excerpts


#: Error messages a page shows only in an output block, where it shows what a block raises: (the page the reader
#: is on, the message as pasted from a terminal, the page and the section that show it). Output blocks are not
#: indexed (their numbers would only be noise), but their exception lines are (hooks/search.py).
ERRORS = [
    ("", "view size is not compatible", "multi-head/", "contiguous"),
    ("", "No available kernel. Aborting execution", "attention-backends/", "force"),
    ("zh/", "view size is not compatible", "zh/multi-head/", "contiguous"),
    ("zh/", "No available kernel. Aborting execution", "zh/attention-backends/", "force"),
]
#: Pagefind's own answer for a query: the first page, and the sections of it that hold the words.
FIRST_RESULT = """async ([pagefind, query]) => {
  const found = await (await import(pagefind)).search(query);
  const first = await found.results[0].data();
  return { url: first.url, sections: first.sub_results.map((section) => section.url) };
}"""


@pytest.mark.parametrize(
    ("visited", "query", "expected", "section"),
    [
        pytest.param((start, "1280"), query, page, section, id=f"{start}{query}")
        for start, query, page, section in ERRORS
    ],
    indirect=["visited"],
)
def test_an_error_message_finds_the_section_that_shows_it(reader, base_url: str, query, expected, section) -> None:
    found = _search(reader, base_url, query, typed=True)
    assert found[:1] == [expected], f"{query!r}: {found}"
    first = reader.evaluate(FIRST_RESULT, [base_url + "pagefind/pagefind.js", query])
    assert _within(base_url, first["url"]) == expected
    assert any(urlsplit(url).fragment == section for url in first["sections"]), f"{query!r}: {first['sections']}"


def test_search_downloads_nothing_until_the_reader_opens_it(page, base_url: str) -> None:
    requests = []
    page.on("request", lambda request: requests.append(_within(base_url, request.url)))
    page.goto(base_url + "multi-head/", wait_until="load")
    assert not [path for path in requests if path.startswith(("pagefind/", "search/"))], requests
    page.locator(".site-search__open").click()
    page.keyboard.type("transpose")
    page.locator(".site-search__result").first.wait_for()
    fetched = [path for path in requests if path.startswith("pagefind/")]
    assert "pagefind/pagefind.js" in fetched
    assert any(path.startswith("pagefind/index/") for path in fetched), fetched
    # The English page loaded only the English index.
    assert not [path for path in fetched if "zh" in path.rsplit("/", 1)[-1]], fetched


def test_a_result_opens_the_section_and_marks_the_word(page, base_url: str) -> None:
    page.goto(base_url + "zh/", wait_until="load")
    page.locator(".site-search__open").click()
    _type_with_an_input_method(page, "掩码")
    section = page.locator(".site-search__sections a").first
    section.wait_for()
    section.click()
    page.wait_for_load_state("load")
    assert _within(base_url, page.url) == "zh/masks/", page.url
    assert urlsplit(page.url).fragment, f"{page.url} opens no section"
    page.locator("mark").first.wait_for()
    assert "掩码" in page.locator("mark").all_inner_texts()


def test_a_word_from_the_middle_of_a_sentence_is_found(page, base_url: str) -> None:
    # "……把六个输入向量混合起来的结果。" on the Chinese home page: no word boundary around 混合.
    page.goto(base_url + "zh/masks/", wait_until="load")
    assert "zh/" in _search(page, base_url, "混合", typed=False)


def test_search_works_without_another_host_and_keyboard_only(page, base_url: str) -> None:
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(base_url + "zh/multi-head/", wait_until="load")
    page.locator("body").focus()  # where a reader's keys go when nothing else has the focus
    page.keyboard.press("/")
    _type_with_an_input_method(page, "缓冲区")
    page.locator(".site-search__result").first.wait_for()
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.closest('.site-search__result') !== null")
    page.keyboard.press("Escape")
    assert not page.locator("dialog.site-search__dialog").evaluate("dialog => dialog.open")
    host = urlsplit(base_url).netloc
    assert [url for url in requests if urlsplit(url).netloc not in {host, ""}] == []


def test_notebooks_are_not_indexed(site: Path) -> None:
    """A notebook is its chapter page cut into cells: in the results it would only repeat the chapter."""
    entry = json.loads((site / "pagefind" / "pagefind-entry.json").read_text(encoding="utf-8"))
    assert set(entry["languages"]) == {"en", "zh"}
    # Every page of a language but the translation status table (and the notebooks).
    expected = len([page for page in records.pages() if page != "translation-status.md"])
    assert expected >= 19
    pages = {language: info["page_count"] for language, info in entry["languages"].items()}
    assert pages == {"en": expected, "zh": expected}, pages


def test_the_index_holds_every_page_or_the_build_fails(tmp_path: Path) -> None:
    """A page left with no words once the parts that are not content are cut (NOT_CONTENT) would be missing
    from the index without a word: the build fails naming the pages instead."""
    from mkdocs.exceptions import PluginError

    from hooks import search

    def page(lang: str, body: str) -> str:
        return f'<!doctype html><html lang="{lang}"><head><title>t</title></head><body>{body}</body></html>'

    (tmp_path / "zh").mkdir()
    (tmp_path / "index.html").write_text(page("en", "<p>attention weights</p>"), encoding="utf-8")
    (tmp_path / "zh" / "index.html").write_text(page("zh", "<p>注意力权重</p>"), encoding="utf-8")
    pages = search.indexed_pages(tmp_path, ["en", "zh"])
    search._index(tmp_path, pages)
    entry = json.loads((tmp_path / "pagefind" / "pagefind-entry.json").read_text(encoding="utf-8"))
    assert {language: info["page_count"] for language, info in entry["languages"].items()} == {"en": 1, "zh": 1}

    (tmp_path / "zh" / "index.html").write_text(page("zh", '<div class="md-sidebar">注意力权重</div>'), "utf-8")
    with pytest.raises(PluginError, match=r"indexed 1 of the 2 pages .*index\.html, zh/index\.html"):
        search._index(tmp_path, pages)


def test_only_the_exception_line_of_an_output_block_is_indexed() -> None:
    """The copy Pagefind reads holds an output block's exception line (its message on the lines after it
    included, the cut `` ...`` not), as text after the block, where ``.language-output`` does not hide it; the
    numbers of a block stay out, and a block that raises nothing adds nothing."""
    from hooks import search

    numbers = (
        '<div class="language-output highlight"><pre><span></span><code>tensor([0.4419, 0.6515])\n</code></pre></div>'
    )
    raised = (
        '<div class="language-output highlight"><pre><span></span><code>Traceback (most recent call last):\n'
        "  ...\nValueError: x has batch size 1, but the KV cache holds 2 sequences; a\ncache continues the"
        " same sequences ...\n</code></pre></div>"
    )
    indexed = search.indexed_text(f"<h2 id='errors'>Errors</h2>{numbers}<p>Between.</p>{raised}")
    after = indexed.split("</pre></div>")
    assert after[1] == "<p>Between.</p>" + raised.split("</pre></div>")[0]
    assert after[2] == (
        '<p class="indexed-error">ValueError: x has batch size 1, but the KV cache holds 2 sequences; a cache'
        " continues the same sequences</p>"
    )


def test_a_chapters_exercises_count_for_less_than_its_teaching() -> None:
    """The exercises name what they rule out and what they use (each write-it's contract): Pagefind weighs
    that text at half, so a word finds the section that teaches it before an exercise that mentions it."""
    from hooks import search

    page = (
        '<article class="md-content__inner md-typeset"><h2 id="softmax">Softmax</h2><p>dot product</p>'
        '<h2 id="exercises">Exercises</h2><p>May use: a dot product</p></article>'
    )
    indexed = search.indexed_text(page)
    assert '<h2 id="softmax">Softmax</h2><p>dot product</p><div data-pagefind-weight="0.5"><h2 id="exercises">' in (
        indexed
    )
    assert indexed.endswith("<p>May use: a dot product</p></div></article>")
    # A page without exercises is indexed as it is.
    assert search.indexed_text(page.replace('id="exercises"', 'id="summary"')).count("data-pagefind-weight") == 0
