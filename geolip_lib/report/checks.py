"""Checks of a built report, as a reader would meet it: every relative link resolves, nothing
is loaded from the network, no element carries an event handler or a ``javascript:`` link, no
linked file could run script when opened (an SVG, a page the report did not write, an image
whose bytes are markup) (:func:`problems`: the standard library's HTML parser, no rendering); and what a person sees
(:func:`reader_view_problems`: the index laid out in a 1280 px headless Chromium window is no
wider than it, no section is empty, no word of the PDF is split by a line break). Used by the
tests and usable on any built root (``report.checks.problems(Path("reports/demo"))``).
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .printing import chromium_cmd, find_chromium

#: elements whose ``src``/``href`` the browser fetches by itself when the page loads
LOADING_TAGS = ("script", "link", "img", "style", "iframe", "source", "video", "audio", "embed", "object")
_SCHEME = re.compile(r"\s*[a-z][a-z0-9+.-]*:", re.I)
_REMOTE = re.compile(r"\s*(https?:)?//", re.I)


class PageRefs(HTMLParser):
    """Every URL attribute ``(tag, attribute, value)``, every event-handler attribute, every id."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str, str]] = []
        self.handlers: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            value = value or ""
            if name in ("id",) or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.refs.append((tag, name, value))
            elif name.startswith("on"):
                self.handlers.append((tag, name, value))


def parse(page: Path) -> PageRefs:
    p = PageRefs()
    p.feed(page.read_text(encoding="utf-8"))
    return p


def pages(root: Path) -> list[Path]:
    """The report's own pages: index, every executed notebook, the PDF's document (not MathJax's files)."""
    return sorted(p for p in Path(root).rglob("*.html") if not p.name.startswith(".") and "mathjax" not in p.parts)


def broken_links(root: Path) -> list[str]:
    """One line per relative ``href``/``src`` of any page that names no file, or no anchor in it
    (a fragment is tried as written, then percent-decoded, as the HTML standard does)."""
    broken, ids = [], {}
    for page in pages(root):
        for tag, name, value in parse(page).refs:
            if _SCHEME.match(value):
                continue  # http(s), mailto and data: are not files of the report
            parts = urlsplit(value)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            where = f"{page.relative_to(root)}: <{tag} {name}={value!r}>"
            if not target.is_file():
                broken.append(f"{where}: no file {target}")
            elif parts.fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = parse(target).ids
                if not {parts.fragment, unquote(parts.fragment)} & ids[target]:
                    broken.append(f"{where}: no element with that id")
    return broken


def remote_loads(root: Path) -> list[str]:
    """One line per thing a page would fetch from the network: an ``http(s)`` or protocol-relative
    source of a script, style, image or frame, a CSS ``@import`` or remote ``url()``, a module
    ``import()`` of a URL."""
    found = []
    for page in pages(root):
        rel = page.relative_to(root)
        found += [f"{rel}: <{t} {n}={v!r}>" for t, n, v in parse(page).refs if t in LOADING_TAGS and _REMOTE.match(v)]
        text = page.read_text(encoding="utf-8")
        found += [f"{rel}: {m.group(0)!r}" for m in
                  re.finditer(r"@import[^;]*|url\(\s*['\"]?(?:https?:)?//[^)]*\)|import\(\s*['\"]https?:[^)]*\)", text)]
    return found


def live_markup(root: Path) -> list[str]:
    """One line per event-handler attribute or ``javascript:`` URL in any page."""
    found = []
    for page in pages(root):
        refs = parse(page)
        rel = page.relative_to(root)
        found += [f"{rel}: <{t} {n}={v!r}>" for t, n, v in refs.handlers]
        found += [f"{rel}: <{t} {n}={v!r}>" for t, n, v in refs.refs if v.strip().lower().startswith("javascript:")]
    return found


#: file types a browser opens as a document that can run script (whatever the report's link says)
SCRIPT_DOCUMENTS = (".svg", ".svgz", ".html", ".htm", ".xhtml", ".xht", ".xml", ".xsl", ".shtml", ".mht", ".mhtml")
#: linked images and the first bytes their name promises
_IMAGE_MAGIC = {".png": ("PNG", (b"\x89PNG\r\n\x1a\n",)), ".jpg": ("JPEG", (b"\xff\xd8\xff",)),
                ".jpeg": ("JPEG", (b"\xff\xd8\xff",)), ".gif": ("GIF", (b"GIF87a", b"GIF89a"))}
_ONLY = "the report links only its own pages and PNG or JPEG images"


def linked_files(root: Path) -> list[str]:
    """One line per file inside ``root`` that a page links and that could run script when a
    reader opens it: an SVG, XML or HTML document other than the report's own pages (those are
    checked by :func:`live_markup`), or an image whose bytes are not what its name says (an SVG
    named ``.png``). :func:`live_markup` checks pages, not the files they link."""
    root = Path(root).resolve()
    own = {p.resolve() for p in pages(root)}
    found, seen = [], {}
    for page in pages(root):
        for tag, name, value in parse(page).refs:
            if _SCHEME.match(value) or not urlsplit(value).path:
                continue
            target = (page.parent / unquote(urlsplit(value).path)).resolve()
            if not target.is_file() or (target != root and root not in target.parents):
                continue  # a broken link is broken_links' line; nothing outside the root is read
            if target not in seen:
                seen[target] = _linked_file_problem(target, own)
            if seen[target]:
                found.append(f"{page.relative_to(root)}: <{tag} {name}={value!r}>: {target.relative_to(root)} "
                             f"{seen[target]}; {_ONLY}")
    return found


def _linked_file_problem(target: Path, own: set) -> str | None:
    suffix = target.suffix.lower()
    if suffix in SCRIPT_DOCUMENTS and target not in own:
        what = f"({suffix})" if suffix not in (".html", ".htm") else "(a page the report did not write)"
        return f"is a document that can run script when opened {what}"
    if suffix in _IMAGE_MAGIC:
        kind, magic = _IMAGE_MAGIC[suffix]
        try:
            with open(target, "rb") as fh:
                head = fh.read(8)
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        if not head.startswith(magic):
            return f"is not a {kind} image (its bytes begin {head!r})"
    return None


def problems(root: Path) -> list[str]:
    """Everything :func:`broken_links`, :func:`remote_loads`, :func:`live_markup` and
    :func:`linked_files` find."""
    return broken_links(root) + remote_loads(root) + live_markup(root) + linked_files(root)


# ------------------------------------------------------------------------------ what a person sees
#: the window a reader opens the index in
WINDOW_PX = 1280

#: run in the page once it has loaded: every <details> opened (a reader opens them), then the widest
#: extent of any element (a table inside a scrolling box counts with its full width) and the five
#: widest elements, and where the verdict matrix (``table.matrix``) and its first claim row lie on the
#: page (``matrix``: [top, bottom of the first row] in px from the page's top, null without one), and so
#: the page's lead (``lead``: one's own model's headline table, ``table.yours``, where the page opens with
#: it, else the matrix), written into the DOM for --dump-dom to carry out
_MEASURE = """<script>window.addEventListener('load',function(){setTimeout(function(){
document.querySelectorAll('details').forEach(function(d){d.open=true;});
var w=document.documentElement.scrollWidth,items=[],mx=document.querySelector('table.matrix'),
row=mx?(mx.querySelector('tbody tr')||mx):null,y=function(v){return Math.round(v+window.scrollY);},
ld=document.querySelector('table.yours')||mx,lrow=ld?(ld.querySelector('tbody tr')||ld):null;
document.querySelectorAll('body *').forEach(function(e){var r=e.getBoundingClientRect();
if(r.width>0){var right=Math.ceil(r.right+window.scrollX);
if(right>window.innerWidth){items.push([right,e.tagName.toLowerCase()+(e.className&&e.className.baseVal===undefined?'.'+
String(e.className).split(' ').join('.'):'')+' '+(e.textContent||'').trim().slice(0,40)]);}w=Math.max(w,right);}});
items.sort(function(a,b){return b[0]-a[0];});
var o=document.createElement('pre');o.id='geolip-measure';o.textContent=JSON.stringify({width:w,
inner:window.innerWidth,wide:items.slice(0,5),
matrix:mx?[y(mx.getBoundingClientRect().top),y(row.getBoundingClientRect().bottom)]:null,
lead:ld?[y(ld.getBoundingClientRect().top),y(lrow.getBoundingClientRect().bottom)]:null,
leadkind:ld&&ld!==mx?'yours':'matrix'});
document.body.appendChild(o);},500);});</script>"""


def page_width(page: Path, window: int = WINDOW_PX, timeout: int = 180) -> dict:
    """``{"width", "inner", "wide", "matrix", "lead", "leadkind"}``: how wide ``page`` lays out in a
    ``window``-pixel headless Chromium window (the widest element's right edge, details opened), the widest
    elements that pass the window's edge, and where the verdict matrix lies (``[top, bottom of its first
    claim row]`` in px from the page's top, or None), and the page's lead (``leadkind`` "yours": one's own
    model's headline table; "matrix": the matrix). The page is measured from a hidden copy beside
    it (its relative links resolve), removed afterwards."""
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("page_width needs Chromium (Debian package 'chromium')")
    page = Path(page)
    copy = page.with_name(f".{page.stem}.measure.html")
    text = page.read_text(encoding="utf-8")
    copy.write_text(text.replace("</body>", _MEASURE + "</body>", 1) if "</body>" in text else text + _MEASURE,
                    encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory() as profile_dir:
            cmd = chromium_cmd(chromium, profile_dir, f"--window-size={window},900", "--hide-scrollbars",
                               "--virtual-time-budget=20000", "--dump-dom", copy.resolve().as_uri())
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        copy.unlink(missing_ok=True)
    m = re.search(r"<pre id=\"geolip-measure\">(.*?)</pre>", r.stdout, flags=re.S)
    if not m:
        raise RuntimeError(f"chromium did not measure {page.name} (exit {r.returncode})")
    return json.loads(html.unescape(m.group(1)))


def too_wide(root: Path, window: int = WINDOW_PX) -> list[str]:
    """One line when ``index.html`` lays out wider than a ``window``-pixel window, naming the
    widest elements."""
    return _too_wide(page_width(Path(root) / "index.html", window), window)


def _too_wide(got: dict, window: int) -> list[str]:
    if got["width"] <= window:
        return []
    return [f"index.html: {got['width']} px wide in a {window} px window; widest: "
            + "; ".join(f"{w} px <{what}>" for w, what in got["wide"])]


#: the first screen a reader sees: a 1280 x 800 window (the verdicts must be on it)
FIRST_SCREEN_PX = 800


def below_first_screen(root: Path, window: int = WINDOW_PX, height: int = FIRST_SCREEN_PX) -> list[str]:
    """One line when the lead of ``index.html`` — the verdict matrix, or one's own model's headline table
    where the page opens with it — has its first row below the first screen (``window`` x ``height`` px,
    the page's top); nothing where the page has neither."""
    return _below_first_screen(page_width(Path(root) / "index.html", window), window, height)


def _below_first_screen(measured: dict, window: int, height: int) -> list[str]:
    kind = measured.get("leadkind") or "matrix"
    got = measured.get("lead") if "lead" in measured else measured.get("matrix")
    if not got or got[1] <= height:
        return []
    what = ("the headline table of your model" if kind == "yours" else "the verdict matrix")
    row = "first row" if kind == "yours" else "first claim row"
    return [f"index.html: {what} starts at y = {got[0]} px and its {row} ends at {got[1]} px, "
            f"below the first screen of a {window} x {height} window; move what stands above it below it"]


_WORD = re.compile(r"[^\W\d_](?:[\w'’-]*\w)?", re.U)
#: characters after which a line may break inside a token (identifiers, paths, hyphenated words)
_SOFT = "-/._,:=("


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def broken_words(pdf_text: str, source_text: str) -> list[str]:
    """Words split by a line break inside them: the last token of a line and the first of the next
    make a word of ``source_text`` (the HTML's text) although the first part alone is none
    (``"pentacho" + "ron"``). A break after a hyphen, slash, dot, underscore, comma, colon or
    ``=`` is a break between parts, not inside a word."""
    words = _words(source_text)
    found = []
    lines = [ln.split() for ln in pdf_text.splitlines()]
    for a, b in zip(lines, lines[1:]):
        if not a or not b:
            continue
        head, tail = a[-1], b[0]
        if head[-1] in _SOFT:
            continue
        h = _WORD.findall(head)
        t = _WORD.findall(tail)
        if not h or not t or not head.endswith(h[-1]) or not tail.startswith(t[0]):
            continue
        joined = (h[-1] + t[0]).lower()
        if joined in words and h[-1].lower() not in words:
            found.append(f"{h[-1]}|{t[0]} ({h[-1]}{t[0]})")
    return sorted(set(found))


#: elements that do not separate the words around them
_INLINE = {"a", "abbr", "b", "bdi", "code", "em", "i", "kbd", "mark", "q", "s", "samp", "small", "span", "strong",
           "sub", "sup", "u", "var", "wbr"}


def html_text(page: Path) -> str:
    """The visible text of an HTML page (scripts and styles left out)."""
    class _Text(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.out, self.skip = [], 0

        def handle_starttag(self, tag, attrs):
            self.skip += tag in ("script", "style")
            if tag not in _INLINE:  # a block, cell or line break separates words
                self.out.append(" ")

        def handle_endtag(self, tag):
            self.skip -= tag in ("script", "style") and self.skip > 0

        def handle_data(self, data):
            if not self.skip:
                self.out.append(data)

    p = _Text()
    p.feed(Path(page).read_text(encoding="utf-8"))
    return "".join(p.out)


def empty_sections(page: Path) -> list[str]:
    """One line per ``<h2>`` section of ``page`` with nothing under it (no text, image or table)
    before the next ``<h2>``."""
    class _Sections(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.sections: list[list] = []  # [title, content chars]
            self.in_h2, self.skip = False, 0

        def handle_starttag(self, tag, attrs):
            self.skip += tag in ("script", "style")
            if tag == "h2":
                self.in_h2 = True
                self.sections.append(["", 0])
            elif tag in ("img", "table", "svg") and self.sections:
                self.sections[-1][1] += 1

        def handle_endtag(self, tag):
            if tag == "h2":
                self.in_h2 = False
            self.skip -= tag in ("script", "style") and self.skip > 0

        def handle_data(self, data):
            if self.skip or not self.sections:
                return
            if self.in_h2:
                self.sections[-1][0] += data
            else:
                self.sections[-1][1] += len(data.strip())

    p = _Sections()
    p.feed(Path(page).read_text(encoding="utf-8"))
    return [f"{Path(page).name}: section '{t.strip()}' is empty" for t, n in p.sections if not n]


def reader_view_problems(root: Path, window: int = WINDOW_PX) -> list[str]:
    """What a person sees, beyond :func:`problems`: ``index.html`` no wider than the window, its
    verdict matrix on the first screen (:func:`below_first_screen`), no
    empty section in the index or the PDF's document, and no word of the PDF split by a line
    break (``pdftotext`` of ``report.pdf`` against the words of the document it was printed from)."""
    root = Path(root)
    got = page_width(root / "index.html", window)  # one Chromium run for both
    out = _too_wide(got, window) + _below_first_screen(got, window, FIRST_SCREEN_PX) + empty_sections(root / "index.html")
    doc = root / "_static" / "report_document.html"
    pdf = root / "report.pdf"
    if doc.is_file():
        out += empty_sections(doc)
    if pdf.is_file() and doc.is_file():
        if shutil.which("pdftotext") is None:
            raise RuntimeError("reader_view_problems needs pdftotext (Debian package 'poppler-utils')")
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, timeout=120).stdout
        out += [f"report.pdf: a word split by a line break: {w}" for w in broken_words(text, html_text(doc))]
    return out
