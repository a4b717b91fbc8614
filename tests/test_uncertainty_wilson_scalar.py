"""The scalar path of ``wilson_interval`` (one proportion, as a gate move asks for dozens) gives
the bits of the array path."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from metrics_core.metrics.uncertainty import wilson_interval


@given(n=st.integers(0, 10**9), share=st.floats(0, 1), level=st.sampled_from([0.8, 0.9, 0.95,
                                                                               0.99]))
def test_one_proportion_is_the_array_paths_bits(n, share, level):
    k = int(n * share)
    lo, hi = wilson_interval(k, n, level=level)
    arr_lo, arr_hi = wilson_interval(np.array([k]), np.array([n]), level=level)
    if n == 0:
        assert math.isnan(lo) and math.isnan(hi) and np.isnan(arr_lo[0])
        return
    assert (lo, hi) == (float(arr_lo[0]), float(arr_hi[0]))
    assert wilson_interval(np.int64(k), np.int64(n), level=level) == (lo, hi)
    assert type(lo) is float and type(hi) is float


def test_contract_example_and_bad_counts():
    lo, hi = wilson_interval(8, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0
    for k, n in ((11, 10), (-1, 10)):
        try:
            wilson_interval(k, n)
        except ValueError as exc:
            assert "0 <= k <= n" in str(exc)
        else:
            raise AssertionError("accepted impossible counts")
