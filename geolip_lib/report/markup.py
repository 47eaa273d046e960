"""Safe HTML pieces of the report: relative links, anchors, tooltips, column headers, verdict words.

Every text that reaches a page goes through here or ``html.escape``: ids are percent-encoded
and escaped (:func:`href`), tooltips escaped (:func:`tip`)."""
from __future__ import annotations

import html
import re
from urllib.parse import quote

from .. import claims
from ..claims import tables as claims_tables
from . import glossary
from .records import JobRecord

# ------------------------------------------------------------------------------ safe HTML
def href(*parts: str, prefix: str = "") -> str:
    """A relative link to ``parts`` (a notebook, a job id, a file), safe inside a quoted attribute.

    Each part is percent-encoded (``urllib.parse.quote``) and the whole is HTML-escaped: a job id
    such as ``a'><img src=x onerror=alert(1)>`` stays one path step, never markup. ``prefix``
    is the report's own ``""`` or ``"../"``.
    """
    return html.escape(prefix + "/".join(quote(str(p), safe="") for p in parts), quote=True)


def anchor(name: str) -> str:
    """The ``id`` of a notebook's section (escaped; :func:`fragment` links to it)."""
    return html.escape(name, quote=True)


def fragment(name: str) -> str:
    return "#" + html.escape(quote(name, safe=""), quote=True)


def executed_link(rec: JobRecord, prefix: str = "") -> str | None:
    """The job's executed-notebook page, when it has one (the builder writes it from executed.ipynb
    before the index, and removes it where the notebook cannot be converted)."""
    if not rec.ok or not (rec.path / "executed.html").is_file():
        return None
    return href(rec.notebook, rec.job_id, "executed.html", prefix=prefix)


def linked_html(inner: str, link: str | None) -> str:
    """Markup ``inner`` (already safe) as a link to ``link`` (already safe), or as it is."""
    return f"<a href='{link}'>{inner}</a>" if link else inner


def linked(text: str, link: str | None) -> str:
    """``text`` (escaped) as a link to ``link`` (already safe), or plain where there is none."""
    return f"<a href='{link}'>{html.escape(text)}</a>" if link else html.escape(text)


def _verdict(v: str) -> str:
    """A verdict word, coloured, with its glyph and its meaning as a tooltip. The status is
    matched exactly (a prefix match gave "held, but the null gives it too" the glyph and
    meaning of "held"); any other text gets no glyph and no meaning."""
    cls = claims.VERDICT_CLASS.get(v, "v-not-testable")
    glyph = claims_tables.VERDICT_GLYPHS.get(v, "")
    return f"<span class='{cls}'{tip(claims_tables.VERDICT_MEANING.get(v, ''))}>{glyph + ' ' if glyph else ''}{html.escape(v)}</span>"


def tip(text: str) -> str:
    """`` title='...'`` (escaped) for an element's tooltip, or nothing."""
    return f" title='{html.escape(text, quote=True)}'" if text else ""


def _th(label: str, cls: str = "", attrs: str = "") -> str:
    """A column header with its explanation as a tooltip (:func:`.glossary.explain`)."""
    klass = f" class='{html.escape(cls, quote=True)}'" if cls else ""
    return f"<th{klass}{tip(glossary.explain(label))}{attrs}>{html.escape(label)}</th>"


def breakable(text: str) -> str:
    """Escaped ``text`` whose long identifiers (paths, ``metrics.claims.x['y']``) may wrap after
    ``/ . _ , :`` (``<wbr>``): a narrow column breaks them there, never inside a word."""
    out = []
    for tok in re.split(r"(\s+)", str(text)):
        if len(tok) > 18 and not tok.isspace():
            out.append("<wbr>".join(html.escape(p) for p in re.split(r"(?<=[/._,:])", tok)))
        else:
            out.append(html.escape(tok))
    return "".join(out)


def _verdict_glyph(v: str) -> str:
    cls = claims.VERDICT_CLASS.get(v, "v-not-testable")
    return f"<span class='{cls} glyph'{tip(v + ': ' + claims_tables.VERDICT_MEANING.get(v, ''))}>{claims_tables.VERDICT_GLYPHS.get(v, '')}</span> "
