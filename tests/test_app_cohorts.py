"""The Cohorts page and the cohort choice on the Data page (AppTest): on the demo, site's
planted disparity at site_E is shown flagged, with the numbers metrics_core computes."""

from __future__ import annotations

import numpy as np

from tests.test_app import TIMEOUT, assert_clean, open_app, table, texts

#: The Cohorts page computes every cohort's intervals (2,000 resamples) on its first run.
COHORTS_TIMEOUT = 3 * TIMEOUT


def _choose(at, columns):
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    assert_clean(at)
    at.multiselect(key="cohort_columns").set_value(columns).run(timeout=TIMEOUT)
    at.switch_page("app_pages/cohorts.py").run(timeout=COHORTS_TIMEOUT)
    assert_clean(at)
    return at


def test_cohorts_page_asks_for_columns_first():
    at = open_app(page="cohorts")
    assert_clean(at)
    assert any("Choose cohort columns on the Data & audit page" in t for t in texts(at))


def test_data_page_offers_the_demo_cohort_columns_and_the_page_shows_them():
    at = open_app(page="data_source")
    options = at.multiselect(key="cohort_columns").options
    assert {"site", "sex", "age_band"} <= set(options)
    at = _choose(at, ["site", "sex"])
    shown = table(at, "cohort_table")
    assert set(shown["column"]) == {"site", "sex"}
    flagged = shown[shown["flagged"].astype(bool)]
    assert "site_E" in set(flagged["value"])
    assert any("disparity(ies) flagged" in t for t in texts(at))
    # the numbers are metrics_core's: AUROC at site_E on its own rows
    from sklearn.metrics import roc_auc_score

    from metrics_core.demo import demo_paths
    from metrics_core.inputs.loading import load

    paths = demo_paths()
    loaded = load(paths.queries, paths.candidates)
    import pandas as pd

    q = pd.read_parquet(paths.queries)
    ds = loaded.dataset
    site = q.set_index(["post_id", "criterion"])["site"]
    at_e = site.loc[list(zip(ds.post_id, ds.criterion, strict=True))].to_numpy() == "site_E"
    row = shown[(shown["value"] == "site_E") & (shown["metric"] == "auroc")].iloc[0]
    assert np.isclose(row["estimate"], roc_auc_score(ds.y[at_e], ds.p[at_e]))
    weak = table(at, "weak_segments_table")
    assert len(weak) and "segment" in weak.columns
    # the choice survives a visit to another page
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    at.switch_page("app_pages/cohorts.py").run(timeout=TIMEOUT)
    assert set(table(at, "cohort_table")["column"]) == {"site", "sex"}
