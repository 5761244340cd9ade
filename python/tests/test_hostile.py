"""Hostile arguments: sizes beyond memory, CSR arrays that lie about their structure, inf and
NaN in exact products, non-symmetric matrices for CG, and unknown names where they are not
used. Each raises ValueError naming the function, the argument and the value (or gives the
IEEE result), never a crash or another exception."""

import warnings

import numpy as np
import pytest
import scipy.sparse

import ebla


# ---- sizes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2**61, 10**12, 2**64 - 1])
def test_random_unit_vector_beyond_memory_is_refused(n):
    with pytest.raises(ValueError, match=rf"^ebla\.random_unit_vector: n = {n} "):
        ebla.random_unit_vector(n, 1)


@pytest.mark.parametrize("n", [-1, 2**64])
def test_random_unit_vector_outside_a_size_is_refused(n):
    with pytest.raises(ValueError, match=rf"^ebla\.random_unit_vector: n = {n} is outside \[0, "):
        ebla.random_unit_vector(n, 1)


def test_random_unit_vector_of_a_possible_size_is_a_unit_vector():
    v = ebla.random_unit_vector(1000, 1)
    assert v.shape == (1000,) and abs(np.linalg.norm(v) - 1) < 1e-14


def test_problems_beyond_memory_are_refused():
    with pytest.raises(ValueError, match=r"^ebla\.hpccg_problem: nx: .*needs about .* of memory"):
        ebla.hpccg_problem(1200, 1200, 1200)
    with pytest.raises(ValueError, match=r"^ebla\.hpccg_problem: ny = 4294967296 is outside"):
        ebla.hpccg_problem(1, 2**32, 1)
    with pytest.raises(ValueError, match=r"^ebla\.diffusion_problem: nx: .*needs about .* of memory"):
        ebla.diffusion_problem(1290, 1290, 1290)
    with pytest.raises(ValueError, match=r"^ebla\.diffusion_problem: seed = -1 is outside"):
        ebla.diffusion_problem(2, 2, 2, -1)
    with pytest.raises(ValueError, match=r"^ebla\.graph_laplacian: n: .*needs about .* of memory"):
        ebla.graph_laplacian(2**31 - 1, 1e6, 1)


def test_products_beyond_memory_are_refused():
    A, B = np.ones((10**6, 1)), np.ones((1, 10**6))  # 8 MB each, a product of 8 TB
    with pytest.raises(ValueError, match=r"^ebla\.exact_gemm: the 1000000 x 1000000 product needs about"):
        ebla.exact_gemm(A, B)
    with pytest.raises(ValueError, match=r"^ebla\.gemm: a 1000000 x 1 times 1 x 1000000 product needs about"):
        ebla.gemm(A, B)


def test_a_broadcast_view_too_large_to_copy_is_refused():
    x = np.broadcast_to(np.float32(1), (10**13,))  # no memory of its own; a float64 copy: 80 TB
    with pytest.raises(ValueError, match=r"^ebla\.qdot: a copy of x \(10000000000000 values\) needs about"):
        ebla.qdot(x, x)


# ---- CSR structure --------------------------------------------------------------------------

def _csr_with(**arrays):
    """A 3 x 3 CSR matrix whose arrays are then replaced by `arrays` (SciPy does not check)."""
    A = scipy.sparse.csr_matrix(np.array([[2.0, 1, 0], [1, 2, 0], [0, 0, 2]]))
    for name, value in arrays.items():
        setattr(A, name, np.asarray(value))
    return A


@pytest.mark.parametrize("arrays, message", [
    ({"indptr": [0, 2, 1, 5]}, r"A\.indptr decreases from 2 to 1 at 2"),
    ({"indptr": [0, 2, 4]}, r"A\.indptr has 3 entries, not 4"),
    ({"indptr": [1, 2, 4, 5]}, r"A\.indptr\[0\] = 1, not 0"),
    ({"indptr": [0, 2, 4, 4]}, r"A\.indptr ends at 4 but A has 5 indices and 5 values"),
    ({"indptr": [0, 2, 4, 10**12]}, r"A\.indptr ends at 1000000000000 but A has 5 indices"),
    ({"indptr": [0.0, 2, 4, 5]}, r"A\.indptr is a 1-D array of float64, not a 1-D array of integers"),
    ({"indices": [0, 1, 0, 3, 2]}, r"A\.indices\[3\] = 3 is outside \[0, 3\)"),
    ({"indices": [0, 1, 0, -1, 2]}, r"A\.indices\[3\] = -1 is outside \[0, 3\)"),
    ({"data": np.ones(4)}, r"A\.indptr ends at 5 but A has 5 indices and 4 values"),
])
@pytest.mark.parametrize("solve", [lambda A: ebla.cg(A, np.ones(3)), lambda A: ebla.power_method(A)])
def test_csr_arrays_that_lie_are_refused(arrays, message, solve):
    with pytest.raises(ValueError, match=r"^ebla\.(cg|power_method): " + message):
        solve(_csr_with(**arrays))


def test_csc_and_coo_arrays_that_lie_are_refused():
    csc = scipy.sparse.csc_matrix(np.eye(3))
    csc.indptr = np.array([0, 1, 3, 2])
    with pytest.raises(ValueError, match=r"^ebla\.cg: A\.indptr decreases from 3 to 2 at 3"):
        ebla.cg(csc, np.ones(3))
    coo = scipy.sparse.coo_matrix(np.eye(3))
    coo.col = np.array([0, 1, 7], dtype=coo.col.dtype)
    with pytest.raises(ValueError, match=r"^ebla\.cg: A\.col\[2\] = 7 is outside \[0, 3\)"):
        ebla.cg(coo, np.ones(3))


def test_an_empty_matrix_of_huge_order_is_refused_before_scipy_converts_it():
    A = scipy.sparse.coo_matrix((2**31 - 1, 2**31 - 1))
    with pytest.raises(ValueError, match=r"^ebla\.cg: the 2147483647 x 2147483647 matrix A .*needs about"):
        ebla.cg(A, np.ones(1))


# ---- inf and NaN in exact products ----------------------------------------------------------

def test_exact_gemm_of_inf_and_nan_follows_ieee_arithmetic():
    inf, nan = np.inf, np.nan
    assert ebla.exact_gemm([[inf, 1.0]], np.ones((2, 1)))[0, 0] == inf
    assert np.isnan(ebla.exact_gemm([[nan, 1.0]], np.ones((2, 1)))[0, 0])
    assert np.isnan(ebla.exact_gemm([[inf, 1.0]], [[0.0], [1.0]])[0, 0])  # inf * 0
    assert np.isnan(ebla.exact_gemm([[inf, -inf]], np.ones((2, 1)))[0, 0])  # inf - inf
    assert ebla.exact_gemm([[-inf, 1e308]], [[2.0], [10.0]])[0, 0] == -inf


def test_exact_gemm_with_specials_equals_the_ieee_products_summed():
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((6, 5)), rng.standard_normal((5, 7))
    A[rng.random(A.shape) < 0.15] = np.inf
    A[rng.random(A.shape) < 0.1] = -np.inf
    B[rng.random(B.shape) < 0.1] = np.nan
    B[rng.random(B.shape) < 0.15] = 0.0
    C = ebla.exact_gemm(A, B)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            with np.errstate(invalid="ignore"):
                products = A[i] * B[:, j]  # elementwise: IEEE products
            if np.all(np.isfinite(products)):
                assert np.isfinite(C[i, j]) and abs(C[i, j] - products.sum()) <= 1e-14 * np.abs(products).sum()
            else:
                with np.errstate(invalid="ignore"):
                    expected = products[~np.isfinite(products)].sum()  # inf, -inf or NaN in any order
                assert same_value(C[i, j], expected), (i, j, C[i, j], expected)


def same_value(a, b):
    return (np.isnan(a) and np.isnan(b)) or a == b


def test_exact_gemm_of_finite_matrices_is_unchanged():
    A = np.array([[1e308, 1e308], [1.0, 2.0**-60]])
    C = ebla.exact_gemm(A, np.array([[1.0], [-1.0]]))
    assert C[0, 0] == 0.0 and C[1, 0] == 1.0 - 2.0**-60


# ---- symmetry -------------------------------------------------------------------------------

NONSYMMETRIC = np.array([[4.0, 1.0, 0.0], [2.0, 4.0, 1.0], [0.0, 1.0, 4.0]])


@pytest.mark.parametrize("A", [NONSYMMETRIC, scipy.sparse.csr_matrix(NONSYMMETRIC)], ids=["dense", "csr"])
def test_cg_refuses_a_nonsymmetric_matrix_unless_told_not_to_check(A):
    with pytest.raises(ValueError, match=r"^ebla\.cg: .*not symmetric: A\(0, 1\) = 1(\.0)? but A\(1, 0\) = 2(\.0)? "
                                         r".*check_symmetry=False"):
        ebla.cg(A, np.ones(3))
    r = ebla.cg(A, np.ones(3), check_symmetry=False, max_iterations=50)
    assert r.iterations >= 1 and r.x.shape == (3,)


def test_cg_accepts_a_symmetric_matrix_and_nan_is_not_symmetric():
    S = NONSYMMETRIC.copy()
    S[1, 0] = 1.0
    assert ebla.cg(S, np.ones(3)).status == "converged"
    S[2, 2] = np.nan
    with pytest.raises(ValueError, match=r"^ebla\.cg: .*A\(2, 2\) = nan"):
        ebla.cg(S, np.ones(3))


@pytest.mark.parametrize("A", [NONSYMMETRIC, scipy.sparse.csr_matrix(NONSYMMETRIC)], ids=["dense", "csr"])
def test_power_method_warns_of_a_nonsymmetric_matrix_as_the_command_does(A):
    with pytest.warns(RuntimeWarning, match=r"^ebla\.power_method: .*not symmetric"):
        r = ebla.power_method(A)
    assert np.isfinite(r.eigenvalue)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ebla.power_method(A, check_symmetry=False)


# ---- unknown names --------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: ebla.cg(np.eye(3), np.ones(3), format="bfloat61"), r"ebla\.cg: format: .*'bfloat61'"),
    (lambda: ebla.cg(np.eye(3), np.ones(3), dot="auto", format="bfloat61"), r"ebla\.cg: format: .*'bfloat61'"),
    (lambda: ebla.power_method(np.eye(3), format="bfloat61"), r"ebla\.power_method: format: .*'bfloat61'"),
    (lambda: ebla.cg(np.eye(3), np.ones(3), qdot_policy="generous"), r"ebla\.cg: qdot_policy: .*'generous'"),
    (lambda: ebla.cg(np.eye(3), np.ones(3), ladder="binary64,bfloat61"), r"ebla\.cg: ladder: .*'bfloat61'"),
    (lambda: ebla.cg(np.eye(3), np.ones(3), dot="approximately"), r"ebla\.cg: unknown dot policy 'approximately'"),
    (lambda: ebla.cg(np.eye(3), np.ones(3), norm="euclid"), r"ebla\.cg: unknown norm 'euclid'"),
    (lambda: ebla.cg(np.eye(3), np.ones(3), stop="never"), r"ebla\.cg: unknown stop test 'never'"),
    (lambda: ebla.gemm(np.eye(2), np.eye(2), tolerance=1e-3, input="bfloat61"), r"ebla\.gemm: input: .*'bfloat61'"),
    (lambda: ebla.gemm(np.eye(2), np.eye(2), tolerance=1e-3, engine="abacus"), r"ebla\.gemm: engine: .*'abacus'"),
    (lambda: ebla.gemm(np.eye(2), np.eye(2), tolerance=1e-3, unit="abacus"), r"ebla\.gemm: unit: .*'abacus'"),
    (lambda: ebla.round(1.0, "bfloat61"), r"ebla\.round: format: .*'bfloat61'"),
    (lambda: ebla.round(1.0, "bfloat16", "sideways"), r"ebla\.round: mode: .*'sideways'"),
    (lambda: ebla.qdot(np.ones(3), np.ones(3), policy="generous"), r"ebla\.qdot: policy: .*'generous'"),
    (lambda: ebla.qdot_select(np.ones(3), np.ones(3), ladder=["binary64", "bfloat61"]),
     r"ebla\.qdot_select: ladder: .*'bfloat61'"),
    (lambda: ebla.format_info("bfloat61"), r"ebla\.format_info: name: .*'bfloat61'"),
    (lambda: ebla.format_info(16), r"ebla\.format_info: name = 16 is not a name"),
    (lambda: ebla.qdot(np.ones(3), np.ones(3), ladder=7), r"ebla\.qdot: ladder 7 is not a list"),
])
def test_unknown_names_are_refused_even_where_unused(call, message):
    with pytest.raises(ValueError, match="^" + message):
        call()


# ---- numbers and integers -------------------------------------------------------------------

def test_numbers_too_large_for_their_type_are_refused():
    with pytest.raises(ValueError, match=r"^ebla\.qdot: tol = 1000.* is not a number"):
        ebla.qdot(np.ones(3), np.ones(3), tol=10**400)
    with pytest.raises(ValueError, match=r"^ebla\.cg: max_iterations = 2147483648 is outside"):
        ebla.cg(np.eye(3), np.ones(3), max_iterations=2**31)
    with pytest.raises(ValueError, match=r"^ebla\.round: x = 1000.* is not a number"):
        ebla.round(10**400, "binary16")
