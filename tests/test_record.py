"""The decision record: self-contained HTML (every chart renders with the network blocked), a
PDF whose text holds the thresholds and the headline numbers, a zip of everything, and the CLI
report equal to the app's export for the same settings."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from metrics_core.cli import main
from metrics_core.config import EvalConfig
from metrics_core.demo import demo_paths
from metrics_core.inputs import loading as mio
from metrics_core.report import Evaluator
from metrics_core.report import decision_record as record
from tests.test_app import assert_clean, open_app

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def evaluation():
    paths = demo_paths()
    loaded = mio.load(paths.queries, paths.candidates)
    return Evaluator(loaded.dataset).evaluate(EvalConfig(tau_neg=0.05, bootstrap=200))


def test_html_holds_the_numbers_and_escapes_notes(evaluation):
    page = record.render_html(evaluation, title="Meeting <b>3</b>",
                              notes="[link](http://evil.example) <script>x</script>")
    assert "<script>x</script>" not in page and "&lt;script&gt;" in page
    assert "Meeting &lt;b&gt;3&lt;/b&gt;" in page
    assert f"{evaluation.record('auroc').value:.4f}" in page
    assert "<script src=" not in page and "<link " not in page  # nothing loaded from outside
    assert page.count("plotly.js v") <= 2  # inlined once


def test_zip_holds_everything(evaluation):
    data = record.render_zip(evaluation, html_text="<html></html>", pdf=b"%PDF-1.4")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = set(z.namelist())
        assert {"decision_record.html", "decision_record.pdf", "metrics_master.json",
                "settings.json", "per_criterion.csv", "per_query.csv", "records.csv"} <= names
        settings = json.loads(z.read("settings.json"))
        assert EvalConfig.from_dict(settings["config"]) == evaluation.config


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")
def test_html_renders_every_chart_with_the_network_blocked(evaluation, tmp_path):
    from playwright.sync_api import sync_playwright

    path = tmp_path / "record.html"
    path.write_text(record.render_html(evaluation), encoding="utf-8")
    outside = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        context = browser.new_context()
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
            "file:") else (outside.append(route.request.url), route.abort()))
        page = context.new_page()
        page.goto(path.as_uri())
        page.wait_for_timeout(2000)
        charts = page.locator(".js-plotly-plot .main-svg").count()
        browser.close()
    assert outside == []
    assert charts >= 7


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")
def test_pdf_text_holds_thresholds_and_headline_numbers(evaluation):
    from pypdf import PdfReader

    pdf = record.render_pdf(record.render_html(evaluation))
    reader = PdfReader(io.BytesIO(pdf))
    text = " ".join(page.extract_text() for page in reader.pages)
    assert len(reader.pages) >= 4
    assert "tau_neg" in text and "0.05" in text and "tau_pos" in text
    assert f"{evaluation.record('auroc').value:.4f}" in text
    assert f"{evaluation.record('screening_sensitivity').value:.4f}" in text
    assert "page 1 of" in text


def test_cli_report_equals_the_app_export_for_the_same_settings(tmp_path):
    at = open_app({"gate": "0.05,0.7", "gamma": "0.8"})
    assert_clean(at)
    app_eval = at.session_state["_view"].evaluation
    settings = tmp_path / "settings.json"
    settings.write_text(record.settings_json(app_eval))
    out = tmp_path / "record.zip"
    paths = demo_paths()
    assert main(["report", str(paths.queries), str(paths.candidates), "--settings",
                 str(settings), "--format", "zip", "--out", str(out), "--quiet"]) == 0
    with zipfile.ZipFile(out) as z:
        cli = json.loads(z.read("metrics_master.json"))
        page = z.read("decision_record.html").decode()
    assert ("Thresholds: pre-specified (loaded from settings.json): τ_neg=0.05, τ_pos=0.7, "
            "τ 0.5, γ 0.8.") in page
    app = json.loads(app_eval.to_json())
    assert cli["config"] == app["config"]
    assert [(m["name"], m["value"], m["ci95"]) for m in cli["metrics"]] == \
        [(m["name"], m["value"], m["ci95"]) for m in app["metrics"]]


@pytest.mark.parametrize("default", ["streamlit", "plotly"])
def test_figures_draw_with_plotly_s_own_template_even_where_streamlit_is_loaded(
        evaluation, monkeypatch, default):
    """Importing Streamlit makes its template plotly's default: placeholder colours
    (``#000011`` ...) that only Streamlit's front end replaces. The record, a page of its own,
    drew its heatmaps and lines in those near-black placeholders when made by the app (where
    Streamlit is loaded) and in plotly's colours when made by ``metrics-core report``."""
    import plotly.io as pio
    import streamlit  # noqa: F401  (its template is registered on import)

    monkeypatch.setattr(pio.templates, "default", default)
    page = record.render_html(evaluation)
    assert "#000011" not in page
    assert page.count('"colorway":["#636efa"') == page.count('class="plotly-graph-div"') == 9


def test_report_with_a_bad_settings_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "settings.json"
    bad.write_text('{"config": {"tau_neg": 5}}')
    paths = demo_paths()
    assert main(["report", str(paths.queries), str(paths.candidates), "--settings", str(bad),
                 "--out", str(tmp_path / "r.html")]) == 2
    assert "tau_neg" in capsys.readouterr().err


def test_record_tables_show_undefined_as_a_dash():
    import pandas as pd

    html = record._table(pd.DataFrame({"metric": ["auroc", "f1"], "value": [None, float("nan")],
                                       "ci": [None, "x"]}))
    assert "None" not in html and "nan" not in html.lower()
    assert html.count("—") == 3


def test_record_holds_the_gate_s_risk_coverage(evaluation):
    """The record's risk–coverage of the gate: AURC, optimal AURC and E-AURC with their
    intervals, the gate's point and the curve among the figures; AURC equals a direct loop
    over the confidence levels (predict p ≥ τ, answer the queries farthest from τ first)."""
    import numpy as np

    paths = demo_paths()
    ds = mio.load(paths.queries, paths.candidates).dataset
    tau = evaluation.config.threshold
    error = ((ds.p >= tau).astype(float) != ds.y).astype(float)
    confidence = np.abs(ds.p - tau)
    aurc, covered = 0.0, 0.0
    for level in np.unique(confidence)[::-1]:  # the most confident first
        answered = confidence >= level
        coverage = answered.mean()
        aurc += error[answered].mean() * (coverage - covered)
        covered = coverage
    # the optimal answers every correct query first, one query at a time
    sorted_errors = np.sort(error)
    optimal = float(np.mean(np.cumsum(sorted_errors) / np.arange(1, error.size + 1)))
    curve = evaluation.gate_risk_coverage
    assert curve["aurc"] == pytest.approx(aurc, abs=1e-12)
    assert curve["optimal_aurc"] == pytest.approx(optimal, abs=1e-12)
    page = record.render_html(evaluation)
    section = page[page.index("<h2 id='risk-coverage'>"):page.index("<h2>Figures</h2>")]
    lo, hi = curve["ci95"]["aurc"]
    assert f"<td>AURC</td><td class=\"num\">{aurc:.4f}</td><td>{lo:.4f} to {hi:.4f}</td>" \
        in section
    lo, hi = curve["ci95"]["excess_aurc"]
    assert (f"<td>E-AURC (excess over the optimal)</td><td class=\"num\">"
            f"{aurc - optimal:.4f}</td><td>{lo:.4f} to {hi:.4f}</td>") in section
    assert f"intervals from {curve['n_resamples']:,} bootstrap resamples" in section
    assert (f"answers {curve['gate']['coverage']:.1%} of the queries (UNCERTAIN abstains) "
            f"with risk {curve['gate']['risk']:.4f}") in section
    assert "Risk–coverage of the gate" in page[page.index("<h2>Figures</h2>"):]


def test_cli_report_keeps_the_marks_of_its_settings_file(tmp_path):
    """A settings.json whose τ_neg was set with a guarantee and γ moved: the CLI's record
    says so on its thresholds line, states the guarantee and writes the same marks into its
    settings.json (a record made from the file cannot make those thresholds pre-specified)."""
    from metrics_core.metrics.risk_control import ThresholdGuarantee

    g = ThresholdGuarantee("screening_sensitivity>=0.99", 0.1, 1, "split=TUNE", 7385)
    config = EvalConfig(tau_neg=0.042806, gamma=0.8, bootstrap=0)
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({
        "schema": "metrics_core_settings/1", "config": config.to_dict(),
        "provenance": {"tau_neg": "guaranteed", "gamma": "exploratory"},
        "guarantees": {"tau_neg": g.to_dict()}}))
    out = tmp_path / "record.zip"
    paths = demo_paths()
    assert main(["report", str(paths.queries), str(paths.candidates), "--settings",
                 str(settings), "--format", "zip", "--out", str(out), "--quiet"]) == 0
    with zipfile.ZipFile(out) as z:
        page = z.read("decision_record.html").decode()
        saved = json.loads(z.read("settings.json"))
    assert ("Thresholds: τ_neg 0.042806 (guaranteed: screening_sensitivity&gt;=0.99, δ 0.1, "
            "calibrated on split TUNE); τ_pos 0.6 (pre-specified); τ 0.5 (pre-specified); "
            "γ 0.8 (exploratory) (as settings.json records them).") in page
    assert "Thresholds with a guarantee" in page and "7,385 queries" in page
    assert saved["provenance"] == {"tau_neg": "guaranteed", "tau_pos": "pre-specified",
                                   "threshold": "pre-specified", "gamma": "exploratory"}
    assert saved["guarantees"] == {"tau_neg": g.to_dict()}
