"""The run façade: the same inputs fingerprinted the same way from a file, from bytes and on
every front end; a prefetched table loaded in place of its file; a failed audit raised or
logged as asked."""

from __future__ import annotations

import hashlib
import json
import logging

import pytest

from metrics_core import run
from metrics_core.cli import main
from metrics_core.demo import demo_paths
from metrics_core.inputs import loading
from tests.conftest import random_frames


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    q, c = random_frames(n_posts=20, seed=5)
    folder = tmp_path_factory.mktemp("run")
    q.to_csv(folder / "q.csv", index=False)
    c.to_csv(folder / "c.csv", index=False)
    return folder / "q.csv", folder / "c.csv"


def test_fingerprint_of_a_file_and_of_its_bytes_is_hashlib_sha256(files):
    q, _ = files
    data = q.read_bytes()
    expected = {"file": "q.csv", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    assert run.fingerprint(q) == expected
    assert run.fingerprint(data, name="q.csv") == expected
    assert run.fingerprint(b"abc", name="x")["sha256"] == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")  # FIPS 180-2


def test_open_run_loads_audits_and_fingerprints(files):
    q, c = files
    opened = run.open_run(q, c)
    assert opened.inputs == (run.fingerprint(q), run.fingerprint(c))
    assert opened.evaluator.inputs == opened.inputs
    assert opened.evaluator.ds is opened.dataset is opened.loaded.dataset
    assert opened.audit is opened.evaluator.audit and opened.audit is not None
    direct = loading.load(q, c).dataset
    assert opened.dataset.n_queries == direct.n_queries
    assert (opened.dataset.p == direct.p).all()


def test_bytes_and_files_give_the_same_run(files):
    q, c = files
    from_files = run.open_run(q, c)
    from_bytes = run.open_run(q.read_bytes(), c.read_bytes(), queries_name="q.csv",
                              candidates_name="c.csv")
    assert from_bytes.inputs == from_files.inputs
    assert from_bytes.evaluator.evaluate().to_dict()["metrics"] == \
        from_files.evaluator.evaluate().to_dict()["metrics"]


def test_a_table_given_is_loaded_in_place_of_its_file_which_is_still_fingerprinted(files):
    q, c = files
    table = loading.read_table(q.read_bytes(), name="q.csv")
    table["p_has_evidence"] = 0.25  # not the file's content
    opened = run.open_run(q, c, tables=(table, None))
    assert opened.inputs[0] == run.fingerprint(q)
    assert opened.dataset.meta["queries_file"] == "q.csv"
    assert (opened.dataset.p == 0.25).all()
    assert not (run.open_run(q, c).dataset.p == 0.25).all()


def test_a_frame_has_no_fingerprint(files):
    q, c = files
    opened = run.open_run(loading.read_table(q.read_bytes(), name="q.csv"), c)
    assert opened.inputs == (run.fingerprint(c),)


def test_a_failed_audit_is_raised_or_logged(files, monkeypatch, caplog):
    q, c = files

    def broken(*args, **kwargs):
        raise RuntimeError("audit bug")

    monkeypatch.setattr("metrics_core.inputs.audit.audit", broken)
    with pytest.raises(RuntimeError, match="audit bug"):
        run.open_run(q, c)
    with caplog.at_level(logging.WARNING, logger="metrics_core"):
        opened = run.open_run(q, c, audit_failure="log")
    assert opened.audit is None and opened.evaluator.audit is None
    assert "data audit failed: RuntimeError" in caplog.text
    with pytest.raises(ValueError, match="audit_failure must be one of"):
        run.open_run(q, c, audit_failure="ignore")


def test_the_command_line_and_the_app_fingerprint_the_demo_alike(tmp_path, monkeypatch):
    """``run.inputs`` of metrics_master.json: the CLI's (files, a Parquet prefetch) and the
    dashboard's demo and upload (bytes) agree."""
    from dashboard import data

    paths = demo_paths()
    out = tmp_path / "m.json"
    assert main(["evaluate", str(paths.queries), str(paths.candidates), "--out", str(out),
                 "--bootstrap", "0", "--quiet"]) == 0
    cli_inputs = json.loads(out.read_text())["run"]["inputs"]
    expected = [run.fingerprint(paths.queries), run.fingerprint(paths.candidates)]
    assert cli_inputs == expected
    upload = data.Upload(paths.queries.name, paths.queries.read_bytes(),
                         paths.candidates.name, paths.candidates.read_bytes())
    assert list(data.load_upload(upload).base.inputs) == expected
    assert list(data._demo_parts.__wrapped__(False)[0].inputs) == expected
