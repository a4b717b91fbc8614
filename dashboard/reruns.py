"""The reruns the app asks for itself (the intervals refined after a page drew:
:mod:`dashboard.refinement`, :mod:`dashboard.page_resamples`), queued so that they leave the
widgets the browser shows alone (:func:`quiet_rerun`)."""

from __future__ import annotations

import streamlit as st

from dashboard import state

__all__ = ["quiet_rerun", "request_quietly"]


#: The widget values of buttons and other one-shot widgets: never given to a quiet rerun, whose
#: callbacks would otherwise run a second time.
_TRIGGER_VALUES = frozenset(("trigger_value", "string_trigger_value", "chat_input_value",
                             "json_trigger_value"))


def quiet_rerun(scope: str = "app") -> None:
    """``st.rerun(scope=scope)`` that leaves the widgets the browser shows alone: every rerun
    the app asks for itself (the intervals refined after a page drew) goes through here.

    Why: Streamlit's own rerun carries no widget states, so the new run registers every keyed
    widget anew and sends each one whose value is not its default with ``set_value``
    (``SessionState.register_widget``: a value "restored" from the run before), which
    overwrites what the browser shows. A key pressed on a slider while that message is on its
    way is undone on the page while the server keeps it; the next interaction sends the old
    value back and the moved threshold is lost.

    So the rerun is queued with the widgets' values as this run left them (the values the
    browser was sent or sent itself), as the browser's own reruns are: the new run finds
    every widget in its state and sends none again, and :func:`dashboard.state.begin_run`
    makes it assign none either (:data:`dashboard.state.QUIET_RERUN`). Buttons and other
    one-shot widgets are left out, so their callbacks do not run again. When a rerun is
    already waiting (the browser's, with newer values, or one that stops the session), the
    plain request is queued: Streamlit merges it into the waiting one, whose widget values
    win.

    Streamlit internals are used (the script requests' lock and merge, the session state's
    widget states); tests/test_app_quiet_rerun.py pins them, so that a Streamlit upgrade that
    changes them fails there.
    """
    from streamlit.commands import execution_control
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    ctx = get_script_run_ctx()
    requests = None if ctx is None else ctx.script_requests
    if requests is None:  # no script run (bare mode): what Streamlit's own rerun does there
        st.rerun(scope=scope)
        return
    rerun = RerunData(query_string=ctx.query_string, page_script_hash=ctx.page_script_hash,
                      fragment_id_queue=execution_control._new_fragment_id_queue(ctx, scope),
                      is_fragment_scoped_rerun=execution_control._is_fragment_scoped(scope),
                      cached_message_hashes=ctx.cached_message_hashes,
                      context_info=ctx.context_info)
    with ctx.session_state._lock:
        shown = _shown_widget_states(ctx)
    if request_quietly(requests, rerun, shown):  # for the new run, started at the yield below
        with ctx.session_state._lock:  # st.session_state would take the rerun before the write
            ctx.session_state._state[state.QUIET_RERUN] = True
    execution_control._force_yield_point()  # the runner stops this run here, as st.rerun's


def request_quietly(requests, rerun, shown) -> bool:
    """Queue ``rerun`` (a ``RerunData``) in the script ``requests`` with the widget values
    ``shown`` when no rerun waits; else without them, merged into the waiting one, whose
    widget values (the browser's, newer) win. True when queued with ``shown``."""
    from dataclasses import replace

    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    with requests._lock:  # nothing may arrive between the look and the request
        quiet = requests._state is ScriptRequestType.CONTINUE
        queued = requests._request_rerun_locked(
            replace(rerun, widget_states=shown) if quiet else rerun)
    return quiet and queued


def _shown_widget_states(ctx):
    """The values of the widgets as this run leaves them, as the browser's own rerun would
    send them (a ``WidgetStates`` message): the widgets drawn in this run and those the
    browser sent, each with the value assigned to its key in this run if any, and no
    button."""
    from streamlit.proto.WidgetStates_pb2 import WidgetStates
    from streamlit.runtime.state.session_state import WStates

    session = ctx.session_state._state
    widgets = session._new_widget_state
    keys = session._key_id_mapper.id_key_mapping
    shown = WStates()
    for wid in dict.fromkeys((*widgets.states, *ctx.shared.widget_ids_this_run.snapshot())):
        meta = widgets.widget_metadata.get(wid)
        if meta is None or meta.value_type in _TRIGGER_VALUES:
            continue
        shown.set_widget_metadata(meta)
        key = keys.get(wid)
        if wid in widgets.states and (key is None or key not in session._new_session_state):
            shown.states[wid] = widgets.states[wid]  # as the browser sent it, or as drawn
            continue
        try:
            shown.set_from_value(wid, session._getitem(wid, key))  # assigned in this run
        except KeyError:
            continue
    out = WidgetStates()
    out.widgets.extend(shown.as_widget_states())
    return out
