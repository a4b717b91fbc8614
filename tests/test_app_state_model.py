"""A model of the dashboard's settings state, checked against the app after every step.

Hypothesis draws random sequences of what a meeting does (open a page, move a slider, type a
threshold, switch intervals on or off, look at one cohort, choose the cohort columns on the
Data page, switch the demo, switch the gold labels, give a verdict on Case review, open the link
in a new session, restore a settings.json, set the gate with a guarantee on Decision support)
and runs them through AppTest. After each step every drawn widget, the gold the page names,
the thresholds line, the cohort the pages show and the cohort columns chosen, the link,
settings.json and the record's thresholds must equal the model, which is written
here from the rules alone (what was moved is exploratory, what was typed, loaded or left at
its default is pre-specified, what was set with a guarantee is guaranteed until it moves:
contract §9; a guaranteed one becomes exploratory when other data, or other gold labels, are
shown; a cohort, and a cohort column, stays chosen until data without it is shown),
not from the app's code.

CI runs a bounded number of sequences; ``STATE_MODEL_EXAMPLES=500`` runs more.
"""

from __future__ import annotations

import json
import os
import re

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from dashboard import data, provenance, state
from metrics_core.config import EvalConfig, Filters
from metrics_core.metrics import risk_control
from metrics_core.report import decision_record as record
from tests.test_app import TIMEOUT, open_app
from tests.test_app_thresholds import defaults_and_values

EXAMPLES = int(os.environ.get("STATE_MODEL_EXAMPLES", "6"))
STEPS = int(os.environ.get("STATE_MODEL_STEPS", "6"))
#: Pages of the sequences: the gate and γ are drawn on each (sidebar, page body or Meeting
#: mode's own controls); the typed boxes and the fixed threshold everywhere but Meeting mode.
PAGES = ("overview", "gate", "dynamic_k", "calibration", "decision", "meeting")
#: Few resamples, so that switching intervals on is quick (the link sets it).
RESAMPLES = 400
DEFAULT = EvalConfig()
ORDER = ("tau_neg", "tau_pos", "threshold", "gamma")
#: Cohorts of the plain demo (the one with data problems has no cohort column).
COHORTS = ("site=site_A", "site=site_E", "sex=F", "sex=M", "age_band=80+")
#: The Case review page's kinds of case, in the order give_verdict tries them.
CASE_KINDS = ("missed_positives", "false_alerts", "missed_evidence", "suggested")
#: Cohort columns of the plain demo the Data page offers (and an intersection).
COHORT_COLUMNS = ("site", "sex", "age_band", "site*sex")
#: Cohort columns of a user's data a link may name, which no demo has.
THEIR_COLUMNS = ("ward", "ward*site")

cents = st.integers(0, 100).map(lambda i: i / 100)
#: The guarantee mode's targets the sequences set the gate with (δ 0.1, all queries).
GUARANTEE_TARGETS = (("screening_sensitivity", 0.95), ("alert_precision", 0.9))
#: A guarantee a restored settings.json may carry for τ_neg.
RESTORED = risk_control.ThresholdGuarantee("screening_sensitivity>=0.9", 0.1, 1, "split=TUNE",
                                           1000)


def _num(x: float) -> str:
    return f"{round(x, 6):g}"


class DashboardSettings(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.values = {"tau_neg": DEFAULT.tau_neg, "tau_pos": DEFAULT.tau_pos,
                       "threshold": DEFAULT.threshold, "gamma": DEFAULT.gamma}
        self.explored: set[str] = set()
        self.guaranteed: dict[str, risk_control.ThresholdGuarantee] = {}
        self.ci = True  # intervals on by default
        self.gold = "original"  # the Gold labels switch
        # the demos with a verdict in this session (one label corrected: Case review)
        self.verdicts: set[str] = set()
        self.cohort: tuple[str, ...] = ()  # every query
        self.cohort_columns: tuple[str, ...] = ()  # the Cohorts page's groups: none yet
        # a link's cohort columns the demo lacks (the user's data's): they wait, in the link
        self.waiting: tuple[str, ...] = ()
        self.demo = data.DEMO
        self.page = "overview"
        self.at = open_app({"bootstrap": str(RESAMPLES)})

    # ------------------------------------------------------------------ the model's views
    def link(self) -> dict:
        v = self.values
        out = {"bootstrap": str(RESAMPLES)}
        if (v["tau_neg"], v["tau_pos"]) != (DEFAULT.tau_neg, DEFAULT.tau_pos):
            out["gate"] = f"{_num(v['tau_neg'])},{_num(v['tau_pos'])}"
        for name in ("threshold", "gamma"):
            if v[name] != getattr(DEFAULT, name):
                out[name] = _num(v[name])
        if self.cohort:
            out["cohort"] = self.cohort[0] if len(self.cohort) == 1 else list(self.cohort)
        columns = (*self.cohort_columns, *self.waiting)
        if columns:
            out["cohort_columns"] = columns[0] if len(columns) == 1 else list(columns)
        if not self.ci:
            out["ci"] = "0"
        if self.gold != "original":
            out["gold"] = self.gold
        if self.explored:
            out["explored"] = ",".join(n for n in ORDER if n in self.explored)
        links = [self.guaranteed[n].link(n) for n in ORDER if n in self.guaranteed]
        if links:  # AppTest shows a key given once as text, a repeated one as a list
            out["guaranteed"] = links[0] if len(links) == 1 else links
        return out

    def mark(self, name: str) -> str:
        if name in self.guaranteed:
            return "guaranteed"
        return "exploratory" if name in self.explored else "pre-specified"

    def shown_mark(self, name: str) -> str:
        return (self.guaranteed[name].describe() if name in self.guaranteed
                else self.mark(name))

    def line(self) -> str:
        v = self.values
        return ("Thresholds: " + "; ".join([
            f"τ_neg {v['tau_neg']:g} ({self.shown_mark('tau_neg')})",
            f"τ_pos {v['tau_pos']:g} ({self.shown_mark('tau_pos')})",
            f"τ {v['threshold']:g} ({self.shown_mark('threshold')})",
            f"γ {v['gamma']:g} ({self.shown_mark('gamma')})"]))

    def labels(self, gold: str | None = None) -> str:
        """The gold labels shown: the adjudicated ones once the data shown have a verdict (the
        verdicts are label errors: leaving the ambiguous out leaves the same labels)."""
        gold = self.gold if gold is None else gold
        return "original" if gold == "original" or self.demo not in self.verdicts else (
            "adjudicated")

    def gold_words(self) -> str:
        if self.demo not in self.verdicts:
            return ("original (the files' labels)" if self.gold == "original"
                    else "original (no verdict yet)")
        if self.gold == "original":
            return ("original (the files' labels) (1 verdict in this session: the adjudicated "
                    "gold is a switch away)")
        left_out = "; 0 ambiguous queries left out" if self.gold != "adjudicated" else ""
        return (f"adjudicated (1 verdict, 1 label corrected{left_out}); the original gold's "
                "numbers stay beside them")

    def drop_guarantees(self) -> None:
        """Other data or other gold labels shown: the guarantees were computed on those left,
        so the guaranteed thresholds keep their values and are exploratory."""
        self.explored |= set(self.guaranteed)
        self.guaranteed = {}

    def evaluated(self) -> str:
        """What the pages say they evaluate: the cohort, values of a column as alternatives."""
        if not self.cohort:
            return "Evaluated: all queries"
        by: dict[str, list[str]] = {}
        for item in self.cohort:
            column, _, value = item.partition("=")
            by.setdefault(column, []).append(value)
        return "Evaluated: cohort " + ", ".join(f"{c} = {' or '.join(v)}" for c, v in by.items())

    def move(self, name: str, value: float) -> None:
        if self.values[name] != value:
            self.values[name] = value
            self.explored.add(name)
            self.guaranteed.pop(name, None)

    def run(self, widget) -> None:
        widget.run(timeout=TIMEOUT)

    # ---------------------------------------------------------------------------- actions
    @rule(page=st.sampled_from(PAGES))
    def navigate(self, page):
        self.at.switch_page(f"app_pages/{page}.py").run(timeout=TIMEOUT)
        self.page = page

    @rule(lo=cents, hi=cents)
    def move_gate(self, lo, hi):
        lo, hi = min(lo, hi), max(lo, hi)
        self.run(self.at.slider(key="gate").set_value((lo, hi)))
        self.move("tau_neg", lo)
        self.move("tau_pos", hi)

    @rule(gamma=st.integers(5, 100).map(lambda i: i / 100))
    def move_gamma(self, gamma):
        self.run(self.at.slider(key="gamma").set_value(gamma))
        self.move("gamma", gamma)

    @precondition(lambda self: self.page != "meeting")
    @rule(value=cents)
    def move_threshold(self, value):
        self.run(self.at.slider(key="threshold").set_value(value))
        self.move("threshold", value)

    @precondition(lambda self: self.page != "meeting")
    @rule(end=st.sampled_from(("tau_neg", "tau_pos")),
          value=st.integers(0, 200).map(lambda i: i / 200))
    def type_threshold(self, end, value):
        label = "τ_neg" if end == "tau_neg" else "τ_pos"
        box = next(n for n in self.at.number_input if n.label == f"{label} (type exactly)")
        if round(box.value, 6) == value:
            return  # the same number typed again sends nothing
        self.run(box.set_value(value))
        v = self.values
        other = "tau_pos" if end == "tau_neg" else "tau_neg"
        v[end] = value
        self.explored.discard(end)
        self.guaranteed.pop(end, None)
        if v["tau_neg"] > v["tau_pos"]:  # the other end follows the typed one
            v[other] = value
            self.explored.discard(other)
            self.guaranteed.pop(other, None)

    @rule()
    def toggle_intervals(self):
        self.ci = not self.ci
        if self.page == "meeting":  # no sidebar there: the link carries the switch
            self.open_link()
        else:
            self.run(self.at.toggle(key="ci").set_value(self.ci))

    @rule(gold=st.sampled_from(state.setting("gold").options))
    def switch_gold(self, gold):
        if self.page == "meeting":  # no sidebar there: the link carries the switch
            self.gold = gold
            self.open_link()
            return
        self.run(self.at.radio(key="gold").set_value(gold))
        if self.labels(gold) != self.labels():  # computed on the other labels: exploratory
            self.drop_guarantees()
        self.gold = gold

    @precondition(lambda self: self.page != "meeting" and self.demo not in self.verdicts)
    @rule()
    def give_verdict(self):
        """Case review: the first case listed is a label error (its gold corrected), then back
        to the page the meeting was on. On the adjudicated gold the labels shown change."""
        before = self.labels()
        self.at.switch_page("app_pages/case_review.py").run(timeout=TIMEOUT)
        for kind in CASE_KINDS:  # the first kind of case listed at these settings (a gate
            # with τ_neg 0 screens nothing out: no missed positive to judge)
            if any(r.key == state.VERDICT_CHOICE for r in self.at.radio):
                break
            self.at.button_group(key="case_kind").set_value(kind).run(timeout=TIMEOUT)
        self.at.radio(key=state.VERDICT_CHOICE).set_value("label_error")
        self.at.text_input(key=state.VERDICT_REVIEWER).set_value("Dr A")
        self.run(self.at.button(key=state.VERDICT_SAVE).click())
        assert not self.at.exception and not self.at.error, [e.value for e in self.at.error]
        self.verdicts.add(self.demo)
        if before != "original" or self.labels() != before:  # other labels: exploratory
            self.drop_guarantees()
        self.navigate(self.page)

    @precondition(lambda self: self.page != "meeting" and self.demo == data.DEMO)
    @rule(cohort=st.lists(st.sampled_from(COHORTS), max_size=2, unique=True))
    def choose_cohort(self, cohort):
        self.run(self.at.multiselect(key="cohort").set_value(cohort))
        self.cohort = tuple(cohort)

    @precondition(lambda self: self.demo == data.DEMO)
    @rule(columns=st.lists(st.sampled_from(COHORT_COLUMNS), max_size=3, unique=True))
    def choose_cohort_columns(self, columns):
        """The Data page's cohort columns, then back to the page the meeting was on."""
        self.at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
        widget = self.at.multiselect(key="cohort_columns")
        assert widget.value == list(self.cohort_columns)
        self.run(widget.set_value(columns))
        self.cohort_columns = tuple(columns)
        assert self.at.multiselect(key="cohort_columns").value == columns
        self.navigate(self.page)

    @precondition(lambda self: self.page != "meeting")
    @rule(variant=st.sampled_from((data.DEMO, data.DEMO_PROBLEMS)))
    def switch_demo(self, variant):
        self.run(self.at.radio(key=state.DEMO_VARIANT).set_value(variant))
        if variant != self.demo and variant == data.DEMO_PROBLEMS:
            self.cohort = ()  # no cohort column there: the filter is dropped silently
            self.cohort_columns = ()  # and so are the cohort columns
        if variant != self.demo:  # a guarantee was computed on the data left: exploratory
            self.drop_guarantees()
        self.demo = variant

    @rule()
    def open_link(self):
        """The link of the view in a new session (a colleague opens it)."""
        self.at = open_app(self.link(), page=self.page)
        self.demo = data.DEMO  # a new session shows the plain demo
        self.verdicts = set()  # with no verdict

    @rule(column=st.sampled_from(THEIR_COLUMNS))
    def open_link_naming_their_columns(self, column):
        """The link with a cohort column of the user's data (not the demo's) in a new session:
        it waits for the upload, in the link, and no page shows it."""
        if column not in self.waiting:
            self.waiting = (*self.waiting, column)
        self.at = open_app(self.link(), page=self.page)
        self.demo = data.DEMO
        self.verdicts = set()

    @rule(goal=st.sampled_from(GUARANTEE_TARGETS))
    def set_gate_with_guarantee(self, goal):
        """Decision support's guarantee mode, "Set the gate": the end the target sets takes
        the guaranteed threshold (τ_neg rounded down to six decimals) and is guaranteed."""
        metric, bound = goal
        if self.page != "decision":
            self.navigate("decision")
        at = self.at
        at.selectbox(key="finder_target").set_value((metric, ">=")).run(timeout=TIMEOUT)
        at.number_input(key="finder_value").set_value(bound).run(timeout=TIMEOUT)
        if not at.toggle(key="guarantee_mode").value:
            at.toggle(key="guarantee_mode").set_value(True).run(timeout=TIMEOUT)
        ds = at.session_state[state.VIEW].evaluator.ds
        r = risk_control.guarantee(ds, [f"{metric}>={bound}"], delta=0.1)[0]
        if r.value is None:  # nothing guaranteed: no button
            assert not [b for b in at.button if b.key == "guarantee_apply"]
            return
        self.run(at.button(key="guarantee_apply").click())
        value = risk_control.floor_threshold(r.value, r.parameter)
        mark = risk_control.ThresholdGuarantee(f"{metric}>={bound}", 0.1, 1, "all",
                                               ds.n_queries)
        v = self.values
        if r.parameter == "tau_neg":  # above τ_pos: down to τ_pos, still guaranteed
            v["tau_neg"] = min(value, v["tau_pos"])
        else:
            if value < v["tau_neg"]:  # τ_neg comes down; guaranteed stays guaranteed
                v["tau_neg"] = value
                if "tau_neg" not in self.guaranteed:
                    self.explored.add("tau_neg")
            v["tau_pos"] = value
        self.explored.discard(r.parameter)
        self.guaranteed[r.parameter] = mark

    @precondition(lambda self: self.page != "meeting")
    @rule(lo=cents, hi=cents, gamma=st.integers(5, 100).map(lambda i: i / 100),
          explored=st.sets(st.sampled_from(ORDER)), cohort=st.sampled_from(COHORTS),
          guaranteed=st.booleans(),
          columns=st.lists(st.sampled_from(COHORT_COLUMNS), max_size=2, unique=True),
          bins=st.booleans())
    def restore_settings(self, lo, hi, gamma, explored, cohort, guaranteed, columns=(),
                         bins=False):
        """A settings.json; with ``bins``, bins of the demo's text columns (chosen or not),
        which no numeric cohort column uses: neither the view nor the link has them."""
        lo, hi = min(lo, hi), max(lo, hi)
        cohorts = (cohort,) if self.demo == data.DEMO else ()
        columns = tuple(columns) if self.demo == data.DEMO else ()
        config = EvalConfig(tau_neg=lo, tau_pos=hi, gamma=gamma, bootstrap=RESAMPLES,
                            filters=Filters(cohorts=cohorts))
        guaranteed = guaranteed and "tau_neg" not in explored
        payload = {"schema": "metrics_core_settings/1", "config": config.to_dict(),
                   "provenance": {n: ("exploratory" if n in explored else "pre-specified")
                                  for n in ORDER}}
        if guaranteed:
            payload["provenance"]["tau_neg"] = "guaranteed"
            payload["guarantees"] = {"tau_neg": RESTORED.to_dict()}
        if columns:
            payload["cohort_columns"] = list(columns)
        if bins:
            payload["cohort_bins"] = {"site": "q2", "age_band": "q3"}
        self.at.sidebar.file_uploader(key=state.SETTINGS_FILE).set_value(
            ("settings.json", json.dumps(payload).encode(), "application/json")).run(
            timeout=TIMEOUT)
        self.run(self.at.button(key="apply_settings").click())
        self.values = {"tau_neg": lo, "tau_pos": hi, "threshold": DEFAULT.threshold,
                       "gamma": gamma}
        self.explored = set(explored)
        self.cohort = cohorts
        self.cohort_columns = columns  # none in the file: none chosen
        self.waiting = ()  # the file's settings replace those a link left waiting
        self.guaranteed = {"tau_neg": RESTORED} if guaranteed else {}

    # ------------------------------------------------------------------------- invariants
    @invariant()
    def everything_says_the_same(self):
        at, v = self.at, self.values
        assert not at.exception, [e.value for e in at.exception]
        view = at.session_state[state.VIEW]
        cfg = view.config
        assert (cfg.tau_neg, cfg.tau_pos, cfg.threshold, cfg.gamma) == (
            v["tau_neg"], v["tau_pos"], v["threshold"], v["gamma"])
        assert view.show_bootstrap == self.ci
        assert view.filters.cohorts == cfg.filters.cohorts == self.cohort
        assert view.evaluation.config.filters.cohorts == self.cohort
        assert view.cohort_columns == self.cohort_columns
        # the widgets drawn
        assert tuple(at.slider(key="gate").value) == (v["tau_neg"], v["tau_pos"])
        assert at.slider(key="gamma").value == v["gamma"]
        if self.page != "meeting":
            assert at.slider(key="threshold").value == v["threshold"]
            boxes = {n.label: round(n.value, 6) for n in at.number_input
                     if n.label.endswith("(type exactly)")}
            assert boxes["τ_neg (type exactly)"] == v["tau_neg"]
            assert boxes["τ_pos (type exactly)"] == v["tau_pos"]
            assert at.toggle(key="ci").value == self.ci
            assert at.radio(key="gold").value == self.gold
            assert at.multiselect(key="cohort").value == list(self.cohort)
        # drawn with the model's value as their default (what a browser that draws one with
        # no value sent with it shows and sends back)
        for label, (default, shown) in defaults_and_values(at).items():
            assert default == shown, (label, default, shown)
        # the gold the page names (without a verdict: the original, and why)
        gold = [re.sub(r"\\(.)", r"\1", str(c.value)) for c in at.caption
                if str(c.value).startswith("**Gold labels:")]
        assert gold == [f"**Gold labels: {self.gold_words()}.**"], gold
        # the page says which queries (which cohort) it shows
        if self.page != "meeting" or self.cohort:
            said = [str(c.value).replace("\\_", "_") for c in at.caption
                    if str(c.value).startswith("Evaluated:")]
            assert said and said[0].split(" · ")[0] == self.evaluated(), (said, self.cohort)
        # the thresholds line of the page
        shown = [re.sub(r"\\(.)", r"\1", str(c.value)) for c in at.caption
                 if str(c.value).startswith("Thresholds:")]
        assert shown and shown[0].startswith(self.line() + "."), (shown, self.line())
        # the link
        assert dict(at.query_params) == self.link()
        # settings.json and the record, as the downloads make them from the view
        settings_file = json.loads(record.settings_json(
            view.evaluation, marks=view.marks, guarantees=view.guarantees,
            cohort_columns=view.cohort_columns, cohort_bins=view.cohort_bins))
        assert "cohort_bins" not in settings_file  # the demo has no numeric cohort column
        assert {k: settings_file["config"][k] for k in ORDER} == v
        assert {k: settings_file["provenance"][k] for k in ORDER} == {
            k: self.mark(k) for k in ORDER}
        assert settings_file["config"]["filters"].get("cohorts", []) == list(self.cohort)
        assert settings_file.get("cohort_columns", []) == list(self.cohort_columns)
        assert settings_file.get("guarantees", {}) == {
            k: g.to_dict() for k, g in self.guaranteed.items()}
        assert provenance.describe_thresholds(cfg, view.marks, view.guarantees) == self.line()


DashboardSettings.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
    suppress_health_check=list(HealthCheck),
    # Each step is a run of the app: shrinking a failure would take many minutes, and the
    # printed steps of the failing sequence say what happened.
    phases=(Phase.explicit, Phase.reuse, Phase.generate))
test_dashboard_settings_state = DashboardSettings.TestCase


def _marks_after(machine, steps, names) -> list[dict[str, str]]:
    """Each step taken in turn, everything checked against the model before the first and
    after each; the marks of ``names`` after each step."""
    machine.everything_says_the_same()
    marks = []
    for step in steps:
        step()
        machine.everything_says_the_same()
        marks.append({n: machine.mark(n) for n in names})
    return marks


def test_a_guaranteed_gate_through_the_model():
    """One fixed sequence through the model's rules: both ends set with a guarantee, the link
    opened in a new session (both marks carried), τ_pos moved (exploratory, τ_neg still
    guaranteed), a settings.json with a guaranteed τ_neg restored, then τ_neg typed."""
    machine = DashboardSettings()
    steps = [lambda: machine.set_gate_with_guarantee(GUARANTEE_TARGETS[0]),
             lambda: machine.set_gate_with_guarantee(GUARANTEE_TARGETS[1]),
             machine.open_link,
             lambda: machine.navigate("meeting"),
             lambda: machine.move_gate(machine.values["tau_neg"], 0.8),
             lambda: machine.navigate("gate"),
             lambda: machine.restore_settings(0.1, 0.7, 0.5, {"gamma"}, COHORTS[0], True,
                                              ("site*sex",)),
             lambda: machine.type_threshold("tau_neg", 0.05)]
    marks = _marks_after(machine, steps, ("tau_neg", "tau_pos"))
    assert marks[2] == {"tau_neg": "guaranteed", "tau_pos": "guaranteed"}
    assert marks[4] == {"tau_neg": "guaranteed", "tau_pos": "exploratory"}
    assert marks[6] == {"tau_neg": "guaranteed", "tau_pos": "pre-specified"}
    assert marks[7] == {"tau_neg": "pre-specified", "tau_pos": "pre-specified"}
    machine.teardown()


def test_a_guarantee_does_not_follow_the_data():
    """One fixed sequence: τ_neg set with a guarantee, another demo shown (τ_neg keeps its
    value, exploratory), the first demo again (still exploratory: the guarantee is not
    computed again), a new guarantee, and the link opened in a new session on the same data
    (guaranteed)."""
    machine = DashboardSettings()
    steps = [lambda: machine.set_gate_with_guarantee(GUARANTEE_TARGETS[0]),
             lambda: machine.switch_demo(data.DEMO_PROBLEMS),
             lambda: machine.switch_demo(data.DEMO),
             lambda: machine.set_gate_with_guarantee(GUARANTEE_TARGETS[0]),
             machine.open_link]
    marks = [m["tau_neg"] for m in _marks_after(machine, steps, ("tau_neg",))]
    assert marks == ["guaranteed", "exploratory", "exploratory", "guaranteed", "guaranteed"]
    machine.teardown()


def test_a_guarantee_does_not_follow_the_gold_labels():
    """One fixed sequence: τ_neg set with a guarantee, the adjudicated gold asked for with no
    verdict (the original labels still shown: still guaranteed), a verdict given (on the
    adjudicated gold: other labels, exploratory), a guarantee on the adjudicated labels, the
    ambiguous left out (none: the same labels, still guaranteed), the original gold again
    (exploratory), a guarantee on it, the other demo (exploratory), a guarantee there and a
    verdict given on the original gold (the labels shown are the same: guaranteed), the
    adjudicated gold (exploratory)."""
    machine = DashboardSettings()
    steps = [lambda: machine.set_gate_with_guarantee(GUARANTEE_TARGETS[0]),
             lambda: machine.switch_gold("adjudicated"),
             machine.give_verdict,
             lambda: machine.set_gate_with_guarantee(GUARANTEE_TARGETS[0]),
             lambda: machine.switch_gold("adjudicated_unambiguous"),
             lambda: machine.switch_gold("original"),
             lambda: machine.set_gate_with_guarantee(GUARANTEE_TARGETS[0]),
             lambda: machine.switch_demo(data.DEMO_PROBLEMS),
             lambda: machine.set_gate_with_guarantee(GUARANTEE_TARGETS[0]),
             machine.give_verdict,
             lambda: machine.switch_gold("adjudicated")]
    marks = [m["tau_neg"] for m in _marks_after(machine, steps, ("tau_neg",))]
    assert marks == ["guaranteed", "guaranteed", "exploratory", "guaranteed", "guaranteed",
                     "exploratory", "guaranteed", "exploratory", "guaranteed", "guaranteed",
                     "exploratory"]
    warned = [re.sub(r"\\(.)", r"\1", str(w.value)) for w in machine.at.warning]
    assert any(w.startswith("τ_neg was set with a guarantee (screening_sensitivity>=0.95, "
                            "δ 0.1, calibrated on all queries) on the gold labels shown "
                            "before; on these gold labels it keeps its value and is "
                            "exploratory") for w in warned), warned
    machine.teardown()


def test_a_links_own_cohort_columns_wait_through_the_model():
    """One fixed sequence: a link naming a column of the user's data opened on the demo (it
    waits, in the link), columns of the demo chosen beside it, another demo and back, the link
    opened again (still waiting), a settings.json restored (its settings replace it)."""
    machine = DashboardSettings()
    steps = [lambda: machine.open_link_naming_their_columns("ward"),
             lambda: machine.choose_cohort_columns(["site"]),
             lambda: machine.switch_demo(data.DEMO_PROBLEMS),
             lambda: machine.switch_demo(data.DEMO),
             machine.open_link,
             lambda: machine.restore_settings(0.1, 0.7, 0.5, set(), COHORTS[1], False,
                                              ("sex",))]
    machine.everything_says_the_same()
    seen = []
    for step in steps:
        step()
        machine.everything_says_the_same()
        seen.append((machine.cohort_columns, machine.waiting))
    assert seen == [((), ("ward",)), (("site",), ("ward",)), ((), ("ward",)),
                    ((), ("ward",)), ((), ("ward",)), (("sex",), ())]
    machine.teardown()


def test_cohort_columns_through_the_model():
    """One fixed sequence: cohort columns chosen on the Data page (an intersection too), the
    pages switched, the link opened in a new session, data without cohort columns shown
    (dropped), a settings.json with other columns restored."""
    machine = DashboardSettings()
    steps = [lambda: machine.choose_cohort_columns(["site", "site*sex"]),
             lambda: machine.navigate("gate"),
             machine.open_link,
             lambda: machine.navigate("decision"),
             lambda: machine.switch_demo(data.DEMO_PROBLEMS),
             lambda: machine.switch_demo(data.DEMO),
             lambda: machine.restore_settings(0.1, 0.7, 0.5, set(), COHORTS[1], False,
                                              ("age_band", "sex"), True)]
    machine.everything_says_the_same()
    chosen = []
    for step in steps:
        step()
        machine.everything_says_the_same()
        chosen.append(machine.cohort_columns)
    assert chosen == [("site", "site*sex")] * 4 + [(), (), ("age_band", "sex")]
    machine.teardown()
