"""Constants of the report pages: MathJax configuration, marks, page and print CSS."""
from __future__ import annotations




MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"


#: set before MathJax.js loads (window.MathJax is MathJax 2.7's documented pre-load config)
MATHJAX_PRECONFIG = ("<script>window.MathJax={menuSettings:{renderer:'NativeMML'},messageStyle:'none',"
                     "tex2jax:{inlineMath:[['$','$'],['\\\\(','\\\\)']],processEscapes:true}};</script>")


CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


SEPARATED = "✱"


BIAS_MARK = "†"


MAX_KEY_FIGURES = 3


#: glyphs the first fonts lack (CJK tokens such as "##永" in notebook 01's id-range table) come from
#: Debian's fonts-droid-fallback (scripts/setup.sh); geolip_lib.plotting falls back to it too
FALLBACK_FONT_CSS = ("body,.jp-RenderedHTMLCommon{font-family:var(--jp-content-font-family,system-ui,sans-serif),"
                     "'Droid Sans Fallback'}")


CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif,'Droid Sans Fallback';max-width:1200px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #446;padding-bottom:.2em}h2{margin-top:2em;color:#335;border-bottom:1px solid #ccd}
table.composite{border-collapse:collapse;font-size:.86em;margin:.6em 0 1em}
table.composite th,table.composite td{border:1px solid #ccd;padding:.25em .5em;text-align:right;vertical-align:top}
table.composite th{background:#eef;text-align:center}table.composite td.model{text-align:left;font-weight:600}
span.null{display:block;color:#666;font-size:.85em}div.tablewrap{overflow-x:auto;max-width:100%}span.null.sep{color:#1a6b2a}
span.kind{display:block;color:#555;font-size:.78em;font-style:italic}span.kind.forced{color:#6a3d9a;font-weight:700;font-style:normal}
.fail{color:#b00}.problem{color:#8a5a00;font-size:.9em}.note{color:#555;font-size:.9em}.question{margin:.3em 0 .8em}
a{color:#2a5db0}.figs{display:flex;flex-wrap:wrap;gap:12px;margin:.5em 0}
figure.thumb{margin:0;width:370px}figure.thumb img{width:100%;border:1px solid #ccd}
figure.thumb figcaption{font-size:.8em;color:#555}
section.claims{border:2px solid #446;border-radius:6px;padding:.3em 1em 1em;margin:1em 0 2em;background:#fbfbfe}
table.claims{border-collapse:collapse;font-size:.86em;margin:.5em 0}table.claims th,table.claims td{border:1px solid #ccd;
padding:.25em .5em;text-align:left;vertical-align:top}table.claims th{background:#eef}
table.claims td.reason{min-width:22em}figure.wide{margin:.5em 0;max-width:900px}figure.wide img{width:100%}
.v-held{color:#1a7f37;font-weight:700}.v-not-held{color:#c62828;font-weight:700}.v-not-testable{color:#666;font-weight:700}
.v-held-null{color:#8a6d00;font-weight:700}.v-undecided{color:#1f5fa8;font-weight:700}.v-forced{color:#6a3d9a;font-weight:700}
footer{margin-top:3em;border-top:2px solid #446;padding-top:.5em;font-size:.85em;color:#444}
footer table{border-collapse:collapse;font-size:.95em}footer td,footer th{border:1px solid #dde;padding:.15em .45em;
text-align:left}
"""


PRINT_CSS = """
@page{size:A4;margin:12mm 11mm}
body{max-width:none;margin:0;padding:0;font-size:9pt;line-height:1.25}
figure.thumb{width:31.5%}figure.thumb.small{width:19%}h2.appendix{margin-top:1.2em;border-top:2px solid #446;padding-top:.3em}
.jp-RenderedHTMLCommon tbody tr:nth-child(n+11){display:none}
.jp-RenderedHTMLCommon table:has(tbody tr:nth-child(11)) caption::after{content:" (first 10 rows here; all in the executed notebook)"}h2,h3{break-after:avoid}
.jp-OutputArea-output img{max-width:60%;max-height:7.5cm;break-inside:avoid}
figure,tr{break-inside:avoid}
.jp-RenderedHTMLCommon table{font-size:7pt}.jp-RenderedHTMLCommon td,.jp-RenderedHTMLCommon th{padding:1px 4px}
.jp-InputPrompt,.jp-OutputPrompt,.jp-InputArea-prompt,.jp-OutputArea-prompt{display:none}
.jp-Cell{padding:1px 0}.jp-RenderedHTMLCommon p{margin:.3em 0}
table.composite{font-size:7pt;width:100%}table.composite td,table.composite th{padding:1px 3px}
span.null{white-space:normal}
table.claims{font-size:7pt;width:100%;table-layout:auto}table.claims td.reason{min-width:0}
table.claims td,table.claims th{padding:1px 3px;overflow-wrap:break-word;hyphens:auto}
table.claims td.title,table.claims td.seed-value,table.claims td.verdict,table.claims td.seed-models,table.claims td.reading,table.claims td.model,table.claims td.scope,table.claims td.measured,table.claims td.project-definition{min-width:4.5em}table.claims td.reason,table.claims td.measured-as,table.claims td.nulls,table.claims td.stand-ins,table.claims td.null-explains{min-width:6em}
section.claims div.tablewrap{overflow:visible}table.claims td,table.claims th{word-break:break-word}
table.claims td.nulls span.null{white-space:normal}section.claims{break-after:page}
.figs{display:block}figure.thumb{display:inline-block;vertical-align:top;margin:0 .6% .4em 0}
"""
