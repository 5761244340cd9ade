"""Every public function of ebla on random, mostly hostile arguments (a fixed seed, a bounded
number of calls): random shapes and dtypes, sizes huge or negative, inf and NaN, unknown names
and sparse matrices whose arrays lie. Each call must return or raise ValueError or TypeError
(no other exception, no crash)."""

import time
import warnings

import numpy as np
import pytest
import scipy.sparse

import ebla

CALLS = 3000
SECONDS = 50


class Draw:
    """Random arguments, plausible or hostile, from one seeded generator."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def pick(self, options):
        return options[self.rng.integers(len(options))]

    def often(self, plausible, hostile):
        """`plausible` seven times in ten, else the value `hostile()` draws."""
        return plausible if self.rng.random() < 0.7 else hostile()

    def size(self):
        return int(self.pick([0, 1, 2, 3, 5, 8, 17, -1, -(2**40), 2**31, 2**61, 10**12, 2**64, 2**70]))

    def small(self):
        return int(self.rng.integers(0, 9))

    def number(self):
        return self.pick([0.0, 1e-8, 1e-3, 0.5, 1.0, 7.0, -1.0, np.inf, -np.inf, np.nan, 1e308, 5e-324,
                          10**400, "x", None, 2**64])

    def integer(self):
        return self.pick([0, 1, 2, 3, -1, 10, 2**31, -(2**31) - 1, 2**64, 1.5, "3", None, True])

    def name(self):
        return self.pick(["binary64", "binary32", "bfloat16", "binary16", "fp8_e4m3", "bfloat61", "", "nearest_even",
                          "stochastic", "sideways", "budget", "paper", "exact", "qdot", "fixed", "auto", "emulated",
                          "sgemm", "dgemm", "fma_binary32", "absolute", "relative", "certified", "approximate",
                          "custom:t=5,emin=-3,emax=4", "custom:t=0", None, 16, ["binary64"]])

    def ladder(self):
        return self.pick([None, "binary64,binary32,binary16,perforate", ["binary64", "bfloat61"], "", "perforate",
                          ["binary32", 3], 7])

    def values(self, shape):
        """An array of `shape` with some inf, NaN, zeros and huge or tiny entries."""
        a = np.array(self.rng.standard_normal(shape) * 10.0 ** self.rng.integers(-300, 300, shape))
        specials = np.array([np.inf, -np.inf, np.nan, 0.0, 5e-324, 1.7e308])
        mask = self.rng.random(shape) < self.pick([0.0, 0.0, 0.05, 0.5])
        a[mask] = self.rng.choice(specials, int(mask.sum()))
        return a

    def array(self, ndim=None):
        """Usually a float array of `ndim` dimensions; sometimes the wrong dtype, rank or layout."""
        ndim = self.pick([0, 1, 2, 3]) if ndim is None else ndim
        shape = tuple(self.small() for _ in range(ndim))
        kind = self.pick(["f64", "f64", "f64", "f32", "strided", "int", "complex", "object", "list", "broadcast"])
        a = self.values(shape)
        if kind == "f32":
            return a.astype(np.float32)
        if kind == "strided":
            return np.repeat(a, 2, axis=-1)[..., ::2] if ndim else a
        if kind == "int":
            return np.arange(int(np.prod(shape))).reshape(shape)
        if kind == "complex":
            return a.astype(np.complex128)
        if kind == "object":
            return np.array([None] * int(np.prod(shape)), dtype=object).reshape(shape)
        if kind == "list":
            return a.tolist()
        huge = 10**13 if ndim == 1 else 10**6
        return np.broadcast_to(np.float32(1), tuple(self.pick([1, 3, huge]) for _ in range(ndim)))

    def square(self):
        """A square matrix: dense, or sparse in some format with arrays that may lie."""
        n = self.small()
        a = self.values((n, n))
        a[self.rng.random((n, n)) < 0.5] = 0.0
        if self.rng.random() < 0.5:
            a = a + a.T
            if self.rng.random() < 0.5:  # and diagonally dominant: SPD where its values are finite
                with np.errstate(all="ignore"):
                    a[np.diag_indices(n)] = np.abs(a).sum(axis=1) + 1
        form = self.pick(["dense", "csr", "csc", "coo", "lil", "f32", "int", "huge", "rect"])
        if form == "dense":
            return a
        if form == "rect":
            return self.values((n, n + 1))
        if form == "huge":
            return scipy.sparse.coo_matrix((self.pick([2**31 - 1, 2**31, 10**7]),) * 2)
        A = getattr(scipy.sparse, f"{'csr' if form in ('f32', 'int') else form}_matrix")(a)
        if form == "f32":
            A = A.astype(np.float32)
        if form == "int":
            A = A.astype(np.int64)
        if form in ("csr", "csc") and self.rng.random() < 0.5:
            self.corrupt(A, ["indptr", "indices", "data"])
        if form == "coo" and self.rng.random() < 0.5:
            self.corrupt(A, ["row", "col", "data"])
        return A

    def corrupt(self, A, names):
        name = self.pick(names)
        arr = np.array(getattr(A, name))
        change = self.pick(["shorter", "longer", "negative", "large", "float", "swap"])
        if change == "shorter":
            arr = arr[:-1]
        elif change == "longer":
            arr = np.append(arr, arr[-1:] if arr.size else [0])
        elif change == "float":
            arr = arr.astype(np.float64)
        elif arr.size:
            k = int(self.rng.integers(arr.size))
            if change == "swap" and arr.size > 1:
                arr[[0, k]] = arr[[k, 0]]
            else:
                arr[k] = -1 if change == "negative" else 2**30
        setattr(A, name, arr)

    def vector(self, n):
        return self.values(n) if self.rng.random() < 0.8 and 0 <= n <= 100 else self.array()


def calls(d):
    """One random call of each public function, as (name, thunk)."""
    n = d.small()
    x, y = d.often(d.values(n), d.array), d.often(d.values(n), d.array)
    yield "formats", lambda: ebla.formats()
    yield "matrix_units", lambda: ebla.matrix_units()
    yield "format_info", lambda: ebla.format_info(d.often("bfloat16", d.name))
    yield "round", lambda: ebla.round(d.often(x, d.number), d.often("binary16", d.name),
                                      d.often("stochastic", d.name),
                                      rng=d.pick([None, 3, -1, 2**64, np.random.default_rng(1), "x"]))
    yield "qdot", lambda: ebla.qdot(x, y, d.often(1e-3, d.number), d.often("budget", d.name),
                                    d.often(None, d.ladder), plan_margin=d.often(-1, d.integer))
    plan = ebla.qdot_select(np.ones(3), np.ones(3))
    yield "qdot_select", lambda: ebla.qdot_select(x, y, d.often(1e-3, d.number), d.often("paper", d.name),
                                                  d.often(None, d.ladder))
    yield "qdot_compute", lambda: ebla.qdot_compute(d.often(plan, lambda: "plan"), x, y)
    k = d.small()
    A, B = d.often(d.values((n, k)), lambda: d.array(2)), d.often(d.values((k, 3)), lambda: d.array(2))
    yield "gemm", lambda: ebla.gemm(A, B, d.pick([None, d.number()]), d.often("binary16", d.name),
                                    d.often(1, d.integer), d.often("emulated", d.name), d.often("fma_binary32", d.name),
                                    failure=d.often(0.01, d.number))
    yield "exact_gemm", lambda: ebla.exact_gemm(A, B)
    M = d.square()
    m = M.shape[0]
    yield "cg", lambda: ebla.cg(M, d.vector(m), tol=d.often(1e-6, d.number), norm=d.often("relative", d.name),
                                stop=d.often("exact_norm", d.name), max_iterations=d.often(20, d.integer),
                                dot=d.often(None, d.name), qdot_tol=d.often(None, d.number),
                                qdot_policy=d.often("budget", d.name), ladder=d.often(None, d.ladder),
                                format=d.often(None, d.name), stall_window=d.often(500, d.integer),
                                check_symmetry=d.pick([True, False]))
    yield "power_method", lambda: ebla.power_method(M, d.pick([None, d.vector(m)]), tol=d.often(1e-6, d.number),
                                                    max_iterations=d.often(20, d.integer),
                                                    dot=d.often(None, d.name), format=d.often(None, d.name),
                                                    seed=d.often(1, d.integer), check_symmetry=d.pick([True, False]))
    yield "hpccg_problem", lambda: ebla.hpccg_problem(d.often(2, d.size), d.often(3, d.size), 2)
    yield "diffusion_problem", lambda: ebla.diffusion_problem(d.often(2, d.size), 3, d.often(2, d.size),
                                                              d.often(1, d.integer))
    yield "graph_laplacian", lambda: ebla.graph_laplacian(d.often(30, d.size), d.often(4.0, d.number),
                                                          d.often(1, d.integer))
    yield "random_unit_vector", lambda: ebla.random_unit_vector(d.often(5, d.size), d.often(1, d.integer))
    yield "read_matrix_market", lambda: ebla.read_matrix_market(d.pick(["/nonexistent.mtx", "/dev/null", 3]))


def test_every_entry_point_returns_or_raises_value_or_type_error():
    d = Draw(20240611)
    outcomes = {}
    start = time.monotonic()
    count = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-symmetric matrices for the power method, NumPy's overflows
        while count < CALLS and time.monotonic() - start < SECONDS:
            for name, call in calls(d):
                count += 1
                try:
                    call()
                    outcome = "returned"
                except (ValueError, TypeError):
                    outcome = "refused"
                except Exception as e:  # noqa: BLE001 - what this test looks for
                    pytest.fail(f"ebla.{name} raised {type(e).__name__}: {e}")
                outcomes.setdefault(name, set()).add(outcome)
    assert count >= 500, f"only {count} calls in {SECONDS} s"
    print(f"{count} calls:", {name: sorted(o) for name, o in outcomes.items()})
    # the draws reach both outcomes of the functions that take hostile arguments
    for name in ["round", "qdot", "gemm", "exact_gemm", "cg", "power_method", "random_unit_vector"]:
        assert outcomes.get(name) == {"returned", "refused"}, (name, outcomes.get(name))
