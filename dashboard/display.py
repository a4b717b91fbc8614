"""Shared page parts: the page header with the data label, number formatting, the gate
card's table, tables and download buttons (the gate card itself: :mod:`dashboard.gate_card`).
Formatting only; every number comes from metrics_core.
"""

from __future__ import annotations

import logging
import math
import traceback
from collections.abc import Callable
from types import MappingProxyType

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import chart_data
from dashboard.safe_text import escape_markdown, neutralise_frame_text
from metrics_core import registry
from metrics_core.errors import InputError
from metrics_core.report import export
from metrics_core.report.wording import (
    KINDS,
    UNDEFINED,
    finite,
    fmt,
    fmt_interval,
    kind_of,
    no_interval_reason,
    no_interval_words,
    plain_subset,
    undefined_reason,
    verdict_frame,
    verdict_summary,
)

__all__ = [
    "GATE_LABELS",
    "GATE_UNDEFINED",
    "HEADLINE",
    "KINDS",
    "PLOTLY_CONFIG",
    "RECORD_COLUMN_CONFIG",
    "RECORD_COLUMN_ORDER",
    "TABLE_ROWS",
    "UNDEFINED",
    "VERDICTS",
    "calibration_verdict",
    "checks_frame",
    "ci_text",
    "column_config_for",
    "dash",
    "dashed",
    "download_csv",
    "evaluated_text",
    "fmt",
    "fmt_interval",
    "fmt_metric",
    "fmt_p",
    "fmt_probability",
    "fold_summary_frame",
    "gate_card_frame",
    "gate_denominator",
    "gold_caption",
    "group_frame",
    "headline_frame",
    "headline_tiles",
    "kind_of",
    "live_chart",
    "metric_tile",
    "on_demand",
    "operating_points_frame",
    "page_header",
    "plot",
    "ranking_frame",
    "records_frame",
    "show_failure",
    "show_records",
    "show_table",
    "small_n_note",
    "table_height",
    "targets_frame",
    "thresholds_caption",
    "tpr_frame",
    "undefined_reason",
    "verdict_frame",
    "verdict_lines",
    "verdict_summary",
]

#: Plotly options: no logo, no link to external editors (nothing leaves the page).
PLOTLY_CONFIG = {"displaylogo": False, "showLink": False, "showSendToCloud": False}
#: Rows shown in an on-page table; the download holds all rows.
TABLE_ROWS = 1000

#: The same formats for table columns (sprintf, as st.column_config.NumberColumn takes them).
COLUMN_FORMATS = MappingProxyType({"count": "%,d", "per_1000": "%,.1f", "average": "%,.1f",
                                   "score": "%.3f"})
#: Plain headers of table columns that are settings rather than metrics.
COLUMN_LABELS = MappingProxyType({"gamma": "γ", "tau_neg": "τ_neg", "tau_pos": "τ_pos",
                                  "ci_lo": "95% CI low", "ci_hi": "95% CI high",
                                  "ci95_lo": "95% CI low", "ci95_hi": "95% CI high",
                                  "n_positive": "with evidence", "small_n": "small cell",
                                  "mean_confidence": "mean predicted p",
                                  "observed_frequency": "observed share",
                                  "wilson_lo": "Wilson 95% low", "wilson_hi": "Wilson 95% high",
                                  "positive_rate": "positive rate",
                                  "auroc_defined": "AUROC defined"})
#: Row height (px) of tables with long text: above 4 rem, Streamlit wraps text in cells.
WRAP_ROW_HEIGHT = 72
#: Default row height (px) of st.dataframe, and the header.
_ROW_HEIGHT = 35
#: Tables with more rows than this scroll inside a box of this many rows (said in a caption).
MAX_VISIBLE_ROWS = 60
#: Text columns whose longest cell has more characters than this are wrapped.
_LONG_TEXT = 80

#: The record tables: text columns shown, the numeric ones kept (hidden) for exactness.
#: Widths in pixels: the columns fit the main area of a 1,400 px wide window, text wraps.
RECORD_COLUMN_ORDER = ("label", "shown", "ci95", "ci_method", "computed_on", "n",
                       "interpretation", "metric")
RECORD_COLUMN_CONFIG = {
    "label": st.column_config.TextColumn("metric", pinned=True, width=120),
    "shown": st.column_config.TextColumn("value", width=62, help="— is undefined; the "
                                         "interval column says why."),
    "ci95": st.column_config.TextColumn("95% CI", width=112),
    "ci_method": st.column_config.TextColumn("interval", width=120, help="How the 95% "
                                             "interval was computed, or why there is none."),
    "computed_on": st.column_config.TextColumn(
        "computed on", width=150, help="The queries the number is computed on. How it is "
        "computed (the ranking, dynamic-K and calibration variants) is under Help & glossary "
        "and in the exported tables (column variant)."),
    "n": st.column_config.NumberColumn("n", format=COLUMN_FORMATS["count"], width=62),
    "interpretation": st.column_config.TextColumn("interpretation", width=200),
    "metric": st.column_config.TextColumn("id", width=90, help="The metric's name in "
                                          "metrics_master.json and the CSV exports."),
}

#: The gate card's metrics and their labels (from the metric registry).
GATE_LABELS = {name: registry.label(name) for name in (
    "screening_sensitivity", "screening_fn_per_1000", "alert_precision", "alert_rate_per_1000",
    "neg_rate", "uncertain_rate", "pos_rate")}

#: The overview's headline metrics (the registry's headline flags, at K = 10 and FPR targets).
HEADLINE = tuple(registry.headline(
    [s.name for s in registry.SPECS if not s.family]
    + ["tpr@fpr=0.01", "tpr@fpr=0.05", "recall@10", "ndcg@10", "map@10"]))


def fmt_p(p) -> str:
    """A p-value as shown in the app and the record: ``< 0.001`` below 0.001, else three
    decimals cut (never rounded) towards 0, so a p below 0.05 never reads 0.050.

    >>> fmt_p(0.0000312), fmt_p(0.0496), fmt_p(0.5), fmt_p(None)
    ('< 0.001', '0.049', '0.500', '—')
    """
    value = finite(p)
    if value is None:
        return UNDEFINED
    if value < 0.001:
        return "< 0.001"
    return _cut(value, 3)


def fmt_probability(p, digits: int = 4) -> str:
    """A predicted probability beside its thresholds: ``digits`` decimals cut (never rounded)
    towards 0, so a p below a threshold never prints equal to or above it
    (0.09956 is ``0.0995``, not ``0.100`` beside τ_neg = 0.1).

    >>> fmt_probability(0.099559), fmt_probability(0.1), fmt_probability(0.6)
    ('0.0995', '0.1000', '0.6000')
    """
    value = finite(p)
    return UNDEFINED if value is None else _cut(value, digits)


def _cut(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, cut towards 0 on its shortest decimal form (the
    binary float 0.1 is 0.1000, not 0.0999)."""
    from decimal import ROUND_DOWN, Decimal

    return str(Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits),
                                                   rounding=ROUND_DOWN))


def fmt_metric(name: str, value) -> str:
    """``value`` of metric ``name`` in its registry kind, e.g. ``fmt_metric("fn", 449)``."""
    return fmt(value, kind_of(name))


def dash(value, digits: int = 4) -> str:
    """A RAG metric value as shown: fixed decimals, "—" when undefined (never 0; contract §12).

    >>> dash(float("nan")), dash(0.5), dash(None)
    ('—', '0.5000', '—')
    """
    value = finite(value)
    return UNDEFINED if value is None else f"{value:.{digits}f}"


def dashed(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """``frame`` with the given float columns formatted by :func:`dash` (text columns)."""
    out = frame.copy()
    for column in columns:
        out[column] = [dash(v) for v in frame[column]]
    return out


def page_header(title: str, v, *, caption: str | None = None,
                thresholds: bool = True) -> None:
    """Page title, the data label (synthetic data say so), the active filter and, unless
    ``thresholds`` is false (a page fragment then draws :func:`thresholds_caption` itself,
    next to the threshold controls), the thresholds and their provenance."""
    st.title(title)
    source_label = escape_markdown(v.source.label)
    if v.source.synthetic:
        st.info(f"**{source_label}**", icon=":material/science:")
    else:
        st.caption(f"Data: {source_label}")
    text = evaluated_text(v)
    if caption:
        text += f" · {caption}"
    st.caption(text)
    gold_caption(v)
    if thresholds:
        thresholds_caption(v)


def evaluated_text(v) -> str:
    """``Evaluated: …``, the queries the view's numbers are of: the filter in words and, when
    one is active (a cohort, a fold, criteria), how many queries, positives and posts it
    keeps, so that every page says the size of what it shows."""
    text = f"Evaluated: {escape_markdown(v.filters.describe())}"
    if v.filters.active:
        s = v.evaluation.summary
        text += (f" · {s['n_queries']:,} queries ({s['n_positive']:,} with evidence) on "
                 f"{s['n_posts']:,} posts")
    return text


def intervals_hint(v) -> str:
    """What gives the view ``v`` its bootstrap intervals: the switch when it is off; with the
    switch on and 0 resamples (a link's or a settings file's ``bootstrap = 0``), the resamples
    (the switch the hint would name is already on)."""
    if v.show_bootstrap and v.config.bootstrap == 0:
        return "set *Bootstrap resamples* above 0 under *Uncertainty*"
    return "switch on *Compute bootstrap CIs* under *Uncertainty*"


def gold_caption(v) -> None:
    """Which gold labels the view is computed on (the ``gold`` setting, contract §14)."""
    with st.container(key="gold_header"):
        st.caption(f"**Gold labels: {escape_markdown(v.gold)}.**")


def thresholds_caption(v) -> None:
    """The thresholds of the view and whether each was pre-specified or exploratory."""
    from dashboard import provenance, state

    text = (escape_markdown(provenance.describe_thresholds(v.config, v.marks, v.guarantees))
            + ". Exploratory: moved or found on the data shown, so the numbers computed with "
            "it are optimistic; pre-specified: the default, typed in, or loaded from settings "
            "or a link.")
    if state.GUARANTEED in v.marks.values():
        text += (" Guaranteed: found on the data with a guarantee for new queries like the "
                 "calibration data (Decision support's guarantee mode; the numbers computed "
                 "on these data with it are still optimistic, the guarantee is not).")
    st.caption(text, help="STARD 2015: report whether cut-offs were pre-specified or "
                          "exploratory.")


def show_failure(exc: BaseException) -> None:
    """A plain message in place of a view that failed (the app's run or a page fragment's);
    the traceback (without the exception text) goes to the server log."""
    if isinstance(exc, InputError):
        st.error(escape_markdown(exc.render()), icon=":material/error:")
        return
    logging.getLogger("dashboard").warning("view failed: %s\n%s", type(exc).__name__,
                                           "".join(traceback.format_tb(exc.__traceback__)))
    st.error(f"Something went wrong computing this view: {type(exc).__name__}",
             icon=":material/error:")


def plot(fig, *, key: str) -> None:
    """Show a plotly figure (no logo, no external resources)."""
    st.plotly_chart(fig, config=PLOTLY_CONFIG, key=key)


def on_demand(label: str, *, key: str, icon: str | None = None):
    """An expander whose content is drawn only while it is open (opening or closing it reruns
    the page): the open expander to draw into, or None while it is closed. For tables beside
    a slider, which would otherwise be redrawn on every move, and for sections that start
    closed (the browser draws no element of theirs on each open of the page)."""
    table = st.expander(label, key=key, on_change="rerun", icon=icon)
    return table if table.open else None


def live_chart(spec: dict, *, key: str) -> None:
    """Show a Vega-Lite chart of :mod:`dashboard.live_charts` in a container keyed ``key``.

    The chart element itself takes no key: a keyed chart is identified by its data too, so
    the browser would draw it anew on every change instead of updating its data in place.
    """
    with st.container(key=key):
        # (the data sets as Arrow bytes, those of the curves made once: chart_data)
        st.vega_lite_chart(spec=chart_data.arrow_datasets(spec, chart_data.session_store()),
                           width="stretch")


def column_config_for(frame: pd.DataFrame, given: dict | None = None, *,
                      pin: str | None = None) -> dict:
    """Column configuration of a page table: plain labels, number formats, wrapped text.

    Every column ``given`` does not configure gets one: a column named after a metric shows
    its registry label (the column keeps its id, so exports and tests still find it) and the
    format of its kind (:func:`kind_of`); other number columns are counts or scores; long text
    is wide. ``pin`` (default: the first column) stays visible while scrolling sideways.
    """
    config = dict(given or {})
    columns = [str(c) for c in frame.columns]
    pin = columns[0] if pin is None and columns else pin
    for column in columns:
        series = frame[column]
        if column in config:
            continue
        header = COLUMN_LABELS.get(column) or registry.label(column)
        help_text = registry.describe(column) or None
        pinned = True if column == pin else None
        if pd.api.types.is_bool_dtype(series):
            config[column] = st.column_config.CheckboxColumn(header, help=help_text,
                                                             pinned=pinned)
        elif pd.api.types.is_numeric_dtype(series):
            config[column] = st.column_config.NumberColumn(
                header, format=COLUMN_FORMATS[_column_kind(column, series)], help=help_text,
                pinned=pinned)
        elif _longest(series) > _LONG_TEXT:
            config[column] = st.column_config.TextColumn(header, width="large", help=help_text,
                                                         pinned=pinned)
        else:
            config[column] = st.column_config.Column(header, help=help_text, pinned=pinned)
    if pin in config and isinstance(config[pin], dict) and config[pin].get("pinned") is None:
        config[pin] = {**config[pin], "pinned": True}
    return config


def _column_kind(column: str, series: pd.Series) -> str:
    """The kind of a number column: its metric's, or a count when it is no metric and holds
    whole numbers only (a fold, a 0/1 label or a number of sentences read as floats)."""
    try:
        registry.spec(column)
    except KeyError:
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        if values.size and np.array_equal(values, np.round(values)):
            return "count"
    return kind_of(column)


def _longest(series: pd.Series) -> int:
    if series.empty or not (pd.api.types.is_object_dtype(series)
                            or pd.api.types.is_string_dtype(series)):
        return 0
    lengths = series.dropna().astype(str).str.len()
    return int(lengths.max()) if len(lengths) else 0


def table_height(n_rows: int, row_height: int = _ROW_HEIGHT,
                 max_rows: int = MAX_VISIBLE_ROWS) -> int:
    """Pixels that show ``n_rows`` rows of ``row_height`` (up to ``max_rows``), the header
    (one default row high) and the border."""
    return min(n_rows, max_rows) * row_height + _ROW_HEIGHT + 3


def show_table(frame: pd.DataFrame, *, key: str, hide_index: bool = True,
               column_config: dict | None = None, column_order=None,
               pin: str | None = None, max_rows: int = MAX_VISIBLE_ROWS,
               wrap: bool | None = None, all_rows: bool = False) -> None:
    """An on-page table (first :data:`TABLE_ROWS` rows; the downloads hold everything).

    Sized to show every row up to :data:`MAX_VISIBLE_ROWS` (longer tables scroll, and say so),
    the first shown column pinned, long text wrapped, numbers in the format of their kind and
    missing values as :data:`UNDEFINED`. The data stay numeric (``column_order`` may leave
    numeric twins of text columns out of sight). The table sits in a container keyed ``key``
    (CSS class ``st-key-<key>``), so tests and browser automation find it by that key.
    """
    with st.container(key=key):
        if len(frame) > TABLE_ROWS:
            st.caption(f"Showing the first {TABLE_ROWS:,} of {len(frame):,} rows; the download "
                       f"holds all of them.")
            frame = frame.head(TABLE_ROWS)
        frame = neutralise_frame_text(frame)  # a name's bidi control cannot reverse a cell
        shown = [str(c) for c in (column_order or frame.columns)]
        config = column_config_for(frame, column_config, pin=pin or (shown[0] if shown
                                                                      else None))
        if wrap is None:
            wrap = any(_longest(frame[c]) > _LONG_TEXT for c in shown if c in frame.columns)
        row_height = WRAP_ROW_HEIGHT if wrap else _ROW_HEIGHT
        if all_rows:  # tall enough for every row (no inner scrolling; short tables only)
            max_rows = max(len(frame), 1)
        if len(frame) > max_rows:
            st.caption(f"{len(frame):,} rows: the table shows {max_rows} at a time; "
                       "scroll inside it, or sort by a column header.")
        st.dataframe(frame, hide_index=hide_index, column_config=config,
                     column_order=column_order,
                     height=table_height(len(frame), row_height, max_rows),
                     row_height=row_height if wrap else None, placeholder=UNDEFINED)
        if frame[[c for c in shown if c in frame.columns]].isna().to_numpy().any() or (
                "shown" in frame.columns and (frame["shown"] == UNDEFINED).any()):
            st.caption(f"{UNDEFINED} marks a value that is undefined (a 0/0 ratio, or only one "
                       "class present) or not computed; it is never shown as 0.")


def download_csv(label: str, frame_fn: Callable[[], pd.DataFrame], file_name: str, *,
                 key: str, index: bool = False) -> None:
    """A CSV download built on click, with spreadsheet formulas neutralised."""
    st.download_button(label, data=lambda: export.csv_bytes(frame_fn(), index=index),
                       file_name=file_name, mime="text/csv", key=key, on_click="ignore",
                       icon=":material/download:")


# ---------------------------------------------------------------------------- tables
def headline_frame(evaluation, names=HEADLINE) -> pd.DataFrame:
    """Metric, value, 95% CI, subset / protocol, n, interpretation (seed 003 §10.2)."""
    rows = []
    for name in names:
        try:
            r = evaluation.record(name)
        except KeyError:
            continue
        rows.append(_record_row(r))
    return pd.DataFrame(rows, columns=_RECORD_COLUMNS)


def records_frame(evaluation) -> pd.DataFrame:
    """Every record of the evaluation in the headline layout."""
    return pd.DataFrame([_record_row(r) for r in evaluation.records], columns=_RECORD_COLUMNS)


_RECORD_COLUMNS = ["label", "shown", "ci95", "metric", "value", "ci95_lo", "ci95_hi",
                   "ci_method", "computed_on", "subset", "variant", "n", "status",
                   "interpretation"]


def _record_row(r) -> dict:
    """One record as a table row: its label, the value and interval as shown (text, in the
    format of its kind, — when undefined), and the numbers themselves (``value``, ``ci95_lo``,
    ``ci95_hi``) for exports and checks."""
    lo, hi = r.ci95 if r.ci95 is not None else (math.nan, math.nan)
    reason = undefined_reason(r)
    value = math.nan if r.value is None or reason else r.value
    kind = kind_of(r.name)
    return {"label": registry.label(r.name), "shown": fmt(value, kind),
            "ci95": fmt_interval(lo, hi, kind), "metric": r.name, "value": value,
            "ci95_lo": lo, "ci95_hi": hi,
            "ci_method": reason or r.ci_method or no_interval_reason(r),
            "computed_on": plain_subset(r.subset),
            "subset": r.subset, "variant": r.variant or "", "n": r.n, "status": reason,
            "interpretation": r.interpretation}


def show_records(frame: pd.DataFrame, *, key: str, extra: tuple[str, ...] = ()) -> None:
    """A table of records (:func:`headline_frame`, :func:`records_frame`, ...): labels, values
    and intervals as text in their kind's format, the metric id last (``extra`` columns
    before it)."""
    order = [c for c in RECORD_COLUMN_ORDER[:-1] if c in frame.columns]
    show_table(frame, key=key, column_config=RECORD_COLUMN_CONFIG,
               column_order=[*order, *extra, "metric"], wrap=True)


def gate_denominator(gate, name: str) -> tuple[int, str]:
    """The denominator of a gate metric (its ``n``) and what it counts."""
    if name == "screening_sensitivity":
        return gate.n_pos, "queries with evidence"
    if name == "alert_precision":
        return gate.count_pos, "POS alerts"
    return gate.n, "queries"


def gate_card_frame(gate, targets: pd.DataFrame | None = None) -> pd.DataFrame:
    """The gate's metrics with Wilson intervals, their denominators and the run's targets
    (met only when the whole interval clears them)."""
    by_metric = {} if targets is None else {r["metric"]: r for r in targets.to_dict("records")}
    rows = []
    for name in GATE_LABELS:
        lo, hi = gate.ci(name) or (math.nan, math.nan)
        t = by_metric.get(name)
        n, _ = gate_denominator(gate, name)
        value, kind = getattr(gate, name), kind_of(name)
        rows.append({
            "label": GATE_LABELS[name], "shown": fmt(value, kind),
            "ci95": fmt_interval(lo, hi, kind), "metric": name, "value": value,
            "ci95_lo": lo, "ci95_hi": hi, "ci_method": "Wilson" if finite(lo) is not None
            else GATE_UNDEFINED.get(name, "undefined"), "n": n, "small_n": small_n_note(n),
            "target": t["target"] if t is not None else "",
            "result": "" if t is None else t["status"],
        })
    return pd.DataFrame(rows)


def targets_frame(targets: pd.DataFrame) -> pd.DataFrame:
    """The targets table for the page: plain labels and a small-n flag."""
    out = targets.copy()
    if len(out):
        out.insert(0, "label", out["metric"].map(registry.label))
        kinds = out["metric"].map(kind_of)
        out.insert(3, "shown", [fmt(v, k) for v, k in zip(out["value"], kinds, strict=True)])
        out.insert(4, "95% CI", [fmt_interval(lo, hi, k) for lo, hi, k in zip(
            out["ci_lo"], out["ci_hi"], kinds, strict=True)])
        out["small_n"] = out["n"].map(small_n_note)
    return out


#: A target's verdict -> (badge colour, icon): met / not met on the whole 95% interval,
#: undecided when the interval straddles the target, and the two cases without a judgement.
VERDICTS = MappingProxyType({  # in the order of metrics_core.report.wording.VERDICT_ORDER
    "not met": ("red", ":material/cancel:"),
    "undecided": ("orange", ":material/help:"),
    "met": ("green", ":material/check_circle:"),
    "point estimate only": ("gray", ":material/radio_button_unchecked:"),
    "not computed": ("gray", ":material/block:"),
})
def verdict_lines(verdicts: pd.DataFrame) -> list[str]:
    """One markdown line per target, the misses first (not met, undecided, met, point estimate
    only, not computed; the run's order within each): its verdict as a coloured badge, the
    metric, the value with its interval, the target and why (user-controlled text escaped)."""
    lines = []
    rank = {verdict: i for i, verdict in enumerate(VERDICTS)}
    for r in sorted(verdicts.to_dict("records"), key=lambda r: rank[r["verdict"]]):
        colour, icon = VERDICTS[r["verdict"]]
        interval = "" if r["ci95"] == UNDEFINED else f" {r['ci95']}"
        # The value and interval are our own number formats (digits, commas, brackets).
        numbers = (r["shown"] + interval).replace("[", "\\[").replace("]", "\\]")
        lines.append(f":{colour}-badge[{icon} {r['verdict']}] **{escape_markdown(r['label'])}** "
                     f"{numbers} · target {escape_markdown(r['target'])} · "
                     f"{escape_markdown(r['detail'])}")
    return lines


def calibration_verdict(evaluation) -> tuple[bool, str]:
    """Whether the predicted risks are well calibrated, in words that follow the intervals:
    (well, sentence). Well calibrated only when the calibration slope's 95% interval holds 1,
    the intercept's holds 0 and ECE meets its target (on its interval, when the run has an
    ECE target; else ECE is below 0.05); otherwise the sentence says how the risks are off
    (too extreme or too modest, too high or too low on average) with the numbers.
    """
    slope, intercept = evaluation.record("calibration_slope"), evaluation.record(
        "calibration_intercept")
    problems, unknown = [], []
    for r, ideal, below, above in (
            (slope, 1.0, "too extreme (calibration slope below 1)",
             "too modest, not spread enough (calibration slope above 1)"),
            (intercept, 0.0, "too high on average (calibration intercept below 0)",
             "too low on average (calibration intercept above 0)")):
        label = registry.label(r.name).lower()
        if undefined_reason(r):
            unknown.append(f"{label}: {undefined_reason(r)}")
            continue
        numbers = f"{fmt(r.value)} {fmt_interval(*r.ci95)}" if r.ci95 else fmt(r.value)
        if r.ci95 is None or finite(r.ci95[0]) is None:
            unknown.append(f"{label} {numbers} has no interval")
        elif r.ci95[1] < ideal:
            problems.append(f"{below}: {numbers}, ideal {ideal:g}")
        elif r.ci95[0] > ideal:
            problems.append(f"{above}: {numbers}, ideal {ideal:g}")
    ece = evaluation.record("ece")
    verdicts = verdict_frame(evaluation)
    ece_rows = verdicts[verdicts["metric"] == "ece"]
    if len(ece_rows):
        t = ece_rows.iloc[0]
        ece_ok = t["verdict"] == "met"
        ece_text = (f"ECE {t['shown']}{'' if t['ci95'] == UNDEFINED else ' ' + t['ci95']} "
                    f"against its target {t['target']}: {t['verdict']}")
    else:
        value = finite(ece.value)
        ece_ok = value is not None and value < 0.05
        ece_text = f"ECE {fmt(value)} ({'below' if ece_ok else 'not below'} 0.05)"
    if not problems and not unknown and ece_ok:
        return True, (f"Well calibrated: the calibration slope's 95% interval holds 1, the "
                      f"intercept's holds 0, and {ece_text}.")
    parts = ["Not well calibrated." if problems or not ece_ok
             else "Not shown to be well calibrated."]
    if problems:
        parts.append("Predicted risks are " + "; and ".join(problems) + ".")
    if unknown:
        parts.append("Not judged: " + "; ".join(unknown) + ".")
    parts.append(ece_text[0].upper() + ece_text[1:] + ".")
    return False, " ".join(parts)


def small_n_note(n) -> str:
    """A warning for an estimate on fewer than :data:`~metrics_core.targets.MIN_N` cases."""
    from metrics_core.targets import MIN_N

    if n is None or (isinstance(n, float) and math.isnan(n)):
        return ""
    return f"n = {int(n)} < {MIN_N}: wide interval" if int(n) < MIN_N else ""


def ci_text(lo, hi, method: str = "", kind: str = "score") -> str:
    """``95% CI [0.571, 0.624] (Wilson)``; ``no interval`` when there is none."""
    interval = fmt_interval(lo, hi, kind)
    if interval == UNDEFINED:
        return "no interval"
    return f"95% CI {interval}" + (f" ({method})" if method else "")


def checks_frame(evaluation) -> pd.DataFrame:
    """The consistency checks with pass / fail / n/a."""
    return pd.DataFrame([{"check": c.name,
                          "result": "n/a" if c.passed is None else "pass" if c.passed
                          else "fail", "detail": c.detail} for c in evaluation.checks])


#: Why a gate tile is undefined.
GATE_UNDEFINED = MappingProxyType({
    "screening_sensitivity": "undefined: no query with evidence (0/0)",
    "alert_precision": "undefined: no POS alert (0/0)",
    "screening_fn_per_1000": "undefined: no queries"})


def tpr_frame(evaluation) -> pd.DataFrame:
    """TPR at the FPR targets, with the achieved FPR and the threshold (contract §4)."""
    from metrics_core.evaluation.sections import fmt_t

    rows = []
    for t in evaluation.tpr_at_fpr:
        ci = evaluation.record(f"tpr@fpr={fmt_t(t.target)}").ci95
        rows.append({
            "target FPR": t.target, "TPR": t.tpr if t.defined else math.nan,
            "95% CI low": None if ci is None else ci[0],
            "95% CI high": None if ci is None else ci[1],
            "achieved FPR": t.fpr if t.defined else math.nan,
            "threshold": UNDEFINED if not t.defined else "all negative"
            if not math.isfinite(t.threshold) else f"{t.threshold:.6g}", "defined": t.defined})
    return pd.DataFrame(rows)


def group_frame(evaluation, group: str) -> pd.DataFrame:
    """The records of one group (e.g. ``"confusion"``, ``"multilabel"``) as a table."""
    return pd.DataFrame([_record_row(r) for r in evaluation.records if r.group == group],
                        columns=_RECORD_COLUMNS)


def ranking_frame(evaluation) -> pd.DataFrame:
    """Mean, median, P25, P75, std and n of every ranking metric, one row per metric@K: its
    label, and its id (``metric``, for exports and checks, not shown beside the label)."""
    rows = []
    for name, s in evaluation.ranking_summary.items():
        k = name.partition("@")[2]
        rows.append({"label": registry.label(name), "K": int(k) if k.isdigit() else None,
                     "metric": name, "mean": s.mean, "median": s.median, "p25": s.p25, "p75": s.p75,
                     "std": s.std, "n": s.n})
    frame = pd.DataFrame(rows)
    return frame.astype({"K": "Int64"})


def fold_summary_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """The fold summary for the page: plain labels, ``mean ± std`` and the pooled value with
    its interval in the format of each metric's kind (an average of counts to 1 decimal)."""
    rows = []
    for r in summary.to_dict("records"):
        kind = kind_of(r["metric"])
        spread = "average" if kind == "count" else kind
        mean = fmt(r["mean"], spread)
        text = mean if mean == UNDEFINED else f"{mean} ± {fmt(r['std'], spread)}"
        rows.append({"label": registry.label(r["metric"]), "mean ± std": text,
                     "n_folds": r["n_folds"], "pooled": fmt(r["pooled"], kind),
                     "pooled 95% CI": fmt_interval(r["ci_lo"], r["ci_hi"], kind),
                     "metric": r["metric"], "mean": r["mean"], "std": r["std"]})
    return pd.DataFrame(rows)


def metric_tile(column, evaluation, name: str, label: str) -> None:
    """One record as a metric tile: value, and its 95% CI as caption."""
    r = evaluation.record(name)
    reason = undefined_reason(r)
    value = fmt(math.nan if reason else r.value, kind_of(name))
    column.metric(label, value, border=True,
                  help=(reason + ". " if reason else "") + (r.interpretation or "") or None)
    if reason:
        column.caption(f"{reason} · n = {fmt(r.n, 'count')} · {plain_subset(r.subset)}")
    elif r.ci95 is not None:
        column.caption(f"{ci_text(*r.ci95, r.ci_method, kind_of(name))}")
    else:
        column.caption(f"n = {fmt(r.n, 'count')} · {plain_subset(r.subset)}")


#: The numbers a clinician asks about first (seed 003: screening, alerts, discrimination,
#: evidence), after the targets; the workload (NEG / UNCERTAIN / POS) follows them.
CLINICAL_HEADLINE = ("screening_sensitivity", "alert_precision", "auroc", "evidence_recall")
#: The workload tiles: (label, count attribute, rate attribute of the gate, what it means).
WORKLOAD_TILES = (
    ("Auto-cleared (NEG)", "count_neg", "neg_rate", "never reviewed"),
    ("Sent to review (UNCERTAIN)", "count_uncertain", "uncertain_rate", "read by a person"),
    ("Alerts (POS)", "count_pos", "pos_rate", "flagged as high-confidence"))


def headline_tiles(v) -> None:
    """:data:`CLINICAL_HEADLINE` as tiles, each with its interval (or why it has none) and its
    denominator; then the workload: the share of queries the gate auto-clears, sends to review
    and flags, with the counts and Wilson intervals."""
    ev = v.evaluation
    g = ev.gate
    for col, name in zip(st.columns(len(CLINICAL_HEADLINE)), CLINICAL_HEADLINE, strict=True):
        r = ev.record(name)
        reason = undefined_reason(r)
        kind = kind_of(name)
        col.metric(registry.label(name), fmt(math.nan if reason else r.value, kind),
                   border=True, help=r.interpretation or None)
        if reason:
            col.caption(reason)
            continue
        interval = (ci_text(*r.ci95, kind=kind) if r.ci95 is not None
                    else f"no interval: {no_interval_words(r)}")
        if name in ("screening_sensitivity", "alert_precision"):
            n, noun = gate_denominator(g, name)
        else:
            n, noun = r.n, plain_subset(r.subset).replace("all queries", "queries")
        col.caption(f"{interval}; n = {fmt(n, 'count')} {noun}")
    st.markdown("**Workload** at the gate's thresholds")
    for col, (label, count, rate, meaning) in zip(st.columns(len(WORKLOAD_TILES)),
                                                  WORKLOAD_TILES, strict=True):
        share = finite(getattr(g, rate))
        col.metric(label, UNDEFINED if share is None else f"{share * 100:.1f}%", border=True,
                   help=f"Share of all queries {meaning}.")
        lo, hi = g.ci(rate) or (None, None)
        interval = ("" if finite(lo) is None
                    else f"; 95% CI [{lo * 100:.1f}%, {hi * 100:.1f}%]")
        col.caption(f"{fmt(getattr(g, count), 'count')} of {fmt(g.n, 'count')} "
                    f"queries{interval}")


def operating_points_frame(points: dict) -> pd.DataFrame:
    """The operating points drawn on ROC / PR: threshold, TPR, FPR, precision, counts."""
    from metrics_core.metrics.uncertainty import wilson_interval

    def ci(k, n) -> str:
        if n <= 0:
            return UNDEFINED
        lo, hi = wilson_interval(int(k), int(n))
        return fmt_interval(lo, hi)

    return pd.DataFrame([{"point": label, "threshold": c.threshold, "TPR (sensitivity)":
                          c.sensitivity, "TPR 95% CI": ci(c.tp, c.tp + c.fn), "FPR": c.fpr,
                          "FPR 95% CI": ci(c.fp, c.fp + c.tn), "precision": c.precision,
                          "precision 95% CI": ci(c.tp, c.tp + c.fp),
                          "TP / FP / TN / FN": " / ".join(fmt(x, "count")
                                                          for x in (c.tp, c.fp, c.tn, c.fn)),
                          "TP": c.tp, "FP": c.fp, "TN": c.tn, "FN": c.fn}
                         for label, c in points.items()])
