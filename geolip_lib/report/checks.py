"""Checks of a built report, as a reader would meet it: every relative link resolves, nothing
is loaded from the network, no element carries an event handler or a ``javascript:`` link.

Read with the standard library's HTML parser (no rendering); used by the tests and usable on
any built root (``report.checks.problems(Path("reports/demo"))``).
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

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


def problems(root: Path) -> list[str]:
    """Everything :func:`broken_links`, :func:`remote_loads` and :func:`live_markup` find."""
    return broken_links(root) + remote_loads(root) + live_markup(root)
