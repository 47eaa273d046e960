"""Constants of the report pages: MathJax configuration, marks, page and print CSS."""
from __future__ import annotations

from ..claims.rules import VERDICT_CLASS
from ..claims.tables import VERDICT_COLORS


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
figure.thumb{margin:0;width:calc(50% - 6px)}figure.thumb.lead{width:100%;max-width:1000px}
figure.thumb img{width:100%;border:1px solid #ccd}figure.thumb.small{width:calc(33% - 8px)}
figure.thumb figcaption{font-size:.8em;color:#555}
table.composite.transposed th.metric{text-align:left;max-width:16em}table.composite th{max-width:14em}
div.about{font-size:.92em;margin:.5em 0 1em}div.about h3{margin:.2em 0}div.about ul.seeds{margin:.2em 0 .4em}
p.run{font-size:.95em;margin:.3em 0}ul.notrun{color:#6a4b00;font-size:.88em;margin:.3em 0 .6em}
p.notrun-line{color:#6a4b00;font-size:.9em}
table.matrix{border-collapse:collapse;font-size:.86em;margin:.5em 0}
table.matrix th,table.matrix td{border:1px solid #ccd;padding:.25em .45em;vertical-align:middle}
table.matrix th{background:#eef;text-align:center}table.matrix th.model{max-width:9em}
table.matrix td.claim{font-weight:600;max-width:13em}table.matrix td.seedv{max-width:11em;color:#444}
table.matrix td.mx{text-align:center;min-width:6.5em;max-width:11em}table.matrix td.seedverdict{max-width:14em}
table.matrix td.seedverdict .untested{display:block;font-style:normal;font-size:.78em;color:#555}
table.matrix td.mx .glyph{display:block;font-size:1.35em;line-height:1.1}
table.matrix td.mx .mv{display:block;color:#222;font-weight:400;font-size:.92em}
ul.legend{display:flex;flex-wrap:wrap;gap:.2em 1.4em;list-style:none;padding:0;font-size:.8em;color:#444;margin:.3em 0}
ul.legend li{max-width:36em}ul.bottom{padding-left:1.2em}ul.bottom li{margin:.2em 0}
figure.matrixfig{margin:.6em 0;max-width:900px}figure.matrixfig img{width:auto;max-width:100%}
details.claims-details{margin:.8em 0}details.claims-details>summary{cursor:pointer;font-weight:600;color:#335}
dl.glossary dt{font-weight:700;margin-top:.3em}dl.glossary dd{margin:0 0 0 1.5em}
section.claims{border:2px solid #446;border-radius:6px;padding:.3em 1em 1em;margin:1em 0 2em;background:#fbfbfe}
section.claims h2.first{margin-top:.3em}
section.yours{border:2px solid #446;border-radius:6px;padding:.3em 1em 1em;margin:1em 0 2em}section.yours h2.first{margin-top:.3em}
div.yours-grid{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}div.yours-grid div.tablewrap{flex:1 1 560px}
div.yours-figs{flex:0 1 460px;display:flex;flex-direction:column;gap:10px;margin-top:.6em}
figure.thumb.traj{width:100%;margin:0}figure.thumb.traj img{width:100%}
table.composite.yours td.nb{text-align:left;font-weight:600;max-width:12em}table.composite.yours td.metric{text-align:left;max-width:16em}h1{margin:.2em 0 .4em}
table.claims{border-collapse:collapse;font-size:.86em;margin:.5em 0}table.claims th,table.claims td{border:1px solid #ccd;
padding:.25em .5em;text-align:left;vertical-align:top}table.claims th{background:#eef}
table.claims{width:100%}table.claims td.reason{min-width:14em}
figure.wide{margin:.5em 0;max-width:900px}figure.wide img{width:100%}
footer{margin-top:3em;border-top:2px solid #446;padding-top:.5em;font-size:.85em;color:#444}
footer table{border-collapse:collapse;font-size:.95em}footer td,footer th{border:1px solid #dde;padding:.15em .45em;
text-align:left}
"""


#: each verdict's colour, the figures' too (claims.tables.VERDICT_COLORS: one palette)
CSS += "".join(f".{cls}{{color:{VERDICT_COLORS[v]};font-weight:700}}" for v, cls in VERDICT_CLASS.items()) + "\n"


PRINT_CSS = """
@page{size:A4;margin:12mm 11mm}
body{max-width:none;margin:0;padding:0;font-size:9pt;line-height:1.25}
figure.thumb{width:31.5%}figure.thumb.lead{width:62%}figure.thumb.small{width:19%}
h2.appendix{margin-top:1.2em;border-top:2px solid #446;padding-top:.3em}
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
table.claims td,table.claims th{padding:1px 3px}
table.matrix{font-size:7.5pt;width:100%}table.matrix td.mx{min-width:0}table.matrix th,table.matrix td{padding:1px 3px}
section.claims div.tablewrap,div.tablewrap{overflow:visible}table.claims td.nulls span.null{white-space:normal}
section.claims{padding:.2em .6em .5em;margin:.5em 0 1em}div.about{font-size:8.5pt}
figure.matrixfig{max-width:55%;margin:.3em auto}details.claims-details{display:none}
ul.legend{font-size:7.5pt;gap:.1em 1.2em}ul.legend .meaning{display:none}h1{font-size:16pt;margin:.2em 0}
ul.bottom{font-size:8.5pt;margin:.2em 0}ol.toc{columns:2;font-size:8.5pt;margin:.2em 0}section.claims h3{margin:.4em 0 .2em}
.figs{display:block}figure.thumb{display:inline-block;vertical-align:top;margin:0 .6% .4em 0}
div.yours-grid,div.yours-figs{display:block}figure.thumb.traj{width:55%}
.jp-RenderedHTMLCommon table.yours tbody tr{display:table-row}section.yours{padding:.2em .6em .5em;margin:.5em 0 1em}
"""
