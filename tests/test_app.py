"""The Streamlit dashboard, driven with streamlit.testing.v1.AppTest.

Every page renders on the demo and on an upload; moving a setting changes the shown numbers to
exactly what ``metrics_core`` computes for those settings (the expected values come from
``Evaluator(...).evaluate(config)`` here, independently of the app); bad uploads and failures
show a plain message; the URL query string restores the view. The pure parts (URL encoding in
``dashboard/state.py``, CSV neutralising in ``metrics_core/report/export.py``, the server
configuration) are tested directly.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import display, link, state
from metrics_core.config import EvalConfig
from metrics_core.demo import DEMO_LABEL, demo_paths
from metrics_core.inputs import loading as mio
from metrics_core.report import export
from metrics_core.triage import load_triage, triage_metrics
from tests.conftest import random_frames

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "dashboard" / "app.py"
TIMEOUT = 60
EVIDENCE_PAGES = ("overview", "gate", "dynamic_k", "ranking", "calibration", "per_criterion",
                  "per_post", "folds", "cohorts", "case_review", "decision", "meeting",
                  "data_source")
PAGES = EVIDENCE_PAGES
INTERNAL_ERROR = "Something went wrong computing this view"


# ------------------------------------------------------------------------------ helpers
def open_app(query: dict | None = None, page: str | None = None, *,
             sections: bool = True) -> AppTest:
    """The app (at ``page``, with the link ``query``); ``sections``: every settings section
    of the sidebar open, so that every setting's widget is drawn (a closed one draws none)."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    if sections:
        open_sections(at)
    if query:
        at.query_params.update(query)
    at.run(timeout=TIMEOUT)
    if page is not None:
        at.switch_page(f"app_pages/{page}.py").run(timeout=TIMEOUT)
    return at


def open_sections(at: AppTest) -> AppTest:
    """Every settings section of the sidebar open (for the next run)."""
    from dashboard.sidebar import SECTION_NAMES, section_key

    for section in SECTION_NAMES:
        at.session_state[section_key(section)] = True
    return at


def texts(at: AppTest) -> list[str]:
    """Every text the app shows (messages, markdown, captions, titles, metric values)."""
    out = []
    for kind in ("markdown", "caption", "title", "subheader", "error", "warning", "info",
                 "success", "exception"):
        out += [str(e.value) for e in getattr(at, kind)]
    out += [f"{m.label} {m.value}" for m in at.metric]
    return out


def assert_clean(at: AppTest) -> None:
    """No uncaught exception, no traceback, no internal-error message."""
    assert not at.exception, [e.value for e in at.exception]
    shown = "\n".join(texts(at))
    assert "Traceback" not in shown
    assert INTERNAL_ERROR not in shown


def metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert len(found) == 1, [m.label for m in at.metric]
    return found[0]


def table(at: AppTest, key: str) -> pd.DataFrame:
    """The table shown in the container keyed ``key``."""
    return at.get_by_key(key).dataframe[0].value


def values_by(frame: pd.DataFrame, key: str, value: str = "value") -> dict:
    return dict(zip(frame[key], frame[value], strict=True))


def assert_same(actual, expected) -> None:
    """Exact equality with NaN equal to NaN (the shown number is the computed one)."""
    if isinstance(expected, float) and math.isnan(expected):
        assert isinstance(actual, float) and math.isnan(actual)
    else:
        assert actual == expected


@pytest.fixture(scope="module")
def demo():
    paths = demo_paths()
    return mio.load(paths.queries, paths.candidates)


@pytest.fixture(scope="module")
def demo_evaluator(demo):
    from metrics_core.report import Evaluator

    return Evaluator(demo.dataset)


def expected(evaluator, **settings):
    return evaluator.evaluate(EvalConfig(bootstrap=0, **settings))


@pytest.fixture(scope="module")
def upload_files():
    """A small two-table upload: gzip CSV queries and Parquet candidates."""
    q, c = random_frames(n_posts=40, seed=5)
    q_bytes = gzip.compress(q.to_csv(index=False).encode())
    buf = io.BytesIO()
    c.to_parquet(buf, index=False)
    return ("queries.csv.gz", q_bytes, "application/gzip"), \
        ("candidates.parquet", buf.getvalue(), "application/octet-stream")


def upload(at: AppTest, queries, candidates=None) -> AppTest:
    at.file_uploader(key="upload_queries").set_value(queries)
    at.file_uploader(key="upload_candidates").set_value(candidates)
    at.run(timeout=TIMEOUT)
    at.button(key="load_upload").click().run(timeout=TIMEOUT)
    return at


# ------------------------------------------------------------------------ every page
@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_on_the_demo(page):
    at = open_app(page=page)
    assert_clean(at)
    assert at.title
    assert any(DEMO_LABEL in t for t in texts(at)), "the demo is labelled synthetic"


def test_the_data_page_shows_the_audit_of_the_demo_with_data_problems():
    from metrics_core.demo import DEMO_PROBLEMS_LABEL, planted_problems
    from metrics_core.inputs.audit import audit

    at = open_app(page="data_source")
    assert_clean(at)
    at.radio(key=state.DEMO_VARIANT).set_value("demo_problems").run()
    assert_clean(at)
    assert any(DEMO_PROBLEMS_LABEL in t for t in texts(at))
    paths = demo_paths()
    loaded = mio.load(paths.problems_queries, paths.problems_candidates)
    report = audit(loaded.dataset, loaded=loaded)
    shown = "\n".join(texts(at))
    for finding in report.findings:
        assert f"**{finding.check}** — {finding.message}" in shown
    # The demo's planted cross-fold posts are among them (assets/README.md).
    assert all(post in shown for post in planted_problems().cross_fold_posts)
    checks = table(at, "audit_checks_table")
    assert list(checks["check"]) == list(report.checks)
    at.radio(key=state.DEMO_VARIANT).set_value("demo").run()  # plain demo: nothing to report
    assert at.session_state["_source"] is None
    assert not any(post in "\n".join(texts(at)) for post in planted_problems().cross_fold_posts)


def test_every_page_renders_on_an_upload(upload_files):
    at = upload(open_app(), *upload_files)
    assert_clean(at)
    assert at.session_state["_source"].kind == "upload"
    for page in EVIDENCE_PAGES:
        at.switch_page(f"app_pages/{page}.py").run(timeout=TIMEOUT)
        assert_clean(at)
        shown = texts(at)
        assert not any(DEMO_LABEL in t for t in shown), page
        assert any("queries.csv.gz" in t for t in shown), page


def test_upload_numbers_are_the_uploaded_data(upload_files):
    (q_name, q_bytes, _), (c_name, c_bytes, _) = upload_files
    from metrics_core.report import Evaluator

    loaded = mio.load(q_bytes, c_bytes, queries_name=q_name, candidates_name=c_name)
    want = Evaluator(loaded.dataset).evaluate(EvalConfig(bootstrap=0))
    at = upload(open_app(), *upload_files)
    shown = values_by(table(at, "headline_table"), "metric")
    for name in ("auroc", "auprc", "ece", "recall@10", "alert_precision", "exact_match"):
        assert_same(shown[name], np.nan if want.record(name).value is None
                    else want.record(name).value)


def test_an_upload_stays_in_its_session(upload_files):
    upload(open_app(), *upload_files)
    other = open_app()
    assert any(DEMO_LABEL in t for t in texts(other))
    assert other.session_state["_source"] is None if "_source" in other.session_state else True


def test_back_to_the_demo_is_one_click(upload_files):
    at = upload(open_app(), *upload_files)
    at.button(key="use_demo").click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert any(DEMO_LABEL in t for t in texts(at))


def test_bootstrap_intervals_when_switched_on(upload_files):
    (q_name, q_bytes, _), (c_name, c_bytes, _) = upload_files
    from metrics_core.report import Evaluator

    at = upload(open_app({"ci": "0"}), *upload_files)
    shown = values_by(table(at, "headline_table"), "metric", "ci95_lo")
    assert math.isnan(shown["auroc"])  # switched off: no bootstrap, the run says so
    at.number_input(key="bootstrap").set_value(300)
    at.toggle(key="ci").set_value(True).run(timeout=TIMEOUT)
    assert_clean(at)
    loaded = mio.load(q_bytes, c_bytes, queries_name=q_name, candidates_name=c_name)
    want = Evaluator(loaded.dataset).evaluate(EvalConfig(bootstrap=300))
    frame = table(at, "headline_table").set_index("metric")
    for name in ("auroc", "auprc", "ece", "recall@10"):
        assert (frame.loc[name, "ci95_lo"], frame.loc[name, "ci95_hi"]) == \
            want.record(name).ci95
    assert at.query_params == {"bootstrap": "300"}  # intervals on is the default


def test_downloads_are_offered():
    at = open_app()
    for key in ("download_master", "download_per_query", "download_per_criterion"):
        assert at.get_by_key(key) is not None


# --------------------------------------------------------------- settings move numbers
def test_gate_slider_changes_the_gate_card(demo_evaluator):
    at = open_app(page="gate")
    at.slider(key="gate").set_value((0.2, 0.7)).run(timeout=TIMEOUT)
    assert_clean(at)
    g = expected(demo_evaluator, tau_neg=0.2, tau_pos=0.7).gate
    assert metric(at, "NEG (auto-cleared)") == f"{g.count_neg:,}"
    assert metric(at, "UNCERTAIN (review)") == f"{g.count_uncertain:,}"
    assert metric(at, "POS (alert)") == f"{g.count_pos:,}"
    assert metric(at, "Screening sensitivity") == display.fmt(g.screening_sensitivity)
    assert metric(at, "Alert precision") == display.fmt(g.alert_precision)
    # The tiles say their denominators; the card's table is drawn when its expander is open.
    captions = [c.value for c in at.caption]
    assert any(c.endswith(f"n = {g.n_pos:,} queries with evidence") for c in captions)
    assert any(c.endswith(f"n = {g.count_pos:,} POS alerts") for c in captions)
    # The card's sentence and its Wilson intervals: one element (each is redrawn on a move).
    from metrics_core.metrics.gate import per_thousand

    lo, hi = g.ci("alert_rate_per_1000")
    said = [m.value for m in at.markdown if "Wilson intervals: flagged" in m.value]
    assert len(said) == 1, said
    assert said[0].startswith(
        per_thousand(g).sentence("queries (post × criterion)") + "\n\n:small[:gray[Per 1,000 "
        f"with 95% Wilson intervals: flagged {display.fmt_interval(lo, hi, 'per_1000')}, sent "
        "to review ")
    with pytest.raises(KeyError):
        at.get_by_key("gate_card_table")
    at.session_state["gate_card_table_open"] = True
    at.run(timeout=TIMEOUT)
    assert_clean(at)
    card = table(at, "gate_card_table")
    assert list(card["metric"]) == list(display.GATE_LABELS)
    for row in card.itertuples():
        name = row.metric
        assert row.label == display.GATE_LABELS[name]
        assert_same(row.value, getattr(g, name))
        lo, hi = g.ci(name)
        assert (row.ci95_lo, row.ci95_hi) == (lo, hi)
        assert row.shown == display.fmt_metric(name, getattr(g, name))
        assert row.ci95 == display.fmt_interval(lo, hi, display.kind_of(name))
    # The operating points drawn on ROC / PR moved with the slider (their table on demand).
    at.session_state["operating_table_open"] = True
    at.run(timeout=TIMEOUT)
    points = table(at, "operating_table")
    assert list(points["threshold"]) == [0.2, 0.7, 0.5]


def test_threshold_slider_changes_the_confusion_numbers(demo_evaluator):
    at = open_app(page="gate")
    at.slider(key="threshold").set_value(0.3).run(timeout=TIMEOUT)
    assert_clean(at)
    want = expected(demo_evaluator, threshold=0.3)
    shown = values_by(table(at, "confusion_table"), "metric")
    for name in ("tp", "fp", "tn", "fn", "sensitivity", "specificity", "precision", "f1", "mcc"):
        assert_same(shown[name], want.record(name).value)
    assert shown["tp"] != expected(demo_evaluator).record("tp").value


@pytest.mark.parametrize(("kind", "key", "value"), [
    ("slider", "gamma", 0.8),
    ("slider", "gamma_uncertain", 0.85),
    ("slider", "k_max_ratio", 0.3),
    ("number_input", "k_min", 3),
    ("number_input", "hard_cap", 5),
    ("toggle", "gate_aware", False),
])
def test_dynamic_k_settings_change_the_numbers(demo_evaluator, kind, key, value):
    at = open_app(page="dynamic_k")
    before = table(at, "k_summary_table")
    getattr(at, kind)(key=key).set_value(value).run(timeout=TIMEOUT)
    assert_clean(at)
    want = expected(demo_evaluator, **{key: value})
    shown = table(at, "k_summary_table")
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), want.k_summary_frame())
    assert not shown.equals(before)
    assert metric(at, "Mean K") == display.fmt(want.record("mean_k").value)
    assert metric(at, "Evidence precision") == display.fmt(
        want.record("evidence_precision").value)
    sweep = table(at, "gamma_sweep_table")
    assert list(sweep["mean_k"]) == list(demo_evaluator.gamma_sweep(
        want.config, sorted({0.7, 0.8, 0.9, 0.95, want.config.gamma}))["mean_k"])


@pytest.mark.parametrize(("key", "value"), [("binning", "quantile"), ("n_bins", 5),
                                            ("calibration_view", "top_label")])
def test_calibration_settings_change_the_bins(demo_evaluator, key, value):
    at = open_app(page="calibration")
    kind = "number_input" if key == "n_bins" else "selectbox"
    getattr(at, kind)(key=key).set_value(value).run(timeout=TIMEOUT)
    assert_clean(at)
    want = expected(demo_evaluator, **{key: value})
    pd.testing.assert_frame_equal(table(at, "reliability_table").reset_index(drop=True),
                                  want.reliability_frame())
    assert metric(at, "ECE") == display.fmt(want.record("ece").value)


def test_ranking_variant_changes_the_ranking_table(demo_evaluator):
    at = open_app(page="ranking")
    at.selectbox(key="precision_denominator").set_value("min_k_n").run(timeout=TIMEOUT)
    assert_clean(at)
    want = expected(demo_evaluator, precision_denominator="min_k_n")
    shown = values_by(table(at, "ranking_table"), "metric", "mean")
    for k in (1, 5, 10, 20):
        assert shown[f"precision@{k}"] == want.ranking_summary[f"precision@{k}"].mean
    assert shown["precision@20"] != expected(demo_evaluator).ranking_summary[
        "precision@20"].mean


def test_multilabel_rule_changes_the_per_post_numbers(demo_evaluator):
    at = open_app(page="per_post")
    at.selectbox(key="multilabel_rule").set_value("alert").run(timeout=TIMEOUT)
    assert_clean(at)
    want = expected(demo_evaluator, multilabel_rule="alert")
    shown = values_by(table(at, "multilabel_table"), "metric")
    for name in ("exact_match", "hamming_score", "micro_f1", "samples_f1", "macro_f1"):
        assert shown[name] == want.record(name).value


def test_fold_filter_evaluates_that_fold_only(demo):
    from metrics_core.report import Evaluator

    at = open_app()
    at.selectbox(key="fold").set_value("2").run(timeout=TIMEOUT)
    assert_clean(at)
    ds = demo.dataset
    want = Evaluator(ds.subset(ds.fold == 2)).evaluate(EvalConfig(bootstrap=0))
    shown = values_by(table(at, "headline_table"), "metric")
    assert shown["auroc"] == want.record("auroc").value
    assert shown["screening_sensitivity"] == want.record("screening_sensitivity").value
    assert metric(at, "Queries (post × criterion)") == f"{want.summary['n_queries']:,}"
    assert at.query_params["fold"] == "2"


def test_criterion_filter(demo):
    from metrics_core.report import Evaluator

    at = open_app(page="per_criterion")
    at.multiselect(key="criterion").set_value(["A.2", "A.10"]).run(timeout=TIMEOUT)
    assert_clean(at)
    ds = demo.dataset
    want = Evaluator(ds.subset(np.isin(ds.criterion, ["A.2", "A.10"]))).evaluate(
        EvalConfig(bootstrap=0))
    at.session_state["per_criterion_table_open"] = True  # the full table, on demand
    at.run(timeout=TIMEOUT)
    shown = table(at, "per_criterion_table")
    assert list(shown["criterion"]) == ["A.2", "A.10", "micro", "macro"]
    assert list(shown["auroc"]) == list(want.per_criterion["auroc"])


def test_every_metric_per_criterion_is_drawn_only_when_asked_for(demo_evaluator):
    """The full per-criterion table (every metric) is not sent with the page; opening its
    expander draws it, with the computed point values of every criterion, micro and macro."""
    at = open_app(page="per_criterion")
    assert_clean(at)
    with pytest.raises(KeyError):
        at.get_by_key("per_criterion_table")
    want = expected(demo_evaluator).per_criterion
    # the one table drawn: the chosen metric's, a row per criterion
    assert [len(f.value) for f in at.dataframe] == [len(want) - 2]
    at.session_state["per_criterion_table_open"] = True
    at.run(timeout=TIMEOUT)
    assert_clean(at)
    shown = table(at, "per_criterion_table").set_index("criterion")
    assert list(shown.index) == list(want.index)
    assert list(shown.index[-2:]) == ["micro", "macro"]
    for column in ("auroc", "auprc", "tp", "fn", "sensitivity", "screening_fn_per_1000"):
        for row in want.index:
            assert_same(shown.loc[row, column], want.loc[row, column])
    # closed again: the page no longer sends it
    at.session_state["per_criterion_table_open"] = False
    at.run(timeout=TIMEOUT)
    with pytest.raises(KeyError):
        at.get_by_key("per_criterion_table")


def test_the_overviews_long_tables_are_drawn_only_when_asked_for(demo_evaluator):
    """Every metric and the consistency checks are not sent with the Overview; opening their
    expanders draws them, with the computed values."""
    at = open_app()
    assert_clean(at)
    for key in ("all_metrics_table", "checks_table"):
        with pytest.raises(KeyError):
            at.get_by_key(key)
    at.session_state["all_metrics_open"] = True
    at.session_state["checks_open"] = True
    at.run(timeout=TIMEOUT)
    assert_clean(at)
    shown = table(at, "all_metrics_table").set_index("metric")
    want = expected(demo_evaluator)
    assert set(shown.index) >= {r.name for r in want.records}
    for name in ("auroc", "auprc", "sensitivity", "tp", "ece", "screening_sensitivity"):
        assert_same(shown.loc[name, "value"], want.record(name).value)
    checks = table(at, "checks_table")
    view = at.session_state[state.VIEW].evaluation
    assert list(checks["check"]) == [c.name for c in view.checks]
    passed = int((checks["result"] == "pass").sum())
    assert any(s.value.startswith(f"{passed} of {len(checks)} consistency checks pass")
               for s in at.success)


def test_an_empty_filter_says_so_without_a_traceback():
    # In the demo, fold 0 is the TUNE split: fold 1 has no TUNE query.
    at = open_app(query={"fold": "1", "split": "TUNE"})
    assert_clean(at)
    assert any("no queries match the filter" in e.value for e in at.error)


# ------------------------------------------------------------------------- failures
def test_a_bad_upload_shows_its_message():
    at = upload(open_app(), ("bad.csv", b"a,b\n1,2\n", "text/csv"))
    assert_clean(at)
    message = "\n".join(e.value for e in at.error)
    assert "The uploaded files were not loaded" in message
    assert "column 'post_id': required column is missing" in message
    # Errors block: the session keeps showing the demo.
    assert any(DEMO_LABEL in t for t in texts(at))


def test_an_unreadable_upload_shows_its_message():
    at = upload(open_app(), ("broken.parquet", b"PAR1 not really parquet", "application/x"))
    assert_clean(at)
    assert any("broken.parquet" in e.value for e in at.error)


def test_unrecognised_columns_go_through_the_mapping_step(upload_files):
    (_, q_bytes, _), candidates = upload_files
    q = pd.read_csv(io.BytesIO(gzip.decompress(q_bytes)), dtype={"post_id": str})
    renamed = q.rename(columns={"p_has_evidence": "model_output", "has_evidence": "truth"})
    at = upload(open_app(), ("renamed.csv", renamed.to_csv(index=False).encode(), "text/csv"),
                candidates)
    assert_clean(at)
    assert any("required column is missing" in e.value for e in at.error)
    at.selectbox(key="map_q_p_has_evidence").set_value("model_output")
    at.selectbox(key="map_q_has_evidence").set_value("truth")
    at.button(key="load_mapped").click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert not any("not loaded" in e.value for e in at.error)
    assert at.session_state["_source"].loaded.column_map["queries"]["p_has_evidence"] == \
        "model_output"
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    shown = table(at, "column_map_table").set_index(["table", "field"])
    assert shown.loc[("queries", "p_has_evidence"), "how"] == "mapped by hand"
    assert shown.loc[("queries", "has_evidence"), "how"] == "mapped by hand"
    assert shown.loc[("queries", "post_id"), "how"] == "recognised (name or alias)"
    assert not any("every column was recognised" in t for t in texts(at))


def test_excluded_rows_are_shown_and_downloadable():
    q, c = random_frames(n_posts=15, seed=9)
    q.loc[[2, 7], "p_has_evidence"] = np.nan  # excluded with their candidates (contract §2)
    files = (("q.csv", q.to_csv(index=False).encode(), "text/csv"),
             ("c.csv", c.to_csv(index=False).encode(), "text/csv"))
    want = mio.load(files[0][1], files[1][1], queries_name="q.csv", candidates_name="c.csv")
    at = upload(open_app(), *files)
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    assert_clean(at)
    shown = table(at, "exclusions_table")
    assert (shown["sent_uid"] == "").sum() == 2  # the two query rows, then their candidates
    pd.testing.assert_frame_equal(shown.reset_index(drop=True),
                                  want.exclusions.reset_index(drop=True), check_dtype=False)
    assert at.get_by_key("download_exclusions") is not None
    assert any(w in " ".join(x.value for x in at.warning) for w in want.warnings)


def test_a_long_jsonl_table_loads():
    q, c = random_frames(n_posts=20, seed=8)
    long = c.merge(q, on=["post_id", "criterion"])
    data = long.to_json(orient="records", lines=True).encode()
    at = upload(open_app(), ("long.jsonl", data, "application/x-ndjson"))
    assert_clean(at)
    assert at.session_state["_source"].dataset.n_candidates == len(long)


def test_an_internal_failure_is_a_plain_message(monkeypatch):
    from metrics_core.report.figures import gate

    def broken(*args, **kwargs):
        raise RuntimeError("patient p123 said something private")

    monkeypatch.setattr(gate, "k_histogram", broken)
    at = open_app(page="dynamic_k")
    assert not at.exception
    shown = "\n".join(texts(at))
    assert f"{INTERNAL_ERROR}: RuntimeError" in shown
    assert "p123" not in shown and "Traceback" not in shown


# --------------------------------------------------------------------------- triage
def test_a_triage_file_switches_to_the_triage_view():
    path = ROOT / "tests" / "data" / "triage_small.csv"
    at = upload(open_app(), (path.name, path.read_bytes(), "text/csv"))
    assert_clean(at)
    assert [t.value for t in at.title] == ["Triage"]
    report = triage_metrics(load_triage(path))
    m = report.metrics
    assert metric(at, "Coverage") == display.fmt(m.coverage)
    assert metric(at, "Accuracy (answered)") == display.fmt(m.accuracy_answered)
    shown = values_by(table(at, "triage_metrics_table"), "metric")
    for name in ("coverage", "accuracy_answered", "slip_rate", "false_flag_rate"):
        assert_same(shown[m.key(name)], getattr(m, name))
    lat = table(at, "triage_latency_table")
    for row in lat.itertuples():
        assert_same(row.p95, report.latency[row.timing].p95)


def test_a_triage_file_with_a_blank_or_unknown_verdict_names_them():
    data = b"label,prediction,confidence\nfake,fake,0.9\nreal,unsure,0.5\nreal,,0.8\n"
    at = upload(open_app(), ("runs.csv", data, "text/csv"))
    assert_clean(at)
    message = "\n".join(e.value for e in at.error)
    assert "runs.csv: column 'prediction': values must be 'fake' / 'real' / 'uncertain'" \
        in message
    assert "(2 rows, first: 2, 3); found (empty), unsure" in message
    assert "post_id" not in message  # not taken for a queries table


def test_a_triage_file_with_one_and_zero_verdicts_says_why_it_was_read_as_queries():
    """Verdicts 1 / 0 without -1 could be any binary prediction: the file is read as a queries
    table, and the first problem says why, with what a triage file needs."""
    data = b"label,prediction,confidence\n1,1,0.9\n0,0,0.2\n1,0,0.4\n"
    at = upload(open_app(), ("runs.csv", data, "text/csv"))
    assert_clean(at)
    message = "\n".join(e.value for e in at.error)
    assert ("runs.csv: column 'prediction': read as a queries table: the file has a triage "
            "file's label ('label') and prediction ('prediction') columns, but the prediction "
            "column holds the numbers '1', '0', without -1 (an abstention)") in message
    assert "write the verdicts as 'fake', 'real', 'uncertain' (or 1, 0 and -1" in message
    assert "column 'post_id': required column is missing" in message  # the queries' too


def test_a_triage_file_that_always_abstains_says_why_each_value_is_undefined():
    data = b"label,prediction\nfake,uncertain\nreal,uncertain\nreal,uncertain\n"
    at = upload(open_app(), ("abstains.csv", data, "text/csv"))
    assert_clean(at)
    assert metric(at, "Accuracy (answered)") == "—"
    assert "undefined: no answered sample (every sample abstained)" in texts(at)
    assert metric(at, "Coverage") == display.fmt(0.0)
    shown = table(at, "triage_metrics_table")
    why = values_by(shown, "metric", "undefined")
    assert why["mcc"].startswith("every fake sample abstained; every real sample abstained")
    assert why["coverage"] == "" and why["ece"] == "no answered sample (every sample abstained)"
    per_class = values_by(table(at, "triage_class_table"), "class", "undefined")
    assert per_class["real"] == ("precision: no real answer (0/0); recall: every real sample "
                                 "abstained (0/0); f1: no real answer and every real sample "
                                 "abstained (0/0)")
    assert any("Risk–coverage is undefined" in i.value for i in at.info)
    # every rate here is 0, 1 or undefined: still written as scores (0.000), never as counts
    config = json.loads(at.get_by_key("triage_metrics_table").dataframe[0].proto.columns)
    assert config["value"]["type_config"]["format"] == display.COLUMN_FORMATS["score"]
    config = json.loads(at.get_by_key("triage_class_table").dataframe[0].proto.columns)
    assert config["coverage"]["type_config"]["format"] == display.COLUMN_FORMATS["score"]
    assert "The file has no timing column (a column named *_seconds)." in texts(at)


def open_triage_demo() -> AppTest:
    at = open_app()
    at.radio(key=state.DEMO_VARIANT).set_value("demo_triage").run()
    return at


def test_the_demo_triage_page_is_labelled_synthetic():
    at = open_triage_demo()
    assert_clean(at)
    assert at.title[0].value == "Triage"  # the triage demo opens on its own page
    report = triage_metrics(load_triage(demo_paths().triage))
    assert metric(at, "Coverage") == display.fmt(report.metrics.coverage)
    assert any("Synthetic" in i.value for i in at.info)


def test_the_triage_demo_is_in_its_link():
    at = open_triage_demo()
    assert at.query_params == {"demo": "demo_triage"}
    again = open_app(query=dict(at.query_params))  # the link opened in a new session
    assert_clean(again)
    assert [t.value for t in again.title] == ["Triage"]
    report = triage_metrics(load_triage(demo_paths().triage))
    assert metric(again, "Coverage") == display.fmt(report.metrics.coverage)
    again.radio(key=state.DEMO_VARIANT).set_value("demo").run()
    assert "demo" not in again.query_params  # the plain demo is the default
    wrong = open_app(query={"demo": "nonsense"})
    assert_clean(wrong)
    assert any("demo='nonsense' in the link names no demo a link can open" in w.value
               for w in wrong.warning)
    assert [t.value for t in wrong.title] == ["Overview"]


# ------------------------------------------------------------------ the URL and state
LINK = {"gate": "0.15,0.55", "threshold": "0.4", "gamma": "0.85", "k_min": "1",
        "gate_aware": "0", "binning": "quantile", "n_bins": "8", "fold": "3",
        "criterion": ["A.1", "A.4"], "map_denominator": "hits", "multilabel_rule": "screen_in"}


def test_a_link_restores_the_view_and_is_written_back(demo_evaluator):
    at = open_app(query=dict(LINK))
    assert_clean(at)
    assert at.slider(key="gate").value == (0.15, 0.55)
    assert at.slider(key="threshold").value == 0.4
    assert at.slider(key="gamma").value == 0.85
    assert at.number_input(key="k_min").value == 1
    assert at.toggle(key="gate_aware").value is False
    assert at.selectbox(key="binning").value == "quantile"
    assert at.number_input(key="n_bins").value == 8
    assert at.selectbox(key="fold").value == "3"
    assert at.multiselect(key="criterion").value == ["A.1", "A.4"]
    assert at.selectbox(key="map_denominator").value == "hits"
    assert at.query_params == LINK


def test_moving_a_setting_updates_the_link():
    at = open_app()
    at.slider(key="gamma").set_value(0.75).run(timeout=TIMEOUT)
    assert at.query_params == {"gamma": "0.75", "explored": "gamma"}
    at.slider(key="gamma").set_value(0.9).run(timeout=TIMEOUT)  # the default again, moved
    assert at.query_params == {"explored": "gamma"}


def test_the_link_survives_a_page_switch():
    at = open_app(query={"gamma": "0.8"}, page="calibration")
    assert at.query_params == {"gamma": "0.8"}
    assert at.slider(key="gamma").value == 0.8


def test_bad_link_values_fall_back_with_a_note():
    at = open_app(query={"gamma": "lots", "fold": "9", "gate": "0.7,0.2"})
    assert_clean(at)
    notes = " ".join(w.value for w in at.warning)
    assert "gamma='lots'" in notes and "fold='9'" in notes and "gate='0.7,0.2'" in notes
    assert at.slider(key="gamma").value == 0.9
    assert at.query_params == {}


def test_registry_defaults_are_the_eval_config_defaults():
    assert state.build_config({s.key: s.default for s in state.SETTINGS}) == EvalConfig()
    assert link.url_params({s.key: s.default for s in state.SETTINGS}) == {}
    fields = {f for s in state.SETTINGS for f in s.fields}
    # Every EvalConfig field is a dashboard setting except the K and FPR lists.
    assert set(EvalConfig.__dataclass_fields__) - fields == {"ks", "tpr_fprs"}


@pytest.mark.parametrize("setting", state.SETTINGS, ids=lambda s: s.key)
def test_every_setting_round_trips_through_the_url(setting):
    if setting.kind == "range":
        value = (0.05, 0.95)
    elif setting.kind == "float":
        value = round(setting.low + (setting.high - setting.low) / 3, 2)
    elif setting.kind == "int":
        value = int(setting.low) + 1
    elif setting.kind == "bool":
        value = not setting.default
    elif setting.kind == "choice":
        value = setting.options[-1]
    elif setting.key == "targets":
        value = ("auroc>=0.9", "ece<0.02")
    elif setting.key == "cohort":
        value = ("site=S 1", "age=[40, 65)")
    elif setting.key == "cohort_bins":
        value = ("age=q3", "bmi=18.5,25")
    elif setting.kind == "multi":
        value = ("A.1", "B 2")
    elif setting.kind == "gates":
        value = (("A:1", 0.05, 0.7), ("B 2", 0.2, 0.2))
    else:
        value = "TEST"
    params = link.url_params({setting.key: value})
    assert params == {setting.key: setting.encode(value)}
    decoded, notes = link.settings_from_params(params)
    assert notes == []
    assert decoded == {setting.key: value}


def test_url_values_outside_the_widget_bounds_are_rejected():
    decoded, notes = link.settings_from_params({"threshold": "1.5", "k_min": "2.5",
                                                 "binning": "fancy", "unknown": "1"})
    assert decoded == {}
    assert len(notes) == 4  # three bad values, and a key that names no setting
    assert notes[0] == "'unknown' in the link is not a setting and was ignored."


# ----------------------------------------------------------------- export and config
def test_csv_cells_that_would_run_as_formulas_are_neutralised():
    frame = pd.DataFrame({
        "text": ["=1+2", "+SUM(A1)", "-cmd|' /C calc'!A0", "@IMPORT", "\tx", "plain", None,
                 "-0.5"],
        "number": [-0.5, 1.0, -2.0, 3.0, 0.0, -1e-3, np.nan, 7.0],
    })
    out = export.neutralise_frame(frame)
    assert list(out["text"])[:6] == ["'=1+2", "'+SUM(A1)", "'-cmd|' /C calc'!A0", "'@IMPORT",
                                     "'\tx", "plain"]
    assert out["text"].iloc[6] is None or pd.isna(out["text"].iloc[6])
    assert out["text"].iloc[7] == "-0.5"  # a number written as text stays that number
    pd.testing.assert_series_equal(out["number"], frame["number"])  # numbers untouched
    csv = export.csv_bytes(frame).decode()
    assert "\n'=1+2,-0.5\n" in csv and ",-0.5\n" in csv
    assert "\n=1" not in csv


def test_neutralising_covers_names_categories_and_mixed_columns():
    frame = pd.DataFrame({"=name": pd.Categorical(["=a", "b"]), "mixed": [1, "@x"]},
                         index=pd.Index(["+i", "j"], name="-idx"))
    out = export.neutralise_frame(frame)
    assert list(out.columns) == ["'=name", "mixed"]
    assert list(out["'=name"]) == ["'=a", "b"]
    assert list(out["mixed"]) == [1, "'@x"]
    assert list(out.index) == ["'+i", "j"] and out.index.name == "'-idx"
    assert export.neutralise_cell(-3) == -3 and export.neutralise_cell("+3") == "+3"


def test_server_configuration_is_locked_down():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["headless"] is True
    assert config["server"]["enableXsrfProtection"] is True
    assert config["server"]["fileWatcherType"] == "none"
    assert 0 < config["server"]["maxUploadSize"] <= 4096
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["showErrorDetails"] == "none"
    assert config["client"]["toolbarMode"] == "minimal"


def test_uploads_never_touch_a_shared_cache():
    """Only the synthetic demo's loaders use st.cache_* (shared between sessions)."""
    import ast

    decorated, uses = set(), 0
    for path in (ROOT / "dashboard").rglob("*.py"):
        tree = ast.parse(path.read_text())
        # (emptying the caches, st.cache_resource.clear(), makes none)
        cleared = {id(n.value) for n in ast.walk(tree)
                   if isinstance(n, ast.Attribute) and n.attr == "clear"}
        uses += sum(isinstance(n, ast.Attribute) and n.attr.startswith("cache_")
                    and id(n) not in cleared for n in ast.walk(tree))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                    "cache_" in ast.unparse(d) for d in node.decorator_list):
                decorated.add(f"{path.stem}.{node.name}")
    assert decorated == {"data._demo_parts", "evaluations._shared_demo_evaluations"}
    assert uses == len(decorated)  # no other st.cache_* anywhere in the dashboard


def test_a_failure_in_the_gate_fragment_is_a_plain_message(monkeypatch):
    """The Gate page's fragment (rerun on its own when its slider moves, outside the app's
    error boundary) shows a failure as a plain message, keeps its slider, and the rest of the
    page still draws."""
    from dashboard import gate_card

    def broken(v, **options):
        raise ZeroDivisionError("division by zero in a test")

    monkeypatch.setattr(gate_card, "gate_card", broken)
    at = open_app(page="gate")
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Something went wrong computing this view: ZeroDivisionError"]
    assert "division by zero in a test" not in "\n".join(texts(at))
    assert at.slider(key="gate").value == (0.1, 0.6)
    assert table(at, "tpr_table") is not None  # below the fragment: still drawn


def test_a_link_key_that_names_no_setting_is_said_not_silently_dropped():
    """A hand-edited link ``?tau_neg=0.05`` used to show τ_neg's default with no word."""
    at = open_app({"tau_neg": "0.05", "ci": "0"})
    shown = " ".join(texts(at))
    # (as the page's markdown has it: underscores escaped)
    assert "'tau_neg' in the link is not a setting and was ignored" in shown
    assert "set as gate=τ\\_neg,τ\\_pos (e.g. gate=0.05,0.6)" in shown
    assert at.session_state[state.VIEW].config.tau_neg == 0.1  # the default, as said
    # the app's own keys are settings or marks: no note for a link the app wrote
    clean = open_app({"gate": "0.05,0.6", "explored": "tau_neg", "ci": "0"})
    assert not any("in the link is not a setting" in t for t in texts(clean))
