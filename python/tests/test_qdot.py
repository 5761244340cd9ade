"""ebla.qdot and its two phases: the C++ API bit for bit, the certified bound against the
exact dot product, strides and dtypes, errors, and the GIL released during the kernel."""

from fractions import Fraction
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import ebla
from conftest import hex_floats, same_bits


def _vectors(n, seed, spread=20):
    """Seed 002's kind of data: random signs and significands over 2^spread binades."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n) * np.exp2(rng.integers(-spread, spread, n))
    y = rng.uniform(-1, 1, n) * np.exp2(rng.integers(-spread, spread, n))
    return x, y


def _exact(x, y):
    return sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(x, y))


@pytest.mark.parametrize("tol", [1e-12, 1e-6, 1e-2, 10.0])
@pytest.mark.parametrize("policy", ["budget", "paper"])
def test_bound_holds_against_the_exact_dot(tol, policy):
    x, y = _vectors(300, 1)
    r = ebla.qdot(x, y, tol, policy=policy)
    assert abs(Fraction(r.value) - _exact(x, y)) <= Fraction(r.bound)
    assert r.bound == pytest.approx(r.quantization_bound + r.accumulation_bound, rel=1e-15)
    assert sum(r.count_per_level) + r.zeros == x.size
    assert r.levels == ["binary64", "binary32", "binary16", "perforate"]


def test_budget_policy_meets_its_tolerance():
    x, y = _vectors(300, 2, spread=3)
    x, y = np.abs(x), np.abs(y)  # no cancellation: the tolerance is relative to x^T y
    exact = _exact(x, y)
    for tol in [1e-10, 1e-5, 1e-3]:
        r = ebla.qdot(x, y, tol)
        assert abs(Fraction(r.value) - exact) <= Fraction(tol) * exact * (1 + Fraction(1, 10**6))
    assert ebla.qdot(x, y, 1e-3).mix["binary64"] < 1  # something was computed in less


@pytest.mark.parametrize("dtype, tag", [(np.float64, "f64"), (np.float32, "f32")])
@pytest.mark.parametrize("tol, policy, ladder", [
    (1e-8, "budget", "-"), (1e-3, "paper", "-"), (1e-4, "budget", "binary64,bfloat16,fp8_e4m3,perforate"),
])
def test_equals_cpp_qdot(reference, dtype, tag, tol, policy, ladder):
    x, y = _vectors(2000, 3, spread=8)
    x, y = x.astype(dtype), y.astype(dtype)
    if tag == "f32" and ladder != "-":
        ladder = "binary32,bfloat16,fp8_e4m3,perforate"
    out = reference("qdot", tol, policy, ladder, tag, numbers=np.concatenate([[x.size], x, y]))
    r = ebla.qdot(x, y, tol, policy=policy, ladder=None if ladder == "-" else ladder.split(","))
    assert same_bits([r.value, r.bound, r.quantization_bound, r.accumulation_bound], hex_floats(out[:4]))
    assert list(r.count_per_level) == [int(c) for c in out[4:]]


def test_two_phases_equal_one_call():
    x, y = _vectors(5000, 4)
    plan = ebla.qdot_select(x, y, 1e-4)
    assert isinstance(plan, ebla.QdotPlan) and plan.n == x.size and plan.input_t == 53
    assert plan.ladder == ["binary64", "binary32", "binary16", "perforate"]
    assert plan.level.size == plan.count.size == plan.e_max - plan.e_min + 1
    assert "bin" in str(plan)
    r2 = ebla.qdot_compute(plan, x, y)
    r1 = ebla.qdot(x, y, 1e-4, reuse_plan=False)
    assert same_bits([r1.value, r1.bound], [r2.value, r2.bound])
    assert np.array_equal(r1.count_per_level, r2.count_per_level)
    # the plan of x, y applied to other vectors: still certified
    z = x * (1 + 1e-3)
    r3 = ebla.qdot_compute(plan, z, y)
    assert abs(Fraction(r3.value) - _exact(z[:400], y[:400]) - _exact(z[400:], y[400:])) <= Fraction(r3.bound)


def test_strided_and_mixed_dtypes():
    x, y = _vectors(4000, 5)
    big = np.zeros((4000, 3))
    big[:, 1] = x
    r = ebla.qdot(big[:, 1], y[::-1][::-1], 1e-6)
    assert same_bits([r.value, r.bound], [ebla.qdot(x, y, 1e-6).value, ebla.qdot(x, y, 1e-6).bound])
    x32 = x.astype(np.float32)
    mixed = ebla.qdot(x32, y, 1e-6)  # one float32, one float64: both float64
    assert mixed.levels[0] == "binary64"
    assert same_bits([mixed.value], [ebla.qdot(x32.astype(np.float64), y, 1e-6).value])
    single = ebla.qdot(x32, y.astype(np.float32), 1e-6)
    assert single.levels[0] == "binary32"


@pytest.mark.parametrize("call, message", [
    (lambda: ebla.qdot(np.ones(3), np.ones(4), 1e-3), "x has 3 elements but y has 4"),
    (lambda: ebla.qdot(np.ones(3), np.ones(3), -1.0), "tolerance"),
    (lambda: ebla.qdot(np.ones(3), np.ones(3), 1e-3, policy="greedy"), "greedy"),
    (lambda: ebla.qdot(np.ones(3), np.ones(3), 1e-3, ladder=["binary16", "binary32"]), "ladder"),
    (lambda: ebla.qdot(np.ones((3, 2)), np.ones((3, 2)), 1e-3), "2 dimensions"),
    (lambda: ebla.qdot(np.ones(3, dtype=np.int32), np.ones(3), 1e-3), "int32"),
    (lambda: ebla.qdot_compute(ebla.qdot_select(np.ones(3), np.ones(3)), np.ones(4), np.ones(4)), "length"),
    (lambda: ebla.qdot_compute(ebla.qdot_select(np.ones(3), np.ones(3)), np.ones(3, np.float32),
                               np.ones(3, np.float32)), "double"),
    (lambda: ebla.qdot_compute("plan", np.ones(3), np.ones(3)), "QdotPlan"),
])
def test_errors_are_value_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_gil_is_released_during_the_kernel():
    x, y = _vectors(4_000_000, 6)
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    ebla.qdot(x, y, 1e-6)  # warm up
    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.01)
    before = len(ticks)
    start = time.perf_counter()
    for _ in range(6):
        ebla.qdot(x, y, 1e-6, reuse_plan=False)
    elapsed = time.perf_counter() - start
    during = len(ticks) - before
    stop.set()
    t.join()
    # with the GIL held, the other thread would tick only between the calls (a few times);
    # released, it ticks every half millisecond or so while the kernels run
    assert elapsed > 0.02 and during >= 20, (elapsed, during)


# ---- the stored vector ----------------------------------------------------------------------

@pytest.mark.parametrize("tol", [1e-15, 1e-6, 1e-3, 1e-1])
def test_stored_vector_bound_holds_for_many_y(tol):
    x, _ = _vectors(1500, 11)
    s = ebla.qdot_store(x, tol)
    xs = s.values()
    # the selection's guarantee on x alone: ||x~ - x||_1 <= tol ||x||_1
    err = sum(abs(Fraction(float(a)) - Fraction(float(b))) for a, b in zip(x, xs))
    assert err <= Fraction(tol) * sum(abs(Fraction(float(a))) for a in x)
    assert err <= Fraction(s.error_l1)
    for seed in range(4):
        _, y = _vectors(1500, 100 + seed)
        r = s.dot(y)
        assert isinstance(r, ebla.QdotResult)
        assert abs(Fraction(r.value) - _exact(x, y)) <= Fraction(r.bound)
        assert sum(r.count_per_level) == x.size
        assert r.levels == ["binary64", "binary32", "binary16", "perforate"]
        assert r.passes == 1


def test_stored_vector_holds_fewer_bytes_and_matches_the_cpp_bits():
    x, y = _vectors(100000, 12, spread=6)
    wide = ebla.qdot_store(x, 1e-18)
    narrow = ebla.qdot_store(x, 1e-2)
    assert wide.count_per_level[0] == x.size and wide.bytes >= 8 * x.size
    assert narrow.bytes <= 2.1 * x.size
    assert sum(narrow.count_per_level) == x.size and sum(narrow.tiles_per_level) == narrow.tiles
    assert repr(narrow) == f"<ebla.QdotStored n=100000 tol=0.01 bytes={narrow.bytes}>"
    assert "qdot stored vector: n = 100000" in str(narrow)
    # the same y twice, and a strided y: the same bits as its contiguous copy
    a, b = narrow.dot(y), narrow.dot(np.ascontiguousarray(y))
    assert same_bits(a.value, b.value) and same_bits(a.bound, b.bound)
    y2 = np.repeat(y, 2)[::2]
    assert same_bits(narrow.dot(y2).value, a.value)


def test_stored_vector_refuses_bad_input():
    x, y = _vectors(10, 13)
    with pytest.raises(ValueError, match="qdot_store: tolerance = -1"):
        ebla.qdot_store(x, -1)
    with pytest.raises(ValueError, match="cannot be stored"):
        ebla.qdot_store(x, 1e-3, ladder="binary64,custom:t=8,emin=-6,emax=7")
    bad = x.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match=r"ebla::qdot_store: x\[3\] = nan is not finite"):
        ebla.qdot_store(bad, 1e-3)
    s = ebla.qdot_store(x, 1e-3)
    with pytest.raises(ValueError, match="ebla.QdotStored.dot: y has 9 elements but the stored x has 10"):
        s.dot(y[:9])
    bad = y.copy()
    bad[7] = np.inf
    with pytest.raises(ValueError, match=r"y\[7\] = inf is not finite"):
        s.dot(bad)


def test_a_stored_vector_held_at_exit_is_released_before_kokkos_finalizes():
    code = "import numpy as np, ebla\ns = ebla.qdot_store(np.linspace(-1, 1, 3000), 1e-3)\nprint(s.dot(np.ones(3000)).value)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "deallocated after Kokkos::finalize" not in run.stderr
