"""The server-wide memory budget for uploads (dashboard/budget.py), with several sessions.

AppTest instances in one process share the dashboard's module state, as the browser sessions
of one server do: the budget's registry (``dashboard.data.UPLOADS``) counts every session's
upload. The budget comes from a settings file of the test's own (``METRICS_CORE_APP_SETTINGS``),
read at each load, so a test sets it from the bytes an upload was counted at.
"""

from __future__ import annotations

import gc
import gzip
import io
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import data, server_settings, state
from dashboard.budget import held_bytes, size_text
from tests.conftest import random_frames
from tests.test_app import APP, TIMEOUT, upload

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def settings(tmp_path, monkeypatch):
    path = tmp_path / "metrics_core.toml"
    monkeypatch.setenv(server_settings.SETTINGS_ENV, str(path))
    return path


def budget_of(settings, nbytes: int) -> None:
    settings.write_text(f"[memory]\nupload_budget_bytes = {nbytes}\n")


@pytest.fixture(scope="module")
def files():
    q, c = random_frames(n_posts=60, seed=11)
    buf = io.BytesIO()
    c.to_parquet(buf, index=False)
    return (("queries.csv.gz", gzip.compress(q.to_csv(index=False).encode()), "application/gzip"),
            ("candidates.parquet", buf.getvalue(), "application/octet-stream"))


def session() -> AppTest:
    return AppTest.from_file(str(APP), default_timeout=TIMEOUT).run(timeout=TIMEOUT)


def source_kind(at: AppTest) -> str:
    source = at.session_state.get("_source")
    return "demo" if source is None else source.kind


def refusal(at: AppTest) -> str:
    assert any("The uploaded files were not loaded" in e.value for e in at.error)
    return at.session_state[state.UPLOAD_ERROR]["message"]


def test_uploads_of_all_sessions_are_held_to_one_budget(settings, files):
    gc.collect()   # sessions of earlier tests in this process are gone
    before = data.UPLOADS.held()
    file_bytes = len(files[0][1]) + len(files[1][1])
    a = upload(session(), *files)
    assert source_kind(a) == "upload"
    counted = data.UPLOADS.held() - before
    # The files and the data set read from them (as read, before a page reads its strings),
    # and more than the files alone.
    read = data._read_upload(data.Upload(files[0][0], files[0][1], files[1][0], files[1][1]))
    assert counted == file_bytes + held_bytes((read.loaded, read.audit, read.triage))
    assert file_bytes < counted / 2
    shown_a = [m.value for m in a.metric]

    # Room for one and a half of these uploads: a second session's is refused, naming the
    # budget and the amounts, and keeps its demo.
    cap = before + counted + counted // 2
    budget_of(settings, cap)
    b = upload(session(), *files)
    assert source_kind(b) == "demo"
    assert refusal(b) == (
        f"queries.csv.gz, candidates.parquet: this server holds at most {size_text(cap)} of "
        "uploaded data across all sessions (its memory budget, [memory] upload_budget_bytes of "
        f"the server's settings); {size_text(before + counted)} are held now and this upload "
        f"needs {size_text(counted)}, {size_text(before + 2 * counted - cap)} over; try again "
        "when others have closed their uploads, or with smaller files")
    assert data.UPLOADS.held() - before == counted
    # Nothing else is affected: the first session shows what it showed, and may load its
    # upload again (it replaces its own).
    assert [m.value for m in a.run(timeout=TIMEOUT).metric] == shown_a
    a.button(key="load_upload").click().run(timeout=TIMEOUT)
    assert source_kind(a) == "upload" and state.UPLOAD_ERROR not in a.session_state
    assert data.UPLOADS.held() - before == counted

    # The first session goes back to the demo: its bytes are released, the second loads.
    a.button(key="use_demo").click().run(timeout=TIMEOUT)
    assert source_kind(a) == "demo" and data.UPLOADS.held() == before
    b.button(key="load_upload").click().run(timeout=TIMEOUT)
    assert source_kind(b) == "upload" and data.UPLOADS.held() - before == counted

    # A session that ends releases its bytes (its state, and its key in the budget, go).
    del b
    gc.collect()
    assert data.UPLOADS.held() == before


def test_files_alone_over_the_budget_are_refused_before_they_are_read(settings, files):
    gc.collect()
    before = data.UPLOADS.held()
    file_bytes = len(files[0][1]) + len(files[1][1])
    budget_of(settings, before + file_bytes - 1)
    at = upload(session(), *files)
    assert source_kind(at) == "demo"
    assert f"this upload needs {size_text(file_bytes)}, 1 bytes over;" in refusal(at)
    assert data.UPLOADS.held() == before


def test_compared_runs_count_in_the_same_budget(settings, files):
    """The Compare page's uploaded runs are held to the budget with the data source's upload;
    switching to the demo runs releases them."""
    from metrics_core.demo import make_runs
    from tests.test_app_compare import _uploads

    gc.collect()
    before = data.UPLOADS.held()
    runs = _uploads((f"{name}.parquet", frame) for name, frame in make_runs(60, seed=3).items())
    a = session()
    a.switch_page("app_pages/compare.py").run(timeout=TIMEOUT)
    a.file_uploader(key="compare_files").set_value(runs).run(timeout=TIMEOUT)
    assert [t.value for t in a.title] == ["Compare runs"] and not a.exception
    counted = data.UPLOADS.held() - before
    assert counted > sum(len(r[1]) for r in runs)
    # A second session's data source upload does not fit beside them.
    budget_of(settings, before + counted)
    b = upload(session(), *files)
    assert source_kind(b) == "demo"
    assert f"{size_text(before + counted)} are held now" in refusal(b)
    # Nor do the same runs on a second session's Compare page.
    c = session()
    c.switch_page("app_pages/compare.py").run(timeout=TIMEOUT)
    c.file_uploader(key="compare_files").set_value(runs).run(timeout=TIMEOUT)
    said = " ".join(e.value for e in c.error)
    assert "baseline.parquet, candidate.parquet: this server holds at most" in said.replace(
        "\\", "")
    assert len(c.get("plotly_chart")) == 0 and data.UPLOADS.held() - before == counted
    # The first session's demo runs release its uploaded ones; the second session loads.
    a.toggle(key="compare_demo").set_value(True).run(timeout=TIMEOUT)
    assert data.UPLOADS.held() == before
    b.button(key="load_upload").click().run(timeout=TIMEOUT)
    assert source_kind(b) == "upload"


def test_a_rag_file_counts_in_the_same_budget(settings, files):
    """The RAG page's uploaded file is held to the budget too."""
    from metrics_core.rag.demo import demo_rag_path

    gc.collect()
    before = data.UPLOADS.held()
    raw = demo_rag_path().read_bytes()
    a = session()
    a.switch_page("app_pages/rag.py").run(timeout=TIMEOUT)
    a.number_input(key="rag_bootstrap").set_value(0)
    a.file_uploader(key="rag_file").set_value(("rag.jsonl", raw, "application/jsonl"))
    a.run(timeout=TIMEOUT)
    assert not a.exception and not a.error
    counted = data.UPLOADS.held() - before
    assert counted > len(raw) + 1
    # Room for the file beside the first session's, not for what is read from it.
    budget_of(settings, before + counted + len(raw))
    b = session()
    b.switch_page("app_pages/rag.py").run(timeout=TIMEOUT)
    b.number_input(key="rag_bootstrap").set_value(0)
    b.file_uploader(key="rag_file").set_value(("rag.jsonl", raw, "application/jsonl"))
    b.run(timeout=TIMEOUT)
    said = " ".join(e.value for e in b.error).replace("\\", "")
    assert "rag.jsonl: this server holds at most" in said
    assert f"this upload needs {size_text(counted)}" in said.replace("\u2060", "")
    assert len(b.dataframe) == 0 and data.UPLOADS.held() - before == counted
    del a   # the first session ends: its file's bytes are released
    gc.collect()
    assert data.UPLOADS.held() == before


@pytest.mark.parametrize(("text", "said"), [
    ("[memory]\nupload_budget_bytes = 0\n", "must be a positive whole number of bytes; got 0"),
    ('[memory]\nupload_budget_bytes = "4 GB"\n', "got '4 GB'"),
    ("[memory]\nupload_budget_bytes = true\n", "got True"),
    ("[memory]\nbudget = 5\n", "unknown memory settings budget; known: upload_budget_bytes"),
])
def test_a_bad_budget_is_named_and_nothing_is_loaded(settings, files, text, said):
    settings.write_text(text)
    with pytest.raises(server_settings.ServerSettingsError, match=r"metrics_core\.toml"):
        server_settings.memory_budget()
    at = upload(session(), *files)
    assert source_kind(at) == "demo"
    message = refusal(at)
    assert message.startswith("The server's settings cannot be used: metrics_core.toml: ")
    assert said in message


def test_the_repositorys_budget():
    default = server_settings.UPLOAD_BUDGET["upload_budget_bytes"]
    assert server_settings.memory_budget(server_settings.LIMITS_FILE) == default == 4 << 30


def test_the_readme_lists_every_server_setting():
    """The README's table of the server's settings file names every key of every table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(" `"): line for line in readme.splitlines()
            if re.match(r"^\| `\[\w+\]` \|", line)}
    tables = {"[limits]": server_settings.APP_LIMITS, "[interaction]": server_settings.INTERACTION,
              "[memory]": server_settings.UPLOAD_BUDGET, "[auth]": {"allow": ()}}
    assert set(rows) == set(tables)
    for table, keys in tables.items():
        for key in keys:
            assert f"`{key}`" in rows[table], (table, key)


def test_an_adjudicated_gold_counts_in_the_same_budget(settings):
    """The adjudicated gold holds a copy of the labels: counted in the budget (its bytes the
    original data set does not share); over the budget it is not made, the original gold is
    shown, and the pages say why; going to other data releases it."""
    gc.collect()
    before = data.UPLOADS.held()

    def adjudicated_session() -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
        at.query_params["ci"] = "0"  # no intervals: the copy is what is looked at
        at.run(timeout=TIMEOUT)
        at.switch_page("app_pages/case_review.py").run(timeout=TIMEOUT)
        at.radio(key=state.VERDICT_CHOICE).set_value("label_error")
        at.text_input(key=state.VERDICT_REVIEWER).set_value("Dr A")
        at.button(key=state.VERDICT_SAVE).click().run(timeout=TIMEOUT)
        at.radio(key="gold").set_value("adjudicated").run(timeout=TIMEOUT)
        assert not at.exception
        return at

    a = adjudicated_session()
    view = a.session_state[state.VIEW]
    copy = view.source.adjudicated
    assert copy is not None
    original = copy.original.dataset
    # has_evidence is copied (the candidates' is_gold too, were a sentence corrected), the
    # rest of the data set is shared with the original
    counted = data.UPLOADS.held() - before
    assert original.y.nbytes <= counted < original.y.nbytes + 4096
    assert counted == copy.nbytes

    # No room for a second session's copy: the original gold, and why
    cap = before + copy.nbytes + copy.nbytes // 2
    budget_of(settings, cap)
    b = adjudicated_session()
    assert b.session_state[state.VIEW].source.adjudicated is None
    said = (f"The adjudicated gold was not made, so the original gold is shown: its copy of "
            f"the labels ({size_text(copy.nbytes)}) counts in the server's memory budget for "
            f"uploaded data, and this server holds at most {size_text(cap)} of uploaded data "
            f"across all sessions")
    shown = [str(w.value).replace("\\", "") for w in b.warning]
    assert any(w.startswith(said) for w in shown), shown
    assert any(f"{size_text(before + copy.nbytes)} are held now" in w for w in shown), shown
    assert "**Gold labels: original (the adjudicated gold does not fit the memory budget).**" \
        in [str(c.value) for c in b.caption]
    assert data.UPLOADS.held() - before == copy.nbytes
    # Case review, where the verdicts are given, says it too
    assert any(str(e.value).replace("\\", "").startswith(said) for e in b.error), b.error

    # The first session shows other data: its copy is released, and the second one's fits.
    a.radio(key=state.DEMO_VARIANT).set_value(data.DEMO_PROBLEMS).run(timeout=TIMEOUT)
    assert data.UPLOADS.held() == before
    b.run(timeout=TIMEOUT)
    assert b.session_state[state.VIEW].source.adjudicated is not None
    assert data.UPLOADS.held() - before == copy.nbytes
    del b   # a session that ends releases its copy
    gc.collect()
    assert data.UPLOADS.held() == before
