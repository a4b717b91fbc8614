"""The command line against hostile flags, settings files and paths (issue 33, items 1, 5, 6
and 10): exit 2 with a plain message naming the flag / field / path, the rule and the value;
never a traceback, a large allocation or an overwritten input."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from metrics_core.cli import main
from metrics_core.cli.flags import MAX_NOTES_BYTES
from metrics_core.config import MAX_SETTINGS_BYTES
from metrics_core.errors import SettingsError
from metrics_core.report import decision_record as record
from metrics_core.settings_file import read_settings
from tests.conftest import random_frames

TRIAGE = Path(__file__).parent / "data" / "triage_small.csv"


@pytest.fixture
def files(tmp_path):
    q, c = random_frames(n_posts=12, seed=3)
    qp, cp = tmp_path / "queries.csv", tmp_path / "candidates.parquet"
    q.to_csv(qp, index=False)
    c.to_parquet(cp)
    return qp, cp


def _exit_2(argv, capsys) -> str:
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("metrics-core: ")
    return err


# ------------------------------------------------------------------ flags (item 6)
@pytest.mark.parametrize(("flags", "message"), [
    (["--ks", "1000000000000000000"], "--ks: item 1 must be a whole number within [1, 10,000]; "
                                      "got '1000000000000000000'"),
    (["--hard-cap", "1e21"], "--hard-cap: must be a whole number within [1, 1,000]; got '1e21'"),
    (["--hard-cap", "10^21"], "--hard-cap: must be a whole number within [1, 1,000]; "
                              "got '10^21'"),
    (["--n-bins", "100000000"], "--n-bins: must be a whole number within [2, 1,000]; "
                                "got '100000000'"),
    (["--seed", "1.5"], "--seed: must be a whole number within [0, 2,147,483,647]; got '1.5'"),
    (["--bootstrap", "inf"], "--bootstrap: must be a whole number within [0, 100,000]; "
                             "got 'inf'"),
    (["--tau-neg", "nan"], "--tau-neg: must be a finite number within [0, 1]; got 'nan'"),
    (["--temperature", "1e300"], "--temperature: must be a finite number within [0.01, 100]; "
                                 "got '1e300'"),
    (["--tpr-fprs", "0.1,2"], "--tpr-fprs: item 2 must be a finite number within [0, 1]; "
                              "got '2'"),
    (["--criterion-gate", "C1=0.7:0.2"], "--criterion-gate: criterion 'C1' needs 0 <= tau_neg "
                                         "<= tau_pos <= 1 (two finite numbers); "
                                         "got 'C1=0.7:0.2'"),
    (["--targets", "auroc>=0.8,nope<1"], "--targets: item 2: no metric is called 'nope'"),
    (["--criterion", ""], "--criterion: item 1 must be a criterion name (text of 1 to 200 "
                          "characters); got ''"),
    (["--connect-timeout", "nan"], "--connect-timeout: must be a finite number within "
                                   "[0.001, 86,400]; got 'nan'"),
])
def test_evaluate_refuses_a_bad_flag_naming_it(files, tmp_path, capsys, flags, message):
    qp, cp = files
    out = tmp_path / "m.json"
    err = _exit_2(["evaluate", qp, cp, "--out", out, *flags], capsys)
    assert err.startswith(f"metrics-core: invalid option: {message}"), err
    assert not out.exists()


def test_every_bad_flag_is_named_at_once(files, tmp_path, capsys):
    qp, cp = files
    err = _exit_2(["evaluate", qp, cp, "--out", tmp_path / "m.json", "--k-min", "2.5",
                   "--seed", "-1", "--hard-cap", "0"], capsys)
    assert err == ("metrics-core: invalid option: 3 options are not valid:\n"
                   "- --k-min: must be a whole number within [0, 1,000]; got '2.5'\n"
                   "- --hard-cap: must be a whole number within [1, 1,000]; got '0'\n"
                   "- --seed: must be a whole number within [0, 2,147,483,647]; got '-1'\n")


def test_flags_are_read_exactly(files, tmp_path, capsys):
    qp, cp = files
    out = tmp_path / "m.json"
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--quiet", "--bootstrap", "0",
                 "--seed", "1234567", "--no-gate-aware", "--ks", "10,1",
                 "--hard-cap", "1000", "--targets", "auroc>=0.8"]) == 0
    config = json.loads(out.read_text())["config"]
    assert config["seed"] == 1234567 and config["gate_aware"] is False
    assert config["ks"] == [1, 10] and config["hard_cap"] == 1000
    assert config["targets"] == ["auroc>=0.8"]


@pytest.mark.parametrize(("argv", "message"), [
    (["tune", "{q}", "{c}", "--target", "screening_sensitivity>=0.9", "--bootstrap", "1e9"],
     "--bootstrap: must be a whole number within [0, 100,000]; got '1e9'"),
    (["tune", "{q}", "{c}", "--target", "screening_sensitivity>=0.9", "--seed", "abc"],
     "--seed: must be a whole number"),
    (["tune", "{q}", "{c}", "--target", "screening_sensitivity>=1e400"],
     "target 'screening_sensitivity>=1e400': the value must be a finite number"),
    (["compare", "--run", "a={q},{c}", "--run", "b={q},{c}", "--seed", "-1"],
     "--seed: must be a whole number within [0, 2,147,483,647]; got '-1'"),
    (["compare", "--run", "a={q},{c}", "--run", "b={q},{c}", "--bootstrap", "2.5"],
     "--bootstrap: must be a whole number"),
    (["rag", "{rag}", "--ks", "1e18"], "--ks: item 1 must be a whole number within [1, 10,000]"),
    (["rag", "{rag}", "--ks", "3,3"], "--ks: must be distinct cut-offs; got '3,3'"),
    (["rag", "{rag}", "--critic-url", "http://127.0.0.1:9/v1", "--critic-timeout", "inf"],
     "--critic-timeout must be a number of seconds in (0, 3600], got inf"),
])
def test_other_commands_refuse_bad_flags(files, tmp_path, capsys, argv, message):
    from metrics_core.rag.demo import demo_rag_path

    qp, cp = files
    out = tmp_path / "o.json"
    argv = [a.format(q=qp, c=cp, rag=demo_rag_path()) for a in argv]
    err = _exit_2([*argv, "--out", out], capsys)
    assert message in err and not out.exists()


# ------------------------------------------------------------------ outputs (item 1)
def _same_bytes_after(path: Path, argv, capsys) -> str:
    before = path.read_bytes()
    err = _exit_2(argv, capsys)
    assert path.read_bytes() == before
    return err


def test_evaluate_never_overwrites_an_input(files, tmp_path, capsys):
    qp, cp = files
    err = _same_bytes_after(qp, ["evaluate", qp, cp, "--out", qp], capsys)
    assert err == (f"metrics-core: --out {qp} is the input QUERIES {qp}: an output never "
                   f"overwrites an input; choose another path\n")
    _same_bytes_after(cp, ["evaluate", qp, cp, "--per-query", cp, "--out", tmp_path / "m"],
                      capsys)
    _same_bytes_after(cp, ["evaluate", qp, cp, "--exclusions", cp, "--out", tmp_path / "m"],
                      capsys)
    # the same file under another name: a relative path, a symbolic link, a hard link
    link, hard = tmp_path / "link.csv", tmp_path / "hard.csv"
    link.symlink_to(qp)
    os.link(qp, hard)
    for other in (link, hard, tmp_path / "." / "queries.csv"):
        err = _same_bytes_after(qp, ["evaluate", qp, cp, "--out", other], capsys)
        assert f"--out {other} is the input QUERIES {qp}" in err
    err = _same_bytes_after(cp, ["evaluate", hard, cp, "--out", tmp_path / "x.json",
                                 "--per-query", cp], capsys)
    assert "--per-query" in err and "CANDIDATES" in err


def test_evaluate_outputs_need_paths_of_their_own(files, tmp_path, capsys):
    qp, cp = files
    out = tmp_path / "m.json"
    out.write_text("previous run")
    err = _same_bytes_after(out, ["evaluate", qp, cp, "--out", out, "--per-query", out], capsys)
    assert err == (f"metrics-core: --per-query {out} and --out {out} are the same file: each "
                   f"output needs a path of its own\n")
    err = _exit_2(["evaluate", qp, cp, "--out", out, "--exclusions", tmp_path / "m.json"],
                  capsys)
    assert "--exclusions" in err and out.read_text() == "previous run"


def test_an_output_inside_an_input_folder_is_refused(files, tmp_path, capsys):
    qp, cp = files
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "part-0.parquet").write_bytes(cp.read_bytes())
    err = _exit_2(["evaluate", qp, folder, "--out", folder / "m.json"], capsys)
    assert f"is inside the input CANDIDATES {folder}" in err


def test_report_never_overwrites_an_input(files, tmp_path, capsys):
    qp, cp = files
    settings = tmp_path / "settings.json"
    settings.write_text('{"config": {"bootstrap": 0}}')
    notes = tmp_path / "notes.txt"
    notes.write_text("decided")
    base = ["report", qp, cp, "--settings", settings, "--notes", notes]
    for path in (cp, qp, settings, notes):
        err = _same_bytes_after(path, [*base, "--out", path], capsys)
        assert f"--out {path} is the input" in err


def test_tune_compare_triage_rag_never_overwrite_an_input(files, tmp_path, capsys):
    from metrics_core.rag.demo import demo_rag_path

    qp, cp = files
    _same_bytes_after(qp, ["tune", qp, cp, "--target", "screening_sensitivity>=0.9",
                           "--out", qp], capsys)
    err = _same_bytes_after(cp, ["compare", "--run", f"a={qp},{cp}", "--run", f"b={qp},{cp}",
                                 "--out", cp], capsys)
    assert f"--out {cp} is the input --run a {cp}" in err
    triage = tmp_path / "triage.csv"
    triage.write_bytes(TRIAGE.read_bytes())
    err = _same_bytes_after(triage, ["triage", triage, "--out", triage], capsys)
    assert f"is the input FILE {triage}" in err
    rag = tmp_path / "rag.jsonl"
    rag.write_bytes(demo_rag_path().read_bytes())
    _same_bytes_after(rag, ["rag", rag, "--out", rag, "--no-semantic"], capsys)


# ------------------------------------------------------------------ report --settings (item 5)
@pytest.mark.parametrize("config", [
    '{"hard_cap": 1e30}', '{"ks": [1e18]}', '{"seed": 1.5}', '{"seed": "abc"}',
    '{"seed": NaN}', '{"n_bins": 1e9}', '{"gate_aware": "false"}',
    '{"filters": {"criteria": "A.1"}}', '{"ks": [Infinity]}',
    '{"config": ' + "[" * 100_000 + "]" * 100_000 + "}"])
def test_report_refuses_a_bad_settings_file_as_the_app_does(files, tmp_path, capsys, config):
    qp, cp = files
    settings = tmp_path / "settings.json"
    settings.write_text(config)
    out = tmp_path / "r.html"
    err = _exit_2(["report", qp, cp, "--settings", settings, "--out", out], capsys)
    with pytest.raises(SettingsError) as info:
        read_settings(settings.read_bytes(), source="settings.json")
    assert err == f"metrics-core: {info.value}\n"
    assert not out.exists()


def test_report_refuses_a_gate_for_a_criterion_the_data_lacks(files, tmp_path, capsys):
    qp, cp = files
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"config": {"bootstrap": 0,
                                               "criterion_gates": [["Z.9", 0.1, 0.5]]}}))
    err = _exit_2(["report", qp, cp, "--settings", settings, "--out", tmp_path / "r.html"],
                  capsys)
    assert "settings.json: criterion_gates names criteria the data does not have: 'Z.9'" in err


def test_report_refuses_a_huge_settings_file_by_its_size(files, tmp_path, capsys):
    qp, cp = files
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"config": {"targets": ["auroc>=0.85"] * 200_000}}))
    size = settings.stat().st_size
    err = _exit_2(["report", qp, cp, "--settings", settings, "--out", tmp_path / "r.html"],
                  capsys)
    assert err == (f"metrics-core: settings.json: is {size:,} bytes; a settings file holds at "
                   f"most {MAX_SETTINGS_BYTES:,} bytes\n")
    err = _exit_2(["report", qp, cp, "--settings", "/dev/zero", "--out", tmp_path / "r.html"],
                  capsys)
    assert f"is more than {MAX_SETTINGS_BYTES:,} bytes" in err


@pytest.mark.parametrize(("encoding", "bom"), [
    ("utf-8", b""), ("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"),
    ("utf-32-be", b"\x00\x00\xfe\xff")])
def test_report_reads_settings_with_a_byte_order_mark(files, tmp_path, encoding, bom):
    qp, cp = files
    text = json.dumps({"schema": "metrics_core_settings/1",
                       "config": {"bootstrap": 0, "tau_neg": 0.05, "gate_aware": False}})
    settings = tmp_path / "settings.json"
    settings.write_bytes(bom + text.encode(encoding))
    out = tmp_path / "r.zip"
    assert main(["report", str(qp), str(cp), "--settings", str(settings), "--format", "zip",
                 "--out", str(out), "--quiet"]) == 0
    with zipfile.ZipFile(out) as z:
        config = json.loads(z.read("metrics_master.json"))["config"]
    assert config["tau_neg"] == 0.05 and config["gate_aware"] is False


# ------------------------------------------------------------------ report failures (item 10)
@pytest.fixture
def broken_chromium(tmp_path, monkeypatch):
    """A 'browser' that dies of SIGTRAP, as Chromium did on the probe's machine."""
    exe = tmp_path / "chromium"
    exe.write_text("#!/bin/sh\nkill -TRAP $$\n")
    exe.chmod(0o755)
    monkeypatch.setattr(record, "CHROMIUM", exe)
    return exe


def test_a_failed_pdf_print_is_a_clear_error(files, tmp_path, capsys, broken_chromium):
    qp, cp = files
    settings = tmp_path / "settings.json"
    settings.write_text('{"bootstrap": 0}')
    out = tmp_path / "r.pdf"
    err = _exit_2(["report", qp, cp, "--settings", settings, "--format", "pdf", "--out", out,
                   "--quiet"], capsys)  # (a slow step's progress line would come first)
    assert err == (f"metrics-core: PDF printing failed: Chromium ({broken_chromium}) was "
                   f"stopped by signal SIGTRAP; the HTML record has the same content\n")
    assert not out.exists()


def test_the_zip_leaves_a_failed_pdf_out_with_a_note(files, tmp_path, capsys, broken_chromium):
    qp, cp = files
    settings = tmp_path / "settings.json"
    settings.write_text('{"bootstrap": 0}')
    out = tmp_path / "r.zip"
    assert main(["report", str(qp), str(cp), "--settings", str(settings), "--format", "zip",
                 "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("metrics-core: note: the zip holds no PDF (decision_record.pdf.txt "
                          "says why): PDF printing failed") and "SIGTRAP" in err
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        note = z.read(record.PDF_NOTE).decode()
    assert "decision_record.pdf" not in names and "decision_record.html" in names
    assert "stopped by signal SIGTRAP" in note


def test_a_browser_that_exits_with_an_error_or_writes_nothing(tmp_path, monkeypatch):
    exe = tmp_path / "chromium"
    exe.write_text("#!/bin/sh\nexit 3\n")
    exe.chmod(0o755)
    with pytest.raises(RuntimeError, match=r"ended with exit status 3; the HTML record"):
        record.render_pdf("<p>x</p>", chromium=exe)
    exe.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(RuntimeError, match="wrote no PDF"):
        record.render_pdf("<p>x</p>", chromium=exe)


def test_notes_are_size_capped(files, tmp_path, capsys):
    qp, cp = files
    out = tmp_path / "r.html"
    err = _exit_2(["report", qp, cp, "--notes", "/dev/zero", "--out", out], capsys)
    assert err == (f"metrics-core: --notes /dev/zero: is more than {MAX_NOTES_BYTES:,} bytes; "
                   f"notes hold at most 64 KiB\n")
    big = tmp_path / "notes.txt"
    big.write_text("n" * (MAX_NOTES_BYTES + 1))
    err = _exit_2(["report", qp, cp, "--notes", big, "--out", out], capsys)
    assert f"is {MAX_NOTES_BYTES + 1:,} bytes; notes hold at most 64 KiB" in err
    big.write_bytes(b"\xff\xfe notes")
    assert "is not UTF-8 text" in _exit_2(["report", qp, cp, "--notes", big, "--out", out],
                                          capsys)
    assert not out.exists()
