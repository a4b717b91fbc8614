"""Decision support's guarantee mode: the threshold that Learn-then-Test guarantees for new
queries (:mod:`metrics_core.metrics.risk_control`, contract §6), beside the finder's threshold
met on the data shown, with what it costs in workload and what is and is not guaranteed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import display, provenance, state
from dashboard.safe_text import escape_markdown
from metrics_core.metrics import risk_control

_ALL = "all queries"


def calibration_choices(ds) -> list[str]:
    """The calibration data the user may pick: all queries, a split, a fold."""
    out = [_ALL]
    if ds.split is not None:
        out += [f"split={s}" for s in ds.splits]
    if ds.fold is not None:
        out += [f"fold={f}" for f in ds.folds]
    return out


def _per_1000(p: np.ndarray, tau: float, below: bool) -> float:
    return float(1000.0 * ((p < tau) if below else (p >= tau)).mean()) if p.size else float("nan")


def workload(p, parameter: str, guaranteed: float, plain: float | None) -> str:
    """What the guaranteed threshold costs against the finder's, per 1,000 queries."""
    if parameter == "tau_neg":
        g, what = _per_1000(p, guaranteed, True), "auto-cleared (NEG)"
        f = None if plain is None else _per_1000(p, plain, True)
        extra = "more sent to review"
    else:
        g, what = _per_1000(p, guaranteed, False), "alerts (POS)"
        f = None if plain is None else _per_1000(p, plain, False)
        extra = "fewer alerts"
    text = f"{g:.1f} per 1,000 {what} at the guaranteed threshold"
    if f is not None:
        text += (f", {f:.1f} at the finder's threshold ({plain:.4f}): "
                 f"{abs(f - g):.1f} per 1,000 {extra}" if f != g
                 else f", as many as at the finder's threshold ({plain:.4f})")
    return text


def plain_language(r: risk_control.GuaranteeResult) -> str:
    """What is and what is not guaranteed, for a reader who is no statistician."""
    name = "τ_neg" if r.parameter == "tau_neg" else "τ_pos"
    return (f"If new queries come from the same source as the calibration data "
            f"({r.calibration}, {r.n_calibration:,} queries) and in no particular order "
            f"(exchangeable), then the chance that this way of choosing {name} gives a "
            f"threshold whose {r.risk} on new queries is above {r.risk_bound:.4g} is at most "
            f"{r.delta_each:.3g}. The guarantee is about the draw of the calibration data: it "
            "does not say that every batch of new queries meets the target (a small batch can "
            "miss it by chance), it does not hold if the population, the model or the "
            "prevalence changes, and it covers this target only, not the other metrics. "
            f"Method: {r.method}.")


def _apply(parameter: str, value: float, mark: risk_control.ThresholdGuarantee) -> None:
    """Set the gate's end to the guaranteed threshold, marked guaranteed with ``mark`` (the
    value held to six decimals on the safe side: :func:`risk_control.floor_threshold`).
    τ_neg ≤ τ_pos: a guaranteed τ_neg above τ_pos comes down to it (a lower τ_neg keeps its
    guarantee: the missed-positive risk only falls); a guaranteed τ_pos below τ_neg takes
    τ_neg down with it, which keeps τ_neg's own mark if it was guaranteed and makes it
    exploratory otherwise."""
    lo, hi = state.value("gate")
    value = risk_control.floor_threshold(value, parameter)
    if parameter == "tau_neg":
        state.set_value("gate", (min(value, hi), hi), how=state.GUARANTEED,
                        mark=("tau_neg",), guarantee=mark)
    else:
        state.set_value("gate", (min(lo, value), value), how=state.GUARANTEED,
                        mark=("tau_pos",), guarantee=mark)
        if value < lo and provenance.mark_of("tau_neg") != state.GUARANTEED:
            provenance.set_mark("tau_neg", state.EXPLORATORY)
    state.setting_moved()


def _apply_per_criterion(parameter: str, rows: tuple, mark: risk_control.ThresholdGuarantee
                         ) -> None:
    """Each criterion's gate end set to its own guaranteed threshold (held as
    :func:`_apply` holds it), the per-criterion gates marked guaranteed with ``mark`` (δ split
    over all queries and every criterion). The other end is the criterion's own gate's, or
    the overall gate's; τ_neg ≤ τ_pos is kept as :func:`_apply` keeps it. A criterion with no
    guaranteed threshold has no gate of its own afterwards (it uses the overall gate): every
    per-criterion gate left is one this guarantee set."""
    overall = state.value("gate")
    gates = {g[0]: tuple(g[1:]) for g in state.value("criterion_gates")}
    out = []
    for subset, value in rows:
        name = subset.removeprefix("criterion ")
        if value is None:
            continue
        lo, hi = gates.get(name, overall)
        value = risk_control.floor_threshold(value, parameter)
        lo, hi = (min(value, hi), hi) if parameter == "tau_neg" else (min(lo, value), value)
        out.append((name, lo, hi))
    state.set_value("criterion_gates", tuple(sorted(out)), how=state.GUARANTEED,
                    mark=("criterion_gates",), guarantee=mark)
    state.setting_moved()


def criterion_frame(results) -> pd.DataFrame:
    """One row per subset (all queries, then each criterion): the guaranteed threshold, the
    held-out value with its interval, or why there is none."""
    rows = []
    for r in results:
        held = r.held_out or {}
        ci = held.get("ci95") or (None, None)
        rows.append({"subset": r.subset, "n_calibration": r.n_calibration,
                     r.parameter: r.value, "held_out": held.get("value"),
                     "held_out_ci_lo": ci[0], "held_out_ci_hi": ci[1],
                     "delta_each": r.delta_each, "reason": r.reason})
    return pd.DataFrame(rows)


def show(ds, target, plain: float | None, *, by_criterion: bool = False) -> None:
    """The guarantee mode for the finder's ``target`` (a gate target), ``plain`` the finder's
    threshold on all queries; ``by_criterion``: each criterion's too, δ split over all."""
    if target.parameter not in ("tau_neg", "tau_pos"):
        st.info("A guarantee is given for the gate's targets: screening sensitivity and "
                "missed positives per 1,000 (τ_neg), alert precision (τ_pos).",
                icon=":material/info:")
        return
    left, right = st.columns(2)
    delta = left.number_input("δ: chance the guarantee fails", min_value=0.001,
                              max_value=0.5, value=0.1, step=0.01, format="%.3f",
                              key="guarantee_delta")
    calibrate = right.selectbox("Calibrate on", calibration_choices(ds),
                                key="guarantee_calibrate",
                                help="Calibrating on a part leaves the rest to check the "
                                     "threshold on (held out).")
    try:
        results = risk_control.guarantee(
            ds, [f"{target.metric}{target.op}{target.value!r}"], delta=float(delta),
            by="criterion" if by_criterion else None,
            calibrate_on=None if calibrate == _ALL else calibrate)
    except ValueError as err:
        st.error(escape_markdown(str(err)), icon=":material/error:")
        return
    r = results[0]
    if by_criterion:
        st.caption(f"All queries and each criterion: δ is split evenly over the "
                   f"{len(results)} guarantees (δ = {r.delta_each:.3g} each), so the chance "
                   f"that any of them fails is at most {r.delta:g}.")
        display.show_table(criterion_frame(results), key="guarantee_table")
        rows = tuple((c.subset, c.value) for c in results[1:])
        if any(value is not None for _, value in rows):
            st.button(f"Set each criterion's {r.parameter} to its guaranteed threshold",
                      key="guarantee_apply_per_criterion", on_click=_apply_per_criterion,
                      args=(r.parameter, rows,
                            risk_control.ThresholdGuarantee.of(r, len(results))),
                      help=f"Per-criterion gates marked guaranteed: δ = {r.delta:g} split "
                           f"over all queries and the {len(rows)} criteria. A criterion with "
                           "no guaranteed threshold uses the overall gate.")
    name = "τ_neg" if r.parameter == "tau_neg" else "τ_pos"
    if r.value is None:
        st.warning(escape_markdown(f"No {name} can be guaranteed: {r.reason}."),
                   icon=":material/block:")
        return
    a, b, c = st.columns(3)
    a.metric(f"Guaranteed {name}", f"{r.value:.4f}")
    b.metric(f"{r.risk.capitalize()} ≤", f"{r.risk_bound:.4g}",
             help=f"with probability at least {1 - r.delta_each:.3g}")
    if r.held_out is not None and r.held_out["defined"]:
        lo, hi = r.held_out["ci95"]
        c.metric(f"Held out ({r.held_out['n']:,})", f"{r.held_out['value']:.4f}",
                 help=f"95% Wilson interval {lo:.4f} to {hi:.4f} on {r.held_out['subset']}")
    elif r.calibration_value is not None:
        c.metric("On the calibration data", f"{r.calibration_value:.4f}")
    st.markdown(escape_markdown("Workload: " + workload(ds.p, r.parameter, r.value, plain)
                                + "."))
    st.caption(escape_markdown(plain_language(r)))
    st.button(f"Set the gate: {name} = {r.value:.4f} (with a guarantee)",
              key="guarantee_apply", on_click=_apply,
              args=(r.parameter, r.value, risk_control.ThresholdGuarantee.of(r)),
              help="Marks the threshold guaranteed (every page's thresholds line, the link, "
                   "settings.json and the decision record say so, with the target, δ, the "
                   "calibration data and the method); moving it afterwards makes it "
                   "exploratory.")
