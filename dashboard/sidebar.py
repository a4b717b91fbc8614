"""The settings and downloads part of the sidebar.

Every setting's widget comes from its :class:`dashboard.state.Setting` (itself generated from
the configuration's field metadata); filter values from a link that the data does not have
fall back to "all" with a note. Option values from the data (folds, splits, criteria) are shown
as text, never as markdown.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

import streamlit as st

from dashboard import (
    computing,
    data,
    display,
    gold,
    idle,
    link,
    provenance,
    refinement,
    server_settings,
    state,
)
from dashboard.safe_text import escape_markdown, neutralise_bidi
from dashboard.state import ALL, SETTINGS, Setting, short_repr
from metrics_core.config import SECTIONS, Filters
from metrics_core.errors import first_listed
from metrics_core.report import decision_record as record

__all__ = ["FILTER_DROPPED_NOTE", "PAGE_CONTROLS", "SECTION_NAMES", "build_view",
           "downloads_sidebar", "filters", "page_fragment", "section_key", "setting_widget",
           "settings_sidebar"]

#: Settings a page draws itself, above what depends on them, inside a fragment of the page (a
#: move reruns that fragment only, not the sidebar and the rest of the app): url path -> keys.
PAGE_CONTROLS = MappingProxyType({"gate": ("gate",), "dynamic-k": ("gamma",)})

#: Sidebar sections (those of _OPEN start open).
_OPEN = ("gate", "dynamic_k")
SECTION_NAMES = ("gate", "dynamic_k", "filters", "ranking", "calibration", "multilabel",
                 "uncertainty")


def _widget(s: Setting, *, options: tuple = (), disabled: bool = False,
            typed: bool = True) -> None:
    """The widget of a setting, drawn from the settings model (:func:`state.prepare_widget`),
    writing into it when changed (``typed``: the exact-value boxes under a threshold slider)."""
    if s.kind != "gates":
        state.prepare_widget(s.key)
    common = {"key": s.key, "help": s.help or None, "disabled": disabled,
              "on_change": _moved, "args": (s.key,)}
    # The model's value is also the widget's default: a widget the browser draws without a
    # value sent with it (a run it had not seen assigned one) shows and sends back the
    # model's value, not its minimum (see :func:`_typed_inputs`).
    if s.kind == "range" or (s.kind == "float" and s.control == "slider"):
        st.slider(s.label, float(s.low), float(s.high), _values(state.value(s.key))
                  if s.kind == "range" else float(state.value(s.key)),
                  step=float(s.step), **common)
        if s.key in state.TYPED_BOXES and typed:
            _typed_inputs(s, ("τ_neg", "τ_pos") if s.key == "gate" else ("γ",))
    elif s.kind == "float":
        st.number_input(s.label, float(s.low), float(s.high), float(state.value(s.key)),
                        step=float(s.step), **common)
    elif s.kind == "int":
        st.number_input(s.label, int(s.low), int(s.high), int(state.value(s.key)),
                        step=int(s.step), **common)
    elif s.kind == "bool":
        st.toggle(s.label, bool(state.value(s.key)), **common)
    elif s.kind == "choice" and s.control == "radio":
        st.radio(s.label, s.options, format_func=s.format_option, **common)
    elif s.kind == "choice":
        st.selectbox(s.label, s.options, format_func=s.format_option, **common)
    elif s.kind == "text":  # values from the data: direction controls shown as codes
        st.selectbox(s.label, options, format_func=lambda v: "all" if v == ALL
                     else neutralise_bidi(str(v)), **common)
    elif s.kind == "multi":  # a cohort filter's "site=S1" shown as "site = S1"
        st.multiselect(s.label, options, format_func=lambda v: (
            neutralise_bidi(str(v).replace("=", " = ", 1) if s.key == "cohort"
                            else str(v))),
                       placeholder="none" if s.key == state.COHORT_COLUMNS else "all", **common)
    elif s.kind == "gates":
        _gates_widget(s, options)


def setting_widget(key: str, *, typed: bool = True, options: tuple = ()) -> None:
    """The widget of the setting ``key`` where the page draws it (:data:`PAGE_CONTROLS`, the
    Data page's cohort columns; ``options``: a list setting's values)."""
    _widget(state.setting(key), typed=typed, options=options)


def _moved(key: str) -> None:
    """A setting changed in the browser: the model takes it (a moved threshold slider is
    exploratory, only in the thresholds that moved)."""
    state.from_widget(key)
    _sync_inputs()


def _sync_inputs() -> None:
    """The typed-value boxes follow the sliders (callbacks run before the widgets exist)."""
    for key in state.TYPED_BOXES:
        _push(key, state.value(key))


def _values(value) -> tuple[float, ...]:
    """A slider's or boxes' value as a tuple of rounded floats (a range has two), to compare
    values without a slider's step noise (the values set are exact: :func:`_exact`)."""
    return tuple(round(v, 6) for v in _exact(value))


def _exact(value) -> tuple[float, ...]:
    """A slider's or boxes' value as a tuple of floats, exactly."""
    return tuple(float(v) for v in (value if isinstance(value, list | tuple) else (value,)))


def box_keys(key: str) -> tuple[str, ...]:
    """The widget keys of the typed boxes under the slider ``key`` now.

    A box's key carries a generation that changes whenever the server sends the boxes a new
    value. During quick slider moves the browser may send back a value of boxes it had not
    redrawn yet: those belong to an older generation, which Streamlit no longer has a widget
    for, so it drops the value and no callback runs. An echo of the slider's moves can thus
    never count as typing, with no clock involved.
    """
    generation = st.session_state.get(state.BOX_GENERATION, {}).get(key, 0)
    return tuple(f"{box}_{generation}" for box in state.TYPED_BOXES[key])


def _push(key: str, value) -> None:
    """Send ``value`` to the typed boxes of the slider ``key``: boxes of a new generation if
    they show another value (callbacks run before the widgets exist, so this is allowed)."""
    values = _exact(value)
    shown = st.session_state.setdefault(state.BOX_VALUES, {})
    if shown.get(key) == values:
        return
    generations = st.session_state.setdefault(state.BOX_GENERATION, {})
    generations[key] = generations.get(key, 0) + 1
    shown[key] = values
    for box, v in zip(box_keys(key), values, strict=True):
        st.session_state[box] = v


def _typed(key: str, index: int) -> None:
    """A value typed beside a slider: the slider follows, and the typed value is
    pre-specified (the other end of the gate too if it had to follow to keep τ_neg ≤ τ_pos).

    A box change that arrives together with a moved slider is the box's stale value, not
    typing: the slider wins."""
    state.setting_moved()
    boxes = box_keys(key)
    rendered = st.session_state.get(state.RENDERED_PREFIX + key)
    slider = st.session_state.get(key, state.value(key))
    if rendered is not None and _values(slider) != rendered:
        _sync_inputs()
        return
    typed = _exact([st.session_state[b] for b in boxes])
    st.session_state.setdefault(state.BOX_VALUES, {})[key] = typed  # what the boxes show
    old = state.value(key)
    if typed[index] == _exact(old)[index]:
        # The box reports the value the threshold has: a box the browser redrew late
        # reporting the server's own value, not typing (typing the same number sends nothing).
        return
    fields = provenance.THRESHOLD_FIELDS[key]
    typed_field = fields[index]
    if key == "gate":
        # The value typed, exactly; the other end is the gate's (not its box's, which may
        # show it rounded), and follows it to keep τ_neg <= τ_pos.
        lo, hi = _exact(old)
        if index == 0:
            lo, hi = typed[0], max(hi, typed[0])
        else:
            lo, hi = min(lo, typed[1]), typed[1]
        new = (lo, hi)
    else:
        new = typed[0]
    moved = [f for f, a, b in zip(fields, _exact(old), _exact(new), strict=True)
             if a != b and f != typed_field]
    state.set_value(key, new, how=state.PRESPECIFIED, mark=(typed_field, *moved))
    _sync_inputs()


def _typed_inputs(s: Setting, labels: tuple[str, ...]) -> None:
    """Number boxes under a slider, to type a threshold exactly."""
    values = _exact(state.value(s.key))
    st.session_state[state.RENDERED_PREFIX + s.key] = _values(values)
    _push(s.key, values)
    boxes = box_keys(s.key)
    # Assigned again whenever the settings are (state.prepare_widget): a box the browser draws
    # after a later run has started would otherwise send its own default back.
    if st.session_state.get(state.REASSIGNED, True) or any(
            b not in st.session_state for b in boxes):
        for box, v in zip(boxes, values, strict=True):
            st.session_state[box] = v
    # Each box's default is the value it is drawn with. Its minimum was the default: a box
    # the browser drew with no value sent with it (a rerun that took the box's value as the
    # browser's own, while the browser had not drawn that generation yet) showed the minimum
    # and sent it back with the next key pressed anywhere, which read as typing it: γ became
    # 0.05 (pre-specified) after moves of the gate alone, seen in Chromium under load.
    for i, (column, box, label, v) in enumerate(zip(st.columns(len(boxes)), boxes, labels,
                                                    values, strict=True)):
        column.number_input(f"{label} (type exactly)", float(s.low), float(s.high), v,
                            step=float(s.step) / 2, format="%g", key=box,
                            on_change=_typed, args=(s.key, i))


def _gates_widget(s: Setting, criteria: tuple) -> None:
    """Per-criterion gate thresholds: typed in for one criterion at a time, listed below."""
    gates = tuple(state.value(s.key))
    with st.popover(f"{s.label} ({len(gates)})", help=s.help, use_container_width=True,
                    disabled=not criteria):
        criterion = st.selectbox("Criterion", criteria, key="cg_criterion")
        lo_default, hi_default = state.value("gate")
        own = {g[0]: g for g in gates}.get(criterion)
        left, right = st.columns(2)
        lo = left.number_input("τ_neg", 0.0, 1.0, float(own[1] if own else lo_default),
                               step=0.005, format="%.3f", key=f"cg_lo_{criterion}")
        hi = right.number_input("τ_pos", 0.0, 1.0, float(own[2] if own else hi_default),
                                step=0.005, format="%.3f", key=f"cg_hi_{criterion}")
        left, right = st.columns(2)
        left.button("Set", key="cg_set", disabled=lo > hi, on_click=_set_gate,
                    args=(s.key, criterion, lo, hi),
                    help="τ_neg must not be above τ_pos." if lo > hi else None)
        right.button("Remove", key="cg_remove", disabled=own is None, on_click=_set_gate,
                     args=(s.key, criterion, None, None))
    for name, lo, hi in gates:
        st.caption(f"{escape_markdown(str(name))}: τ_neg {lo:g}, τ_pos {hi:g}")


def _set_gate(key: str, criterion: str, lo, hi) -> None:
    gates = {g[0]: tuple(g) for g in state.value(key)}
    if lo is None:
        gates.pop(criterion, None)
    else:
        gates[criterion] = (criterion, float(lo), float(hi))
    state.set_value(key, tuple(gates[c] for c in sorted(gates)), how=state.PRESPECIFIED)


def _filter_options(source: data.Source) -> dict[str, tuple]:
    """The values of the filters on ``source``; the cohort filter's of its numeric cohort
    columns with the bins the settings choose now (:func:`dashboard.data.settings_bins`)."""
    ds = source.dataset
    # The Dataset factorizes its folds and splits once: no hashing of every query per rerun.
    folds = () if ds is None or ds.fold is None else tuple(str(f) for f in ds.folds)
    splits = () if ds is None or ds.split is None else tuple(ds.splits)
    criteria = () if ds is None else tuple(ds.criteria)
    return {"fold": (ALL, *folds), "split": (ALL, *splits), "criterion": criteria,
            "cohort": data.cohort_options(source, data.settings_bins(source, state.model()))}


#: How the note of a cohort filter value that the bins no longer make starts (the Data page
#: shows it beside the bins too).
FILTER_DROPPED_NOTE = "Cohort filter: "


def _check_cohort_filter(source: data.Source, options: tuple[str, ...], notes: list[str],
                         switched: bool) -> None:
    """Cohort filter values these data do not have are dropped (silently when the data
    source changed). A value of a numeric column names a cohort of the column's bins as the
    settings choose them now (contract §9, cohort filter): one those bins do not make (a link
    naming other bins' cohort, or the bins changed on the Data page) is dropped with a note
    naming it and the bins, never evaluated as another cohort."""
    chosen = tuple(state.value("cohort"))
    kept = tuple(c for c in chosen if c in options)
    if kept == chosen:
        return
    bins = data.settings_bins(source, state.model())
    columns = {c.partition("=")[0] for c in chosen if c not in kept}
    numeric = set(data.numeric_cohort_columns(source, columns))
    cut = {c: "; ".join(f"{p} binned {bins[p]}" if p in bins else f"{p} with its default bins"
                        for p in c.split("*") if p in numeric) for c in columns}
    said = [f"{short_repr(v)} is not a cohort of {v.partition('=')[0]} as cut now "
            f"({cut[v.partition('=')[0]]})" for v in chosen
            if v not in kept and cut[v.partition("=")[0]]]
    other = [v for v in chosen if v not in kept and not cut[v.partition("=")[0]]]
    note = " ".join(
        ([f"{FILTER_DROPPED_NOTE}{'; '.join(said)}: dropped from the filter, which now shows "
          f"{'the rest of its values' if kept else 'all queries'} (choose a cohort of the "
          f"bins in the sidebar's Cohort filter)."] if said else [])
        + ([f"Some cohort values in the link are not in this data set and were dropped: "
            f"{', '.join(short_repr(v) for v in other)}."] if other else []))
    _keep_only(notes, "cohort", kept, switched, note)


#: The multi-valued filters whose values a link may name that a data set lacks, and their
#: wording in the note that says they were dropped.
_LINK_DROPS = (("criterion", "criteria"),)


def _link_note(notes: list[str], note: str) -> None:
    """A note about the link shown in this run, and kept with the link's other notes for the
    next runs (the refinement's rerun follows at once) until a setting changes."""
    notes.append(note)
    link.keep_link_note(note)


def cohort_columns_rule(source: data.Source) -> str:
    """What the cohort columns of ``source`` may be, for a refusal."""
    single = () if source.cohorts is None else source.cohorts.suggested
    if not single:
        return "these data have no cohort column (no extra column in the queries table)"
    example = f" (e.g. {single[0]}*{single[1]})" if len(single) > 1 else ""
    return (f"must name cohort columns of these data: {', '.join(single)}"
            + (f", or two of them joined by '*'{example}" if len(single) > 1 else ""))


#: The words of every note that says a switch of data dropped a setting (shown with the
#: switch's icon, not the link's: dashboard.app).
SWITCH_NOTE = "chosen for the previous data"
#: What a setting is called in the note that says the switch of data dropped some of it.
_SWITCH_LABELS = MappingProxyType({
    "criterion": "Criterion filter", "cohort": "Cohort filter",
    state.COHORT_COLUMNS: "Cohort columns", state.COHORT_BINS: "Cohort bins",
    "criterion_gates": "Per-criterion thresholds"})


def _keep_only(notes: list[str], key: str, kept, switched: bool, note: str) -> None:
    """Set ``key`` to ``kept`` (the values of it these data take) when it holds others: with
    ``note`` when they came from a link, with a note naming them when the data source
    changed (they were chosen for the previous data: a threshold never vanishes unsaid)."""
    values = tuple(state.value(key))
    if tuple(kept) == values:
        return
    if switched:
        gone = [v[0] if isinstance(v, tuple) else v for v in values if v not in kept]
        shown = first_listed(gone, 5, short_repr)
        one = len(gone) == 1
        note = (f"{_SWITCH_LABELS.get(key, key)}: {shown}, {SWITCH_NOTE}, "
                f"{'is' if one else 'are'} not in these data and {'was' if one else 'were'} "
                f"dropped.")
    _link_note(notes, note)
    state.set_value(key, kept)


def _dropped(values, kept) -> tuple[str, str]:
    """The values not kept, listed, and the verb that agrees with them."""
    dropped = [v for v in values if v not in kept]
    return ", ".join(short_repr(v) for v in dropped), "is" if len(dropped) == 1 else "are"


def _check_cohort_columns(source: data.Source, notes: list[str], switched: bool) -> None:
    """Cohort columns (from a link) that these data do not have are dropped: with a note
    naming them and the valid ones, silently when the data source changed."""
    choices = data.cohort_choices(source)
    chosen = tuple(state.value(state.COHORT_COLUMNS))
    kept = tuple(c for c in chosen if c in choices)
    _check_cohort_bins(source, kept, notes, switched)
    dropped, verb = _dropped(chosen, kept)
    _keep_only(notes, state.COHORT_COLUMNS, kept, switched,
               f"{state.COHORT_COLUMNS}: {dropped} in the link {verb} not valid and left out: "
               f"{cohort_columns_rule(source)}.")


def _check_cohort_bins(source: data.Source, columns: tuple[str, ...], notes: list[str],
                       switched: bool) -> None:
    """Bins (from a link or a settings.json) of a column that is not a chosen numeric cohort
    column of these data leave the settings, so that the link says what the view, settings.json
    and the record use: with a note naming them, silently when the data source changed."""
    bins = tuple(state.value(state.COHORT_BINS))
    used = data.chosen_bins(source, columns, dict(item.split("=", 1) for item in bins))
    kept = tuple(item for item in bins if item.split("=", 1)[0] in used)
    dropped, verb = _dropped(bins, kept)
    _keep_only(notes, state.COHORT_BINS, kept, switched,
               f"{state.COHORT_BINS}: {dropped} {verb} not the bins of a chosen numeric cohort "
               f"column and left out (bins are given to numeric cohort columns).")


def section_key(section: str) -> str:
    """The widget key of the sidebar's expander of the settings ``section`` (its state: open
    or closed)."""
    return f"settings_section_{section}"


def settings_sidebar(source: data.Source, notes: list[str], *,
                     on_page: tuple[str, ...] = ()) -> None:
    """Every setting's widget, by section; those in ``on_page`` are drawn by the page."""
    # A filter value this data set does not have falls back to "all": with a note when it came
    # from a link, silently when the data source changed (the filter was for other data).
    switched = st.session_state.get(state.FILTERS_SOURCE) not in (None, source.token)
    st.session_state[state.FILTERS_SOURCE] = source.token
    _check_cohort_columns(source, notes, switched)  # (the cohort filter's bins: the chosen)
    options = _filter_options(source)
    for key in ("fold", "split"):
        if state.value(key) not in options[key]:
            _link_note(notes, f"{key}={state.value(key)!r}"
                              f"{f', {SWITCH_NOTE},' if switched else ''} is "
                              f"not in this data set; showing all.")
            state.set_value(key, ALL)
    for key, what in _LINK_DROPS:
        _keep_only(notes, key, [c for c in state.value(key) if c in options[key]], switched,
                   f"Some {what} in the link are not in this data set and were dropped.")
    _check_cohort_filter(source, options["cohort"], notes, switched)
    _keep_only(notes, "criterion_gates",
               tuple(g for g in state.value("criterion_gates") if g[0] in options["criterion"]),
               switched, "Per-criterion thresholds for criteria this data set does not have "
                         "were dropped.")
    _widget(state.setting("gold"))
    n = gold.verdict_count(source)
    st.caption(f"{n:,} verdict{'' if n == 1 else 's'} in this session (Case review)." if n
               else "No verdict yet: mark cases on Case review, or upload an adjudication "
                    "file there.")
    # A closed section's widgets are not drawn (nothing of them shows): each drawn widget
    # costs the browser a re-render on every run of the app, every page switch included.
    # Opening a section reruns the app, which draws them with the model's values.
    for section in SECTION_NAMES:
        box = st.expander(SECTIONS[section], expanded=section in _OPEN,
                          key=section_key(section), on_change="rerun")
        if not box.open:
            continue
        with box:
            for s in SETTINGS:
                if s.section != section:
                    continue
                if s.key in on_page:
                    st.caption(f"{s.label}: set on this page, above its charts.")
                elif s.kind == "gates":
                    _widget(s, options=options["criterion"])
                elif s.kind in ("text", "multi"):
                    _widget(s, options=options[s.key], disabled=(
                        len(options[s.key]) <= 1 and s.kind == "text")
                        or (s.key == "cohort" and not options[s.key]))
                else:
                    _widget(s)
    st.caption("Every setting is in the page address: copy it to share this exact view.")


def build_view(source: data.Source, notes: list[str]) -> data.View:
    """The view of the current settings (the app's run and a page fragment's rerun)."""
    values = state.current_settings()
    try:
        config = state.build_config(values)
    except ValueError as exc:
        notes.append(f"{exc}; the defaults are used.")
        config = state.build_config({})
    choices = data.cohort_choices(source)
    columns = tuple(c for c in values[state.COHORT_COLUMNS] if c in choices)
    bins = data.settings_bins(source, values)
    source, words = gold.gold_source(source, values["gold"], notes)
    gold.follow_gold(source, notes)  # other labels: a guarantee does not follow (the marks)
    # the cohort filter's numeric columns cut by the view's bins, as its options are
    chosen = filters(values).with_cohort_bins(bins)
    return data.View(source=source, filters=chosen, config=config.replace(filters=chosen),
                     show_bootstrap=bool(values["ci"]),
                     marks=provenance.marks(), guarantees=provenance.guarantees(), gold=words,
                     cohort_columns=columns, cohort_bins=bins)


def fragment_view(keys: tuple[str, ...]) -> data.View:
    """The view a page fragment that draws the settings ``keys`` shows: in the app's run, the
    run's view; in the fragment's own rerun (one of its settings moved), the view of the
    current settings, which then becomes the session's view (the downloads use it)."""
    if not state.fragment_rerun():
        return data.view()
    state.begin_run()
    notes: list[str] = []
    v = build_view(data.current_source(), notes)
    for note in notes:
        st.warning(escape_markdown(note), icon=":material/link:")
    data.set_view(v)
    return v


def page_fragment(keys: tuple[str, ...], draw: Callable[[data.View], None]) -> None:
    """The body of a page fragment that draws the settings ``keys`` (call it from the page's
    ``@st.fragment`` function): the view (:func:`fragment_view`), ``draw(v)``, which draws
    the controls (:func:`setting_widget`) and what depends on them, then
    :func:`end_fragment`. The app's error boundary does not wrap a fragment's own reruns, so
    this one does: a failure is a plain message where the fragment stopped."""
    try:
        with computing.interactive():  # served before the work computed ahead
            v = fragment_view(keys)
            draw(v)
        end_fragment(v)
    except Exception as exc:
        display.show_failure(exc)


def end_fragment(v: data.View) -> None:
    """After a page fragment's own rerun: the address follows the settings, and intervals
    computed with fewer resamples while moving are refined (the app's run does both itself)."""
    if state.fragment_rerun():
        link.write_to_url(always=True)
        refinement.refine_intervals(v, fragment=True)
        idle.collect_after_run()  # its cyclic garbage, once the rerun's end has been sent


def downloads_sidebar(v: data.View) -> None:
    """The downloads of the view ``v`` (this run's). Each file is made when it is clicked, from
    the view the page shows then (a page fragment's rerun may have replaced the app run's view,
    on the same gold)."""
    ref = data.view_ref()
    st.subheader("Downloads")
    on_gold = "" if v.source.adjudicated is None else "_adjudicated"
    st.download_button("metrics_master.json", data=gold.master_json(ref, v),
                       file_name="metrics_master.json", mime="application/json",
                       key="download_master", on_click="ignore", icon=":material/download:",
                       help="Every metric, the configuration and the checks at these settings"
                            + (" on the original gold, with the adjudicated gold's records "
                               "beside them (its 'adjudication' block)." if on_gold else "."))
    display.download_csv("Per-query results (CSV)", lambda: ref.view.evaluation.per_query,
                         f"per_query{on_gold}.csv", key="download_per_query")
    display.download_csv("Per-criterion table (CSV)", lambda: ref.view.evaluation.per_criterion,
                         f"per_criterion{on_gold}.csv", key="download_per_criterion",
                         index=True)
    st.download_button("settings.json", data=lambda: record.settings_json(
                           ref.view.evaluation, marks=ref.view.marks,
                           guarantees=ref.view.guarantees,
                           cohort_columns=ref.view.cohort_columns,
                           cohort_bins=ref.view.cohort_bins),
                       file_name="settings.json", mime="application/json",
                       key="download_settings", on_click="ignore", icon=":material/tune:",
                       help="Every setting of this view; load it below (or give it to "
                            "`metrics-core report --settings`) to restore the view.")
    with st.expander("Restore settings", icon=":material/settings_backup_restore:"):
        st.file_uploader("settings.json", type=["json"], key=state.SETTINGS_FILE)
        st.button("Apply these settings", key="apply_settings", on_click=_apply_settings,
                  disabled=st.session_state.get(state.SETTINGS_FILE) is None)
    error = st.session_state.get("_settings_error")
    if error:
        st.error(escape_markdown(error), icon=":material/block:")


def _apply_settings() -> None:
    """Load an uploaded settings.json into the settings model (a callback: before the next
    run); a refused file leaves the view as it was and says why (:func:`settings_verdict`)."""
    uploaded = st.session_state.get(state.SETTINGS_FILE)
    st.session_state.pop("_settings_error", None)
    if uploaded is None:
        return
    values, (explored, guaranteed), error = settings_verdict(
        uploaded.getvalue(), uploaded.name, server_settings.interaction_caps(),
        source=data.current_source())
    if error is not None:
        st.session_state["_settings_error"] = error
        return
    # Not settings of the run: the session's stay.
    values["ci"], values["gold"] = state.value("ci"), state.value("gold")
    state.replace_all(values, explored, guaranteed)
    _sync_inputs()


def settings_verdict(payload: bytes, name: str, caps, *, source: data.Source | None = None
                     ) -> tuple[dict | None, tuple, str | None]:
    """What a settings.json does to the view: ``(values, (explored, guaranteed), None)`` (the
    setting values of the view it restores, its exploratory thresholds and its thresholds set
    with a guarantee, field -> ThresholdGuarantee) or ``(None, ((), {}), message)``.

    The file is read by the configuration's own schema, as ``metrics-core report --settings``
    reads it, so the same file gets the same verdict: a file with any invalid setting is
    refused whole, with every problem named (field, rule, value), and so is a file asking for
    more than this server computes for a settings file (``caps``: the ``[interaction]``
    table) or setting what the dashboard does not offer. Its cohort columns must be columns
    of ``source`` (:func:`dashboard.data.cohort_choices`; none given: not checked)."""
    from metrics_core.config import EvalConfig, SettingsError
    from metrics_core.settings_file import (
        filter_bins_errors,
        read_settings_cohort_bins,
        read_settings_cohorts,
        read_settings_file,
    )

    refused = f"{name} was not applied; nothing changed. "
    values, errors, explored, guaranteed = read_settings_file(payload, source=name)
    columns, more = read_settings_cohorts(payload, source=name)
    errors = [*errors, *(e for e in more if e.field is not None)]  # the file's own: once
    bins, more = read_settings_cohort_bins(payload, source=name)
    errors = [*errors, *(e for e in more if e.field is not None)]
    if source is not None and not errors:
        choices = data.cohort_choices(source)
        errors = [SettingsError(state.COHORT_COLUMNS, cohort_columns_rule(source), c)
                  for c in columns if c not in choices]
    if not errors and isinstance(values.get("filters"), Filters):
        errors = filter_bins_errors(values["filters"], bins, source=name)
    none = ((), {})
    if errors:
        return None, none, refused + str(SettingsError.combine(errors, source=name))
    over = link.capped(values, caps, "settings file")
    if over:
        return None, none, refused + " ".join(
            r.replace("the default is used instead. ", "") for r in over)
    config = EvalConfig(**values)
    # The dashboard has no control for these: a file that sets them is refused, never applied
    # without them (the view would silently differ from the file).
    fixed = [f for f in ("ks", "tpr_fprs") if getattr(config, f) != getattr(EvalConfig(), f)]
    if fixed:
        return None, none, (
            refused + "It sets "
            + " and ".join(f"{f} = {', '.join(f'{v:g}' for v in getattr(config, f))}"
                           for f in fixed)
            + ", which the dashboard does not offer (it shows "
            + " and ".join(f"{f} = {', '.join(f'{v:g}' for v in getattr(EvalConfig(), f))}"
                           for f in fixed)
            + "); run the file with metrics-core report --settings instead.")
    return ({**state.values_of(config), state.COHORT_COLUMNS: columns,
             state.COHORT_BINS: bins},
            (explored, guaranteed), None)


def filters(values: dict) -> data.Filters:
    return state.filters_of(values)
