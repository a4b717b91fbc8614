"""The decision record of a review meeting: one HTML file, a PDF and a zip of everything.

:func:`render_html` turns an :class:`~metrics_core.evaluation.result.Evaluation` (the app's current
state, or a CLI run with the same settings: the same numbers) into a self-contained HTML page:
plotly is inlined once, nothing is fetched from the network, every user-controlled string is
escaped. It holds the title and date, the data set (file names, SHA-256, counts, exclusions),
every setting, the headline numbers with their intervals, subsets and interpretations, the
targets, the gate's flow (queries -> gate states -> gold outcome), ROC, PR, reliability,
per-criterion intervals, the selected-K histogram, the decision curve, the per-criterion
table, the consistency checks, the audit findings and the meeting's notes. :func:`render_pdf`
prints that page with headless Chromium; :func:`render_zip` bundles HTML, PDF (when a
browser is available), ``metrics_master.json``, ``settings.json`` and the CSV tables.
"""

from __future__ import annotations

import html
import io
import json
import shutil
import subprocess
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from metrics_core import registry
from metrics_core.bidi import neutralise_bidi
from metrics_core.config import (
    COHORT_COLUMNS_KEY,
    EXPLORATORY,
    GUARANTEED,
    PRESPECIFIED,
    SETTINGS_SCHEMA_ID,
    THRESHOLD_FIELDS,
    threshold_provenance,
)
from metrics_core.report import evaluation_figures
from metrics_core.report.export import csv_bytes
from metrics_core.report.figures.gate import risk_coverage_figure
from metrics_core.report.wording import plain_subset, verdict_frame, verdict_summary

__all__ = ["CHROMIUM", "PDF_NOTE", "adjudication_section", "guarantees_section", "render_html",
           "render_pdf", "render_zip", "risk_coverage_section", "settings_json", "settings_rows",
           "thresholds_line"]

#: The plotly template of the record's figures, whoever makes it: importing Streamlit makes its
#: own template plotly's default, whose placeholder colours only Streamlit's front end replaces.
TEMPLATE = "plotly"
#: Debian's Chromium, used to print the HTML to PDF.
CHROMIUM = Path("/usr/bin/chromium")
_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1100px;
color:#222;line-height:1.4}
h1{font-size:1.8rem;margin-bottom:.2rem}h2{font-size:1.3rem;border-bottom:1px solid #ccc;
margin-top:2rem;break-after:avoid}
table{border-collapse:collapse;width:100%;font-size:.82rem;margin:.5rem 0;break-inside:auto}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;
overflow-wrap:normal;word-break:normal;hyphens:none}th{background:#f4f4f4}
tr{break-inside:avoid}td.token{overflow-wrap:anywhere}table.wide{font-size:.72rem}
table.wide th,table.wide td{padding:2px 4px}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.muted{color:#666;font-size:.85rem}
.fig{break-inside:avoid;margin:.5rem 0}.notes{white-space:pre-wrap;border:1px solid #ccc;
padding:.6rem;background:#fafafa}.fail{color:#b00}.pass{color:#070}
@page{size:A4;margin:14mm 12mm 16mm;@bottom-right{content:"page " counter(page) " of "
counter(pages);font-size:9px;color:#666}@bottom-left{content:"decision record";font-size:9px;
color:#666}}@media print{body{margin:0;max-width:none}}
"""
#: The headline table's metrics: those the registry marks ``record``.
HEADLINE = registry.record_names()


def _e(text) -> str:
    """Text for the page: HTML escaped, bidirectional controls shown as codes."""
    return html.escape("" if text is None else neutralise_bidi(text), quote=True)


def _num(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()
                                  and abs(value) >= 1000):
        return f"{int(value):,}"
    return f"{float(value):.{digits}f}"


#: A text cell of one word longer than this (a SHA-256, a path) may break anywhere; every
#: other word stays whole (no "Calibratio / n slope").
_LONG_TOKEN = 28


def _words(text) -> str:
    """Escaped text whose snake_case ids may wrap after an underscore, never inside a word."""
    return _e(text).replace("_", "_<wbr>")


def _cell(value) -> str:
    text = "" if value is None else str(value)
    if len(text) > _LONG_TOKEN and not any(c.isspace() for c in text):
        return f'<td class="token">{_words(text)}</td>'
    return f"<td>{_words(text)}</td>"


def _table(frame: pd.DataFrame, *, max_rows: int = 200, digits: int = 4,
           css: str = "") -> str:
    """``frame`` as an HTML table: numbers right-aligned with ``digits`` decimals, text
    escaped; ``css`` is the table's class (``wide``: smaller type for many columns)."""
    frame = frame.head(max_rows)
    head = "".join(f"<th>{_words(c)}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False):
        cells = []
        for v in values:
            numeric = (isinstance(v, int | float) and not isinstance(v, bool)) or v is None
            cells.append(f'<td class="num">{_num(v, digits)}</td>' if numeric else _cell(v))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    attributes = f' class="{css}"' if css else ""
    return (f"<table{attributes}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table>")


def thresholds_line(config, marks: dict | None = None, guarantees: dict | None = None) -> str:
    """The thresholds line of every page and the record: each threshold, its value and how it
    was chosen (``marks``: field -> pre-specified / exploratory / guaranteed, none given:
    pre-specified; a guaranteed one names its target, δ and calibration data from
    ``guarantees``), contract §9.

    >>> from metrics_core.config import EvalConfig
    >>> thresholds_line(EvalConfig(), {"gamma": "exploratory"}).split("; ")[2:]
    ['τ 0.5 (pre-specified)', 'γ 0.9 (exploratory)']
    >>> thresholds_line(EvalConfig(tau_neg=1e-07, tau_pos=0.6123456789)).split("; ")[:2]
    ['Thresholds: τ_neg 1e-07 (pre-specified)', 'τ_pos 0.6123456789 (pre-specified)']
    """
    got, kept = marks or {}, guarantees or {}

    def mark(name):
        if got.get(name) == GUARANTEED:
            return kept[name].describe() if name in kept else GUARANTEED
        return EXPLORATORY if got.get(name) == EXPLORATORY else PRESPECIFIED

    def exact(x):  # 0.1 -> 0.1, 1e-07 -> 1e-07; 0.6123456789 whole, not 0.612346
        short = f"{x:g}"
        return short if float(short) == x else repr(float(x))

    parts = [f"τ_neg {exact(config.tau_neg)} ({mark('tau_neg')})",
             f"τ_pos {exact(config.tau_pos)} ({mark('tau_pos')})",
             f"τ {exact(config.threshold)} ({mark('threshold')})",
             f"γ {exact(config.gamma)} ({mark('gamma')})"]
    if config.criterion_gates:
        parts.append(f"{len(config.criterion_gates)} per-criterion gate(s) "
                     f"({mark('criterion_gates')})")
    return "Thresholds: " + "; ".join(parts)


def settings_json(evaluation, *, marks: dict | None = None,
                  guarantees: dict | None = None, cohort_columns=(), cohort_bins=None) -> str:
    """The run's settings as JSON: what the app loads to restore the same view, with how each
    threshold was chosen (``marks``: field -> pre-specified / exploratory / guaranteed; none
    given: every threshold pre-specified, as the command line's runs are), for the
    guaranteed ones their guarantee (``guarantees``: field -> ThresholdGuarantee; a
    guaranteed mark without one is written exploratory) and the cohort columns chosen
    (``cohort_columns``: the Cohorts page's and the record's, ``--cohort``; written when
    there are some) with the bins of the numeric ones (``cohort_bins``: ``{column: SPEC}``,
    ``--cohort-bins``; written when there are some)."""
    cfg = evaluation.config
    out = {"schema": SETTINGS_SCHEMA_ID, "config": cfg.to_dict(),
           **threshold_provenance(cfg, marks, guarantees)}
    if cohort_columns:
        out[COHORT_COLUMNS_KEY] = list(cohort_columns)
        if cohort_bins:
            out["cohort_bins"] = dict(cohort_bins)
    return json.dumps(out, indent=2)




def settings_rows(config, cohort_columns=(), cohort_bins=None) -> list[tuple[str, str]]:
    """The record's settings table: each setting of ``config`` and its value as JSON, then
    the cohort columns chosen and their bins (when there are some), as settings.json writes
    them."""
    chosen = {COHORT_COLUMNS_KEY: list(cohort_columns)} if cohort_columns else {}
    if cohort_columns and cohort_bins:
        chosen["cohort_bins"] = dict(cohort_bins)
    return [(k, json.dumps(v)) for k, v in {**config.to_dict(), **chosen}.items()]


def _records_frame(evaluation) -> pd.DataFrame:
    """The headline records, their queries in words as on the pages."""
    rows = []
    for name in HEADLINE:
        try:
            r = evaluation.record(name)
        except KeyError:
            continue
        lo, hi = r.ci95 if r.ci95 is not None else (None, None)
        rows.append({"metric": registry.label(name), "value": r.value, "95% CI low": lo,
                     "95% CI high": hi, "interval": r.ci_method or "none",
                     "computed on": plain_subset(r.subset),
                     "n": r.n, "meaning": r.interpretation})
    return pd.DataFrame(rows)


def _targets(evaluation) -> str:
    """The targets as the app's pages judge them (met / not met on the whole interval,
    undecided, point estimate only, not computed), with the count of each first."""
    verdicts = verdict_frame(evaluation)
    shown = verdicts[["label", "verdict", "shown", "ci95", "target", "detail", "n"]].rename(
        columns={"label": "metric", "shown": "value", "ci95": "95% CI", "detail": "why"})
    return (f"<p><strong>{_e(verdict_summary(verdicts))}</strong></p>"
            + _table(shown))


def _flow(evaluation) -> pd.DataFrame:
    """The STARD-style flow: queries -> gate state -> gold outcome (counts)."""
    g = evaluation.gate
    rows = []
    for state, (neg, pos) in zip(registry.GATE_STATES, g.label_counts, strict=True):
        rows.append({"gate state": state, "queries": neg + pos, "with evidence": pos,
                     "without evidence": neg})
    rows.append({"gate state": "all", "queries": g.n, "with evidence": g.n_pos,
                 "without evidence": g.n - g.n_pos})
    return pd.DataFrame(rows)


def render_html(evaluation, *, title: str = "Decision record", notes: str = "",
                data_label: str = "", exclusions: pd.DataFrame | None = None,
                created: datetime | None = None, thresholds: str = "",
                marks: dict | None = None, adjudication=None, cohorts=None,
                gold: str = "", guarantees: dict | None = None, cohort_columns=(),
                cohort_bins=None) -> str:
    """The decision record as one self-contained HTML page (no network needed to open it).

    ``gold`` names the labels ``evaluation`` was computed on (the app's *Gold labels*
    switch: the original gold, or the adjudicated one with the original beside it in the
    adjudication section); it is said under the title.

    ``cohorts`` (a :class:`~metrics_core.evaluation.cohorts.CohortResult`) adds the cohorts'
    section (:func:`cohorts_section`); ``cohort_columns`` names the columns chosen (the
    settings' table and the settings file say them).

    ``thresholds`` says how each threshold was chosen (pre-specified or exploratory), as
    ``marks`` records it for the settings file (see :func:`settings_json`); ``adjudication``
    (an :class:`~metrics_core.evaluation.adjudicated.AdjudicatedRun`) adds the review's
    section (:func:`adjudication_section`); ``guarantees`` (field -> ThresholdGuarantee, the
    thresholds ``marks`` says were set with a guarantee) adds what each guarantees
    (:func:`guarantees_section`)."""
    import plotly.io as pio

    created = created or datetime.now(UTC)
    cfg = evaluation.config
    run = evaluation.run or {}
    parts = [f"<h1>{_e(title)}</h1>",
             f"<p class='muted'>{_e(created.strftime('%Y-%m-%d %H:%M UTC'))} · "
             f"{_e(run.get('generated_by', ''))}</p>"]
    if gold:
        parts.append(f"<p><strong>Gold labels: {_e(gold)}.</strong></p>")
    if notes.strip():
        parts += ["<h2>Meeting notes</h2>", f"<div class='notes'>{_e(notes)}</div>"]
    s = evaluation.summary
    parts += ["<h2>Data</h2>", f"<p>{_e(data_label)}</p>",
              _table(pd.DataFrame(run.get("inputs") or [], columns=["file", "sha256", "bytes"])),
              f"<p>{s['n_queries']:,} queries ({s['n_positive']:,} with evidence) on "
              f"{s['n_posts']:,} posts, {s['n_candidates']:,} candidate sentences; criteria: "
              f"{_e(', '.join(map(str, s['criteria'])))}. Evaluated: "
              f"{_e(cfg.filters.describe())}.</p>"]
    if exclusions is not None and len(exclusions):
        parts += [f"<p>{len(exclusions):,} rows excluded, with their reasons:</p>",
                  _table(exclusions, max_rows=50)]
    settings = pd.DataFrame(settings_rows(cfg, cohort_columns, cohort_bins),
                            columns=["setting", "value"])
    parts += ["<h2>Settings</h2>",
              f"<p><strong>{_e(thresholds)}</strong></p>" if thresholds else "",
              _table(settings),
              guarantees_section(cfg, marks, guarantees),
              "<h2>Headline numbers</h2>", _table(_records_frame(evaluation)),
              "<h2>Targets</h2>", _targets(evaluation),
              adjudication_section(adjudication) if adjudication is not None else "",
              cohorts_section(cohorts) if cohorts is not None else "",
              "<h2>Flow of queries through the gate</h2>",
              f"<p class='muted'>NEG if p &lt; τ_neg = {cfg.tau_neg:g}; UNCERTAIN up to τ_pos = "
              f"{cfg.tau_pos:g}; POS above.</p>", _table(_flow(evaluation))]
    coverage = evaluation.gate_risk_coverage
    parts += [risk_coverage_section(coverage), "<h2>Figures</h2>"]
    figures = evaluation_figures.record_figures(evaluation)
    if coverage and coverage.get("defined", True) and coverage.get("aurc") is not None:
        figures.insert(2, risk_coverage_figure(coverage, title="Risk–coverage of the gate"))
    for i, fig in enumerate(figures):
        fig.update_layout(template=pio.templates[TEMPLATE])
        parts.append("<div class='fig'>" + pio.to_html(
            fig, full_html=False, include_plotlyjs="inline" if i == 0 else False,
            config={"displaylogo": False, "staticPlot": True}) + "</div>")
    table = evaluation.per_criterion.reset_index()
    keep = [c for c in ("criterion", "n", "n_positive", "auroc", "auprc", "sensitivity",
                        "specificity", "screening_sensitivity", "alert_precision",
                        "evidence_recall", "mean_k") if c in table.columns]
    checks = pd.DataFrame([c.to_dict() for c in evaluation.checks])
    parts += ["<h2>Per criterion</h2>", _table(table[keep], digits=3, css="wide"),
              "<h2>Consistency checks</h2>", _table(checks)]
    audit = getattr(evaluation, "audit", None)
    if audit is not None and getattr(audit, "findings", None):
        findings = pd.DataFrame([{"level": f.level, "check": f.check, "message": f.message}
                                 for f in audit.findings])
        parts += ["<h2>Data audit</h2>", _table(findings)]
    parts += ["<h2>Settings file</h2>",
              "<p class='muted'>settings.json of this record: load it in the dashboard (sidebar, "
              "<em>Restore settings</em>) or give it to <code>metrics-core report "
              "--settings</code> to reproduce every number.</p>",
              "<pre id='settings-json'>"
              + _e(settings_json(evaluation, marks=marks, guarantees=guarantees,
                               cohort_columns=cohort_columns, cohort_bins=cohort_bins))
              + "</pre>"]
    body = "\n".join(parts)
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
            f"script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
            f"img-src data:; font-src data:\"><title>{_e(title)}</title>"
            f"<style>{_CSS}</style></head><body>{body}</body></html>")


def risk_coverage_section(curve: dict | None) -> str:
    """The record's risk–coverage of the gate (contract §6, abstention): AURC, the optimal
    AURC and E-AURC (the excess over the optimal) with their 95% intervals, and the gate's own
    operating point; the curve is among the figures. Undefined: the reason."""
    head = "<h2 id='risk-coverage'>Risk–coverage of the gate</h2>"
    if not curve:
        return ""
    if not curve.get("defined", True):
        return head + f"<p>Undefined: {_e(curve.get('reason'))}.</p>"
    ci = curve.get("ci95") or {}

    def interval(name):
        c = ci.get(name)
        return "not computed (bootstrap off)" if c is None else f"{c[0]:.4f} to {c[1]:.4f}"

    areas = pd.DataFrame([
        {"area": label, "value": curve.get(name), "95% interval": interval(name)}
        for name, label in (("aurc", "AURC"), ("optimal_aurc", "optimal AURC"),
                            ("excess_aurc", "E-AURC (excess over the optimal)"))])
    point = curve.get("gate") or {}
    at = ""
    if point.get("coverage") is not None:
        risk = point.get("risk")
        at = (f" The gate (τ_neg {point['tau_neg']:g}, τ_pos {point['tau_pos']:g}) answers "
              f"{point['coverage']:.1%} of the queries (UNCERTAIN abstains) with "
              + ("no answer to judge" if risk is None else f"risk {risk:.4f}") + ".")
    resamples = curve.get("n_resamples") or 0
    return (head + f"<p>The gate as a classifier that may abstain: predict p ≥ τ = "
            f"{curve.get('threshold', 0.5):g}, abstaining first on the queries nearest τ "
            f"({_e(curve.get('confidence', ''))}). Risk = errors among the answered; AURC is "
            f"the area under the curve (lower is better), the optimal AURC answers every "
            f"correct query before any error, E-AURC is their difference. {curve['n']:,} "
            f"queries; intervals from {resamples:,} bootstrap resamples.{at}</p>"
            + _table(areas))


def guarantees_section(cfg, marks: dict | None, guarantees: dict | None) -> str:
    """The record's section on the thresholds set with a guarantee (contract §6, §9): for
    each, what is guaranteed, δ, the calibration data and the method; empty without any."""
    kept = guarantees or {}
    rows = [(name, kept[name]) for name in THRESHOLD_FIELDS
            if (marks or {}).get(name) == GUARANTEED and name in kept]
    if not rows:
        return ""
    table = pd.DataFrame([{
        "threshold": name,
        "value": (getattr(cfg, name) if name != "criterion_gates" else
                  "; ".join(f"{c}: {lo:g}–{hi:g}" for c, lo, hi in cfg.criterion_gates)),
        "guarantee": g.target, "δ": g.delta, "δ each": g.delta_each,
        "calibration data": f"{g.calibration_text} ({g.n_calibration:,} queries)",
        "method": g.method} for name, g in rows])
    sentences = "".join(
        f"<p>{_e(g.sentence(name, getattr(cfg, name) if name != 'criterion_gates' else None))}"
        "</p>" for name, g in rows)
    if len(rows) > 1:  # set one at a time: each guarantee's δ is its own
        total = sum(g.delta for _, g in rows)
        sentences += (f"<p>These {len(rows)} guarantees were computed separately: the chance "
                      f"that at least one of them fails is at most the sum of their δ "
                      f"({total:.3g}).</p>")
    return ("<h3 id='guarantees'>Thresholds with a guarantee</h3>" + sentences
            + _table(table) + "<p class='muted'>What is not guaranteed: a batch of new queries "
            "can still miss the target by chance (the guarantee is over the draw of the "
            "calibration data); it does not hold if the population, the model or the "
            "prevalence changes; it covers its target only.</p>")


def cohorts_section(result) -> str:
    """The record's section on cohorts (contract §9): every disparity tested, flagged ones
    first, and the weak segments."""
    table = result.cohorts
    tested = table[table["p_value"].notna()].copy()
    flagged = tested[tested["flagged"].astype(bool)]
    columns = ", ".join(dict.fromkeys(table["column"].astype(str)))
    keep = ["column", "value", "metric", "estimate", "ci95", "n", "n_positive",
            "rest_estimate", "difference", "difference_ci95", "p_adjusted", "flagged", "small"]
    tested = tested.sort_values(["flagged", "p_adjusted"], ascending=[False, True])

    def interval(ci) -> str:
        return "" if ci is None or not isinstance(ci, list | tuple) else \
            f"{ci[0]:.3f} to {ci[1]:.3f}"

    for column in ("ci95", "difference_ci95"):
        tested[column] = tested[column].map(interval)
    summary = (f"{len(flagged)} disparity(ies) flagged (Holm-adjusted p &lt; 0.05 across the "
               f"cohorts and metrics of a column, and a 95% interval of the difference to the "
               f"rest that excludes 0), among {len(tested)} tested.")
    parts = ["<h2 id='cohorts'>Cohorts</h2>",
             f"<p>Cohort columns: {_e(columns)}. {summary}</p>",
             _table(tested[keep], max_rows=100, digits=3, css="wide")]
    weak = result.weak_segments
    if len(weak):
        parts += ["<h3>Weak segments</h3>",
                  "<p class='muted'>Over the cohort columns and their pairs: the segments "
                  "where a metric is worst relative to the rest, Holm-adjusted for every "
                  "segment tried.</p>",
                  _table(weak[["metric", "segment", "estimate", "ci95", "n", "rest_estimate",
                               "difference", "difference_ci95", "p_adjusted", "flagged"]]
                         .assign(ci95=weak["ci95"].map(interval),
                                 difference_ci95=weak["difference_ci95"].map(interval)),
                         max_rows=50, digits=3, css="wide")]
    return "\n".join(parts)


def adjudication_section(run) -> str:
    """The review's section of the record (contract §14): what was reviewed and by whom, the
    verdicts, the corrected labels, and the headline numbers on both labelings."""
    adj = run.adjudications
    counts = adj.counts()
    queries, sentences = run.changed()
    n_queries = len({(p, c) for p, c in zip(adj.frame["post_id"], adj.frame["criterion"],
                                            strict=True)})
    reviewers = [r for r in adj.frame["reviewer"].unique().tolist() if r]
    diff = run.differences().set_index("name")
    rows = []
    for name in HEADLINE:
        if name not in diff.index:
            continue
        row = diff.loc[name]
        rows.append({"metric": registry.label(name), "original gold": row["original"],
                     "adjudicated gold": row["adjudicated"], "difference": row["difference"],
                     "n (original)": row["original_n"], "n (adjudicated)": row["adjudicated_n"]})
    numbers = pd.DataFrame(rows).astype(object)
    numbers = numbers.where(numbers.notna(), None)
    excluded = (" Queries with an <em>ambiguous</em> verdict are left out of the adjudicated "
                "numbers." if run.exclude_ambiguous else "")
    parts = ["<h2 id='adjudication'>Adjudication</h2>",
             f"<p>{len(adj):,} verdicts on {n_queries:,} queries, from the file "
             f"{_e(adj.file)}; reviewers: {_e(', '.join(reviewers) or 'not named')}. "
             + "; ".join(f"{_e(k)}: {n:,}" for k, n in counts.items())
             + f". The original numbers are kept; the corrected labels give the adjudicated "
               f"ones.{excluded}</p>",
             _table(adj.by_reviewer()),
             "<h3>Corrected labels</h3>",
             _table(queries) if len(queries) else "<p>No query's has_evidence corrected.</p>",
             _table(sentences) if len(sentences) else "<p>No sentence's is_gold corrected.</p>",
             "<h3>Headline numbers on both labelings</h3>", _table(numbers)]
    return "\n".join(parts)


def render_pdf(html_text: str, *, chromium: Path | None = None, timeout: float = 120) -> bytes:
    """The HTML printed to PDF by headless Chromium (page numbers in the footer).

    ``chromium``: the browser to use (default :data:`CHROMIUM`, else ``chromium`` on the
    PATH). Raises RuntimeError, with a plain message, when no Chromium is installed (Debian's
    package ``chromium``) or when printing fails: the browser cannot start, ends with an
    error or a signal, takes longer than ``timeout`` seconds or writes no PDF.
    """
    chromium = CHROMIUM if chromium is None else Path(chromium)
    exe = chromium if chromium.exists() else shutil.which("chromium")
    if exe is None:
        raise RuntimeError("PDF export needs Chromium (Debian package 'chromium'); "
                           "the HTML record has the same content")
    with tempfile.TemporaryDirectory() as tmp:
        page, out = Path(tmp) / "record.html", Path(tmp) / "record.pdf"
        page.write_text(html_text, encoding="utf-8")
        failed = "PDF printing failed: Chromium"
        same = "; the HTML record has the same content"
        try:
            subprocess.run([str(exe), "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", "--no-first-run", "--no-pdf-header-footer",
                            "--run-all-compositor-stages-before-draw",
                            "--virtual-time-budget=10000", f"--print-to-pdf={out}",
                            page.as_uri()],
                           check=True, capture_output=True, timeout=timeout)
        except subprocess.CalledProcessError as err:
            code = err.returncode
            how = (f"was stopped by signal {_signal_name(-code)}" if code < 0
                   else f"ended with exit status {code}")
            raise RuntimeError(f"{failed} ({exe}) {how}{same}") from None
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{failed} ({exe}) did not finish within {timeout:g} s"
                               f"{same}") from None
        except OSError as err:
            raise RuntimeError(f"{failed} ({exe}) could not be started ({err.strerror})"
                               f"{same}") from None
        if not out.is_file() or out.stat().st_size == 0:
            raise RuntimeError(f"{failed} ({exe}) wrote no PDF{same}")
        return out.read_bytes()


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


#: The note a zip holds in place of a PDF that could not be printed.
PDF_NOTE = "decision_record.pdf.txt"


def render_zip(evaluation, *, html_text: str, pdf: bytes | None = None,
               exclusions: pd.DataFrame | None = None, pdf_missing: str | None = None,
               marks: dict | None = None, adjudication=None,
               guarantees: dict | None = None, cohort_columns=(),
               cohort_bins=None) -> bytes:
    """HTML, PDF, metrics_master.json, settings.json and the CSV tables in one zip.

    Without ``pdf``, ``pdf_missing`` (why it could not be printed) is written as
    :data:`PDF_NOTE` in its place; ``marks``: the thresholds' provenance and
    ``cohort_columns`` the cohort columns chosen (settings.json);
    ``adjudication``: the review's run (its block in metrics_master.json, and its file);
    metrics_master.json is then the original gold's document with that block, as
    ``metrics-core evaluate --adjudications`` writes it, whichever gold ``evaluation`` (the
    record's and the CSV tables') is on."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("decision_record.html", html_text)
        if pdf is not None:
            z.writestr("decision_record.pdf", pdf)
        elif pdf_missing:
            z.writestr(PDF_NOTE, f"The PDF of this record was left out: {pdf_missing}\n"
                                 "decision_record.html has the same content.\n")
        document = evaluation.with_provenance(marks, guarantees).to_json()
        if adjudication is not None:  # the adjudicated records beside, and the file itself
            from metrics_core.evaluation.adjudicated import with_adjudication

            document = with_adjudication(
                adjudication.original.with_provenance(marks, guarantees).to_json(),
                adjudication)
            z.writestr("adjudications.csv", adjudication.adjudications.to_csv())
        z.writestr("metrics_master.json", document)
        z.writestr("settings.json", settings_json(evaluation, marks=marks,
                                                  guarantees=guarantees,
                                                  cohort_columns=cohort_columns,
                                                  cohort_bins=cohort_bins))
        z.writestr("per_criterion.csv", csv_bytes(evaluation.per_criterion.reset_index()))
        z.writestr("per_query.csv", csv_bytes(evaluation.per_query))
        z.writestr("records.csv", csv_bytes(evaluation.records_frame()))
        if exclusions is not None:
            z.writestr("excluded_rows.csv", csv_bytes(exclusions))
    return buf.getvalue()
