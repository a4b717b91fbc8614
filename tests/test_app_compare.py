"""The Compare runs page: the synthetic demo runs and uploaded runs give the numbers that
metrics_core.compare computes."""

from __future__ import annotations

import io as _io

import pandas as pd
import pytest

from dashboard import state
from metrics_core import compare
from metrics_core.config import EvalConfig
from metrics_core.demo import make_runs
from metrics_core.inputs import loading as mio
from tests.test_app import assert_clean, open_app, table


def test_compare_page_on_the_demo_runs():
    at = open_app(page="compare")
    assert_clean(at)
    at.toggle(key="compare_demo").set_value(True).run(timeout=120)
    at.number_input(key="compare_bootstrap").set_value(0).run(timeout=120)
    assert_clean(at)
    runs = [compare.Run(n, mio.load(f).dataset) for n, f in make_runs(300).items()]
    want = compare.ablation_table(runs, EvalConfig(bootstrap=0))
    shown = table(at, "ablation_table")
    assert list(shown["run"]) == ["baseline", "candidate"]
    assert list(shown["auroc"]) == pytest.approx(list(want["auroc"]))
    diffs = table(at, "comparison_table").set_index("metric")
    assert diffs.loc["auroc", "difference"] == pytest.approx(
        want["auroc"].iloc[1] - want["auroc"].iloc[0])


def test_compare_page_with_uploaded_runs():
    runs = make_runs(60, seed=3)
    at = open_app(page="compare")
    files = []
    for name, frame in runs.items():
        buf = _io.BytesIO()
        frame.to_parquet(buf)
        files.append((f"{name}.parquet", buf.getvalue(), "application/octet-stream"))
    at.file_uploader(key="compare_files").set_value(files).run(timeout=120)
    assert_clean(at)
    shown = table(at, "ablation_table")
    assert list(shown["run"]) == ["baseline", "candidate"]


def _uploads(named) -> list:
    """``[(file name, long table), ...]`` as uploaded Parquet files."""
    files = []
    for file_name, frame in named:
        buf = _io.BytesIO()
        frame.to_parquet(buf)
        files.append((file_name, buf.getvalue(), "application/octet-stream"))
    return files


def test_compare_page_refuses_two_runs_of_one_name():
    """run0.parquet and run0.pq are both "run0": refused as the CLI refuses it, instead of a
    "run0 − run0" comparison."""
    frame = next(iter(make_runs(60, seed=3).values()))
    at = open_app(page="compare")
    at.file_uploader(key="compare_files").set_value(
        _uploads([("run0.parquet", frame), ("run0.pq", frame)])).run(timeout=120)
    errors = " ".join(e.value for e in at.error)
    assert "every run needs its own name" in errors and "run0" in errors
    assert not at.dataframe  # no ablation table, no differences


def test_compare_page_refuses_runs_with_different_gold():
    base, other = make_runs(60, seed=3).values()
    other = other.copy()
    post, crit = other.loc[other["has_evidence"] == 1, ["post_id", "criterion"]].iloc[0]
    rows = (other["post_id"] == post) & (other["criterion"] == crit)
    other.loc[rows, ["has_evidence", "is_gold", "n_gold"]] = 0
    at = open_app(page="compare")
    at.file_uploader(key="compare_files").set_value(
        _uploads([("baseline.parquet", base), ("candidate.parquet", other)])).run(timeout=120)
    errors = " ".join(e.value for e in at.error)
    assert "different gold labels" in errors and "'baseline' and 'candidate'" in errors
    assert f"post_id {post!r}, criterion {crit!r}" in errors.replace("\\", "")
    assert not at.dataframe


def _one_positive(frame, criterion):
    """The run's long table with ``criterion`` left with one query with evidence."""
    frame = frame.copy()
    rows = frame["criterion"] == criterion
    keep = frame.loc[rows & (frame["has_evidence"] == 1), "post_id"].iloc[0]
    frame.loc[rows & (frame["post_id"] != keep), ["has_evidence", "is_gold", "n_gold"]] = 0
    return frame


def test_the_page_shows_what_the_command_line_writes_at_the_sidebars_thresholds(tmp_path):
    """The link's thresholds (τ_neg moved: exploratory) are the comparison's and the page says
    so; every difference, interval, n and p-value shown is the one `metrics-core compare
    --settings` (the sidebar's settings.json) writes for the same files, the sign-flip test's
    included (the page used fewer flips); the criterion with one query with evidence has its
    difference and a note, not a blank."""
    import json

    from dashboard.display import fmt_p
    from metrics_core.cli import main
    from metrics_core.report import decision_record
    from tests.test_app import TIMEOUT

    runs = {name: _one_positive(frame, "A.2") for name, frame in make_runs(60, seed=3).items()}
    at = open_app({"gate": "0.2,0.6", "explored": "tau_neg", "bootstrap_unit": "post"},
                  page="compare")
    at.file_uploader(key="compare_files").set_value(
        _uploads([(f"{n}.parquet", f) for n, f in runs.items()])).run(timeout=TIMEOUT)
    at.number_input(key="compare_bootstrap").set_value(100).run(timeout=TIMEOUT)
    assert_clean(at)
    captions = " ".join(c.value for c in at.caption).replace("\\_", "_")
    assert "τ_neg 0.2 (exploratory)" in captions and "τ_pos 0.6 (pre-specified)" in captions
    assert at.get_by_key("compare_download") is not None

    view = at.session_state[state.VIEW]
    settings = tmp_path / "settings.json"
    settings.write_text(decision_record.settings_json(view.evaluation, marks=view.marks,
                                                       guarantees=view.guarantees))
    args = ["compare", "--settings", str(settings), "--bootstrap", "100", "--quiet",
            "--out", str(tmp_path / "comparison.json")]
    for name, frame in runs.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        args += ["--run", f"{name}={tmp_path / f'{name}.csv'}"]
    assert main(args) == 0
    cli = json.loads((tmp_path / "comparison.json").read_text())
    assert cli["provenance"]["tau_neg"] == "exploratory"
    assert cli["config"]["bootstrap_unit"] == "post"
    want = pd.DataFrame(cli["comparisons"])

    for key, part in (("comparison_table", ~want["subset"].str.startswith("criterion")),
                      ("forest_table_1", want["subset"].str.startswith("criterion"))):
        shown = table(at, key)
        expected = want[part]
        assert len(shown) == len(expected)
        for (_, s), (_, w) in zip(shown.iterrows(), expected.iterrows(), strict=True):
            assert s["metric"] == w["metric"]
            assert (s["n"], s["n_positive"]) == (w["n"], w["n_positive"])
            if w["difference"] is None or pd.isna(w["difference"]):
                assert pd.isna(s["difference"])
            else:
                assert s["difference"] == pytest.approx(w["difference"], abs=1e-12)
            if w["ci95"] is None:
                assert pd.isna(s["ci95_lo"]) and pd.isna(s["ci95_hi"])
            else:
                assert [s["ci95_lo"], s["ci95_hi"]] == pytest.approx(w["ci95"], abs=1e-12)
            assert s["p"] == fmt_p(w["p_value"]), w["metric"]
            assert (s["note"] or None) == (None if pd.isna(w["note"]) else w["note"])
    one = table(at, "forest_table_1").set_index("subset").loc["criterion A.2"]
    assert one["difference"] == pytest.approx(
        want.set_index("subset").loc["criterion A.2", "difference"])
    assert "needs at least two queries with and two without evidence" in one["note"]


def test_per_criterion_gates_of_criteria_the_runs_lack_are_named():
    """The sidebar's per-criterion gates are the loaded data's; runs whose criteria have
    other names are gated by the overall gate, and the page says which gates apply to no
    query (it named them in the thresholds line as if they applied)."""
    renamed = {n: f.assign(criterion=f["criterion"].str.replace("A.", "B.", regex=False))
               for n, f in make_runs(60, seed=3).items()}
    at = open_app({"criterion_gates": ["A.1:0.02:0.9"]}, page="compare")
    at.file_uploader(key="compare_files").set_value(
        _uploads([(f"{n}.parquet", f) for n, f in renamed.items()])).run(timeout=120)
    assert_clean(at)
    warnings = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "Per-criterion gates of criteria the runs do not have" in warnings
    assert "A.1" in warnings
    at = open_app({"criterion_gates": ["A.1:0.02:0.9"]}, page="compare")
    at.toggle(key="compare_demo").set_value(True).run(timeout=120)
    assert not [w for w in at.warning if "Per-criterion gates" in w.value]


def test_the_runs_and_choices_stay_when_another_page_is_shown():
    """Another page shown (to move a threshold) and the Compare page again: the runs uploaded
    are still compared, with the reference run and resamples chosen, at the new thresholds
    (the page asked for the files again, its uploader emptied by Streamlit); "Forget these
    runs" drops them; the demo switch stays on the same way."""
    from tests.test_app import TIMEOUT

    at = open_app(page="compare")
    at.file_uploader(key="compare_files").set_value(
        _uploads([(f"{n}.parquet", f) for n, f in make_runs(60, seed=3).items()])
    ).run(timeout=TIMEOUT)
    at.selectbox(key="compare_reference").set_value("candidate").run(timeout=TIMEOUT)
    at.number_input(key="compare_bootstrap").set_value(0).run(timeout=TIMEOUT)
    before = table(at, "comparison_table")
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    at.switch_page("app_pages/compare.py").run(timeout=TIMEOUT)
    assert_clean(at)
    infos = " ".join(i.value for i in at.info)
    assert "Showing the runs uploaded earlier in this session: baseline, candidate" in infos
    assert at.selectbox(key="compare_reference").value == "candidate"
    assert at.number_input(key="compare_bootstrap").value == 0
    after = table(at, "comparison_table")
    assert list(after["reference"]) == ["candidate"] * len(after)
    pd.testing.assert_frame_equal(after, before)
    at.number_input(key="compare_bootstrap").set_value(100).run(timeout=TIMEOUT)  # still there
    assert table(at, "comparison_table")["ci95_lo"].notna().any()
    at.button(key="compare_forget").click().run(timeout=TIMEOUT)
    assert not at.dataframe and state.COMPARE_RUNS not in at.session_state
    assert any("Upload at least two runs" in i.value for i in at.info)

    at.toggle(key="compare_demo").set_value(True).run(timeout=TIMEOUT)
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    at.switch_page("app_pages/compare.py").run(timeout=TIMEOUT)
    assert at.toggle(key="compare_demo").value and at.dataframe
    at.toggle(key="compare_demo").set_value(False).run(timeout=TIMEOUT)
    assert not at.dataframe and state.COMPARE_RUNS not in at.session_state


def test_one_table_of_runs_is_named_in_the_comparisons_inputs():
    """One uploaded table with a run column: comparison.json's inputs name that file and its
    digest (they were empty), as the command line's name each run's files."""
    import hashlib

    long = pd.concat([f.assign(run=n) for n, f in make_runs(60, seed=3).items()],
                     ignore_index=True)
    at = open_app(page="compare")
    upload = _uploads([("runs.parquet", long)])
    at.file_uploader(key="compare_files").set_value(upload).run(timeout=120)
    assert_clean(at)
    runs = at.session_state[state.COMPARE_RUNS][1]
    assert [r.name for r in runs] == ["baseline", "candidate"]
    doc = compare.comparison_document(runs, [], pd.DataFrame(), EvalConfig())
    assert doc["inputs"] == [{"file": "runs.parquet",
                              "sha256": hashlib.sha256(upload[0][1]).hexdigest(),
                              "bytes": len(upload[0][1])}]
