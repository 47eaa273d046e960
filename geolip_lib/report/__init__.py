"""Assemble the findings report of one profile: per-job HTML, ``index.html``, ``report.pdf``.

Reads back what the jobs recorded (``reports/<profile>/<notebook>/<job>/``):

- each ``executed.ipynb`` -> ``executed.html`` (nbconvert, lab template, code shown);
- ``index.html`` leads with findings: for each notebook its question, one to three key
  figures as thumbnails linking to the executed notebook, and the composite table of
  headline numbers across models — ``value [95 % interval]`` at the precision the interval
  supports, every null model beside it, ``✱`` where the interval excludes that null — then
  the failed jobs with their one-line errors and a provenance footer (commit, packages,
  devices, models and weight digests, wall times);
- ``report.pdf``: the same findings, then each notebook's narrative with its figures and
  tables (code, printed streams and plain-text dumps left out), printed by headless
  Chromium (Debian ``chromium``). The executed notebooks stay as linked HTML.

Math renders offline: MathJax 2.7 is copied from the ``jupyter-server-mathjax`` package into
``<profile>/_static/mathjax``. That copy lacks MathJax's TeX fonts ("File failed to load:
.../fonts/TeX/fontdata.js"), and the STIX-Web fonts it has are web fonts that a browser
refuses to load from ``file://`` pages (CORS). So every page selects MathJax's NativeMML
output before MathJax loads: TeX becomes MathML, which Chromium and Firefox render
natively, with no font files.

Modules: :mod:`.records` (jobs read back), :mod:`.pages` (the findings page) from its sections —
:mod:`.own_model` (the lead where no model of the seed's ran), :mod:`.claims_section` (the verdict
matrices), :mod:`.headline_tables`, :mod:`.notebook_sections`, :mod:`.markup` (safe HTML), all named
in :mod:`.sections` — :mod:`.notebook_doc` (executed notebooks as HTML, the PDF's notebook),
:mod:`.printing` (Chromium, pypdf), :mod:`.builder` (:func:`build`), :mod:`.style`, :mod:`.checks`
(links resolve, nothing from the network, no live markup: what a built root must pass).

Safety: every text from a profile, a params file, a notebook or a ``metrics.json`` is escaped
or sanitised where it enters HTML (``html.escape`` + ``urllib.parse.quote`` for ids in links,
mistune with escaping on for a notebook's question, nbconvert's ``sanitize_html`` with a bleach
allow list for executed notebooks); figures are read only from inside their own job directory
(:mod:`.records`); the PDF is printed with dialogs disabled and a time budget scaled to its pages.
"""
from . import checks
from .builder import build
from .notebook_doc import document_notebook, install_mathjax, key_figure_grid, narrative_cells, notebook_html
from .pages import findings_body, index_html, page
from .printing import chromium_cmd, console_messages, find_chromium, pdf_image_count, pdf_text, print_pdf
from .records import JobRecord, collect
from .sections import (CLAIMS_NOTEBOOK, composite_table, figures_html, key_figures, lead_record, provenance_footer,
                       seed_claims_section, title_and_question)
from .style import (BIAS_MARK, CHROMIUM_NAMES, CSS, MATHJAX_CONFIG, MATHJAX_PRECONFIG, MAX_KEY_FIGURES, PRINT_CSS,
                    SEPARATED)

__all__ = ["build", "checks", "collect", "composite_table", "console_messages", "findings_body", "index_html",
           "install_mathjax", "key_figures", "pdf_image_count", "pdf_text", "print_pdf", "provenance_footer",
           "JobRecord", "document_notebook", "key_figure_grid", "narrative_cells", "notebook_html", "page",
           "chromium_cmd", "find_chromium", "CLAIMS_NOTEBOOK", "figures_html", "lead_record",
           "seed_claims_section", "title_and_question", "BIAS_MARK", "CHROMIUM_NAMES", "CSS", "MATHJAX_CONFIG",
           "MATHJAX_PRECONFIG", "MAX_KEY_FIGURES", "PRINT_CSS", "SEPARATED"]
