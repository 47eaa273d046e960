"""The findings' HTML sections, by name, from the modules that make them: :mod:`.markup` (safe links,
tooltips, verdict words), :mod:`.headline_tables` (composite tables of headline numbers),
:mod:`.notebook_sections` (titles, questions, key figures, sections not run, trajectories,
quantization, provenance) and :mod:`.claims_section` (the verdict matrix and its details)."""
from __future__ import annotations

from .. import claims
from ..results import nonempty_columns
from .claims_section import (CLAIMS_NOTEBOOK, MATRIX_MAX_COLUMNS, PAPER_RUN, SEED_CLAIMS, SEEDS_MODELS,
                             _claims_data, _claims_table, _mx_cell, _paper_jobs, _seed_verdict, claims_file_of,
                             claims_matrix_figure, claims_record, claims_records, matrix_table, seed_claims_section,
                             untested_hint, verdict_legend, what_this_tests)
from .headline_tables import MAX_TABLE_COLUMNS, _cell, _chunks, _shorten_methods, composite_table, duplicate_columns
from .markup import (_th, _verdict, _verdict_glyph, anchor, breakable, executed_link, fragment, href, linked,
                     linked_html, tip)
from .notebook_sections import (QUANT_COLUMNS, _img_src, _md_inline, _quant_cell, _traj_cell, figure_title,
                                figures_html, key_figures, lead_record, not_run, not_run_html, provenance_footer,
                                quantization_html, title_and_question, trajectory_html)

__all__ = ["claims", "nonempty_columns", "CLAIMS_NOTEBOOK", "MATRIX_MAX_COLUMNS", "PAPER_RUN", "SEED_CLAIMS",
           "SEEDS_MODELS", "claims_file_of", "claims_matrix_figure", "claims_record", "claims_records", "matrix_table",
           "seed_claims_section", "untested_hint", "verdict_legend", "what_this_tests", "MAX_TABLE_COLUMNS",
           "composite_table", "duplicate_columns", "anchor", "breakable", "executed_link", "fragment", "href", "linked",
           "linked_html", "tip", "QUANT_COLUMNS", "figure_title", "figures_html", "key_figures", "lead_record",
           "not_run", "not_run_html", "provenance_footer", "quantization_html", "title_and_question",
           "trajectory_html", "_claims_data", "_claims_table", "_mx_cell", "_paper_jobs", "_seed_verdict", "_cell",
           "_chunks", "_shorten_methods", "_th", "_verdict", "_verdict_glyph", "_img_src", "_md_inline", "_quant_cell",
           "_traj_cell"]
