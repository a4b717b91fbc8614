"""A page's own resamples input (Compare runs' paired bootstrap, the RAG page's intervals)
within the server's live cap (``[interaction] max_live_resamples``, the cap of the settings'
resamples too: contract §9).

Up to the cap, the number set is computed at once. Above it, the page computes the cap's
resamples and offers the number set on a button, with a message naming the field, the range
computed at once and the value; asked for, they are computed with a progress bar and a cancel
button (the cancel, any other change or a closed tab stops them at the next update). A session
over its computing budget gets no new resamples (:func:`dashboard.computing.over_budget`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from dashboard import computing, reruns, server_settings

__all__ = ["Resamples", "resamples"]


@dataclass
class Resamples:
    """The resamples a page computes in this run."""

    #: How many to compute now.
    now: int
    #: The progress callback of an asked-for run above the cap (None: none needed).
    progress: Callable[[int, int], None] | None = None
    #: The key that records the ask (cleared by :meth:`done`).
    asked_key: str | None = None

    def done(self) -> None:
        """The asked-for run has finished: the ask is spent, and the page is drawn again
        with its results (without the bar and the cancel button)."""
        if self.asked_key is not None:
            st.session_state.pop(self.asked_key, None)
            reruns.quiet_rerun(scope="app")


def _ask(asked_key: str, value: int | None) -> None:
    if value is None:
        st.session_state.pop(asked_key, None)
    else:
        st.session_state[asked_key] = value


def resamples(field: str, value: int, *, key: str, have: Callable[[int], bool]) -> Resamples:
    """The resamples to compute for the input ``field`` set to ``value`` (``key``: the page's
    prefix for its buttons' keys; ``have(n)``: whether the page holds its results with ``n``
    resamples already, which are then shown whatever the cap).

    Draws where it is called: above the cap, the message and the button (or, asked for, the
    progress bar and the cancel button); over the session's computing budget, the message
    saying so."""
    value = max(int(value), 0)
    if value == 0 or have(value):
        return Resamples(value)
    paused = computing.over_budget()
    if paused is not None:
        st.warning(paused, icon=":material/hourglass_top:")
        return Resamples(0)
    most = int(server_settings.interaction_caps()["max_live_resamples"])
    if value <= most:
        return Resamples(value)
    asked_key = f"_{key}_asked"
    if st.session_state.get(asked_key) != value:
        st.info(f"{field}: {value:,} is above what this server computes without asking "
                f"(0 to {most:,}: [interaction] max_live_resamples). Shown: intervals from "
                f"{most:,} resamples; the {value:,} set run when asked for, with progress; "
                f"any change stops them.", icon=":material/speed:")
        st.button(f"Compute with {value:,} resamples", key=f"{key}_run_heavy", on_click=_ask,
                  args=(asked_key, value))
        return Resamples(most)
    bar = st.progress(0.0, text=f"{field}: {value:,} resamples…")
    st.button("Cancel", key=f"{key}_cancel_heavy", on_click=_ask, args=(asked_key, None))
    progress = computing.bar_progress(bar, lambda done, total: f"{field}: {done:,} of {total:,} "
                                                          "resamples")
    return Resamples(value, progress, asked_key)
