"""Calibration: reliability diagram with Wilson bands and bin counts, ECE, MCE, Brier."""

import streamlit as st

from dashboard import data, display
from metrics_core.config import VARIANT_LABELS
from metrics_core.report.figures.calibration import reliability_figure
from metrics_core.targets import ece_band

v = data.view()
c = v.config
display.page_header("Calibration", v, caption=(
    f"{VARIANT_LABELS['calibration_view'][c.calibration_view]}; {c.n_bins} "
    f"{VARIANT_LABELS['binning'][c.binning]} (change under *Calibration* in the sidebar)"))
ev = v.evaluation

cols = st.columns(3)
display.metric_tile(cols[0], ev, "ece", "ECE")
display.metric_tile(cols[1], ev, "mce", "MCE")
display.metric_tile(cols[2], ev, "brier", "Brier score")
ece = ev.record("ece")
well, verdict = display.calibration_verdict(ev)
(st.success if well else st.warning)(verdict, icon=":material/check_circle:" if well
                                     else ":material/warning:")
# The ECE band in numbers, not words: "well calibrated" is said only by the verdict above.
band = ece_band(ece.value, ece.ci95)
for words, numbers in (("well calibrated", "below 0.05"), ("moderately calibrated",
                                                          "within 0.05–0.15"),
                       ("poorly calibrated", "above 0.15")):
    band = band.replace(words, numbers)
# One caption (each element is drawn by the browser on every open of the page).
st.caption(f"ECE alone: {band}. ECE averages the gaps over bins, so it can be small while the "
           "risks are systematically too high, too low, too extreme or too modest: the slope "
           "and intercept below say which." + ("" if v.show_bootstrap else
           "\n\nECE, MCE and Brier get their bootstrap intervals when *Compute bootstrap CIs* "
           "is on (under *Uncertainty*)."))
st.subheader("Calibration for clinicians")
st.caption("Observed / expected events (1 = right on average), and the logistic recalibration "
           "of p: intercept a with the slope fixed at 1 (0 = no overall over- or "
           "under-estimation), slope b (1 = risks neither too extreme nor too modest).")
cols = st.columns(3)
display.metric_tile(cols[0], ev, "calibration_in_the_large", "Observed / expected")
display.metric_tile(cols[1], ev, "calibration_intercept", "Calibration intercept")
display.metric_tile(cols[2], ev, "calibration_slope", "Calibration slope")

top = c.calibration_view == "top_label"
display.plot(reliability_figure(
    ev.reliability,
    title="Reliability diagram (top label)" if top else "Reliability diagram",
    x_title="Mean confidence max(p, 1 − p)" if top else "Mean predicted p_has_evidence",
    y_title="Share correct" if top else "Observed share with evidence",
    smoothed=None if top else ev.smoothed_calibration),
    key="reliability_chart")
if not top:
    st.caption("The smoothed curve is a logistic regression of the outcome on a cubic spline "
               "of logit(p), with a pointwise 95% band; it does not depend on the bins.")
st.subheader("Bins")
display.show_table(ev.reliability_frame(), key="reliability_table")
