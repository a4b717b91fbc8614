"""Seed 004 triage files: loading, validation, metrics, trials (contract §6 abstention view).

Sources: "contract §N" is section N of docs/CONTRACT.md; "seed 004" is
docs/seeds/004-triage-abstention-metrics.txt.
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metrics_core.errors import InputError, InputErrors
from metrics_core.metrics.gate import abstention_metrics
from metrics_core.triage import (
    TriageConfig,
    detect_triage,
    load_triage,
    parse_triage,
    triage_hint,
    triage_metrics,
)

SMALL = Path(__file__).parent / "data" / "triage_small.csv"

# tests/data/triage_small.csv, 12 rows (positive class = fake):
#   fake -> fake: s01, s02, s10 (TP 3)      real -> real: s05, s06, s11, s12 (TN 4)
#   fake -> real: s03 (FN 1)                real -> fake: s07, s09 (FP 2)
#   fake -> uncertain: s04                  real -> uncertain: s08
# N = 12, N_fake = 5, N_real = 7, answered = 10
EXPECTED = {
    "coverage": 10 / 12, "abstain_rate": 2 / 12,
    "abstain_rate_fake": 1 / 5, "abstain_rate_real": 1 / 7,
    "coverage_fake": 4 / 5, "coverage_real": 6 / 7,
    "accuracy": 7 / 12, "accuracy_answered": 7 / 10,
    "precision_fake": 3 / 5, "recall_fake": 3 / 4, "f1_fake": 2 * 3 / (2 * 3 + 2 + 1),
    "precision_real": 4 / 5, "recall_real": 4 / 6, "f1_real": 2 * 4 / (2 * 4 + 1 + 2),
    "balanced_accuracy": (3 / 4 + 4 / 6) / 2,
    "mcc": (3 * 4 - 2 * 1) / math.sqrt((3 + 2) * (3 + 1) * (4 + 2) * (4 + 1)),
    "fake_slip_rate": 1 / 5, "real_false_flag_rate": 2 / 7,
    "fake_catch_rate": 3 / 5, "real_pass_rate": 4 / 7,
    # answered confidences: .95 x 3 right; .85 x 3 right; .65: s03 wrong, s07 wrong, s12 right;
    # .55: s09 wrong. ECE = .3·.05 + .3·.15 + .3·|1/3 - .65| + .1·.55 = 0.21
    "ece": 0.21,
    # Brier = (3·.05² + 3·.15² + .35² + 2·.65² + .55²) / 10 = 1.345 / 10
    "brier": 0.1345,
    "n": 12, "n_fake": 5, "n_real": 7, "tp": 3, "fp": 2, "tn": 4, "fn": 1,
    "answered": 10, "abstain": 2, "abstain_fake": 1, "abstain_real": 1,
}


@pytest.fixture
def small_frame() -> pd.DataFrame:
    return pd.read_csv(SMALL, dtype={"trial": str})


def test_small_file_every_seed004_metric():
    report = triage_metrics(load_triage(SMALL))
    got = report.metric_dict()
    for key, value in EXPECTED.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
    assert report.n == 12 and report.name == "triage_small.csv"


def test_small_file_latency_and_tools():
    report = triage_metrics(load_triage(SMALL))
    # total_seconds = 1..12: mean 6.5, p50 6.5, p95 = 11 + 0.45 x (12 - 11) = 11.45 (linear)
    total = report.latency["total_seconds"]
    assert (total.n, total.mean, total.p50) == (12, 6.5, 6.5)
    assert total.p95 == pytest.approx(11.45, abs=1e-12)
    # vision_llm_seconds = 0.5 .. 5.5 with the last row empty: n 11, mean 3, p95 = 5 + .5 x .5
    vision = report.latency["vision_llm_seconds"]
    assert (vision.n, vision.mean, vision.p50) == (11, 3.0, 3.0)
    assert vision.p95 == pytest.approx(5.25, abs=1e-12)
    assert report.latency["agent_graph_seconds"].mean == 0.25
    assert report.avg_latency_seconds == 6.5
    # tool_count 0, 1, 2 repeated -> 1.0; tool_seconds_total = count x 0.5 -> 0.5
    assert report.tools == {"tool_count": 1.0, "tool_seconds_total": 0.5}
    assert "tool_seconds_total" not in report.latency


def test_small_file_trials_mean_std_ddof1():
    report = triage_metrics(load_triage(SMALL))
    assert list(report.trials) == ["1", "2"]
    t1, t2 = report.trials["1"], report.trials["2"]
    # trial 1 = s01..s06: TP 2, FN 1, fake abstains 1, TN 2 -> accuracy 4/6, answered 4/5
    assert (t1.tp, t1.fn, t1.fp, t1.tn, t1.abstain) == (2, 1, 0, 2, 1)
    # trial 2 = s07..s12: FP 2, real abstains 1, TP 1, TN 2 -> accuracy 3/6, answered 3/5
    assert (t2.tp, t2.fn, t2.fp, t2.tn, t2.abstain) == (1, 0, 2, 2, 1)
    acc = report.across_trials["accuracy"]
    assert acc.mean == pytest.approx(7 / 12)
    # ddof = 1: sqrt(((2/3 - 7/12)² + (1/2 - 7/12)²) / 1) = sqrt(2) / 12
    assert acc.std == pytest.approx(math.sqrt(2) / 12, abs=1e-15)
    assert acc.std == pytest.approx(statistics.stdev([4 / 6, 3 / 6]))
    assert acc.n_trials == 2
    prec = report.across_trials["precision_fake"]  # 2/2 and 1/3
    assert prec.mean == pytest.approx(2 / 3) and prec.std == pytest.approx(
        statistics.stdev([1.0, 1 / 3]))
    slip = report.across_trials["fake_slip_rate"]  # 1/4 and 0/1
    assert slip.mean == pytest.approx(1 / 8)


def test_trial_with_undefined_metric_is_left_out_of_mean():
    frame = pd.DataFrame({"label": ["fake", "real", "fake", "real", "real"],
                          "prediction": ["fake", "real", "real", "real", "fake"],
                          "trial": ["a", "a", "b", "b", "c"]})
    report = triage_metrics(parse_triage(frame))
    # precision_fake: a 1/1; b no fake verdict (undefined); c 0/1
    prec = report.across_trials["precision_fake"]
    assert (prec.mean, prec.n_trials) == (0.5, 2)
    assert prec.std == pytest.approx(statistics.stdev([1.0, 0.0]))
    assert math.isnan(report.trials["b"].precision_pos)


def test_one_implementation_with_gate():
    data = load_triage(SMALL)
    report = triage_metrics(data)
    direct = abstention_metrics(data.y, data.pred, confidence=data.confidence)
    np.testing.assert_equal(report.metrics.as_dict(), direct.as_dict())


def test_numeric_labels_and_predictions_give_same_metrics(small_frame):
    codes = small_frame.copy()
    codes["label"] = codes["label"].map({"fake": 1, "real": 0})
    codes["prediction"] = codes["prediction"].map({"fake": 1, "real": 0, "uncertain": -1})
    a = triage_metrics(parse_triage(small_frame)).metric_dict()
    b = triage_metrics(parse_triage(codes)).metric_dict()
    np.testing.assert_equal(a, b)


def test_case_and_whitespace_in_names(small_frame):
    frame = small_frame.copy()
    frame["label"] = frame["label"].str.upper()
    frame["prediction"] = " " + frame["prediction"].str.title() + " "
    assert triage_metrics(parse_triage(frame)).metric_dict()["accuracy"] == pytest.approx(7 / 12)


def test_custom_names_and_columns(small_frame):
    frame = small_frame.rename(columns={"label": "truth_col", "prediction": "verdict_col"})
    rename = {"fake": "bad", "real": "good", "uncertain": "review"}
    frame["truth_col"] = frame["truth_col"].map(rename)
    frame["verdict_col"] = frame["verdict_col"].map(rename)
    config = TriageConfig(label_column="truth_col", prediction_column="verdict_col",
                          positive_name="bad", negative_name="good", abstain_name="review",
                          latency_columns=("total_seconds",), tool_columns=())
    report = triage_metrics(parse_triage(frame, config=config))
    d = report.metric_dict()
    assert d["bad_slip_rate"] == pytest.approx(1 / 5)
    assert d["good_false_flag_rate"] == pytest.approx(2 / 7)
    assert d["precision_bad"] == pytest.approx(3 / 5)
    assert list(report.latency) == ["total_seconds"] and report.tools == {}


def test_aliases_are_found():
    frame = pd.DataFrame({"ground_truth": ["fake", "real"], "verdict": ["fake", "uncertain"]})
    data = parse_triage(frame)
    assert data.columns["label"] == "ground_truth" and data.columns["prediction"] == "verdict"
    assert data.confidence is None and data.trial is None
    report = triage_metrics(data)
    assert math.isnan(report.metrics.ece) and report.trials == {}


def test_load_from_bytes_and_gzip():
    raw = SMALL.read_bytes()
    a = triage_metrics(load_triage(raw, name="upload.csv"))
    b = triage_metrics(load_triage(gzip.compress(raw), name="upload.csv.gz"))
    assert a.name == "upload.csv" and b.name == "upload.csv.gz"
    np.testing.assert_equal(a.metric_dict(), b.metric_dict())
    assert a.metric_dict()["accuracy"] == pytest.approx(7 / 12)


def test_to_dict_is_strict_json():
    report = triage_metrics(load_triage(SMALL))
    payload = report.to_dict()
    text = json.dumps(payload, allow_nan=False)
    back = json.loads(text)
    assert back["metrics"]["accuracy"] == pytest.approx(7 / 12)
    assert back["metrics"]["f1_fake_ci"] is None
    assert back["across_trials"]["accuracy"]["std"] == pytest.approx(math.sqrt(2) / 12)
    assert back["tools"] == {"avg_tool_count": 1.0, "avg_tool_seconds_total": 0.5}
    assert back["latency"]["total_seconds"]["p95"] == pytest.approx(11.45)
    # an undefined value becomes null
    frame = pd.DataFrame({"label": ["fake"], "prediction": ["uncertain"]})
    small = triage_metrics(parse_triage(frame)).to_dict()
    assert small["metrics"]["accuracy_answered"] is None
    json.dumps(small, allow_nan=False)


# ---------------------------------------------------------------------------- bad input
def test_unknown_label_names_file_column_rule_rows(small_frame):
    frame = small_frame.copy()
    frame.loc[2, "label"] = "fke"  # data row 3
    frame.loc[6, "label"] = "uncertain"  # data row 7: not a label
    with pytest.raises(InputError) as info:
        parse_triage(frame, name="runs.csv")
    err = info.value
    assert (err.file, err.column, err.rows, err.n_rows) == ("runs.csv", "label", [3, 7], 2)
    assert "'fake' / 'real'" in err.rule


def test_unknown_prediction_and_bad_confidence_are_reported_together(small_frame):
    frame = small_frame.copy()
    frame.loc[0, "prediction"] = "maybe"
    frame.loc[4, "confidence"] = 1.2
    with pytest.raises(InputErrors) as info:
        parse_triage(frame, name="runs.csv")
    errors = {e.column: e for e in info.value}
    assert errors["prediction"].rows == [1] and "'uncertain'" in errors["prediction"].rule
    assert errors["confidence"].rows == [5] and "[0, 1]" in errors["confidence"].rule


def test_missing_columns(small_frame):
    with pytest.raises(InputError, match="prediction column is missing") as info:
        parse_triage(small_frame.drop(columns="prediction"), name="x.csv")
    assert info.value.file == "x.csv"
    with pytest.raises(InputError, match="trial column is missing"):
        parse_triage(small_frame, config=TriageConfig(trial_column="run_id"))


def test_missing_values_are_errors(small_frame):
    frame = small_frame.copy()
    frame.loc[3, "label"] = None
    with pytest.raises(InputError) as info:
        parse_triage(frame)
    assert info.value.column == "label" and info.value.rows == [4]
    frame = small_frame.copy()
    frame.loc[0, "confidence"] = np.nan  # an answered row
    with pytest.raises(InputError, match="confidence is missing"):
        parse_triage(frame)
    frame = small_frame.copy()
    frame.loc[3, "confidence"] = np.nan  # s04 abstained: its confidence is not needed
    assert triage_metrics(parse_triage(frame)).metrics.ece == pytest.approx(0.21)
    frame = small_frame.copy()
    frame.loc[1, "total_seconds"] = -1.0
    with pytest.raises(InputError, match="latency") as info:
        parse_triage(frame)
    assert info.value.rows == [2]


def test_config_rejects_clashing_names():
    with pytest.raises(ValueError, match="different"):
        TriageConfig(positive_name="fake", negative_name="Fake")


# ---------------------------------------------------------------------------- detection
def test_detect_triage(small_frame):
    assert detect_triage(small_frame)
    assert detect_triage(pd.DataFrame({"label": [1, 0], "prediction": [1, -1]}))
    # two-way numeric predictions are not a three-way verdict
    assert not detect_triage(pd.DataFrame({"label": [1, 0], "prediction": [1, 0]}))
    # class names without any abstention still make a triage file
    assert detect_triage(pd.DataFrame({"label": ["fake"], "prediction": ["Real"]}))
    # other words
    assert not detect_triage(pd.DataFrame({"label": ["a"], "prediction": ["yes"]}))
    # queries / candidates tables are never triage files
    queries = pd.DataFrame({"post_id": ["p"], "criterion": ["A.1"], "has_evidence": [1],
                            "p_has_evidence": [0.5], "label": [1], "prediction": [1]})
    assert not detect_triage(queries)
    assert not detect_triage(small_frame.assign(sent_uid="s1"))
    assert not detect_triage(small_frame.drop(columns="label"))
    custom = TriageConfig(positive_name="bad", negative_name="good", abstain_name="review")
    frame = pd.DataFrame({"label": ["bad", "good"], "verdict": ["review", "bad"]})
    assert detect_triage(frame, config=custom) and not detect_triage(frame)


def test_triage_hint_says_why_a_file_with_triage_columns_is_not_one():
    ones = triage_hint(pd.DataFrame({"label": [1, 0], "prediction": [1, 0]}), name="r.csv")
    assert (ones.file, ones.column, ones.code) == ("r.csv", "prediction", "invalid_value")
    assert "holds the numbers '1', '0', without -1 (an abstention)" in ones.rule
    words = triage_hint(pd.DataFrame({"Label": ["a"], "pred": ["yes"]}), name="r.csv")
    assert "holds 'yes', none of the verdicts 'fake', 'real', 'uncertain'" in words.rule
    assert "('Label')" in words.rule and words.column == "pred"
    many = triage_hint(pd.DataFrame({"label": [0] * 7, "prediction": list("abcdefg")}),
                       name="r.csv")
    assert "'a', 'b', 'c', 'd', 'e' and 2 more" in many.rule
    # a triage file, a file without both columns, a queries table: nothing to say
    assert triage_hint(pd.DataFrame({"label": [1], "prediction": [-1]}), name="r") is None
    assert triage_hint(pd.DataFrame({"label": [1], "score": [1]}), name="r") is None
    assert triage_hint(pd.DataFrame({"label": [1], "prediction": [1], "sent_uid": ["s"]}),
                       name="r") is None


def test_a_blank_or_unknown_verdict_is_named_not_read_as_another_table():
    # A CSV's empty cell arrives as "" when the column is read as text (the app's upload):
    # the file is still a triage file, and the error names the column, the rule and the rows.
    blank = pd.DataFrame({"label": ["fake", "real", "real", "fake"],
                          "prediction": ["fake", "", "real", "uncertain"]})
    unknown = blank.assign(prediction=["fake", "unsure", "real", "uncertain"])
    numeric = pd.DataFrame({"label": [1, 0, 1], "prediction": [1.0, np.nan, -1.0]})
    for frame, row, found in ((blank, 2, "(empty)"), (unknown, 2, "unsure"),
                              (numeric, 2, "(empty)")):
        assert detect_triage(frame)
        with pytest.raises(InputError) as info:
            parse_triage(frame, name="runs.csv")
        err = info.value
        assert (err.file, err.column, err.rows) == ("runs.csv", "prediction", [row])
        assert "'uncertain'" in err.rule and err.hint == f"found {found}"
    # a blank label is quoted as such, not as nothing
    with pytest.raises(InputError) as info:
        parse_triage(blank.assign(label=["fake", " ", "real", "fake"],
                                  prediction=["fake", "real", "real", "uncertain"]))
    assert (info.value.column, info.value.rows, info.value.hint) == ("label", [2],
                                                                     "found (empty)")


def test_a_blank_trial_id_is_missing():
    frame = pd.DataFrame({"label": ["fake", "real", "real"],
                          "prediction": ["fake", "real", "uncertain"],
                          "trial": ["1", "", "2"]})
    with pytest.raises(InputError, match="trial id is missing") as info:
        parse_triage(frame, name="runs.csv")
    assert (info.value.column, info.value.rows) == ("trial", [2])


# ------------------------------------------------------------------------ undefined values
def _frame(labels, verdicts, confidence=None):
    frame = pd.DataFrame({"label": labels.split(), "prediction": verdicts.split()})
    if confidence is not None:
        frame["confidence"] = confidence
    return frame


def test_every_undefined_metric_says_why_never_a_silent_nan():
    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(1, 6))
        labels = " ".join(rng.choice(["fake", "real"], n))
        verdicts = " ".join(rng.choice(["fake", "real", "uncertain"], n))
        conf = rng.uniform(0.5, 1.0, n) if rng.random() < 0.5 else None
        report = triage_metrics(parse_triage(_frame(labels, verdicts, conf)))
        values = report.metric_dict()
        nan = {k for k in report.metrics.undefined() if math.isnan(values[k])}
        assert set(report.metrics.undefined()) == nan == {
            k for k, v in values.items() if isinstance(v, float) and math.isnan(v)}
        assert all(report.metrics.undefined().values())


def test_every_verdict_abstained():
    m = triage_metrics(parse_triage(_frame("fake real real", "uncertain uncertain uncertain",
                                           [np.nan] * 3))).metrics
    why = m.undefined()
    assert (m.coverage, m.accuracy, m.slip_rate, m.false_flag_rate) == (0.0, 0.0, 0.0, 0.0)
    assert why == {
        "accuracy_answered": "no answered sample (every sample abstained)",
        "precision_fake": "no fake answer (0/0)",
        "recall_fake": "every fake sample abstained (0/0)",
        "f1_fake": "no fake answer and every fake sample abstained (0/0)",
        "precision_real": "no real answer (0/0)",
        "recall_real": "every real sample abstained (0/0)",
        "f1_real": "no real answer and every real sample abstained (0/0)",
        "balanced_accuracy": "every fake sample abstained; every real sample abstained "
                             "(needs answered samples of both classes)",
        "mcc": "every fake sample abstained; every real sample abstained; no fake answer; "
               "no real answer (needs answered samples of both classes and answers of both)",
        "ece": "no answered sample (every sample abstained)",
        "brier": "no answered sample (every sample abstained)"}


def test_one_class_and_a_class_never_answered():
    # only fakes: every metric of the real class is undefined, naming the class
    m = triage_metrics(parse_triage(_frame("fake fake fake", "fake real uncertain"))).metrics
    why = m.undefined()
    for key in ("abstain_rate_real", "coverage_real", "real_false_flag_rate", "real_pass_rate",
                "recall_real"):
        assert why[key] == "no real sample (0/0)", key
    assert why["balanced_accuracy"] == "no real sample (needs answered samples of both classes)"
    assert why["ece"] == "no confidence given" and m.precision_neg == 0.0  # 0 / 1
    assert "precision_real" not in why and "f1_real" not in why  # F1 = 0 / 1
    # both classes, but "real" is never answered: MCC undefined (scikit-learn's 0 is not a value)
    m = triage_metrics(parse_triage(_frame("fake real real", "fake fake uncertain"))).metrics
    assert m.undefined()["mcc"] == ("no real answer (needs answered samples of both classes "
                                    "and answers of both)")
    assert m.undefined()["precision_real"] == "no real answer (0/0)"
    assert m.balanced_accuracy == 0.5 and "balanced_accuracy" not in m.undefined()


def test_the_report_carries_the_reasons_overall_and_per_trial():
    frame = _frame("fake real fake real", "fake real uncertain uncertain").assign(
        trial=["1", "1", "2", "2"])
    back = json.loads(json.dumps(triage_metrics(parse_triage(frame)).to_dict(),
                                 allow_nan=False))
    assert back["metrics"]["mcc"] == 1.0 and "mcc" not in back["undefined"]
    assert back["trials"]["2"]["accuracy_answered"] is None
    assert back["trials"]["2"]["undefined"]["accuracy_answered"] == \
        "no answered sample (every sample abstained)"
    assert back["trials"]["1"]["undefined"] == {"ece": "no confidence given",
                                                "brier": "no confidence given"}
    assert back["undefined"]["ece"] == "no confidence given"


def test_an_undefined_average_latency_says_why():
    base = _frame("fake real", "fake real")
    cases = ((base, "the file has no timing column (*_seconds)"),
             (base.assign(vision_llm_seconds=[1.0, 2.0], agent_graph_seconds=[3.0, 4.0]),
              "no end-to-end timing column (total_seconds) among 'vision_llm_seconds', "
              "'agent_graph_seconds'"),
             (base.assign(total_seconds=[np.nan, np.nan]), "no row has a value in "
              "'total_seconds'"))
    for frame, reason in cases:
        back = triage_metrics(parse_triage(frame)).to_dict()
        assert back["avg_latency_seconds"] is None
        assert back["undefined"]["avg_latency_seconds"] == reason
    report = triage_metrics(parse_triage(base.assign(total_seconds=[1.0, 4.0],
                                                     vision_llm_seconds=[0.5, 1.0])))
    assert report.avg_latency_seconds == 2.5 and report.avg_latency_reason is None
    assert "avg_latency_seconds" not in report.to_dict()["undefined"]


def test_the_app_upload_and_the_command_line_read_a_file_alike():
    from dashboard import data

    text = (b"label,prediction,confidence,trial\nfake,fake,0.9,01\nreal,real,0.8,01\n"
            b"fake,uncertain,,02\nreal,fake,0.6,02\nfake,real,0.7,10\n")
    app = triage_metrics(data.load_upload(data.Upload("t.csv", text)).triage).to_dict()
    cli = triage_metrics(load_triage(text, name="t.csv")).to_dict()
    assert list(app["trials"]) == ["01", "02", "10"]  # not 1, 2, 10
    assert json.dumps(app, sort_keys=True) == json.dumps(cli, sort_keys=True)
