"""A link's cohort settings opened before the upload (AppTest): a new session opens on the
demo, and the columns a link names (with their bins and cohort filter values) belong to the
user's data, uploaded afterwards. Those the demo lacks wait, named on the Data page and kept in
the link, and are chosen once data that have them are loaded; an upload lacking some names
them, and they wait on for a posts table (chosen when it has them, left out with a message
when it lacks them) or until they are dismissed (contract §9, "Cohort columns chosen")."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from dashboard import state
from metrics_core.demo import make_synthetic
from metrics_core.report import decision_record as record
from tests.test_app import TIMEOUT, assert_clean, open_app, texts, upload


@pytest.fixture(scope="module")
def files():
    """Queries with a site (as the demo's), a numeric age and a ward per post."""
    queries, candidates = make_synthetic(120, n_criteria=4, seed=7, with_text=False)
    ids = queries["post_id"].unique()
    rng = np.random.default_rng(3)
    for column, values in (("site", rng.choice(["site_A", "site_B"], ids.size)),
                           ("age", rng.integers(18, 78, ids.size)),
                           ("ward", rng.choice(["W1", "W2", "W3"], ids.size))):
        queries[column] = queries["post_id"].map(dict(zip(ids, values, strict=True)))
    return (("queries.csv", queries.to_csv(index=False).encode(), "text/csv"),
            ("candidates.csv", candidates.to_csv(index=False).encode(), "text/csv"))


LINK = {"bootstrap": "400", "cohort_columns": ["site", "age", "age*ward"],
        "cohort_bins": "age=q3", "cohort": "ward=W1"}
WAITING = ("The link's cohort columns 'age', 'age*ward', bins 'age=q3' and cohort filter "
           "values 'ward=W1' are not in the data shown: they wait for your data. "
           "Upload data that have them (Data & audit) and they are chosen; the link keeps "
           "them meanwhile.")


def _shown(at) -> str:
    return "\n".join(texts(at)).replace("\\", "")


def _settings_file(at) -> dict:
    view = at.session_state[state.VIEW]
    return json.loads(record.settings_json(view.evaluation, marks=view.marks,
                                           guarantees=view.guarantees,
                                           cohort_columns=view.cohort_columns,
                                           cohort_bins=view.cohort_bins))


def _assert_every_link_cohort_setting_taken(at) -> dict:
    """The link's cohort columns, bins and filter values are all in the model and the view,
    and settings.json names the columns; settings.json returned for the caller's checks."""
    model = at.session_state[state.MODEL]
    assert model[state.COHORT_COLUMNS] == ("site", "age", "age*ward")
    assert model[state.COHORT_BINS] == ("age=q3",)
    assert model["cohort"] == ("ward=W1",)
    view = at.session_state[state.VIEW]
    assert view.cohort_columns == ("site", "age", "age*ward")
    assert view.cohort_bins == {"age": "q3"} and view.filters.cohorts == ("ward=W1",)
    saved = _settings_file(at)
    assert saved["cohort_columns"] == ["site", "age", "age*ward"]
    return saved


def test_a_links_cohort_columns_wait_for_the_upload_that_has_them(files):
    at = open_app(LINK, page="gate")
    assert_clean(at)
    model = at.session_state[state.MODEL]
    # the demo has site: chosen; the rest waits, out of the view and its documents
    assert model[state.COHORT_COLUMNS] == ("site",)
    assert model[state.COHORT_BINS] == () and model["cohort"] == ()
    view = at.session_state[state.VIEW]
    assert view.cohort_columns == ("site",) and view.cohort_bins == {}
    assert view.filters.cohorts == ()
    saved = _settings_file(at)
    assert saved["cohort_columns"] == ["site"] and "cohort_bins" not in saved
    assert WAITING in _shown(at)
    # the link keeps what waits, so the link opened again waits for it too
    assert dict(at.query_params) == LINK
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    assert WAITING in [str(i.value).replace("\\", "") for i in at.info]
    assert at.multiselect(key=state.COHORT_COLUMNS).value == ["site"]
    assert dict(at.query_params) == LINK

    upload(at, *files)
    assert_clean(at)
    saved = _assert_every_link_cohort_setting_taken(at)
    assert saved["cohort_bins"] == {"age": "q3"}
    assert saved["config"]["filters"]["cohorts"] == ["ward=W1"]
    assert dict(at.query_params) == LINK
    assert "wait for your data" not in _shown(at)
    assert at.multiselect(key=state.COHORT_COLUMNS).value == ["site", "age", "age*ward"]
    assert at.text_input(key="cohort_bins_age").value == "q3"


def test_an_upload_without_the_links_columns_names_them(files):
    """They wait for a posts table, named, in the link, until dismissed."""
    opened = {**LINK, "cohort_columns": ["site", "age", "bmi"],
              "cohort_bins": ["age=q3", "bmi=18.5,25"]}
    at = open_app(opened, page="data_source")
    assert ("cohort columns 'age', 'bmi', bins 'age=q3', 'bmi=18.5,25' and cohort filter "
            "values 'ward=W1' are not in the data shown") in _shown(at)
    upload(at, *files)
    assert_clean(at)
    said = ("The link's cohort columns 'bmi' and bins 'bmi=18.5,25' are not in the data "
            "loaded (cohort_columns must name cohort columns of these data: site, age, ward, "
            "or two of them joined by '*' (e.g. site*age)): they wait for a posts table that "
            "has them (Data & audit, Posts table) and are chosen when it is added; the link "
            "keeps them meanwhile. Dismiss them there to leave them out.")
    assert said in _shown(at), _shown(at)
    assert said in [str(w.value).replace("\\", "") for w in at.warning]  # the top's note
    assert said in [str(i.value).replace("\\", "") for i in at.info]  # the Data page's
    model = at.session_state[state.MODEL]
    assert model[state.COHORT_COLUMNS] == ("site", "age")
    assert model[state.COHORT_BINS] == ("age=q3",)
    assert model["cohort"] == ("ward=W1",)
    assert at.session_state[state.VIEW].cohort_columns == ("site", "age")
    assert dict(at.query_params) == opened
    at.button(key=state.DISMISS_PENDING).click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert "bmi" not in _shown(at)
    assert not [b for b in at.button if b.key == state.DISMISS_PENDING]
    assert dict(at.query_params) == {**LINK, "cohort_columns": ["site", "age"]}
    assert at.session_state[state.VIEW].cohort_columns == ("site", "age")


def test_the_links_columns_an_upload_lacks_wait_for_its_posts_table(files):
    """The ward comes in a posts table added after the upload: the link's settings that use
    it are chosen then; one that the posts table lacks too is left out, named."""
    from tests.test_app_posts import _add_posts

    queries = pd.read_csv(io.BytesIO(files[0][1]))
    posts = queries[["post_id", "ward"]].drop_duplicates()
    uploaded = (("queries.csv", queries.drop(columns="ward").to_csv(index=False).encode(),
                 "text/csv"), files[1])
    opened = {**LINK, "cohort_columns": ["site", "age", "age*ward", "bmi"]}
    at = open_app(opened, page="data_source")
    upload(at, *uploaded)
    assert_clean(at)
    said = ("The link's cohort columns 'age*ward', 'bmi' and cohort filter values 'ward=W1' "
            "are not in the data loaded (cohort_columns must name cohort columns of these "
            "data: site, age, or two of them joined by '*' (e.g. site*age)): they wait for a "
            "posts table that has them (Data & audit, Posts table) and are chosen when it is "
            "added; the link keeps them meanwhile. Dismiss them there to leave them out.")
    assert said in [str(w.value).replace("\\", "") for w in at.warning]
    assert said in [str(i.value).replace("\\", "") for i in at.info]
    model = at.session_state[state.MODEL]
    assert model[state.COHORT_COLUMNS] == ("site", "age")
    assert model[state.COHORT_BINS] == ("age=q3",) and model["cohort"] == ()
    view = at.session_state[state.VIEW]
    assert view.cohort_columns == ("site", "age") and view.filters.cohorts == ()
    assert dict(at.query_params) == opened

    _add_posts(at, "posts.csv", posts.to_csv(index=False).encode())
    saved = _assert_every_link_cohort_setting_taken(at)
    assert saved["config"]["filters"]["cohorts"] == ["ward=W1"]
    assert at.multiselect(key=state.COHORT_COLUMNS).value == ["site", "age", "age*ward"]
    left_out = ("The link's cohort columns 'bmi' are not in the data loaded and were left out "
                "(cohort_columns must name cohort columns of these data: site, age, ward, or "
                "two of them joined by '*' (e.g. site*age)).")
    warned = [str(w.value).replace("\\", "") for w in at.warning]
    assert warned.count(left_out) == 2, warned  # the top's note and the Data page's
    assert "wait for a posts table" not in _shown(at)
    assert not [b for b in at.button if b.key == state.DISMISS_PENDING]
    assert dict(at.query_params) == {**LINK, "cohort_columns": ["site", "age", "age*ward"]}
