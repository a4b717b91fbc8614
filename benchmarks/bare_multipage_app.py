"""Control of the load benchmark: a bare multipage Streamlit app with the dashboard's pages.

``bench_app_load.py --bare`` serves this file in place of the dashboard, so the same 8 sessions
(the Gate page's τ_neg moved 20 times, then 6 page switches) measure what the rig itself costs
on the machine: the server's Streamlit round trips and 8 headless Chromium sessions drawing a
near-empty page. The pages have the dashboard's titles and addresses, linked from the sidebar as
the dashboard links them (``st.page_link``, Streamlit's own menu hidden). The Gate page has the
same range slider and a ``NEG (auto-cleared)`` metric that follows τ_neg (what the benchmark
waits for) and one small line chart; every other page a title and one sentence. Nothing is
computed: whatever the dashboard's figures add to these is the app's, not the rig's.
"""

import streamlit as st

st.set_page_config(page_title="Bare multipage app", layout="wide")


def overview() -> None:
    st.title("Overview")
    st.write("A near-empty page.")


def gate() -> None:
    st.title("Gate & thresholds")
    tau_neg, _ = st.slider("Gate thresholds (τ_neg, τ_pos)", 0.0, 1.0, (0.10, 0.90),
                         step=0.01, key="gate")
    st.metric("NEG (auto-cleared)", f"{round(1000 * tau_neg)} queries")
    st.line_chart({"rate": [min(1.0, tau_neg * i / 10) for i in range(11)]}, height=240)


def plain(title: str):
    def page() -> None:
        st.title(title)
        st.write("A near-empty page.")
    return page


PAGES = [st.Page(overview, title="Overview", url_path="overview", default=True),
         st.Page(gate, title="Gate & thresholds", url_path="gate"),
         *(st.Page(plain(title), title=title, url_path=path)
           for title, path in (("Per criterion", "per-criterion"),
                               ("Decision support", "decision"),
                               ("Calibration", "calibration"), ("Meeting mode", "meeting")))]
page = st.navigation(PAGES, position="hidden")
with st.sidebar:
    for p in PAGES:
        st.page_link(p)
page.run()
