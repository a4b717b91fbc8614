"""What a link or a settings.json may ask a shared dashboard server to compute is bounded by the
server's ``[interaction]`` table: every value of a fuzz corpus (extremes, huge values, repeated
keys, 100 KB values, unknown target metrics) is either refused with a message that names the
field, the rule and the value, in the project's words, or within the server's caps; what the
engine is given never exceeds them, and resamples above the live cap run only when asked for."""

from __future__ import annotations

import json
import time

import pytest

from dashboard import (
    computing,
    data,
    evaluations,
    idle,
    link,
    provenance,
    server_settings,
    sidebar,
    state,
)
from metrics_core.config import SCHEMA
from tests.test_app import TIMEOUT, assert_clean, open_app

CAPS = server_settings.INTERACTION
#: Python's own wording, which a refusal must never show.
PYTHON_WORDING = ("not supported between", "instances of", "invalid literal", "could not convert",
                  "object has no attribute", "NoneType", "unhashable", "Traceback",
                  "object is not", "unexpected keyword")
HUGE = "9" * 400


def _link_corpus() -> list[tuple[str, object]]:
    """(key, raw link value) pairs: every setting's extremes, values past them, huge and long
    values, garbage, repeated keys."""
    corpus = []
    for s in state.SETTINGS:
        raws: list[object] = ["", " ", "x", "nan", "inf", "-inf", "1e400", HUGE, "-" + HUGE,
                              "x" * 100_000, "0x10", "1_000", "[]", "{}", "\x00", "１", "1,2,3",
                              "None", "true", ["0.1", "0.2"], ["x"] * 65]
        if s.low is not None:
            raws += [str(s.low), str(s.high), str(s.high * 10), str(s.low - 1),
                     f"{s.low},{s.high}", f"{s.high},{s.low}"]
        if s.kind == "multi" and s.key == "targets":
            raws += [["foo>=1"], ["auroc>=x"], ["auroc>=0.9"] * 64, ["recall@7>=0.5"],
                     ["a" * 300 + ">=1"]]
        if s.kind == "gates":
            raws += [["A.1:0.1:0.9"] * 100, ["A.1:0.9:0.1"], ["A.1:x:0.5"], [":::"]]
        corpus += [(s.key, raw) for raw in raws]
    return corpus


def _assert_worded(note: str, key: str) -> None:
    assert key in note, note
    assert not any(w in note for w in PYTHON_WORDING), note
    # the rule: an expected form or range, or the bound that was passed, or which of a
    # repeated key's values is used
    assert any(w in note for w in ("expected", "at most", "must", "within", "no metric",
                                   "is not", "the last,")), note


def test_every_link_value_of_the_corpus_is_refused_in_words_or_within_the_caps():
    for key, raw in _link_corpus():
        values, notes = link.settings_from_params({key: raw})
        notes += link.capped(values, CAPS, "link")
        for note in notes:
            _assert_worded(note, key)
        if key in values:
            config = state.build_config(values)  # a valid configuration
            assert config.bootstrap <= CAPS["max_link_resamples"], (key, raw)
            assert config.n_bins <= CAPS["max_link_bins"], (key, raw)
        else:
            assert notes or raw in ("", " ", [], ()) or key in ("fold", "split"), (key, raw)


@pytest.mark.parametrize(("key", "raw", "shown"), [
    ("bootstrap", "100000", "bootstrap=100,000"),
    ("n_bins", "1000", "n_bins=1,000"),
    ("n_bins", "101", "n_bins=101"),
])
def test_a_link_asking_for_more_than_the_server_computes_is_refused_with_the_cap(key, raw,
                                                                                shown):
    values, notes = link.settings_from_params({key: raw})
    notes += link.capped(values, CAPS, "link")
    assert key not in values
    assert len(notes) == 1 and shown in notes[0] and "at most" in notes[0], notes


def test_an_unknown_target_metric_in_a_link_is_refused_with_the_valid_names():
    values, notes = link.settings_from_params({"targets": ["auroc>=0.8", "foo>=1"]})
    assert "targets" not in values
    assert "foo" in notes[0] and "valid metrics: auroc" in notes[0], notes


def test_link_range_messages_state_the_range():
    _, notes = link.settings_from_params({"k_min": "2.5", "gamma": "x", "gate": "0.1,inf"})
    text = " ".join(notes)
    assert "k_min='2.5'" in text and "whole number within [0, 1000]" in text
    assert "gamma='x'" in text and "within [0.05, 1]" in text
    assert "gate='0.1,inf'" in text and "within [0, 1]" in text


# ------------------------------------------------------------------------ settings files
def _file(**config) -> bytes:
    return json.dumps({"schema": "metrics_core_settings/1", "config": config}).encode()


def _json_corpus() -> list[tuple[str, object]]:
    values = ["abc", 1e308, -1e308, None, [], {}, [1, "x"], True, "x" * 100_000, 10**40,
              [[[]]], {"a": 1}, 0.5, 7, -1, 2.5]
    corpus = [(name, v) for name in SCHEMA for v in values]
    for name, schema in SCHEMA.items():
        if schema.kind in ("int", "float"):
            corpus += [(name, schema.low), (name, schema.high), (name, schema.high * 10)]
    corpus += [("targets", ["foo>=1"]), ("targets", ["auroc>=0.5"] * 65),
               ("criterion_gates", [["A.1", 0.1, 0.9]] * 2), ("no_such_setting", 1)]
    return corpus


def test_every_settings_file_of_the_corpus_is_refused_in_words_or_within_the_caps():
    for name, value in _json_corpus():
        values, _, error = sidebar.settings_verdict(_file(**{name: value}), "s.json", CAPS)
        if error is not None:
            assert "was not applied" in error and name in error, (name, value, error)
            assert not any(w in error for w in PYTHON_WORDING), error
            continue
        config = state.build_config(values)
        assert config.bootstrap <= CAPS["max_link_resamples"], (name, value)
        assert config.n_bins <= CAPS["max_link_bins"], (name, value)


def test_repeated_keys_and_huge_files_are_refused_in_words():
    twice = b'{"config": {"gamma": 0.5, "gamma": 0.6}}'
    _, _, error = sidebar.settings_verdict(twice, "s.json", CAPS)
    assert "gamma" in error and "twice" in error
    _, _, error = sidebar.settings_verdict(b" " * (2 << 20), "s.json", CAPS)
    assert "bytes" in error and "at most" in error
    _, _, error = sidebar.settings_verdict(_file(n_bins=500, bootstrap=50_000), "s.json", CAPS)
    assert "n_bins=500" in error and "bootstrap=50,000" in error and "at most 100" in error


# ------------------------------------------------------------------------ in the app
@pytest.fixture
def recorded(monkeypatch):
    """Every configuration the app hands the engine to evaluate."""
    from metrics_core.evaluation.evaluator import Evaluator

    seen = []
    original = Evaluator.evaluate

    def evaluate(self, config=None, **kw):
        seen.append(config)
        return original(self, config, **kw)

    monkeypatch.setattr(Evaluator, "evaluate", evaluate)
    return seen


def test_a_link_at_every_extreme_is_capped_before_the_engine(recorded):
    params = {s.key: str(int(s.high) if s.kind == "int" else s.high)
              for s in state.SETTINGS if s.kind in ("int", "float") and s.high is not None}
    params.update({"bootstrap": "100000", "bootstrap_unit": "post", "ci": "1",
                   "binning": "quantile", "gate": "0,1", "targets": ["foo>=1"]})
    at = open_app(params, page="overview")
    assert_clean(at)
    notes = " ".join(str(w.value) for w in at.warning)
    for shown in ("bootstrap=100,000", "n_bins=1,000", "foo"):
        assert shown in notes, notes
    ours = [c for c in recorded if c.seed == 2**31 - 1]  # not another test's helper thread
    assert ours, "nothing was evaluated"
    for config in ours:
        assert config.bootstrap <= CAPS["max_live_resamples"]
        assert config.n_bins <= CAPS["max_link_bins"]


@pytest.fixture
def live_cap(tmp_path, monkeypatch):
    """A server whose live cap is 2,500 resamples."""
    toml = tmp_path / "metrics_core.toml"
    toml.write_text("[interaction]\nmax_live_resamples = 2_500\n")
    monkeypatch.setattr(server_settings, "LIMITS_FILE", toml)
    return 2_500


def test_resamples_above_the_live_cap_run_only_when_asked_for(live_cap, recorded):
    at = open_app({"bootstrap": "3000", "seed": "7"}, page="overview")
    assert_clean(at)
    view = at.session_state[state.VIEW]
    assert view.evaluation.config.bootstrap == live_cap
    ours = [c for c in recorded if c.seed == 7]  # not another test's helper thread
    assert ours and all(c.bootstrap <= live_cap for c in ours)
    infos = " ".join(str(i.value) for i in at.info)
    assert "2,500 resamples" in infos and "3,000" in infos
    at.button(key=state.RUN_HEAVY).click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.session_state[state.VIEW].evaluation.config.bootstrap == 3000
    assert max(c.bootstrap for c in recorded if c.seed == 7) == 3000
    assert not [b for b in at.button if b.key == state.RUN_HEAVY]


def test_a_computation_stops_when_its_tab_has_closed(monkeypatch):
    from types import SimpleNamespace

    from streamlit import runtime
    from streamlit.runtime import scriptrunner
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    active = {"yes": True}
    monkeypatch.setattr(runtime, "exists", lambda: True)
    monkeypatch.setattr(runtime, "get_instance", lambda: SimpleNamespace(
        is_active_session=lambda sid: active["yes"] and sid == "s1"))
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx",
                        lambda: SimpleNamespace(session_id="s1"))
    computing.stop_if_closed()  # open: goes on
    active["yes"] = False
    with pytest.raises(StopException):
        computing.stop_if_closed()


# ------------------------------------------------------------------------ computing budget
def test_the_budget_counts_the_last_minute():
    budget = computing.CpuBudget()
    budget.charge(30, now=0.0)
    budget.charge(20, now=30.0)
    assert budget.used(now=50.0) == 50
    assert budget.wait(40, now=50.0) == 10  # the first charge leaves the window at 60 s
    assert budget.wait(60, now=50.0) == 0
    assert budget.used(now=61.0) == 20


def test_a_session_over_its_computing_budget_gets_point_values_and_a_message(tmp_path,
                                                                            monkeypatch):
    toml = tmp_path / "metrics_core.toml"
    toml.write_text("[interaction]\ncpu_seconds_per_minute = 0.001\n")
    monkeypatch.setattr(server_settings, "LIMITS_FILE", toml)
    at = open_app({"seed": "11", "gamma": "0.81"}, page="overview")  # its own evaluations
    assert_clean(at)
    assert computing.CpuBudget.used(at.session_state[state.CPU_BUDGET]) > 0.001
    shown = " ".join(str(w.value) for w in at.warning)
    assert "computing time" in shown and "cpu_seconds_per_minute" in shown, shown
    # the live pass was computed, its refinement was not
    assert at.session_state[state.VIEW].evaluation.config.bootstrap == data.LIVE_RESAMPLES
    at.slider(key="gamma").set_value(0.83).run(timeout=TIMEOUT)
    assert_clean(at)
    view = at.session_state[state.VIEW]
    assert view.evaluation.config.bootstrap == 0 and view.config.gamma == 0.83
    assert "computing time" in " ".join(str(w.value) for w in at.warning)


# ------------------------------------------------------------------------ shared work
def test_the_shared_evaluations_are_bounded_in_bytes_and_counted():
    import numpy as np

    memo = evaluations.Evaluations(10, max_bytes=2_500)
    for i in range(4):
        memo.put(("demo", i), {"values": np.zeros(125)})  # 1,000 bytes each
    assert [k for _, k in memo] == [2, 3]  # the oldest went
    assert memo.nbytes() == 2_000
    one = evaluations.Evaluations(10, max_bytes=10)
    one.put(("demo", 0), {"values": np.zeros(125)})
    assert len(one) == 1  # the newest is kept whatever its size


def test_an_evaluation_in_the_making_is_waited_for_not_computed_again():
    import threading

    memo = evaluations.Evaluations(4)
    calls, gate = [], threading.Event()

    def make():
        calls.append(1)
        gate.wait(5)
        return "evaluation"

    got = []
    threads = [threading.Thread(target=lambda: got.append(memo.compute("k", make)))
               for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join(10)
    assert got == ["evaluation"] * 4 and len(calls) == 1


def test_waiting_for_another_sessions_evaluation_can_be_stopped():
    """A session waiting for an evaluation another one computes polls: its next move (a
    Streamlit call raising there) stops the wait; the other session's value is kept."""
    import threading

    memo = evaluations.Evaluations(4)
    gate = threading.Event()

    class Moved(Exception):
        pass

    def poll():
        raise Moved

    other = threading.Thread(target=lambda: memo.compute("k", lambda: gate.wait(5) and "e"))
    other.start()
    for _ in range(500):
        if memo._once.running:
            break
        time.sleep(0.01)
    with pytest.raises(Moved):
        memo.compute("k", lambda: "mine", poll=poll)
    gate.set()
    other.join(10)
    assert memo.get("k") == "e"


def test_a_second_session_gets_the_demos_view_from_memory(recorded):
    params = {"seed": "13", "gamma": "0.79"}
    first = open_app(params, page="overview")
    assert_clean(first)
    computed = [c for c in recorded if c.seed == 13]
    assert computed  # the first session computed its view
    recorded.clear()
    second = open_app(params, page="overview")
    assert_clean(second)
    # the second computed no view (the first one's per-criterion warm-up may still run)
    assert not [c for c in recorded if c.seed == 13 and not c.filters.active]
    a = first.session_state[state.VIEW].evaluation
    b = second.session_state[state.VIEW].evaluation
    assert a is b


def test_the_shared_cache_bound_is_the_servers_setting(tmp_path, monkeypatch):
    toml = tmp_path / "metrics_core.toml"
    toml.write_text("[memory]\nshared_cache_bytes = 12_345\n")
    monkeypatch.setattr(server_settings, "LIMITS_FILE", toml)
    assert server_settings.shared_cache_budget() == 12_345
    toml.write_text("[memory]\nshared_cache_bytes = -1\n")
    with pytest.raises(server_settings.ServerSettingsError, match="shared_cache_bytes"):
        server_settings.shared_cache_budget()


# ------------------------------------------------------------------------ an idle server
def test_an_idle_server_lets_go_of_what_it_kept_once_per_idle_spell(monkeypatch):
    import threading
    from types import SimpleNamespace

    from streamlit import runtime

    sessions = {"n": 1}
    manager = SimpleNamespace(list_sessions=lambda: [object()] * sessions["n"])
    monkeypatch.setattr(runtime, "exists", lambda: True)
    monkeypatch.setattr(runtime, "get_instance", lambda: SimpleNamespace(_session_mgr=manager))
    released = []
    monkeypatch.setattr(idle, "release_shared_memory", lambda: released.append(1))
    stop = threading.Event()
    thread = idle.release_when_idle(idle_seconds=0.1, every=0.02, stop=stop)


    def until(count: int) -> None:
        for _ in range(1_000):  # at most 20 s on a loaded machine
            if len(released) >= count:
                break
            time.sleep(0.02)

    try:
        time.sleep(0.3)
        assert released == []  # a session is there
        sessions["n"] = 0
        until(1)
        time.sleep(0.3)
        assert released == [1]  # once, however long the server stays idle
        sessions["n"] = 2
        time.sleep(0.5)
        sessions["n"] = 0
        until(2)
        assert released == [1, 1]  # the next idle spell
    finally:
        stop.set()
        thread.join(2)


def test_a_closed_tabs_session_past_its_time_is_let_go_of_when_the_sessions_are_counted():
    # Streamlit's session storage reports a closed tab's session past its TTL as gone but
    # keeps it (with its state and what its pages' views hold) until the cache's next write:
    # the idle server's count drops it, so the memory released at idle is no longer held.
    import gc
    import weakref
    from types import SimpleNamespace

    from streamlit.runtime.memory_session_storage import MemorySessionStorage
    from streamlit.runtime.session_manager import SessionInfo

    class Held:  # what a closed tab's session holds (its pages' views, the demo's evaluator)
        id = "closed-tab"

    storage = MemorySessionStorage(ttl_seconds=0)  # every stored session past its time
    session = Held()
    storage.save(SessionInfo(client=None, session=session))
    held = weakref.ref(session)
    del session
    manager = SimpleNamespace(_session_storage=storage, list_sessions=storage.list)
    assert manager.list_sessions() == []  # reported gone...
    gc.collect()
    assert held() is not None  # ...but still held by the storage (the leak)
    assert idle.session_count(manager) == 0
    gc.collect()
    assert held() is None  # let go of


def test_counting_sessions_without_a_session_storage_counts_them():
    from types import SimpleNamespace

    assert idle.session_count(SimpleNamespace(list_sessions=lambda: [1, 2])) == 2


def test_letting_go_empties_the_shared_caches():
    evaluations._shared_demo_evaluations().put(("demo", "x"), "evaluation")
    data.demo_source()  # the demo's run, kept for every session
    idle.release_shared_memory()
    assert len(evaluations._shared_demo_evaluations()) == 0  # a new, empty one


# ------------------------------------------------------------- a page's own resamples input
def _live_cap(tmp_path, monkeypatch, most: int) -> None:
    toml = tmp_path / "metrics_core.toml"
    toml.write_text(f"[interaction]\nmax_live_resamples = {most}\n")
    monkeypatch.setattr(server_settings, "LIMITS_FILE", toml)


def _offer(at) -> str:
    return " ".join(str(i.value) for i in at.info if "max_live_resamples" in str(i.value))


def test_compare_runs_resamples_above_the_live_cap_run_only_when_asked(tmp_path, monkeypatch):
    """Compare runs' paired bootstrap input: above the server's live cap the page computes the
    cap's resamples and offers the number set on a button (a message naming the field, the
    range and the value); asked for, they run with progress and give the library's intervals
    at that number."""
    from metrics_core import compare
    from metrics_core.config import EvalConfig, Filters
    from metrics_core.demo import make_runs
    from metrics_core.inputs import loading as mio

    _live_cap(tmp_path, monkeypatch, 300)
    seen = []
    plain = compare.compare

    def recording(*args, **kwargs):
        calls = []
        progress = kwargs.get("progress")
        if progress is not None:
            kwargs["progress"] = lambda done, total: (calls.append(done), progress(done, total))
        rows = plain(*args, **kwargs)
        seen.append((kwargs["config"].bootstrap, progress is not None, len(calls)))
        return rows

    monkeypatch.setattr(compare, "compare", recording)
    at = open_app(page="compare")
    at.toggle(key=state.COMPARE_DEMO).set_value(True).run(timeout=TIMEOUT)
    at.number_input(key=state.COMPARE_BOOTSTRAP).set_value(500).run(timeout=TIMEOUT)
    assert_clean(at)
    offer = _offer(at)
    assert "Paired bootstrap resamples" in offer and "500" in offer and "0 to 300" in offer
    assert at.session_state[state.COMPARE_RESULT][0][2].bootstrap == 300
    assert seen[-1] == (300, False, 0)
    at.button(key="compare_run_heavy").click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert seen[-1][:2] == (500, True) and seen[-1][2] > 0  # with progress
    assert at.session_state[state.COMPARE_RESULT][0][2].bootstrap == 500
    assert not _offer(at) and not [b for b in at.button if b.key == "compare_run_heavy"]
    runs = [compare.Run(n, mio.load(f).dataset) for n, f in make_runs(300).items()]
    config = at.session_state[state.VIEW].config.replace(bootstrap=500, filters=Filters())
    assert isinstance(config, EvalConfig)
    want = {r["metric"]: r["ci95"] for r in plain(runs, reference="baseline", config=config)
            if r["subset"] == "all_queries"}
    got = {r["metric"]: r["ci95"] for r in at.session_state[state.COMPARE_RESULT][1]
           if r["subset"] == "all_queries"}
    assert got["auroc"] == pytest.approx(want["auroc"])


def test_rag_resamples_above_the_live_cap_run_only_when_asked(tmp_path, monkeypatch):
    from metrics_core.rag import loader, suite
    from metrics_core.rag.demo import demo_rag_path

    _live_cap(tmp_path, monkeypatch, 300)
    at = open_app(page="rag")
    at.toggle(key=state.RAG_DEMO).set_value(True).run(timeout=TIMEOUT)  # 2,000 set
    assert_clean(at)
    offer = _offer(at)
    assert "Bootstrap resamples" in offer and "2,000" in offer and "0 to 300" in offer
    assert at.session_state[state.RAG_RESULT][0][2] == 300
    at.button(key="rag_run_heavy").click().run(timeout=TIMEOUT)
    assert_clean(at)
    kept = at.session_state[state.RAG_RESULT]
    assert kept[0][2] == 2000 and not _offer(at)
    rag = loader.parse_rag(demo_rag_path().read_bytes(), name="demo")
    results = suite.evaluate(rag.samples, rag.outputs, suite.default_metrics(semantic=False))
    want = suite.bootstrap_intervals(results, n_resamples=2000)
    cis = kept[4]  # (key, file name, samples, results, intervals, scenarios)
    assert sorted(cis) == sorted(want)
    assert [(cis[k].lo, cis[k].hi) for k in want] == [
        pytest.approx((c.lo, c.hi), nan_ok=True) for c in want.values()]
    # within the cap: computed at once, no offer
    at.number_input(key=state.RAG_BOOTSTRAP).set_value(200).run(timeout=TIMEOUT)
    assert at.session_state[state.RAG_RESULT][0][2] == 200 and not _offer(at)


def test_the_cancel_button_withdraws_the_ask(monkeypatch):
    from dashboard import page_resamples

    monkeypatch.setattr(page_resamples.st, "session_state", {})
    page_resamples._ask("_rag_asked", 2000)
    assert page_resamples.st.session_state == {"_rag_asked": 2000}
    page_resamples._ask("_rag_asked", None)  # Cancel
    assert page_resamples.st.session_state == {}


# ------------------------------------------------- progress for what a link's view computes
class _Bar:
    def __init__(self):
        self.shown = []

    def progress(self, value, text):
        self.shown.append((value, text))


class _Slot:
    def __init__(self):
        self.bars, self.emptied = [], False

    def progress(self, value, text):
        self.bars.append(_Bar())
        return self.bars[-1]

    def empty(self):
        self.emptied = True


def test_a_step_progress_draws_its_bar_at_the_first_update_only():
    slot = _Slot()
    progress = computing.StepProgress(slot, "Finding thresholds")
    assert slot.bars == []  # a result at hand: nothing drawn
    progress.stage("bootstrap of the thresholds (all queries)")
    progress(500, 2000)
    progress(2000, 2000)
    assert len(slot.bars) == 1
    assert slot.bars[0].shown[-1] == (1.0, "Finding thresholds: bootstrap of the thresholds "
                                           "(all queries), 2,000 of 2,000 resamples")
    progress.done()
    assert slot.emptied


def test_the_finder_and_the_cohorts_show_their_resamples_progress(monkeypatch):
    """The Decision support page's finder (every resample re-selects the threshold) and the
    Cohorts page's intervals: a link's view computes them with a progress bar, not behind a
    spinner alone."""
    from metrics_core.evaluation import cohorts
    from metrics_core.metrics import decision

    told = {}

    def recording(module, name):
        plain = getattr(module, name)

        def run(*args, progress=None, **kwargs):
            calls = []
            if progress is not None:
                kwargs["progress"] = lambda done, total: (calls.append(done),
                                                          progress(done, total))
            result = plain(*args, **kwargs)
            told[name] = (progress is not None, len(calls))
            return result

        monkeypatch.setattr(module, name, run)

    recording(decision, "tune")
    recording(cohorts, "evaluate_cohorts")
    at = open_app({"seed": "4242"}, page="decision")
    at.number_input(key="finder_value").set_value(0.97).run(timeout=TIMEOUT)
    assert_clean(at)
    assert told["tune"][0] and told["tune"][1] > 0
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    at.multiselect(key="cohort_columns").set_value(["site"]).run(timeout=TIMEOUT)
    at.switch_page("app_pages/cohorts.py").run(timeout=3 * TIMEOUT)
    assert_clean(at)
    assert told["evaluate_cohorts"][0] and told["evaluate_cohorts"][1] > 0


# ------------------------------------- the newer link and settings.json parts of the corpus
_GUARANTEE = "tau_neg;screening_sensitivity>=0.99;0.1;100;all;5000"


def _newer_link_corpus() -> list[tuple[str, object]]:
    """(key, raw value): the cohort filter, the gold switch, the exploratory and guaranteed
    marks at their extremes, past them, 100 KB long and repeated."""
    long = "x" * 100_000
    corpus = [("cohort", raw) for raw in (
        "site=", "=S1", "=", "site==x", "site=" + long, ["site=S1"] * 65,
        [f"site=S{i}" for i in range(100)], "\x00=\x00", "site=" + HUGE, ["a" * 300 + "=1"])]
    corpus += [("gold", raw) for raw in ("x", long, ["adjudicated"] * 100, "ADJUDICATED")]
    corpus += [("explored", raw) for raw in ("", long, ["tau_neg"] * 100, "tau_neg," * 10_000,
                                             "gamma,nope")]
    parts = _GUARANTEE.split(";")
    variants = []
    for i, bad in ((2, "nan"), (2, "inf"), (2, "-1"), (2, "5"), (2, "1e400"), (2, HUGE),
                   (3, "0"), (3, "9999999"), (5, HUGE), (5, "-1"), (1, "foo>=1"), (1, long),
                   (1, "screening_sensitivity>=nan"), (1, "alert_precision>=0.9"),
                   (0, "gamma"), (4, long), (4, "fold=x")):
        variants.append(";".join([*parts[:i], bad, *parts[i + 1:]]))
    corpus += [("guaranteed", raw) for raw in (*variants, "", ";;;;;", long,
                                               [_GUARANTEE] * 100, ["x"] * 65)]
    return corpus


def test_the_newer_link_parameters_of_the_corpus_are_refused_in_words_or_bounded():
    from metrics_core.metrics.risk_control import MAX_CALIBRATION_N

    for key, raw in _newer_link_corpus():
        if key == "explored":
            names, notes = link.explored_from_params({key: raw})
            assert set(names) <= set(provenance.THRESHOLD_NAMES), (raw, names)
            for note in notes:
                assert key in note and "known:" in note, note
                assert not any(w in note for w in PYTHON_WORDING), note
                assert len(note) < 1_500, len(note)
            continue
        if key == "guaranteed":
            found, _, notes = link.guaranteed_from_params({key: raw})
            for g in found.values():
                assert 0 < g.delta < 1 and 1 <= g.tests <= 10_000, (raw, g)
                assert 0 <= g.n_calibration <= MAX_CALIBRATION_N, (raw, g)
        else:
            values, notes = link.settings_from_params({key: raw})
            filters = state.build_config(values).filters
            assert len(filters.cohorts) <= state.MAX_ITEMS, raw
            assert all(len(c) <= state.MAX_TEXT for c in filters.cohorts), raw
            assert key in values or notes, (key, raw)
        for note in notes:
            _assert_worded(note, key)


def _settings(config=None, **top) -> bytes:
    return json.dumps({"schema": "metrics_core_settings/1", "config": config or {},
                       **top}).encode()


def _newer_settings_corpus() -> list[tuple[str, bytes]]:
    guarantee = {"target": "screening_sensitivity>=0.99", "delta": 0.1, "tests": 100,
                 "calibration": "all", "n_calibration": 5000}
    marked = {"tau_neg": "guaranteed"}
    corpus = []
    for v in ("x", 1e308, None, [], {}, "x" * 100_000, 10**40, [[[]]], True, -1):
        corpus += [("provenance", _settings(provenance={"tau_neg": v})),
                   ("provenance", _settings(provenance=v)),
                   ("guarantees", _settings(provenance=marked, guarantees={"tau_neg": v})),
                   ("guarantees", _settings(guarantees=v)),
                   ("filters", _settings({"filters": {"cohorts": v}})),
                   ("filters", _settings({"filters": {"cohorts": [v]}})),
                   ("cohort_columns", _settings(cohort_columns=v)),
                   ("cohort_columns", _settings(cohort_columns=[v, "site"]))]
        corpus += [(k, _settings(provenance=marked, guarantees={"tau_neg": {**guarantee,
                                                                            k: v}}))
                   for k in guarantee]
    corpus += [("filters", _settings({"filters": {"cohorts": ["site=S1"] * 10_000}})),
               ("filters", _settings({"filters": {"cohorts": ["site=" + "x" * 100_000]}})),
               ("cohort_columns", _settings(cohort_columns=["site"] * 10_000)),
               ("cohort_columns", _settings(cohort_columns=["site*", "*", "a\x00b"])),
               ("n_calibration", _settings(provenance=marked, guarantees={
                   "tau_neg": {**guarantee, "n_calibration": 10**13}})),
               ("tau_neg", b'{"config": {}, "provenance": {"tau_neg": "exploratory", '
                           b'"tau_neg": "guaranteed"}}')]
    return corpus


def test_the_newer_settings_file_parts_of_the_corpus_are_refused_in_words_or_bounded():
    from metrics_core.metrics.risk_control import MAX_CALIBRATION_N

    for name, payload in _newer_settings_corpus():
        values, (_, guaranteed), error = sidebar.settings_verdict(payload, "s.json", CAPS)
        if error is not None:
            assert "was not applied" in error and name in error, (name, payload[:80], error)
            assert not any(w in error for w in PYTHON_WORDING), error
            continue
        config = state.build_config(values)
        assert len(config.filters.cohorts) <= state.MAX_ITEMS, payload[:80]
        assert len(values["cohort_columns"]) <= state.MAX_ITEMS, payload[:80]
        for field_name, g in guaranteed.items():
            # what the file restores, the view's link carries: read back, the same guarantee
            assert g.n_calibration <= MAX_CALIBRATION_N
            assert link.guaranteed_from_params({"guaranteed": g.link(field_name)})[0] == {
                field_name: g}


def test_a_guarantee_too_large_for_a_link_is_refused_naming_the_field_and_range():
    g = {"target": "screening_sensitivity>=0.99", "delta": 0.1, "tests": 1,
         "calibration": "all", "n_calibration": 10**13}
    _, _, error = sidebar.settings_verdict(
        _settings(provenance={"tau_neg": "guaranteed"}, guarantees={"tau_neg": g}), "s.json",
        CAPS)
    assert "guarantees.tau_neg" in error and "n_calibration" in error, error
    assert "within [0, 999999999999]" in error and "10000000000000" in error, error


def test_a_links_filter_notes_stay_after_the_refinements_rerun():
    """fold / cohort values the data set does not have: the note says so (a cohort value waits
    for the user's data), and it is still shown after the runs that follow the first (the
    intervals' refinement, a page switch)."""
    at = open_app({"fold": "99", "cohort": ["nosuch=1", "site=site_E"]}, page="overview")
    assert_clean(at)
    shown = " ".join(str(w.value) for w in at.warning)
    assert "fold='99' is not in this data set" in shown, shown
    # a cohort value the demo lacks waits for the user's data (named, kept in the link)
    assert "cohort filter values 'nosuch=1' are not in the data shown" in shown, shown
    assert at.session_state[state.VIEW].filters.cohorts == ("site=site_E",)


# ------------------------------------------ a session waiting for another's computation
def test_per_criterion_intervals_in_the_making_elsewhere_are_waited_for_in_steps(monkeypatch):
    """Per criterion's refinement while another session computes the same intervals: this
    session waits in steps, each a Streamlit call (its bar) where its next move or a closed
    tab stops it, instead of blocking until the other session's computation ends."""
    import threading
    from types import SimpleNamespace

    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    from dashboard import refinement
    from metrics_core.config import EvalConfig
    from metrics_core.data.dataset import Dataset
    from metrics_core.evaluation import tables
    from metrics_core.evaluation.evaluator import Evaluator
    from tests.conftest import random_frames

    q, c = random_frames(n_posts=30, seed=8)
    evaluator = Evaluator(Dataset.from_frames(q, c))
    config = EvalConfig(bootstrap=200, seed=5)
    release, started = threading.Event(), threading.Event()
    plain = Evaluator.evaluate

    def slow(self, cfg=None, **kw):
        started.set()
        release.wait(30)
        return plain(self, cfg, **kw)

    monkeypatch.setattr(Evaluator, "evaluate", slow)
    other = threading.Thread(target=lambda: tables.group_intervals(evaluator, config, "auroc"))
    other.start()
    assert started.wait(30)
    assert tables.group_intervals_in_the_making(evaluator, config) is not None
    shown, polls = [], []

    def closed_after_three():
        polls.append(1)
        if len(polls) == 3:
            raise StopException()

    bar = SimpleNamespace(progress=lambda value, text: shown.append(text),
                          empty=lambda: None)
    monkeypatch.setattr(refinement, "over_budget", lambda: None)
    monkeypatch.setattr(refinement, "stop_if_closed", closed_after_three)
    monkeypatch.setattr(refinement.st, "progress", lambda value, text: bar)
    view = SimpleNamespace(source=SimpleNamespace(evaluator=lambda: evaluator))
    try:
        with pytest.raises(StopException):
            refinement.refine_group_intervals(view, config)
        assert len(polls) == 3 and "computed for another session too" in shown[-1]
    finally:
        release.set()
        other.join(30)
    assert tables.group_intervals_in_the_making(evaluator, config) is None
    assert tables.group_intervals_ready(evaluator, config)


# ------------------------------------------------------- work skipped on every run
def test_a_run_without_verdicts_makes_no_adjudication_table(monkeypatch):
    """The gold switch is read on every run of every session: with the original gold (and no
    verdicts) no empty adjudication table is made; with verdicts, their count."""
    from types import SimpleNamespace

    from dashboard import gold

    source = SimpleNamespace(adjudicated=None, token="demo", loaded=None)
    monkeypatch.setattr(gold.st, "session_state", {})
    monkeypatch.setattr(gold, "empty_frame", lambda: pytest.fail("a table was made"))
    assert gold.verdict_count(source) == 0
    assert gold.gold_source(source, gold.ORIGINAL) == (source, "original (the files' labels)")
    gold.st.session_state[state.ADJ_VERDICTS] = {"demo": [1, 2, 3]}  # three verdicts
    assert gold.verdict_count(source) == 3
    assert "3 verdicts in this session" in gold.gold_source(source, gold.ORIGINAL)[1]
