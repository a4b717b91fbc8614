"""How the dashboard writes numbers: one format per kind (``dashboard.display.fmt``), undefined
values as "—" with the reason, registry labels, tables sized to their rows, and the Help &
glossary page.

The unit tests check the format helper on hand-worked values; the AppTest tests check that the
pages use it (the shown text equals the helper applied to the value metrics_core computes,
and the numeric data behind a table stay the computed numbers).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import streamlit as st

from dashboard import display
from metrics_core import registry
from metrics_core.config import EvalConfig
from metrics_core.evaluation.result import MetricRecord
from tests.conftest import random_frames
from tests.test_app import TIMEOUT, assert_clean, metric, open_app, table, texts, upload


# ------------------------------------------------------------------------ the helper
@pytest.mark.parametrize(("value", "kind", "text"), [
    (13230.0, "count", "13,230"),       # a count stored as float: no ".0000"
    (449, "count", "449"),
    (1234567, "count", "1,234,567"),
    (0.59812, "score", "0.598"),
    (0.5985, "score", "0.599"),         # binary 0.59850000000000003 rounds up
    (1, "score", "1.000"),              # the same value as a tile and in a table
    (0.0, "score", "0.000"),
    (-0.25, "score", "-0.250"),
    (37.5083, "per_1000", "37.5"),
    (884.7664, "per_1000", "884.8"),
    (1234.56, "per_1000", "1,234.6"),
    (8.6023, "average", "8.6"),         # the std of a count over folds
])
def test_fmt_writes_each_kind_in_its_one_format(value, kind, text):
    assert display.fmt(value, kind) == text


@pytest.mark.parametrize("value", [None, math.nan, np.nan, math.inf, -math.inf, pd.NA,
                                   np.float64("nan")])
@pytest.mark.parametrize("kind", display.KINDS)
def test_undefined_is_a_dash_in_every_kind(value, kind):
    assert display.fmt(value, kind) == "—"


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="number kind must be one of count, per_1000"):
        display.fmt(0.5, "percent")


@pytest.mark.parametrize(("name", "kind"), [
    ("tp", "count"), ("fn", "count"), ("workload", "count"),
    ("screening_fn_per_1000", "per_1000"), ("alert_rate_per_1000", "per_1000"),
    ("workload_per_1000", "per_1000"), ("auroc", "score"), ("recall@10", "score"),
    ("tpr@fpr=0.05", "score"), ("mcc", "score"), ("mean_k", "score"),
    ("calibration_slope", "score"), ("n", "count"), ("n_positive", "count"),
    ("gamma", "score"), ("not_a_metric", "score"),
])
def test_the_kind_comes_from_the_registry_unit(name, kind):
    assert display.kind_of(name) == kind
    if name in ("tp", "screening_fn_per_1000", "auroc"):
        assert registry.spec(name).unit == {"count": "count", "per_1000": "per_1000",
                                            "score": "proportion"}[kind]


def test_fmt_metric_and_intervals():
    assert display.fmt_metric("fn", 930.0) == "930"
    assert display.fmt_metric("screening_fn_per_1000", 37.50846) == "37.5"
    assert display.fmt_metric("alert_precision", 0.78431) == "0.784"
    assert display.fmt_interval(0.5712, 0.6238) == "[0.571, 0.624]"
    assert display.fmt_interval(34.563, 40.695, "per_1000") == "[34.6, 40.7]"
    assert display.fmt_interval(None, 0.6) == "—"
    assert display.fmt_interval(math.nan, math.nan) == "—"
    assert display.ci_text(0.5712, 0.6238, "Wilson") == "95% CI [0.571, 0.624] (Wilson)"
    assert display.ci_text(None, None) == "no interval"


@pytest.mark.parametrize(("record", "reason"), [
    (MetricRecord("auroc", 0.5, "all_queries", 40, defined=False),
     "undefined: only one class present (needs queries with and without evidence)"),
    (MetricRecord("tpr@fpr=0.05", None, "all_queries", 40, defined=False),
     "undefined: only one class present (needs queries with and without evidence)"),
    (MetricRecord("alert_precision", None, "all_queries", 40, defined=False),
     "undefined: 0/0 (no query in its denominator)"),
    (MetricRecord("sensitivity", None, "criterion C1", 0, defined=False),
     "undefined: no queries in this subset"),
    (MetricRecord("auroc", 0.81, "all_queries", 40), ""),
])
def test_undefined_reason(record, reason):
    assert display.undefined_reason(record) == reason


def test_column_config_labels_formats_and_pins():
    frame = pd.DataFrame({"criterion": ["A", "B"], "auroc": [0.9, np.nan],
                          "tp": [449.0, 13230.0], "screening_fn_per_1000": [37.5, 4.0],
                          "gamma": [0.7, 0.8], "n": [10, 20], "note": ["x" * 90, "y"],
                          "fold": [4.0, np.nan], "precision@1": [1.0, 0.0]})
    config = display.column_config_for(frame)
    assert config["criterion"]["pinned"] is True
    assert config["auroc"]["label"] == "AUROC"
    assert config["auroc"]["type_config"]["format"] == "%.3f"
    assert config["auroc"]["help"] == registry.describe("auroc")
    assert config["tp"]["label"] == "TP"
    assert config["tp"]["type_config"]["format"] == "%,d"
    assert config["screening_fn_per_1000"]["label"] == "Missed positives (FN) per 1,000"
    assert config["screening_fn_per_1000"]["type_config"]["format"] == "%,.1f"
    assert config["gamma"]["label"] == "γ"
    assert config["n"]["type_config"]["format"] == "%,d"
    assert config["note"]["width"] == "large"
    assert config["fold"]["type_config"]["format"] == "%,d"  # whole numbers read as floats
    assert config["precision@1"]["type_config"]["format"] == "%.3f"  # a metric stays a score
    assert not config["auroc"].get("pinned")
    # what the page gives wins; the pin still applies to it
    given = display.column_config_for(frame, {"criterion": {"label": "Criterion"}})
    assert given["criterion"] == {"label": "Criterion", "pinned": True}


def test_table_height_shows_every_row_up_to_the_cap():
    assert display.table_height(26) == 27 * 35 + 3
    assert display.table_height(26, 72) == 26 * 72 + 35 + 3
    assert display.table_height(500) == (display.MAX_VISIBLE_ROWS + 1) * 35 + 3
    assert display.table_height(69, 35, max_rows=69) == 70 * 35 + 3


# ---------------------------------------------------------------------- the pages
def _columns(at, key: str) -> dict:
    return json.loads(at.get_by_key(key).dataframe[0].proto.columns)


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


@pytest.fixture(scope="module")
def one_class_criterion():
    """An upload whose criterion C3 has no query with evidence (and no gold sentence)."""
    q, c = random_frames(n_posts=60, seed=11)
    q.loc[q["criterion"] == "C3", "has_evidence"] = 0
    if "n_gold" in q:
        q.loc[q["criterion"] == "C3", "n_gold"] = 0
    c.loc[c["criterion"] == "C3", "is_gold"] = 0
    return ("queries.csv", _csv(q), "text/csv"), ("candidates.csv", _csv(c), "text/csv")


@pytest.fixture(scope="module")
def one_class():
    """An upload where no query has evidence."""
    q, c = random_frames(n_posts=30, seed=12)
    q["has_evidence"] = 0
    if "n_gold" in q:
        q["n_gold"] = 0
    c["is_gold"] = 0
    return ("queries.csv", _csv(q), "text/csv"), ("candidates.csv", _csv(c), "text/csv")


def test_one_class_upload_shows_dashes_with_the_reason(one_class):
    at = upload(open_app(), *one_class)
    assert_clean(at)
    shown = table(at, "headline_table").set_index("metric")
    for name in ("auroc", "auprc"):
        # before: AUROC 0.5000 / AUPRC 0.0000 as numbers
        assert shown.loc[name, "shown"] == "—"
        assert math.isnan(shown.loc[name, "value"])
        assert shown.loc[name, "ci_method"] == ("undefined: only one class present (needs "
                                                "queries with and without evidence)")
    assert shown.loc["sensitivity", "shown"] == "—"
    assert shown.loc["sensitivity", "ci_method"] == ("undefined: no query with evidence "
                                                     "(needs queries with evidence)")
    assert "None" not in set(shown["shown"]) | set(shown["ci95"])
    at.switch_page("app_pages/gate.py").run(timeout=TIMEOUT)
    assert_clean(at)
    assert metric(at, "Screening sensitivity") == "—"
    assert "undefined: no query with evidence (0/0)" in texts(at)


def test_every_table_shows_missing_values_as_a_dash():
    for page in ("overview", "gate", "per_criterion", "decision", "dynamic_k", "folds",
                 "calibration", "ranking", "per_post", "glossary"):
        at = open_app(page=page)
        assert_clean(at)
        frames = at.dataframe
        assert len(frames), page
        for frame in frames:
            assert frame.proto.placeholder == "—", page  # Streamlit's default shows "None"


def test_a_criterion_without_positives_is_undefined_not_half(one_class_criterion):
    at = upload(open_app(), *one_class_criterion)
    at.switch_page("app_pages/per_criterion.py").run(timeout=TIMEOUT)
    assert_clean(at)
    focus = table(at, "per_criterion_focus").set_index("criterion")
    assert math.isnan(focus.loc["C3", "AUROC"])  # before: 0.5, drawn as a value
    assert focus.loc["C3", "status"] == "undefined: only one class present"
    assert focus.loc["C1", "status"] == ""
    assert not math.isnan(focus.loc["C1", "AUROC"])
    at.session_state["per_criterion_table_open"] = True  # the full table, on demand
    at.run(timeout=TIMEOUT)
    full = table(at, "per_criterion_table").set_index("criterion")
    assert math.isnan(full.loc["C3", "auroc"]) and math.isnan(full.loc["C3", "auprc"])


@pytest.fixture(scope="module")
def demo_evaluator():
    from metrics_core.demo import demo_paths
    from metrics_core.inputs import loading as mio
    from metrics_core.report import Evaluator

    paths = demo_paths()
    return Evaluator(mio.load(paths.queries, paths.candidates).dataset)


def test_tiles_and_tables_write_each_kind_in_its_format(demo_evaluator):
    at = open_app(page="gate")
    assert_clean(at)
    ev = demo_evaluator.evaluate(EvalConfig(bootstrap=0))
    g = ev.gate
    # the per-1,000 tile to 1 decimal, the rates to 3 (before: 4 decimals, "1" for 1.0)
    assert metric(at, "Missed positives (FN) per 1,000") == f"{g.screening_fn_per_1000:.1f}"
    assert metric(at, "Screening sensitivity") == f"{g.screening_sensitivity:.3f}"
    confusion = table(at, "confusion_table").set_index("metric")
    for name in ("tp", "fp", "tn", "fn"):
        value = ev.record(name).value
        assert confusion.loc[name, "value"] == value  # the data stay the computed number
        assert confusion.loc[name, "shown"] == f"{round(value):,}"  # before: 449.0000
    assert confusion.loc["tn", "shown"] == f"{round(ev.record('tn').value):,}"
    assert "," in confusion.loc["tn", "shown"]  # 13,230: thousands separator
    at.session_state["gate_card_table_open"] = True  # the card's table, on demand on this page
    at.run(timeout=TIMEOUT)
    card = table(at, "gate_card_table").set_index("metric")
    lo, hi = g.ci("screening_sensitivity")
    assert card.loc["screening_sensitivity", "ci95"] == f"[{lo:.3f}, {hi:.3f}]"
    lo, hi = g.ci("screening_fn_per_1000")
    assert card.loc["screening_fn_per_1000", "ci95"] == f"[{lo:.1f}, {hi:.1f}]"
    assert card.loc["screening_fn_per_1000", "shown"] == f"{g.screening_fn_per_1000:.1f}"


def test_count_columns_are_integers_and_metric_columns_carry_labels():
    at = open_app(page="per_criterion")
    assert_clean(at)
    at.session_state["per_criterion_table_open"] = True  # the full table, on demand
    at.run(timeout=TIMEOUT)
    columns = _columns(at, "per_criterion_table")
    assert columns["tp"]["type_config"]["format"] == "%,d"
    assert columns["tp"]["label"] == "TP"
    assert columns["auroc"]["label"] == "AUROC"
    assert columns["auroc"]["type_config"]["format"] == "%.3f"
    assert columns["screening_fn_per_1000"]["type_config"]["format"] == "%,.1f"
    assert columns["recall@10"]["label"] == "Recall@10"
    assert columns["criterion"]["pinned"] is True
    # the data keep the ids (exports and tests)
    assert "auroc" in table(at, "per_criterion_table").columns
    at.switch_page("app_pages/dynamic_k.py").run(timeout=TIMEOUT)
    sweep = _columns(at, "gamma_sweep_table")
    assert sweep["workload"]["type_config"]["format"] == "%,d"
    assert sweep["workload_per_1000"]["label"] == "Sentences per 1,000 queries"
    assert sweep["workload_per_1000"]["type_config"]["format"] == "%,.1f"
    assert sweep["gamma"]["label"] == "γ"


def test_record_tables_show_labels_with_the_id_kept():
    at = open_app()
    assert_clean(at)
    frame = table(at, "headline_table")
    assert list(frame["label"]) == [registry.label(m) for m in frame["metric"]]
    assert "Screening sensitivity" in set(frame["label"])
    element = at.get_by_key("headline_table").dataframe[0].proto
    order = list(element.column_order)
    assert order[0] == "label" and order[-1] == "metric"  # label first, the id last
    assert "value" not in order  # the numeric twin of "shown" stays out of sight
    columns = json.loads(element.columns)
    assert columns["label"]["pinned"] is True
    assert columns["metric"]["label"] == "id"
    at.switch_page("app_pages/ranking.py").run(timeout=TIMEOUT)
    ranking = table(at, "ranking_table")
    assert list(ranking["label"]) == [registry.label(n) for n in ranking["metric"]]
    shown = list(at.get_by_key("ranking_table").dataframe[0].proto.column_order)
    assert "name" not in ranking.columns and "metric" not in shown  # one label column
    assert shown[0] == "label"
    at.switch_page("app_pages/folds.py").run(timeout=TIMEOUT)
    folds = table(at, "fold_summary_table")
    assert list(folds["label"]) == [registry.label(n) for n in folds["metric"]]
    n_row = folds.set_index("metric").loc["n"] if "n" in set(folds["metric"]) else None
    if n_row is not None:  # the spread of a count: 1 decimal (before: "std of n = 8.6023")
        assert n_row["mean ± std"] == f"{n_row['mean']:.1f} ± {n_row['std']:.1f}"
    auroc = folds.set_index("metric").loc["auroc"]
    assert auroc["mean ± std"] == f"{auroc['mean']:.3f} ± {auroc['std']:.3f}"


def test_tables_are_sized_to_their_rows_and_wrap_long_text(monkeypatch):
    calls = {}
    original = st.dataframe

    def spy(data, *args, **kwargs):
        calls[len(calls)] = (len(data), kwargs)
        return original(data, *args, **kwargs)

    monkeypatch.setattr(st, "dataframe", spy)
    at = open_app()
    assert_clean(at)
    assert calls
    for n_rows, kwargs in calls.values():
        row_height = kwargs.get("row_height") or 35
        # every row in view (no table of 26 rows in a 10-row box), up to the cap
        assert kwargs["height"] >= min(n_rows, display.MAX_VISIBLE_ROWS) * row_height + 35
        assert kwargs["placeholder"] == "—"
    element = at.get_by_key("headline_table").dataframe[0].proto
    assert element.row_height > 64  # Streamlit wraps cell text above 4 rem


def test_the_help_page_defines_every_metric_and_protocol():
    at = open_app(page="glossary")
    assert_clean(at)
    shown = "\n".join(texts(at))
    for term in ("Positives only (protocol)", "All queries (protocol)",
                 "Gate states (NEG / UNCERTAIN / POS)", "Dynamic-K", "Wilson interval",
                 "Bootstrap interval", "Pre-specified threshold", "Exploratory threshold",
                 "[0.571, 0.624]", "13,230"):
        assert term in shown, term
    assert "CONTRACT" not in shown and "§" not in shown  # no document references on a page
    variants = table(at, "glossary_variants")
    row = variants[(variants["option"] == "n_gold")].iloc[0]
    assert row["what it computes"] == "÷ |Gold| (trec_eval map_cut)" and row["default"]
    glossary = table(at, "glossary_metrics")
    assert list(glossary["id"]) == [s.name for s in registry.SPECS]
    by_id = glossary.set_index("id")
    assert by_id.loc["auroc", "metric"] == "AUROC"
    assert by_id.loc["auroc", "what it measures"] == registry.spec("auroc").description
    assert by_id.loc["tp", "written as"] == "whole number"
    assert by_id.loc["alert_rate_per_1000", "written as"] == "1 decimal"
    assert by_id.loc["recall@", "metric"] == "Recall@K"
    assert not glossary["what it measures"].str.contains("{", regex=False).any()


def test_the_help_page_is_in_the_navigation():
    at = open_app()
    source = (Path(display.__file__).parent / "app.py").read_text()
    assert '"glossary.py", "Help & glossary"' in source
    at.switch_page("app_pages/glossary.py").run(timeout=TIMEOUT)
    assert_clean(at)
    assert [t.value for t in at.title] == ["Help & glossary"]

