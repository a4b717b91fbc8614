"""Dynamic-K selection, evidence metrics and K summary (contract §7)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics_core.data.dataset import Dataset
from metrics_core.metrics import dynamic_k
from metrics_core.metrics._reference import naive_evidence_per_query, naive_select_k
from metrics_core.metrics.dynamic_k import (
    MassProfile,
    evidence_per_query,
    k_summary,
    select_k,
)
from metrics_core.metrics.gate import GateState
from tests.conftest import random_frames

NEG, UNC, POS = int(GateState.NEG), int(GateState.UNCERTAIN), int(GateState.POS)


def make_dataset(queries, *, n_gold=None) -> Dataset:
    """``queries``: list of (y, scores, gold flags); one post per query, criterion ``C``."""
    q_rows, c_rows = [], []
    for i, (y, scores, gold) in enumerate(queries):
        q_rows.append({"post_id": f"p{i:03d}", "criterion": "C", "has_evidence": int(y),
                       "p_has_evidence": 0.5})
        for j, (s, g) in enumerate(zip(scores, gold, strict=True)):
            # sent_uid descending = ranking order among ties, so the listed order is kept
            c_rows.append({"post_id": f"p{i:03d}", "criterion": "C", "sent_uid": f"s{99 - j:02d}",
                           "score": float(s), "is_gold": int(g)})
    queries_df = pd.DataFrame(q_rows)
    if n_gold is not None:
        queries_df["n_gold"] = n_gold
    cands = pd.DataFrame(c_rows, columns=["post_id", "criterion", "sent_uid", "score", "is_gold"])
    return Dataset.from_frames(queries_df, cands)


def k_of(scores, *, states=None, mass="softmax", **options) -> np.ndarray:
    ds = make_dataset([(1, s, [0] * len(s)) for s in scores])
    profile = MassProfile.from_dataset(ds, mass=mass)
    return select_k(profile, states, **options)


# ------------------------------------------------------------------ hand-worked K values
def test_probability_mass_cumulative_values_exact():
    # m = score / Σ score = (0.5, 0.25, 0.125, 0.125): cumulative 0.5, 0.75, 0.875, 1.0
    ds = make_dataset([(1, [0.5, 0.25, 0.125, 0.125], [0, 0, 0, 0])])
    profile = MassProfile.from_dataset(ds, mass="probability")
    assert profile.cum_mass.tolist() == [0.5, 0.75, 0.875, 1.0]


def test_softmax_cumulative_values():
    # softmax of (ln 4, ln 2, 0, 0) = (4, 2, 1, 1) / 8: cumulative 0.5, 0.75, 0.875, 1.0
    ds = make_dataset([(1, [math.log(4), math.log(2), 0.0, 0.0], [0, 0, 0, 0])])
    profile = MassProfile.from_dataset(ds)
    np.testing.assert_allclose(profile.cum_mass, [0.5, 0.75, 0.875, 1.0], rtol=1e-15)
    assert profile.cum_mass[-1] == 1.0  # normalised by its own total


def test_softmax_temperature():
    # scores (2 ln 3, 0) at T = 2 -> softmax(ln 3, 0) = (3/4, 1/4)
    ds = make_dataset([(1, [2 * math.log(3), 0.0], [0, 0])])
    profile = MassProfile.from_dataset(ds, temperature=2.0)
    np.testing.assert_allclose(profile.cum_mass, [0.75, 1.0], rtol=1e-15)


@pytest.mark.parametrize(("options", "expected"), [
    # cumulative 0.5, 0.75, 0.875, 1.0; n = 4, k_max = min(10, floor(4 x 0.5)) = 2
    ({"gamma": 0.9}, 2),  # K_γ = 4, capped at k_max = 2
    ({"gamma": 0.9, "k_max_ratio": 1.0}, 4),  # k_max = 4: K = K_γ = 4
    ({"gamma": 0.8, "k_max_ratio": 1.0}, 3),  # 0.875 is the first >= 0.8
    ({"gamma": 0.75, "k_max_ratio": 1.0}, 2),  # exactly at the boundary: 0.75 >= 0.75
    ({"gamma": 0.5, "k_max_ratio": 1.0}, 2),  # K_γ = 1, raised to k_min = 2
    ({"gamma": 0.5, "k_max_ratio": 1.0, "k_min": 0}, 1),  # K_γ = 1
    ({"gamma": 1.0, "k_max_ratio": 1.0}, 4),  # γ = 1 reaches the last candidate
    ({"gamma": 0.9, "k_max_ratio": 1.0, "hard_cap": 3}, 3),  # k_max = min(3, 4) = 3
])
def test_select_k_hand_worked(options, expected):
    k = k_of([[0.5, 0.25, 0.125, 0.125]], mass="probability", **options)
    assert k.tolist() == [expected]


def test_select_k_softmax_ties_boundary():
    # four equal scores: softmax masses 1/4 each, cumulative exactly 0.25, 0.5, 0.75, 1.0
    k = k_of([[0.0, 0.0, 0.0, 0.0]], gamma=0.5, k_max_ratio=1.0, k_min=0)
    assert k.tolist() == [2]


@pytest.mark.parametrize(("n", "expected"), [
    # k_max = min(10, floor(n x 0.5)); K = min(n, max(2, min(K_γ, k_max))); K_γ = n (uniform)
    (0, 0),  # no candidates
    (1, 1),  # k_max = 0 -> max(2, 0) = 2 -> min(1, 2) = 1
    (2, 2),  # k_max = 1 -> max(2, 1) = 2 -> min(2, 2) = 2
    (3, 2),  # k_max = 1 < k_min -> 2
    (4, 2),  # k_max = 2
    (9, 4),  # k_max = 4, K_γ = ceil(0.9 x 9) = 9 (cum 8/9 < 0.9)
    (30, 10),  # k_max = min(10, 15) = 10 (hard cap)
])
def test_small_and_large_candidate_lists(n, expected):
    k = k_of([[0.0] * n], gamma=0.9)
    assert k.tolist() == [expected]


def test_gate_aware_policy():
    # cumulative 0.5, 0.75, 0.875, 0.9375, 1.0 (probability rule, no caps bind)
    scores = [[0.5, 0.25, 0.125, 0.0625, 0.0625]] * 3
    states = np.array([NEG, UNC, POS])
    opts = {"mass": "probability", "gamma": 0.9, "gamma_uncertain": 0.95, "k_max_ratio": 1.0}
    assert k_of(scores, states=states, **opts).tolist() == [0, 5, 4]  # NEG 0, γ_u, γ
    assert k_of(scores, states=states, gate_aware=False, **opts).tolist() == [4, 4, 4]
    assert k_of(scores, **opts).tolist() == [4, 4, 4]  # no states: γ everywhere


def test_docstring_example():
    # softmax of (2, 1, 0, -1, -5, -5): cumulative mass passes 0.9 at K = 3; k_max = 3
    k = k_of([[2, 1, 0, -1, -5, -5]])
    assert k.tolist() == [3]
    ds = make_dataset([(1, [2, 1, 0, -1, -5, -5], [0] * 6)])
    e = np.exp(np.array([2, 1, 0, -1, -5, -5]) - 2.0)
    np.testing.assert_allclose(MassProfile.from_dataset(ds).cum_mass,
                               np.cumsum(e) / e.sum(), rtol=1e-14)


# ------------------------------------------------------------------------------ errors
def test_probability_rule_rejects_out_of_range_and_zero_sum():
    ds = make_dataset([(1, [0.5, 1.5], [0, 0])])
    with pytest.raises(ValueError, match=r"score must be in \[0, 1\].*probability"):
        MassProfile.from_dataset(ds, mass="probability")
    ds = make_dataset([(1, [0.5, 0.5], [0, 0]), (1, [0.0, 0.0], [0, 0])])
    with pytest.raises(ValueError, match=r"sum to 0.*post_id='p001'"):
        MassProfile.from_dataset(ds, mass="probability")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"gamma": 0.0}, "gamma"), ({"gamma": 1.2}, "gamma"),
    ({"gamma_uncertain": 0.0}, "gamma_uncertain"), ({"k_min": -1}, "k_min"),
    ({"hard_cap": 0}, "hard_cap"), ({"k_max_ratio": 0.0}, "k_max_ratio"),
    ({"k_max_ratio": 1.5}, "k_max_ratio"), ({"k_min": 2.5}, "k_min"),
])
def test_select_k_validates_options(kwargs, match):
    profile = MassProfile.from_dataset(make_dataset([(1, [1.0, 0.0], [0, 0])]))
    with pytest.raises(ValueError, match=match):
        select_k(profile, **kwargs)


def test_profile_validates_options():
    ds = make_dataset([(1, [1.0, 0.0], [0, 0])])
    with pytest.raises(ValueError, match="mass"):
        MassProfile.from_dataset(ds, mass="logits")
    with pytest.raises(ValueError, match="temperature"):
        MassProfile.from_dataset(ds, temperature=0.0)
    profile = MassProfile.from_dataset(ds)
    with pytest.raises(ValueError, match="states"):
        select_k(profile, np.array([0, 1]))
    with pytest.raises(ValueError, match="states"):
        select_k(profile, np.array([3]))


# --------------------------------------------------------------------------- evidence
def test_hits_within_hand_worked_both_paths():
    # q0: gold at positions 2 and 4; q1: no gold; q2: gold at 1; q3: no candidates
    ds = make_dataset([(1, [4, 3, 2, 1, 0], [0, 1, 0, 1, 0]), (0, [2, 1, 0], [0, 0, 0]),
                       (1, [1, 0], [1, 0]), (1, [], [])])
    k = np.array([4, 3, 0, 0])
    assert ds.gold_located[0].tolist() == [0, 0, 2]  # query of each gold candidate
    assert ds.gold_located[1].tolist() == [2, 4, 1]  # its 1-based position
    assert dynamic_k.hits_within(ds, k).tolist() == [2, 0, 0, 0]  # from the gold rows
    assert dynamic_k.hits_within(ds, np.array([3, 1, 2, 0])).tolist() == [1, 0, 1, 0]
    ds.cum_gold  # noqa: B018 (computed: the cumulative path)
    assert dynamic_k.hits_within(ds, k).tolist() == [2, 0, 0, 0]
    assert dynamic_k.hits_within(ds, np.array([3, 1, 2, 0])).tolist() == [1, 0, 1, 0]


def test_gathered_candidates_are_an_explicit_interface():
    """The Dask engine's data set answers the candidate kernels by its interface
    (GatheredCandidates), not by having an attribute of that name."""
    from metrics_core.data.dataset import GatheredCandidates
    from metrics_core.engines.gathered import QueryLevelDataset
    from metrics_core.inputs.audit import tie_masks

    assert issubclass(QueryLevelDataset, GatheredCandidates)

    class Gathered(GatheredCandidates):
        def __init__(self):
            self.gathered_tie_masks = {"positive_ties": np.array([True]),
                                       "gold_ties": np.array([False])}

        def gathered_hits(self, k):
            return np.asarray(k) * 10

    assert dynamic_k.hits_within(Gathered(), np.array([2])).tolist() == [20]
    assert tie_masks(Gathered())["positive_ties"].tolist() == [True]
    # A Dataset is read from its candidates, whatever attributes it was given.
    ds = make_dataset([(1, [2, 1], [1, 1])])
    object.__setattr__(ds, "gathered_hits", lambda k: np.array([99]))
    assert dynamic_k.hits_within(ds, np.array([1])).tolist() == [1]


def test_evidence_hand_worked():
    # q0: positive, gold at positions 2 and 4, n_gold = 3 (one gold the list missed)
    # q1: negative, no gold; q2: positive with gold at 1
    ds = make_dataset([(1, [4, 3, 2, 1, 0], [0, 1, 0, 1, 0]), (0, [2, 1, 0], [0, 0, 0]),
                       (1, [1, 0], [1, 0])], n_gold=[3, 0, 1])
    rec, prec = evidence_per_query(ds, np.array([2, 0, 0]))
    # q0: hits = 1 -> recall 1/3, precision 1/2; q1 not a positive; q2: K = 0 -> 0 and 0
    np.testing.assert_array_equal(rec, [1 / 3, np.nan, 0.0])
    np.testing.assert_array_equal(prec, [0.5, np.nan, 0.0])
    rec, prec = evidence_per_query(ds, np.array([4, 0, 0]), protocol="all_queries")
    # q0: hits 2 -> 2/3, 2/4; q1: empty gold, nothing selected -> 1, 1; q2: gold, K = 0 -> 0, 0
    np.testing.assert_array_equal(rec, [2 / 3, 1.0, 0.0])
    np.testing.assert_array_equal(prec, [0.5, 1.0, 0.0])
    rec, prec = evidence_per_query(ds, np.array([5, 2, 1]), protocol="all_queries")
    # q1: empty gold but 2 selected -> recall 0, precision 0 / 2 = 0; q2: 1 / 1
    np.testing.assert_array_equal(rec, [2 / 3, 0.0, 1.0])
    np.testing.assert_array_equal(prec, [0.4, 0.0, 1.0])


def test_evidence_positive_without_gold_is_undefined():
    ds = make_dataset([(1, [1, 0], [0, 0])])
    rec, prec = evidence_per_query(ds, np.array([2]))
    assert np.isnan(rec[0]) and prec[0] == 0.0


def test_evidence_validates_k():
    ds = make_dataset([(1, [1, 0], [1, 0])])
    for bad in (np.array([3]), np.array([-1]), np.array([1, 1])):
        with pytest.raises(ValueError, match="k must"):
            evidence_per_query(ds, bad)
    with pytest.raises(ValueError, match="protocol"):
        evidence_per_query(ds, np.array([1]), protocol="positives")


# -------------------------------------------------------------------------- K summary
def test_k_summary_hand_worked():
    # K = (0, 2, 3, 5): mean 2.5, median 2.5, P90 = 3 + 0.7 x (5 - 3) = 4.4 (numpy linear),
    # workload 10, 10 / 4 x 1000 = 2500 per 1000
    s = k_summary(np.array([0, 2, 3, 5]), states=np.array([NEG, UNC, POS, POS]),
                  y=np.array([0, 1, 0, 1]))
    o = s.overall
    assert (o.n, o.mean, o.median, o.min, o.max, o.workload) == (4, 2.5, 2.5, 0, 5, 10)
    assert o.p90 == pytest.approx(4.4, abs=1e-12)
    assert o.workload_per_1000 == 2500.0
    assert (s.mean, s.total, s.workload_per_1000) == (2.5, 10, 2500.0)
    assert s.by_state["NEG"].mean == 0.0 and s.by_state["NEG"].n == 1
    assert s.by_state["POS"].mean == 4.0 and s.by_state["POS"].workload == 8
    assert s.by_state["POS"].workload_per_1000 == 4000.0
    assert s.by_has_evidence[1].mean == 3.5 and s.by_has_evidence[0].mean == 1.5
    table = s.table()
    assert table["group"].tolist() == ["overall", "state=NEG", "state=UNCERTAIN", "state=POS",
                                       "has_evidence=0", "has_evidence=1"]
    assert table.loc[table["group"] == "state=UNCERTAIN", "mean_k"].item() == 2.0


def test_k_summary_empty_group_is_nan():
    s = k_summary(np.array([2, 3]), states=np.array([POS, POS]))
    assert s.by_state["NEG"].n == 0 and math.isnan(s.by_state["NEG"].mean)
    assert s.by_state["NEG"].workload == 0 and math.isnan(s.by_state["NEG"].workload_per_1000)
    assert s.by_has_evidence == {}


# ------------------------------------------------------------- cross-check vs naive loop
@st.composite
def datasets(draw, mass="softmax"):
    n_queries = draw(st.integers(1, 12))
    queries = []
    for _ in range(n_queries):
        n = draw(st.integers(0, 25))
        if mass == "softmax":
            # few distinct values -> many ties; some large spreads
            scores = draw(st.lists(st.sampled_from([-30.0, -2.0, -0.5, 0.0, 0.0, 0.7, 1.0, 3.0,
                                                    12.5]), min_size=n, max_size=n))
        else:
            scores = draw(st.lists(st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.3, 1 / 3, 0.5, 1.0]),
                                   min_size=n, max_size=n))
            if n and sum(scores) == 0:
                scores[0] = 0.5
        gold = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        queries.append((draw(st.integers(0, 1)), scores, gold))
    states = np.array(draw(st.lists(st.sampled_from([NEG, UNC, POS]), min_size=n_queries,
                                    max_size=n_queries)), dtype=np.int8)
    return make_dataset(queries), states


k_options = st.fixed_dictionaries({
    "gamma": st.one_of(st.sampled_from([0.5, 0.75, 0.9, 1.0]), st.floats(0.01, 1.0)),
    "gamma_uncertain": st.sampled_from([0.9, 0.95, 1.0]),
    "k_min": st.integers(0, 4),
    "hard_cap": st.integers(1, 40),
    "k_max_ratio": st.sampled_from([0.1, 0.3, 0.5, 0.7, 1.0]),
    "gate_aware": st.booleans(),
})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), options=k_options, temperature=st.sampled_from([0.1, 1.0, 3.0]))
def test_select_k_equals_naive_loop_softmax(data, options, temperature):
    ds, states = data
    profile = MassProfile.from_dataset(ds, temperature=temperature)
    fast = select_k(profile, states, **options)
    slow = naive_select_k(ds, states, temperature=temperature, **options)
    np.testing.assert_array_equal(fast, slow)
    assert fast.dtype == np.int64
    assert np.all((fast >= 0) & (fast <= ds.n_cand))  # K in [0, n]
    # evidence kernels agree with the set-based loop under both protocols
    for protocol in ("positives_only", "all_queries"):
        rec, prec = evidence_per_query(ds, fast, protocol=protocol)
        rec2, prec2 = naive_evidence_per_query(ds, fast, protocol=protocol)
        np.testing.assert_array_equal(rec, rec2)
        np.testing.assert_array_equal(prec, prec2)
        for v in (rec, prec):
            ok = v[~np.isnan(v)]
            assert np.all((ok >= 0) & (ok <= 1))


@settings(max_examples=100, deadline=None)
@given(data=datasets(mass="probability"), options=k_options)
def test_select_k_equals_naive_loop_probability(data, options):
    ds, states = data
    profile = MassProfile.from_dataset(ds, mass="probability")
    np.testing.assert_array_equal(select_k(profile, states, **options),
                                  naive_select_k(ds, states, mass="probability", **options))


def test_cumulative_mass_matches_per_query_cumsum_bitwise():
    queries, cands = random_frames(n_posts=200, max_candidates=40, seed=3)
    ds = Dataset.from_frames(queries, cands)
    profile = MassProfile.from_dataset(ds, temperature=0.7)
    for q in range(ds.n_queries):
        sl = ds.candidate_slice(q)
        s = ds.score[sl] / 0.7
        running = np.cumsum(np.exp(s - s.max()))
        np.testing.assert_array_equal(profile.cum_mass[sl], running / running[-1])


@settings(max_examples=100, deadline=None)
@given(data=datasets(), options=k_options)
def test_k_monotone_in_gamma_and_zero_only_when_allowed(data, options):
    ds, states = data
    profile = MassProfile.from_dataset(ds)
    lo = select_k(profile, states, **{**options, "gamma": 0.5, "gamma_uncertain": 0.5})
    hi = select_k(profile, states, **{**options, "gamma": 1.0, "gamma_uncertain": 1.0})
    assert np.all(lo <= hi)
    k = select_k(profile, states, **options)
    zero_allowed = (ds.n_cand == 0) | ((states == NEG) & options["gate_aware"])
    if options["k_min"] >= 1:
        np.testing.assert_array_equal(k == 0, zero_allowed)


def test_permutation_invariance():
    queries, cands = random_frames(n_posts=60, max_candidates=12, seed=5)
    ds = Dataset.from_frames(queries, cands)
    rng = np.random.default_rng(0)
    shuffled = Dataset.from_frames(queries.sample(frac=1, random_state=1),
                                   cands.iloc[rng.permutation(len(cands))])
    states = rng.integers(0, 3, ds.n_queries).astype(np.int8)
    k1 = select_k(MassProfile.from_dataset(ds), states)
    k2 = select_k(MassProfile.from_dataset(shuffled), states)
    np.testing.assert_array_equal(k1, k2)
    for protocol in ("positives_only", "all_queries"):
        np.testing.assert_array_equal(evidence_per_query(ds, k1, protocol=protocol),
                                      evidence_per_query(shuffled, k2, protocol=protocol))


def test_profile_is_reused_across_settings():
    queries, cands = random_frames(n_posts=30, seed=7)
    ds = Dataset.from_frames(queries, cands)
    profile = MassProfile.from_dataset(ds)
    before = profile.cum_mass.copy()
    for gamma in (0.7, 0.9, 0.95):
        for hard_cap in (1, 3, 10):
            np.testing.assert_array_equal(select_k(profile, gamma=gamma, hard_cap=hard_cap),
                                          naive_select_k(ds, gamma=gamma, hard_cap=hard_cap))
    np.testing.assert_array_equal(profile.cum_mass, before)


def _numpy_stats(k) -> tuple:
    k = np.asarray(k, dtype=np.int64)
    return (k.size, float(k.mean()), float(np.median(k)), float(np.percentile(k, 90)),
            float(k.min()), float(k.max()), int(k.sum()))


def _stats(s) -> tuple:
    return (s.n, s.mean, s.median, s.p90, s.min, s.max, s.workload)


def test_k_statistics_from_counts_equal_numpy_s_to_the_last_bit():
    """KStats counts K instead of sorting it: mean, median and the linear P90 must be numpy's
    to the last bit (the records and metrics_master.json do not move), on narrow ranges (most
    K zero, as the gate leaves them), wide ranges (the distinct K counted) and tiny groups."""
    rng = np.random.default_rng(11)
    for trial in range(3000):
        n = int(rng.integers(1, 40)) if trial % 2 else int(rng.integers(1, 3000))
        k = [rng.integers(0, 4, n), rng.integers(0, 250, n), rng.integers(-9, 10**8, n),
             np.where(rng.random(n) < 0.85, 0, rng.integers(1, 60, n))][trial % 4]
        stats = dynamic_k.KStats.of(k)
        assert _stats(stats) == _numpy_stats(k), (trial, k)
        assert type(stats.workload) is int
    empty = dynamic_k.KStats.of(np.array([], dtype=np.int64))
    assert empty.n == 0 and empty.workload == 0 and np.isnan(empty.p90)


def test_the_k_summary_s_groups_equal_numpy_on_each_group():
    rng = np.random.default_rng(4)
    for n in (1, 2, 7, 500, 4000):
        k = np.where(rng.random(n) < 0.7, 0, rng.integers(1, 30, n))
        states = rng.integers(0, 3, n)
        y = rng.integers(0, 2, n)
        summary = dynamic_k.k_summary(k, states=states, y=y)
        assert _stats(summary.overall) == _numpy_stats(k)
        for code, name in enumerate(("NEG", "UNCERTAIN", "POS")):
            group = k[states == code]
            got = summary.by_state[name]
            assert (_stats(got) == _numpy_stats(group)) if group.size else got.n == 0
        for v in (0, 1):
            group = k[y == v]
            got = summary.by_has_evidence[v]
            assert (_stats(got) == _numpy_stats(group)) if group.size else got.n == 0
