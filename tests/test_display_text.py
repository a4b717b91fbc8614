"""Text as a meeting reads it: names from the data escaped once and never reversed by a
bidirectional control (charts, tables, the record, compare's printed output), p-values and
probabilities that never read as on or past a threshold they miss, counts written as whole
numbers, criterion names beside their codes, and a PDF whose words are never broken.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import re
import unicodedata
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard import display
from dashboard.safe_text import escape_markdown, neutralise_frame_text
from metrics_core.bidi import neutralise_bidi
from metrics_core.config import EvalConfig
from metrics_core.demo import CRITERIA, criterion_names, demo_paths
from metrics_core.inputs import loading as mio
from metrics_core.report import Evaluator
from metrics_core.report import decision_record as record
from metrics_core.report.export import csv_bytes
from metrics_core.report.figures.breakdowns import per_criterion_figure
from metrics_core.report.figures.style import escape_plotly
from tests.conftest import random_frames
from tests.test_app import TIMEOUT, assert_clean, open_app, table

CHROMIUM = Path("/usr/bin/chromium")
RLO = "\u202e"


def plotly_decode(text: str) -> str:
    """What plotly.js shows for a label: its convertEntities (svg_text_utils.js), which
    decodes numeric entities and only mu, amp, lt, gt, nbsp, times, plusmn and deg by name."""
    named = {"mu": "μ", "amp": "&", "lt": "<", "gt": ">", "nbsp": "\xa0", "times": "×",
             "plusmn": "±", "deg": "°"}

    def one(m):
        ref = m.group(1)
        if ref.startswith("#"):
            return chr(int(ref[2:], 16) if ref[1] in "xX" else int(ref[1:]))
        return named.get(ref, m.group(0))

    return re.sub(r"&(#\d+|#x[\da-fA-F]+|[a-z]+);", one, text)


@pytest.fixture(scope="module")
def demo():
    paths = demo_paths()
    loaded = mio.load(paths.queries, paths.candidates)
    inputs = [{"file": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
               "bytes": p.stat().st_size} for p in (paths.queries, paths.candidates)]
    return Evaluator(loaded.dataset, inputs=inputs)


# ---------------------------------------------------------------- escaping and bidi
@pytest.mark.parametrize("name", ['run "B"', "O'Brien & co", "<b>x</b>", "a<br>b", "A.1"])
def test_plotly_labels_show_the_name_as_written(name):
    escaped = escape_plotly(name)
    assert "<" not in escaped and ">" not in escaped  # no live tag
    assert plotly_decode(escaped) == name  # before: 'run &quot;B&quot;' shown literally
    assert "&quot;" not in escaped


def test_bidi_controls_are_shown_as_codes_everywhere():
    name = f"run{RLO}1fdp.exe"
    assert neutralise_bidi(name) == "run[U+202E]1fdp.exe"
    for control in ("\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u2066",
                    "\u2067", "\u2068", "\u2069", "\u061c"):
        assert control not in neutralise_bidi(f"a{control}b")
    assert RLO not in escape_plotly(name) and RLO not in escape_markdown(name)
    frame = neutralise_frame_text(pd.DataFrame({f"col{RLO}": [name, None], "n": [1, 2]}))
    assert list(frame.columns) == ["col[U+202E]", "n"]
    assert frame.iloc[0, 0] == "run[U+202E]1fdp.exe" and frame["n"].tolist() == [1, 2]
    unchanged = pd.DataFrame({"a": ["x"], "n": [1.5]})
    assert neutralise_frame_text(unchanged) is unchanged


def test_chart_names_from_the_data_are_escaped_once_and_not_reversed():
    per_criterion = pd.DataFrame({"sensitivity": [0.8, 0.9], "n": [10, 20]},
                                 index=pd.Index([f'A"1{RLO}x', "<i>B</i>"], name="criterion"))
    fig = per_criterion_figure(per_criterion, "sensitivity")
    ticks = list(fig.data[0].x)
    assert [plotly_decode(t) for t in ticks] == ['A"1[U+202E]x', "<i>B</i>"]
    assert not any(RLO in t or "&quot;" in t for t in ticks)


def test_the_record_shows_names_without_reversing_them(demo):
    evaluation = Evaluator(demo.ds, inputs=[{"file": f"q{RLO}gpj.parquet", "sha256": "ab",
                                             "bytes": 1}]).evaluate(EvalConfig(bootstrap=0))
    page = record.render_html(evaluation, data_label=f"Data {RLO}lebal", notes=f"n{RLO}otes")
    assert RLO not in page
    assert "q[U+202E]gpj.parquet" in page and "Data [U+202E]lebal" in page


def test_compare_prints_run_names_without_reversing_them(tmp_path, capsys):
    from metrics_core.cli import main

    q, c = random_frames(n_posts=40, seed=5)
    args = ["compare", "--out", str(tmp_path / "out.json"), "--bootstrap", "0"]
    for name in ("base", f"new{RLO}gnp"):
        qp, cp = tmp_path / f"q{len(args)}.csv", tmp_path / f"c{len(args)}.parquet"
        q.to_csv(qp, index=False)
        c.to_parquet(cp)
        args += ["--run", f"{name}={qp},{cp}"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert RLO not in out
    assert "new[U+202E]gnp − base" in out


def test_the_compare_page_shows_run_names_without_reversing_them():
    import io as _io

    from metrics_core.demo import make_runs

    runs = make_runs(60, seed=3)
    files = []
    for name, frame in zip(("base", f"new{RLO}gnp"), runs.values(), strict=True):
        buf = _io.BytesIO()
        frame.to_parquet(buf)
        files.append((f"{name}.parquet", buf.getvalue(), "application/octet-stream"))
    at = open_app(page="compare")
    at.file_uploader(key="compare_files").set_value(files).run(timeout=TIMEOUT)
    assert_clean(at)
    assert table(at, "ablation_table")["run"].tolist() == ["base", "new[U+202E]gnp"]
    assert table(at, "comparison_table")["run"].tolist()[0] == "new[U+202E]gnp"
    assert RLO not in "".join(s.value for s in at.subheader)


# --------------------------------------------------------------------- p and p values
@pytest.mark.parametrize(("p", "text"), [(8.7e-39, "< 0.001"), (0.000999, "< 0.001"),
                                         (0.001, "0.001"), (0.0496, "0.049"),
                                         (0.05, "0.050"), (0.9999, "0.999"), (1.0, "1.000"),
                                         (None, "—"), (float("nan"), "—")])
def test_p_values_are_never_zero_and_never_rounded_up(p, text):
    assert display.fmt_p(p) == text


@pytest.mark.parametrize(("p", "text"), [(0.099559, "0.0995"), (0.0999999, "0.0999"),
                                         (0.1, "0.1000"), (0.6, "0.6000"), (0.60004, "0.6000"),
                                         (0.0, "0.0000"), (1.0, "1.0000")])
def test_a_probability_below_a_threshold_never_reads_as_on_it(p, text):
    assert display.fmt_probability(p) == text


def test_shown_probabilities_keep_their_side_of_every_threshold():
    rng = np.random.default_rng(0)
    thresholds = np.round(np.arange(0.01, 1.0, 0.01), 2)
    near = np.concatenate([thresholds - 1e-7, thresholds - 4e-5, thresholds, thresholds + 1e-9])
    for p in np.concatenate([near, rng.random(2000)]):
        shown = float(display.fmt_probability(p))
        for t in thresholds:
            assert (shown < t) == (p < t), (p, t)


def test_case_review_writes_a_p_below_tau_neg_below_it(demo):
    at = open_app(page="case_review")
    assert_clean(at)
    cases = demo.case_review(EvalConfig(bootstrap=0), demo.evaluate(EvalConfig(bootstrap=0)))
    missed = cases["missed_positives"]
    top = missed["p_has_evidence"].max()
    assert 0.0995 < top < 0.1  # the demo's highest missed positive: 0.099559
    shown = table(at, "case_table")
    assert "0.100" not in set(shown["p_has_evidence"])
    assert display.fmt_probability(top) in set(shown["p_has_evidence"])
    assert all(float(s) < 0.1 for s in shown["p_has_evidence"])  # all NEG: p < τ_neg


def test_compare_page_writes_small_p_values_as_less_than():
    at = open_app(page="compare")
    at.toggle(key="compare_demo").set_value(True).run(timeout=TIMEOUT)
    at.number_input(key="compare_bootstrap").set_value(0).run(timeout=TIMEOUT)
    assert_clean(at)
    diffs = table(at, "comparison_table").set_index("metric")
    assert diffs.loc["auroc", "p_value"] < 0.001
    assert diffs.loc["auroc", "p"] == "< 0.001"
    shown = list(at.get_by_key("comparison_table").dataframe[0].proto.column_order)
    assert "p" in shown and "p_value" not in shown
    forest = table(at, "forest_table_1")
    assert set(forest["p"]) | set(forest["p_holm"]) <= {"< 0.001"} | {
        f"{x / 1000:.3f}" for x in range(1, 1001)}


# ------------------------------------------------------------------------ counts in CSV
def test_per_criterion_csv_writes_counts_as_integers(demo):
    table_ = demo.evaluate(EvalConfig(bootstrap=0)).per_criterion
    frame = pd.read_csv(io.BytesIO(csv_bytes(table_, index=True)), dtype=str)
    a1 = frame.set_index("criterion").loc["A.1"]
    assert a1["tp"] == str(int(table_.loc["A.1", "tp"]))  # before: "270.0"
    for column in ("tp", "fp", "tn", "fn", "workload"):
        body = frame[~frame["criterion"].isin(["macro"])][column]
        assert not body.str.endswith(".0").any(), column
    # The macro row's mean of a count keeps its decimals.
    assert float(frame.set_index("criterion").loc["macro", "tp"]) == pytest.approx(
        table_.loc["macro", "tp"])
    missing = csv_bytes(pd.DataFrame({"tp": [86.0, None], "auroc": [0.5, 1.0]}))
    assert missing.decode().splitlines() == ["tp,auroc", "86,0.5", ",1.0"]


def test_the_records_zip_writes_integer_counts(demo):
    evaluation = demo.evaluate(EvalConfig(bootstrap=0))
    data = record.render_zip(evaluation, html_text="<html></html>")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        text = z.read("per_criterion.csv").decode()
    a1 = next(line for line in text.splitlines() if line.startswith("A.1,"))
    tp = int(evaluation.per_criterion.loc["A.1", "tp"])
    assert f",{tp}," in a1 and f",{tp}.0," not in a1


# ------------------------------------------------------------------- criterion names
def test_criterion_names_only_for_the_demos_own_files(demo):
    assert criterion_names(demo.evaluate(EvalConfig(bootstrap=0)).run["inputs"]) is CRITERIA
    paths = demo_paths()
    renamed = [{"file": paths.queries.name, "sha256": "0" * 64,
                "bytes": paths.queries.stat().st_size}]
    assert dict(criterion_names(renamed)) == {}
    assert dict(criterion_names([])) == {} and dict(criterion_names(None)) == {}


def test_the_per_criterion_chart_shows_codes_with_names(demo):
    evaluation = demo.evaluate(EvalConfig(bootstrap=0))
    fig = per_criterion_figure(evaluation.per_criterion, "auroc", names=CRITERIA)
    ticks = list(fig.data[0].x)
    assert ticks[0] == "A.1<br>Depressed<br>mood"
    assert ticks[1] == "A.2<br>Loss of<br>interest or<br>pleasure"
    assert [t.split("<br>")[0] for t in ticks] == list(CRITERIA)
    hover = [row[0] for row in fig.data[0].customdata]
    assert hover[8] == "A.9 Thoughts of death"
    assert fig.data[0].customdata[0][1] == f"{int(evaluation.per_criterion.loc['A.1', 'n']):,}"
    assert "%{customdata[0]}" in fig.data[0].hovertemplate


def test_the_app_and_the_record_name_the_demos_criteria(demo):
    at = open_app(page="per_criterion")
    assert_clean(at)
    specs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    assert specs[0]["data"][0]["x"][0] == "A.1<br>Depressed<br>mood"
    page = record.render_html(demo.evaluate(EvalConfig(bootstrap=0)))
    # plotly writes "<" in its JSON as \u003c
    assert "A.1\\u003cbr\\u003eDepressed\\u003cbr\\u003emood" in page


# ------------------------------------------------------------------------------ PDF
@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")
def test_the_pdf_breaks_no_word(demo):
    from pypdf import PdfReader

    evaluation = demo.evaluate(EvalConfig(bootstrap=200))
    page = record.render_html(evaluation)
    pdf = record.render_pdf(page)
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages)
    text = unicodedata.normalize("NFKC", text)  # the font's "ﬁ" ligature is "fi"
    pdf_words = set(re.findall(r"[A-Za-z]+", text))
    tables = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tables, flags=re.S)
    words = {w for cell in cells
             for w in re.findall(r"[A-Za-z]+", html.unescape(re.sub(r"<[^>]+>", "", cell)))
             if len(w) >= 4}
    assert {"Calibration", "wilson", "interval", "bootstrap"} <= words
    broken = sorted(w for w in words if w not in pdf_words)
    assert broken == []  # before: "Calibratio n slope", "wils on", "non e", "int erv al"


def test_the_records_headline_table_names_its_queries_in_words(demo):
    page = record.render_html(demo.evaluate(EvalConfig(bootstrap=0)))
    headline = page.split("<h2>Headline numbers</h2>", 1)[1].split("<h2>", 1)[0]
    assert "queries with evidence" in headline and "positives_" not in headline
    assert "all queries at τ_<wbr>neg=0.1, τ_<wbr>pos=0.6" in headline
