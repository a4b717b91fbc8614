"""Pure chart builders: computed results in, ``plotly.graph_objects.Figure`` out.

No Streamlit here (the app and the decision record draw the same figures) and no metric math:
every number drawn comes from :mod:`metrics_core` (curves, reliability tables, gate grids,
sweeps, per-query arrays). What a builder does itself is display work only: thinning a long
curve, counting K values for a histogram and quartiles for a box. Titles and axis labels are set
on every figure; the synthetic-data label is shown by the page, not the chart.

- :mod:`~metrics_core.report.figures.curves`: ROC and precision-recall with operating points,
  the decision curve;
- :mod:`~metrics_core.report.figures.calibration`: the reliability diagram;
- :mod:`~metrics_core.report.figures.gate`: the (τ_neg, τ_pos) grid, the gate's flow, the
  risk–coverage curve, the dynamic K;
- :mod:`~metrics_core.report.figures.breakdowns`: per criterion, per fold, per cohort, per query;
- :mod:`~metrics_core.report.figures.runs`: several runs compared;
- :mod:`~metrics_core.report.figures.style`: what they share (escaping, layout, colours).

The figures of one evaluation, taking the evaluation itself, are
:mod:`metrics_core.report.evaluation_figures` (``metrics_core.report.roc_figure(evaluation)``).
"""
