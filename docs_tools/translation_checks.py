"""The structure checks of a translation against its English page: the same code, outputs, heading ids, links
and images; nothing left in English; the glossary's terms; no hard-wrapped Chinese line. Each problem says
where it is and how to fix it, in the page's language where the tooling speaks it (``translation_messages``).
"""

from __future__ import annotations

import collections
import difflib
import io
import itertools
import re
import string
import sys
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sybil import Document

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest and the checker require tomli there
    import tomli as tomllib

from docs_tools.config import SOURCE, languages
from docs_tools.pages import CHECK_CALL, HEADING, INTERACTIVE, OUTPUT, PYTHON_LIKE, RUN, fenced_blocks, without_code
from docs_tools.project import ROOT
from docs_tools.records import (
    MESSAGES,
    SECTIONS_KEY,
    UP_TO_DATE,
    FrontMatterError,
    page_state,
    pages,
    paths,
    read_record,
    read_sections,
    sections,
    split_page,
    without_front_matter,
)
from docs_tools.translation_messages import ENGLISH, FOLDER, say
from docs_tools.translation_messages import languages as message_languages


@dataclass(frozen=True)
class Problem:
    path: str  # relative to the repository root, e.g. docs/zh/masks.md
    line: int
    what: str  # what differs, with the English page's line where there is one
    fix: str  # how to fix it, in words a first-time contributor can act on
    lang: str = "en"  # the language what and fix are written in: the page's, where the tooling speaks it
    kind: str = ""  # the table of docs_tools/messages/ that says it

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}\n    {say(self.lang, 'labels.how_to_fix')}{self.fix}"


def _problem(path: str, line: int, lang: str, kind: str, /, **fields: object) -> Problem:
    """The problem ``kind`` (a table of ``docs_tools/messages/``, with its ``what`` and ``fix``) in ``lang``."""
    what, fix = say(lang, f"{kind}.what", **fields), say(lang, f"{kind}.fix", **fields)
    return Problem(path, line, what, fix, lang, kind)


def _shown(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _content(text: str) -> str:
    """A page's text as the checks read it: LF line endings, front matter blanked out."""
    return without_front_matter(text.replace("\r\n", "\n"))


def _read(path: Path) -> str:
    return _content(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class _Pair:
    """A translated page and its English page, each read once, with the paths messages show."""

    english: str
    translation: str
    en_path: str
    tr_path: str
    locale: str  # the translation's language, which its problems are said in


SHELL = {"bash", "console", "shell", "sh"}


@dataclass
class _Block:
    info: str
    line: int  # the fence's line
    items: list[tuple[object, int]]  # what is compared, each with its line in the page


def _code_tokens(source: str, first: int) -> list[tuple[object, int]]:
    """The tokens of ``source`` without comments and blank lines: what runs, not how it is explained."""
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return [(line.rstrip(), first + n) for n, line in enumerate(source.splitlines()) if line.strip()]
    return [((t.type, t.string), first + t.start[0] - 1) for t in tokens if t.type not in skipped]


#: The exercise checker's language, set once on a translated page (``set_language("zh")``, with the import
#: of ``set_language`` beside ``check``): the one line of code a translation adds. What the checker prints
#: under a ``check(...)`` call is then in the page's language, so only its verdicts, ✓ or ✗ and the
#: exercise's id, are compared.
SET_LANGUAGE = re.compile(r'^set_language\("(?P<locale>[\w-]+)"\)[^\n]*\n?', re.M)
CHECKER_IMPORT = "from attention_exercises import check, set_language\n"
VERDICT = re.compile(r"^(?P<verdict>[✓✗] exercise-[\w-]+)")


def blocks(text: str) -> list[_Block]:
    """The blocks both languages must show identically: Python code compared as tokens (comments may be
    translated, and the checker's language set), shell commands without their comments, and outputs exactly,
    but for the checker's, whose verdicts are compared."""
    document = Document(text, "")
    shown = []
    checks = False  # whether the last Python block calls the checker
    for block in fenced_blocks(document):
        info, source = block.lexemes["info"], str(block.lexemes["source"])
        fence = _line(text, block.start)
        if info == RUN:
            if SET_LANGUAGE.search(source):
                source = SET_LANGUAGE.sub(lambda m: "\n", source)
                source = source.replace(CHECKER_IMPORT, "from attention_exercises import check\n")
            items = _code_tokens(source, fence + 1)
            checks = bool(CHECK_CALL.search(source))
        elif info == OUTPUT and checks:
            items = [
                (verdict["verdict"], fence + 1 + n)
                for n, line in enumerate(source.splitlines())
                if (verdict := VERDICT.match(line))
            ]
        elif info in SHELL:
            items = [(re.sub(r"\s+#.*$", "", line), fence + 1 + n) for n, line in enumerate(source.splitlines())]
        elif info == OUTPUT or PYTHON_LIKE.match(info):
            items = [(line, fence + 1 + n) for n, line in enumerate(source.splitlines())]
        else:
            continue
        shown.append(_Block(info, fence, items))
    return shown


def check_checker_language(pair: _Pair, locale: str) -> list[Problem]:
    """A translated page whose exercises use the checker sets its language once, where it imports it, so that
    every ✓ and ✗ its reader sees is in the page's language (a page of another language would set another)."""
    if "from attention_exercises import check" not in pair.english:
        return []
    found = [match["locale"] for match in SET_LANGUAGE.finditer(pair.translation)]
    if found == [locale] and CHECKER_IMPORT in pair.translation:
        return []
    start = pair.translation.find("from attention_exercises import")
    return [
        _problem(
            pair.tr_path,
            _line(pair.translation, max(start, 0)),
            pair.locale,
            "checker_language",
            found=found or say(pair.locale, "words.found_none"),
            import_line=CHECKER_IMPORT.strip(),
            locale=locale,
        )
    ]


def _show(item: object) -> str:
    shown = item[1] if isinstance(item, tuple) else str(item)
    return shown.replace("\n", "\\n")  # a line break shown as \n, not as a break in the message


def check_blocks(pair: _Pair) -> list[Problem]:
    en, tr = blocks(pair.english), blocks(pair.translation)
    en_path, tr_path, lang = pair.en_path, pair.tr_path, pair.locale
    for number, (left, right) in enumerate(zip(en, tr, strict=False), start=1):
        if left.info != right.info:
            return [
                _problem(
                    tr_path,
                    right.line,
                    lang,
                    "block_kind",
                    number=number,
                    fence=f"```{right.info}",
                    en_path=en_path,
                    en_line=left.line,
                    en_fence=f"```{left.info}",
                )
            ]
        for (want, want_line), (got, got_line) in zip(left.items, right.items, strict=False):
            if want != got:
                return [
                    _problem(
                        tr_path,
                        got_line,
                        lang,
                        "block_differs",
                        fence=f"```{right.info}",
                        en_path=en_path,
                        en_line=want_line,
                        got=_show(got),
                        want=_show(want),
                    )
                ]
        if len(left.items) != len(right.items):
            english_longer = len(left.items) > len(right.items)
            longer, longer_path = (left, en_path) if english_longer else (right, tr_path)
            line = longer.items[min(len(left.items), len(right.items))][1]
            return [
                _problem(
                    tr_path,
                    right.line,
                    lang,
                    "block_shorter" if english_longer else "block_longer",
                    fence=f"```{right.info}",
                    en_path=en_path,
                    en_line=left.line,
                    where=f"{longer_path}:{line}",
                )
            ]
    if len(en) > len(tr):
        return [
            _problem(
                tr_path,
                tr[-1].line if tr else 1,
                lang,
                "blocks_missing",
                en_count=len(en),
                count=len(tr),
                en_path=en_path,
                en_line=en[len(tr)].line,
            )
        ]
    if len(tr) > len(en):
        return [
            _problem(
                tr_path, tr[len(en)].line, lang, "blocks_extra", count=len(tr), en_count=len(en), number=len(en) + 1
            )
        ]
    return []


def headings(text: str) -> list[tuple[str, str, int]]:
    """(id, heading line, line number) for every heading outside code blocks; id is '' without one."""
    prose = without_code(text)
    return [(match["id"] or "", match.group(0), _line(prose, match.start())) for match in HEADING.finditer(prose)]


def check_headings(pair: _Pair) -> list[Problem]:
    en, tr = headings(pair.english), headings(pair.translation)
    en_path, tr_path, lang = pair.en_path, pair.tr_path, pair.locale
    problems = []
    matcher = difflib.SequenceMatcher(a=[h[0] for h in en], b=[h[0] for h in tr], autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            for en_id, en_heading, en_line in en[a1:a2]:
                where = tr[b1][2] if b1 < len(tr) else (tr[-1][2] if tr else 1)
                problems.append(
                    _problem(
                        tr_path,
                        where,
                        lang,
                        "heading_missing",
                        heading=en_heading,
                        en_path=en_path,
                        en_line=en_line,
                        id=en_id,
                    )
                )
        if tag in ("replace", "insert"):
            for tr_id, tr_heading, tr_line in tr[b1:b2]:
                kind = "heading_extra" if tr_id else "heading_without_id"
                problems.append(_problem(tr_path, tr_line, lang, kind, heading=tr_heading, id=tr_id, en_path=en_path))
    return problems


LINK = re.compile(
    # [text] or ![alt], one level of [] inside; the text may wrap onto the next line, as a paragraph does in
    # Markdown, but a blank line ends it.
    r"(?P<image>!?)\[(?P<text>(?:[^\[\]\n]|\n(?![ \t]*\n)|\[[^\[\]\n]*\])*)\]"
    r"\((?P<target><[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\)"  # (target "optional title")
)
TRANSLATED_FILE = re.compile(r"\.[a-z]{2,3}(?:[-_][A-Za-z]{2,4})?\.md\b")
AUTOLINK = re.compile(r"<(?P<target>https?://[^>\s]+)>")


def _prose(text: str) -> str:
    """A page without its code: fenced blocks, HTML comments and inline code become blank."""
    text = without_code(text)
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def links(text: str) -> list[tuple[str, str, int]]:
    """(kind, target, line) for every link and image in the prose; kind is 'link' or 'image'."""
    prose = _prose(text)
    found = [
        ("image" if m["image"] else "link", m["target"].strip("<>"), _line(prose, m.start()))
        for m in LINK.finditer(prose)
    ]
    found += [("link", m["target"], _line(prose, m.start())) for m in AUTOLINK.finditer(prose)]
    return sorted(((kind, _comparable(target), line) for kind, target, line in found), key=lambda item: item[2])


LOCALIZED_FIGURE = re.compile(r"\.[a-z]{2,3}(?=(?:-dark)?\.svg(?:#|$))")


def _comparable(target: str) -> str:
    """A link target as both languages must write it. A link may go to a file's own translation
    (CONTRIBUTING.md and CONTRIBUTING.zh-CN.md are one link), and a section of another site may have
    another anchor in each language; a link to a section of our own pages has the same one. A figure drawn
    in each language (``memory-strides.en.svg``, ``memory-strides.zh.svg``) is the same image."""
    if re.match(r"https?://", target):
        target = target.partition("#")[0]
    # A figure drawn in each language is name.<lang>.svg (and name.<lang>-dark.svg): one image, each page its own.
    target = LOCALIZED_FIGURE.sub(".<lang>", target)
    return TRANSLATED_FILE.sub(".md", target)


def _same_section(line: int, en_headings: list[tuple[str, str, int]], tr_headings: list[tuple[str, str, int]]) -> int:
    """The line, in the translation, of the heading of the section that holds ``line`` of the English page."""
    section = next((id_ for id_, _, at in reversed(en_headings) if at <= line and id_), None)
    return next((at for id_, _, at in tr_headings if id_ == section), 1)


def check_links(pair: _Pair) -> list[Problem]:
    en, tr = links(pair.english), links(pair.translation)
    en_path, tr_path, lang = pair.en_path, pair.tr_path, pair.locale
    en_headings, tr_headings = headings(pair.english), headings(pair.translation)

    def words(kind: str) -> dict[str, str]:
        """What a link or an image is called, and what of it is translated."""
        text = "alt_text" if kind == "image" else "link_text"
        return {"kind": say(lang, f"words.{kind}"), "text": say(lang, f"words.{text}")}

    missing = collections.Counter((kind, target) for kind, target, _ in en)
    missing.subtract((kind, target) for kind, target, _ in tr)
    problems = []
    for kind, target, line in en:
        if missing[kind, target] > 0:
            missing[kind, target] -= 1
            where = _same_section(line, en_headings, tr_headings)
            problems.append(
                _problem(
                    tr_path, where, lang, "link_missing", target=target, en_path=en_path, en_line=line, **words(kind)
                )
            )
    extra = collections.Counter((kind, target) for kind, target, _ in tr)
    extra.subtract((kind, target) for kind, target, _ in en)
    for kind, target, line in tr:
        if extra[kind, target] > 0:
            extra[kind, target] -= 1
            problems.append(_problem(tr_path, line, lang, "link_extra", target=target, en_path=en_path, **words(kind)))
    return sorted(problems, key=lambda problem: problem.line)


CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
#: Six or more English words in a row, with nothing but spaces and ASCII punctuation between them.
ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'’-]*(?:[ \t,;:.!?()/-]+[A-Za-z][A-Za-z'’-]*){5,}")
WORD = re.compile(r"\S*[A-Za-z]\S*")
#: Quoted or emphasized text (an example sentence, a book title) may stay in English.
QUOTED = re.compile(r"“[^”\n]*”|\"[^\"\n]*\"|「[^」\n]*」|‘[^’\n]*’|《[^》\n]*》|\*[^*\n]+\*|(?<!\w)_[^_\n]+_(?!\w)")


def _sentences(text: str) -> list[tuple[str, int]]:
    """The prose of a page as (line text, line number), reduced to what a translator writes: no code,
    math, link targets, HTML tags, heading ids or Markdown markers."""
    prose = _prose(text)
    prose = re.sub(r"\$\$.*?\$\$", lambda m: "\n" * m.group(0).count("\n"), prose, flags=re.DOTALL)
    prose = re.sub(r"\$[^$\n]+\$", "", prose)
    prose = LINK.sub(lambda m: m["text"], prose)
    prose = AUTOLINK.sub("", prose)
    prose = re.sub(r"<[^>\n]+>", "", prose)
    prose = re.sub(r"\{\s*[:#.][^}\n]*\}", "", prose)
    result = []
    for number, line in enumerate(prose.splitlines(), start=1):
        line = re.sub(r"^\s*(?:[!?]{3}\+? \w+|#{1,6}|[-*+]|\d+\.|>|\|)\s*", "", line)
        line = " ".join(line.replace("|", " ").split())
        if line:
            result.append((line, number))
    return result


def check_untranslated(pair: _Pair, locale: str) -> list[Problem]:
    """Prose left in English: a line identical to one of the English page, or (in a language written in
    CJK characters) six or more English words in a row. Quoted English (“…”) is left alone."""
    en_lines = {line for line, _ in _sentences(pair.english) if len(WORD.findall(line)) >= 2 and not CJK.search(line)}
    problems = []
    for line, number in _sentences(pair.translation):
        if line in en_lines:
            problems.append(_problem(pair.tr_path, number, locale, "same_line", line=line))
        elif locale in CJK_LOCALES and (run := ENGLISH_RUN.search(QUOTED.sub("", line.replace("**", "")))):
            problems.append(_problem(pair.tr_path, number, locale, "english_left", run=run.group(0)))
    return problems


#: Languages written in CJK characters, where a long run of English words is a sign of untranslated text.
CJK_LOCALES = {"zh", "zh_TW", "ja", "ko"}

#: What the reader sees of a Markdown line's ends: links by their text, no HTML tags or {: attribute lists},
#: no emphasis markers; inline code and math stand as a Latin letter (a space beside them is intended).
_MARKUP_END = re.compile(r"[\s*_~]+$")
_MARKUP_START = re.compile(r"^\s*(?:>\s*)*(?:(?:\*\*?|__?|~~)(?=\S)|\[)*")
_NEW_BLOCK = re.compile(r"^\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|\||!!!|\?\?\?|\$\$|<)")
#: A line that is one image and nothing else: a figure's light and dark twins stand on two such lines, and
#: the space between them is between two images, one of them hidden, not inside a sentence.
_IMAGE_LINE = re.compile(r"^\s*!\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\([^)\s]*\)(?:\{[^}]*\})?\s*$")


def _visible(line: str) -> str:
    line = re.sub(r"`[^`\n]*`|\$[^$\n]+\$", "x", line)
    line = LINK.sub(lambda m: m["text"], line)
    line = re.sub(r"<[^>\n]+>|\{\s*[:#.][^}\n]*\}", "", line)
    return _MARKUP_START.sub("", _MARKUP_END.sub("", line))


#: Full-width punctuation (。，、：；（）“”…), which carries its own spacing: a space beside it is always a gap.
CJK_PUNCTUATION = re.compile(r"[\u3000-\u303f\uff00-\uffef]")


def check_line_breaks(text: str, path: str, lang: str = "zh") -> list[Problem]:
    """Chinese prose broken across lines (GUIDE: no hard-wrapped Chinese lines). Markdown turns a line break
    inside a paragraph into a space: between two CJK characters, or beside full-width punctuation, that is a
    stray gap in the middle of a sentence. A paragraph or list item written in Chinese is one line. Front
    matter, code blocks, HTML comments and display math are not prose; headings and table rows are blocks
    of their own, and so is an image on a line of its own beside another (a figure's two palettes); a list
    item's or an admonition's continuation lines are prose like any other. The problems are said in ``lang``,
    the text's own (Chinese, unless a page of another CJK language is checked)."""
    prose = without_code(without_front_matter(text.replace("\r\n", "\n")))
    prose = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), prose, flags=re.DOTALL)
    prose = re.sub(r"^\$\$.*?^\$\$", lambda m: "\n" * m.group(0).count("\n"), prose, flags=re.DOTALL | re.M)
    lines = prose.splitlines()
    problems = []
    for number, (line, following) in enumerate(itertools.pairwise(lines), start=1):
        if not line.strip() or not following.strip() or re.match(r"\s*(?:#{1,6}\s|\||!!!|\?\?\?)", line):
            continue
        if _NEW_BLOCK.match(following.lstrip(">").lstrip() if line.lstrip().startswith(">") else following):
            continue
        if _IMAGE_LINE.match(line) and _IMAGE_LINE.match(following):
            continue
        end, start = _visible(line)[-1:], _visible(following)[:1]
        if CJK.match(end) or CJK.match(start):
            gap = (CJK.match(end) and CJK.match(start)) or CJK_PUNCTUATION.match(end) or CJK_PUNCTUATION.match(start)
            problems.append(
                _problem(
                    path,
                    number,
                    lang,
                    "line_break_gap" if gap else "line_break",
                    line=number,
                    next_line=number + 1,
                    end=line.strip()[-12:],
                    start=following.strip()[:12],
                )
            )
    return problems


#: A rendering to avoid that the glossary allows once on one page, explained there beside the glossary's
#: term: ``暂退法（可在 dropout.md 中提及一次）``, for readers who know the idea by another book's name.
ALLOWED_ONCE = re.compile(r"^(?P<word>[^（()]+)（可在 (?P<page>[\w./-]+\.md) 中提及一次）$")


def _glossary_cells(root: Path, locale: str) -> list[tuple[str, str, list[tuple[str, str | None]]]]:
    """(English term, translated term, [(rendering to avoid, the page allowed one mention of it or None)])."""
    path = root / "docs" / locale / "glossary.md"
    if not path.exists():
        return []
    lines = _read(path).splitlines()
    rows = []
    for number, (line, following) in enumerate(zip(lines, [*lines[1:], ""], strict=True), start=1):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        header = set(following.replace("|", "").strip()) <= {"-", ":"} and following.strip()
        if not line.lstrip().startswith("|") or len(cells) != 4 or set(cells[0]) <= {"-", ":"} or header:
            continue
        avoid: list[tuple[str, str | None]] = []
        for word in (word for word in re.split(r"[、,，]\s*", cells[3]) if word):
            if match := ALLOWED_ONCE.match(word):
                avoid.append((match["word"].strip(), match["page"]))
            elif re.search(r"[（()）]", word):
                raise ValueError(say(locale, "glossary_brackets.what", path=_shown(path, root), line=number, word=word))
            else:
                avoid.append((word, None))
        rows.append((cells[0], cells[1], avoid))
    return rows


def glossary(root: Path = ROOT, locale: str = "zh") -> list[tuple[str, str, list[str]]]:
    """(English term, translated term, renderings to avoid) for every row of a glossary page's tables."""
    return [(english, term, [word for word, _ in avoid]) for english, term, avoid in _glossary_cells(root, locale)]


def glossary_allowances(root: Path = ROOT, locale: str = "zh") -> dict[str, str]:
    """Each rendering to avoid that the glossary allows once on one page, with that page (``dropout.md``)."""
    return {word: page for _, _, avoid in _glossary_cells(root, locale) for word, page in avoid if page}


#: A ratio said as a comparative with 倍 ("快 1.4 倍", "便宜几十倍", "小多少倍", "N 倍地"): read strictly,
#: "快 1.4 倍" is 2.4 times as fast, and readers disagree on which is meant. CONTRIBUTING.zh-CN.md's rule:
#: "A 是 B 的 N 倍" or "A 是 B 的几分之一".
RATIO = re.compile(
    r"(?:快|慢|便宜|贵|小|大|少|多|高|低|省|轻|重|短|长)了?\s*(?:约|近|将近|大约|足足)?\s*"
    r"(?:[\d.,]+|[一二两三四五六七八九十百千几数多]+|多少)\s*倍"
    r"|[\d.,]+\s*倍地"
)


def check_ratios(text: str, tr_path: str, lang: str = "zh") -> list[Problem]:
    """Chinese prose states a ratio as 是……的 N 倍 or 是……的几分之一, never as a comparative with 倍 (the
    problems said in ``lang``, the text's own)."""
    return [
        _problem(tr_path, number, lang, "ratio", text=match[0])
        for number, line in enumerate(_prose(text).splitlines(), start=1)
        for match in RATIO.finditer(line)
    ]


def check_glossary(
    text: str, tr_path: str, locale: str, rows: list[tuple[str, str, list[str]]], allowed: Iterable[str] = ()
) -> list[Problem]:
    """``text``, a page of ``locale`` shown as ``tr_path``, against the glossary ``rows`` of that language.
    A rendering in ``allowed`` (what the glossary allows once on this page) may occur once, on a line that
    also has the glossary's term, which explains it."""
    glossary_page = f"docs/{locale}/glossary.md"
    allowed = set(allowed)
    used: set[str] = set()
    problems = []
    for number, line in enumerate(_prose(text).splitlines(), start=1):
        for english, term, avoid in rows:
            for word in avoid:
                count = line.count(word)
                if count and word in allowed and word not in used and term in line:
                    used.add(word)  # the one mention the glossary allows on this page
                    count -= 1
                if not count:
                    continue
                if word not in allowed:
                    kind = "glossary"
                else:  # the one mention it allows, had already or not beside the glossary's term
                    kind = "glossary_once_used" if word in used else "glossary_once_here"
                problems.append(
                    _problem(
                        tr_path,
                        number,
                        locale,
                        kind,
                        word=word,
                        english=english,
                        term=term,
                        glossary_page=glossary_page,
                    )
                )
    return problems


def check_interactive(pair: _Pair) -> list[Problem]:
    """The same interactive pieces, in the same order: their line is code, not prose."""
    en = [match[0] for match in INTERACTIVE.finditer(pair.english)]
    found = list(INTERACTIVE.finditer(pair.translation))
    if [match[0] for match in found] == en:
        return []
    line = _line(pair.translation, found[0].start()) if found else 1
    shown = [match[0] for match in found]
    return [_problem(pair.tr_path, line, pair.locale, "interactive", found=shown, en_path=pair.en_path, en=en)]


#: Inline code in a message, never translated.
CODE_SPAN = re.compile(r"`[^`\n]*`")
#: A word of English prose: letters only, at least two, with at most a punctuation mark after it (W_query,
#: x.shape, causal_mask(t) and is_causal=True are code).
PROSE_WORD = re.compile(r"[A-Za-z]{2,}[,.;:!?]?")


def _prose_words(message: str) -> list[str]:
    return [word for word in CODE_SPAN.sub(" ", message).split() if PROSE_WORD.fullmatch(word)]


def _fields(text: str) -> list[str]:
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


def _key_lines(text: str) -> dict[tuple[str, str], int]:
    """Where each ``key = ...`` of a messages file stands, by (table, key)."""
    lines, table = {}, ""
    for number, line in enumerate(text.splitlines(), start=1):
        if header := re.match(r"^\[([\w-]+)\]\s*$", line):
            table = header[1]
        elif entry := re.match(r"^([\w-]+) = ", line):
            lines[(table, entry[1])] = number
    return lines


def check_messages(locale: str, root: Path = ROOT) -> list[Problem]:
    """The exercise checker's messages in ``locale`` against the English ones: a freshness record, every key
    and no other, the same ``{fields}`` and the same code in backticks, and (in a CJK language) no message
    left in English."""
    english, translation = paths(locale, MESSAGES, root)
    if not translation.exists():
        return []
    return compare_messages(english, translation, locale, root, record=f"{locale}/{MESSAGES}")


def compare_messages(
    english: Path, translation: Path, locale: str, root: Path = ROOT, *, record: str | None = None
) -> list[Problem]:
    """A file of messages translated into ``locale`` (the exercise checker's, or the translation tooling's own)
    against its English file: valid TOML, every key and no other, the same ``{fields}`` and the same code in
    backticks, ratios as the Chinese guide states them, and (in a CJK language) no message left in English.
    ``record`` (``zh/messages.toml``), for a file tracked like a page, is what ``update`` is told to record
    where the file has no freshness record."""
    tr_path, en_path = _shown(translation, root), _shown(english, root)
    text = translation.read_text(encoding="utf-8").replace("\r\n", "\n")
    try:
        tr = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return [_problem(tr_path, 1, locale, "messages_toml", error=error, en_path=en_path)]
    en = tomllib.loads(english.read_text(encoding="utf-8"))
    where = _key_lines(text)
    problems = []
    if record is not None and read_record(text) is None:
        item_locale, page = split_page(record)
        problems.append(_problem(tr_path, 1, locale, "messages_record", en_path=en_path, locale=item_locale, page=page))
    for table, entries in en.items():
        for key, english_text in entries.items():
            line = where.get((table, key), 1)
            named = {"table": table, "key": key}
            translated = tr.get(table, {}).get(key)
            if translated is None:
                problems.append(_problem(tr_path, line, locale, "messages_missing_key", en_path=en_path, **named))
                continue
            if _fields(translated) != _fields(english_text):
                problems.append(
                    _problem(
                        tr_path,
                        line,
                        locale,
                        "messages_fields",
                        fields=_fields(translated),
                        en_fields=_fields(english_text),
                        **named,
                    )
                )
            if sorted(CODE_SPAN.findall(translated)) != sorted(CODE_SPAN.findall(english_text)):
                problems.append(_problem(tr_path, line, locale, "messages_code", **named))
            if locale.startswith("zh"):
                problems += [
                    Problem(
                        tr_path,
                        line,
                        say(locale, "messages_in_key.what", what=problem.what, **named),
                        problem.fix,
                        locale,
                        problem.kind,
                    )
                    for problem in check_ratios(translated, tr_path, locale)
                ]
            if (
                locale in CJK_LOCALES
                and len(_prose_words(english_text)) >= 2
                and not CJK.search(CODE_SPAN.sub("", translated))
            ):
                problems.append(_problem(tr_path, line, locale, "messages_english", text=translated, **named))
    for table, entries in tr.items():
        if not isinstance(entries, dict):
            continue
        for key in entries:
            if key not in en.get(table, {}):
                problems.append(
                    _problem(
                        tr_path,
                        where.get((table, key), 1),
                        locale,
                        "messages_extra_key",
                        table=table,
                        key=key,
                        en_path=en_path,
                    )
                )
    return problems


def check_tooling_messages(folder: Path = FOLDER, root: Path = ROOT) -> list[Problem]:
    """The translation tooling's own messages (``docs_tools/messages/``) in every language against English,
    as the checker's translated messages are checked (``compare_messages``), and with no freshness record:
    they are written with the tooling, every language in the same change."""
    english = folder / f"{ENGLISH}.toml"
    return [
        problem
        for lang in message_languages(folder)
        if lang != ENGLISH
        for problem in compare_messages(english, folder / f"{lang}.toml", lang, root)
    ]


def _compare(pair: _Pair) -> list[Problem]:
    """The checks that compare a translation with its English text: headings, blocks, pieces, links."""
    return check_headings(pair) + check_blocks(pair) + check_interactive(pair) + check_links(pair)


def _section_pairs(pair: _Pair) -> dict[str, _Pair]:
    """``{id: that section of both texts}``, for every English section, each text at its own lines (the rest
    blank) for the comparisons; an empty text where the translation lacks it."""

    def alone(text: str) -> dict[str, str]:
        return {s.id: "\n" * (s.line - 1) + s.text for s in sections(text)}

    english, translation = alone(pair.english), alone(pair.translation)
    return {
        key: _Pair(text, translation.get(key, ""), pair.en_path, pair.tr_path, pair.locale)
        for key, text in english.items()
    }


def check_page(
    locale: str, page: str, root: Path = ROOT, *, strict: bool = False, section: str | None = None
) -> list[Problem]:
    """Every structure check of one translated page against its English page (or of the translated messages,
    for ``messages.toml``). An outdated page is compared only in its current sections, unless ``strict`` (the
    whole page, as ``update`` records it); ``section`` compares that section alone."""
    if page == MESSAGES:
        return sorted(check_messages(locale, root), key=lambda problem: problem.line)
    docs = root / "docs"
    english, translation = docs / SOURCE / page, docs / locale / page
    tr_path = _shown(translation, root)
    if not translation.exists():
        return []
    en_path = _shown(english, root)
    if not english.exists():
        return [_problem(tr_path, 1, locale, "no_english_page", en_path=en_path)]
    raw = translation.read_text(encoding="utf-8")
    pair = _Pair(_read(english), _content(raw), en_path, tr_path, locale)
    problems = []
    try:
        recorded = read_sections(raw)
        state = page_state(locale, page, docs)
    except FrontMatterError as error:
        recorded, state = {}, None
        problems.append(_problem(tr_path, 1, locale, "front_matter", detail=error.detail))
    if recorded is None:
        problems.append(
            _problem(tr_path, 1, locale, "record_missing", key=SECTIONS_KEY, en_path=en_path, locale=locale, page=page)
        )
    if section is not None:
        problems += _compare(_section_pairs(pair).get(section, _Pair("", "", en_path, tr_path, locale)))
    elif strict or state is None or state.state == UP_TO_DATE:
        problems += _compare(pair)
    else:
        # An outdated page is compared section by section, where the section is current: what changed in English
        # since (a new section, a code block, a moved one) is the translator's work to come, listed by status and
        # shown by the site's banner, not a failure of the English writer's pull request.
        stale = {s.id for s in state.outdated}
        for key, section_pair in _section_pairs(pair).items():
            if key not in stale:
                problems += _compare(section_pair)
    problems += check_checker_language(pair, locale)
    problems += check_untranslated(pair, locale)
    if locale in CJK_LOCALES:
        problems += check_line_breaks(pair.translation, tr_path, locale)
    if locale.startswith("zh"):
        problems += check_ratios(pair.translation, tr_path, locale)
    if page != "glossary.md":
        allowed = [word for word, where in glossary_allowances(root, locale).items() if where == page]
        problems += check_glossary(pair.translation, tr_path, locale, glossary(root, locale), allowed)
    return sorted(problems, key=lambda problem: problem.line)


def check_pages_exist(root: Path = ROOT) -> list[Problem]:
    """A complete language has every English page; no language has a page English lacks."""
    docs = root / "docs"
    english = set(pages(docs))
    problems = []
    for language in languages(root):
        folder = docs / language.locale
        present = {p.relative_to(folder).as_posix() for p in folder.rglob("*.md")} if folder.exists() else set()
        english_messages, messages = paths(language.locale, MESSAGES, root)
        named = {"language": language.name, "locale": language.locale}
        if language.complete and english_messages.exists() and not messages.exists():
            path = _shown(messages, root)
            problems.append(
                _problem(
                    path,
                    1,
                    language.locale,
                    "messages_absent",
                    en_path=_shown(english_messages, root),
                    path=path,
                    page=MESSAGES,
                    **named,
                )
            )
        if language.complete:
            for page in sorted(english - present):
                path = f"docs/{language.locale}/{page}"
                problems.append(
                    _problem(
                        path,
                        1,
                        language.locale,
                        "page_absent",
                        en_path=f"docs/{SOURCE}/{page}",
                        path=path,
                        page=page,
                        **named,
                    )
                )
        for page in sorted(present - english):
            problems += check_page(language.locale, page, root)
    return problems


def check(root: Path = ROOT, only: Iterable[str] = ()) -> list[Problem]:
    """All structure checks (an outdated page compared in its current sections), or those of the pages in
    ``only`` (``zh/masks.md``), whole, as a translator brings them up to date and ``update`` records them."""
    if only:
        return [problem for item in only for problem in check_page(*split_page(item), root, strict=True)]
    problems = check_pages_exist(root)
    for language in languages(root):
        for page in [*pages(root / "docs"), MESSAGES]:
            problems += check_page(language.locale, page, root)
    return problems
