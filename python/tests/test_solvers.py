"""ebla.cg and ebla.power_method: the C++ API bit for bit on the same matrices, SciPy's CG and
eigensolver on the same problems, CSR/CSC/dense inputs, every dot policy, and the errors."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse
import scipy.sparse.linalg

import ebla
from conftest import hex_floats, same_bits


@pytest.fixture(scope="module")
def gr30(source_dir):
    """HB/gr_30_30 (n = 900, cond 195) as SciPy reads it, its path, and b = A 1 + a ripple."""
    path = source_dir / "data" / "matrices" / "gr_30_30.mtx"
    A = scipy.sparse.csr_matrix(scipy.io.mmread(str(path)))
    b = A @ np.ones(A.shape[0]) + np.sin(np.arange(A.shape[0]))
    return A, path, b


@pytest.mark.parametrize("dot, kwargs", [
    ("exact", {}), ("qdot", {"qdot_tol": 1e-4}), ("fixed:bfloat16", {"dot": "fixed", "format": "bfloat16"}),
    ("auto", {"dot": "auto"}),
])
def test_cg_equals_cpp_cg(reference, gr30, dot, kwargs):
    A, path, b = gr30
    out = reference("cg", path, dot, kwargs.get("qdot_tol", 1), 1e-9, 0, numbers=np.concatenate([[b.size], b]))
    r = ebla.cg(A, b, tol=1e-9, **kwargs)
    n = b.size
    assert r.iterations == int(out[0])
    assert same_bits([r.true_residual], hex_floats(out[1:2]))
    assert same_bits(r.x, hex_floats(out[2:2 + n]))
    rest = hex_floats(out[2 + n:]).reshape(-1, 3)
    assert same_bits(r.history.residual, rest[:, 0])
    assert same_bits(r.history.pq_value, rest[:, 1])
    assert same_bits(r.history.pq_bound, rest[:, 2])
    assert r.status == "converged"


def test_csc_dense_and_csr_agree(gr30):
    A, _, b = gr30
    r = ebla.cg(A, b, tol=1e-9, qdot_tol=1e-6)
    rc = ebla.cg(A.tocsc(), b, tol=1e-9, qdot_tol=1e-6)
    assert rc.iterations == r.iterations and same_bits(rc.x, r.x)
    shuffled = A.tocoo()  # entries in another order, with the row indices unsorted
    order = np.random.default_rng(0).permutation(shuffled.nnz)
    coo = scipy.sparse.coo_matrix((shuffled.data[order], (shuffled.row[order], shuffled.col[order])), A.shape)
    assert same_bits(ebla.cg(coo, b, tol=1e-9, qdot_tol=1e-6).x, r.x)
    rd = ebla.cg(A.toarray(), b, tol=1e-9, qdot_tol=1e-6)
    assert rd.status == "converged" and abs(rd.iterations - r.iterations) <= 2
    assert np.linalg.norm(rd.x - r.x) <= 1e-6 * np.linalg.norm(r.x)
    strided = np.zeros((b.size, 2))
    strided[:, 0] = b
    assert same_bits(ebla.cg(A, strided[:, 0], tol=1e-9, qdot_tol=1e-6).x, r.x)


@pytest.mark.parametrize("kwargs", [{}, {"qdot_tol": 1e-6}, {"qdot_tol": 1e-2, "qdot_policy": "paper"},
                                    {"jacobi": True}])
def test_cg_agrees_with_scipy(gr30, kwargs):
    A, _, b = gr30
    tol = 1e-10
    r = ebla.cg(A, b, tol=tol, norm="relative", **kwargs)
    steps = []
    xs, info = scipy.sparse.linalg.cg(A, b, tol=tol, atol=0.0, maxiter=10000, callback=lambda xk: steps.append(1))
    assert info == 0 and r.status == "converged"
    assert r.true_residual <= 10 * tol * np.linalg.norm(b)
    cond = 195.0
    assert np.linalg.norm(r.x - xs) <= 10 * cond * tol * np.linalg.norm(xs)
    if kwargs.get("jacobi"):  # scipy's CG runs without a preconditioner here
        return
    if "qdot_tol" in kwargs:  # the approximation costs a few iterations (12% on this matrix)
        assert len(steps) <= r.iterations <= 1.25 * len(steps), (r.iterations, len(steps))
    else:  # the same algorithm in exact dot products: the same count, give or take rounding
        assert abs(r.iterations - len(steps)) <= 2, (r.iterations, len(steps))


def test_history_and_precision_mix(gr30):
    A, _, b = gr30
    r = ebla.cg(A, b, tol=1e-8, qdot_tol=1e-3, record_levels=True)
    h = r.history
    k = r.iterations
    assert r.levels == ["binary64", "binary32", "binary16", "perforate"]
    assert h.residual.shape == (k,) and h.pq_fraction.shape == (k, 4)
    assert np.allclose(h.pq_fraction.sum(axis=1) + h.pq_zero_fraction, 1.0)
    assert np.all(h.pq_tolerance == 1e-3)
    assert h.pq_levels.shape == (k, b.size) and h.pq_levels.dtype == np.uint8
    assert h.residual[-1] <= 1e-8 < h.residual[0]
    assert np.all(np.isfinite(h.pq_bound)) and np.all(h.pq_bound >= 0)
    assert "residual" in h.names()


def test_power_method_equals_cpp(reference):
    n, degree, seed = 3000, 8.0, 3
    out = reference("power", n, degree, seed, "qdot", 1e-4, 1e-6)
    A = ebla.graph_laplacian(n, degree, seed)
    r = ebla.power_method(A, qdot_tol=1e-4, tol=1e-6)
    assert r.iterations == int(out[0])
    assert same_bits([r.eigenvalue, r.residual], hex_floats(out[1:3]))
    rest = hex_floats(out[3:]).reshape(-1, 2)
    assert same_bits(r.history.eigenvalue, rest[:, 0])
    assert same_bits(r.history.xy_bound, rest[:, 1])


@pytest.mark.parametrize("kwargs", [{}, {"qdot_tol": 1e-5}, {"dot": "fixed", "format": "binary32"}, {"dot": "auto"}])
def test_power_method_finds_an_eigenvalue(kwargs):
    A = ebla.graph_laplacian(1500, 6.0, 9)
    r = ebla.power_method(A, tol=1e-8, max_iterations=2000, **kwargs)
    top = scipy.sparse.linalg.eigsh(A, k=6, which="LA", return_eigenvectors=False)
    # symmetric A: some eigenvalue lies within ||A x - lambda x|| of lambda (unit x)
    assert np.min(np.abs(top - r.eigenvalue)) <= r.residual * 1.001 + 1e-12
    assert abs(np.linalg.norm(r.eigenvector) - 1) < 1e-6
    assert r.history.eigenvalue.size == r.iterations + 1  # entry 0 is the start


def test_problems_match_their_definitions(source_dir):
    A, b = ebla.hpccg_problem(3, 4, 5)
    assert A.shape == (60, 60) and (A != A.T).nnz == 0
    assert np.array_equal(A @ np.ones(60), b) and A.diagonal().tolist() == [27.0] * 60
    small = ebla.read_matrix_market(source_dir / "data" / "matrices" / "hpccg_2x2x2.mtx")
    A2, _ = ebla.hpccg_problem(2, 2, 2)
    assert (small != A2).nnz == 0
    L = ebla.graph_laplacian(100, 4.0, 1)
    assert np.allclose(L @ np.ones(100), 0)
    v = ebla.random_unit_vector(50, 2)
    assert abs(np.linalg.norm(v) - 1) < 1e-15 and np.all(v >= 0)


def test_diffusion_problem_matches_its_definition():
    A, b = ebla.diffusion_problem(5, 4, 3, seed=2)
    assert A.shape == (60, 60) and (A != A.T).nnz == 0
    assert A.nnz == 60 + 2 * (4 * 12 + 5 * 3 * 3 + 20 * 2)
    assert np.array_equal(A @ np.ones(60), b)  # entries on a grid of 2^-38: exact in any order
    d = A.diagonal()
    off = np.asarray(abs(A).sum(axis=1)).ravel() - d
    assert np.all(d > 0) and np.all(d >= off) and np.count_nonzero(d > off) == 60 - 3 * 2 * 1
    assert np.count_nonzero(A.data != A.data.astype(np.float32)) > 0.9 * A.nnz
    A2, b2 = ebla.diffusion_problem(5, 4, 3, seed=2)
    assert (A2 != A).nnz == 0 and np.array_equal(b2, b)
    r = ebla.cg(A, b, tol=1e-10, norm="relative", jacobi=True)
    assert r.status == "converged" and np.max(np.abs(r.x - 1)) < 1e-6
    with pytest.raises(ValueError, match=r"^ebla\.diffusion_problem: ny: 0 is not a positive size"):
        ebla.diffusion_problem(2, 0, 2)


@pytest.mark.parametrize("call, message", [
    (lambda A, b: ebla.cg(A[:, :-1], b), "not square"),
    (lambda A, b: ebla.cg(A, b[:-1]), "900 rows but b has 899"),
    (lambda A, b: ebla.cg(A, b, dot="qdot"), "qdot_tol"),
    (lambda A, b: ebla.cg(A, b, dot="fixed"), "format"),
    (lambda A, b: ebla.cg(A, b, dot="approximate"), "approximate"),
    (lambda A, b: ebla.cg(A, b, tol=-1.0), "tolerance"),
    (lambda A, b: ebla.cg(A, b, norm="maximum"), "maximum"),
    (lambda A, b: ebla.cg(A, b, qdot_tol=0.0), "tolerance"),
    (lambda A, b: ebla.cg(A, b * np.nan), "NaN"),
    (lambda A, b: ebla.cg(A.astype(np.int64), b), "int64"),
    (lambda A, b: ebla.power_method(A, max_iterations=0), "max_iterations"),
    (lambda A, b: ebla.power_method(A, np.ones(3)), "x0 has 3"),
    (lambda A, b: ebla.graph_laplacian(1, 1.0, 0), "n"),
])
def test_errors_are_value_errors(gr30, call, message):
    A, _, b = gr30
    with pytest.raises(ValueError, match=message):
        call(A, b)


@pytest.mark.parametrize("storage", ["binary32", "bfloat16", "block16", "block8", "p=binary16,r=binary32", "auto"])
def test_cg_storage_certifies_its_residual(storage):
    A, b = ebla.hpccg_problem(8, 8, 8)
    r = ebla.cg(A, b, tol=1e-10, norm="relative", storage=storage)
    assert r.status == "converged"
    assert r.storage == storage
    assert r.bytes_moved > 0
    assert r.true_residual <= r.tolerance_used
    # numpy's b - A x in binary64 loses about u ||b|| to cancellation; ebla's is double-double
    assert abs(np.linalg.norm(b - A @ r.x) - r.true_residual) <= 1e-13 * np.linalg.norm(b)


def test_cg_storage_refuses_unknown_names_and_dense_matrices():
    A, b = ebla.hpccg_problem(3, 3, 3)
    with pytest.raises(ValueError, match="ebla.cg: storage: unknown storage 'fp8'"):
        ebla.cg(A, b, storage="fp8")
    with pytest.raises(ValueError, match="storage binary32 needs an operator that reads stored vectors"):
        ebla.cg(A.toarray(), b, storage="binary32")
    with pytest.raises(ValueError, match="storage = 32 is not a name"):
        ebla.cg(A, b, storage=32)


@pytest.mark.parametrize("storage", ["binary32", "bfloat16", "block16", "auto"])
def test_power_storage_certifies_its_eigenvalue(storage):
    L = ebla.graph_laplacian(3000, 10.0, 1)
    # the 16-bit formats' rounding of the iterate slows the last digits (bfloat16: 802 iterations
    # to 1e-7, not 1e-8 within 3000)
    tol = 1e-8 if storage in ("binary32", "auto") else 1e-3
    plain = ebla.power_method(L, tol=tol, max_iterations=3000)
    r = ebla.power_method(L, tol=tol, max_iterations=3000, storage=storage)
    assert r.status == "converged"
    assert r.storage == storage
    assert r.bytes_moved > 0 and plain.bytes_moved == 0
    x = r.eigenvector
    assert abs(np.linalg.norm(x) - 1) <= 1e-12
    # the reported residual is the returned pair's
    assert abs(np.linalg.norm(L @ x - r.eigenvalue * x) - r.residual) <= 1e-9 * r.residual + 1e-14
    # binary32 and auto keep the binary64 method's eigenvalue within tol
    if storage in ("binary32", "auto"):
        assert abs(r.eigenvalue - plain.eigenvalue) <= tol


def test_power_storage_refuses_dense_matrices_and_two_formats():
    L = ebla.graph_laplacian(50, 4.0, 1)
    with pytest.raises(ValueError, match="storage binary32 needs an operator that reads stored vectors"):
        ebla.power_method(L.toarray(), storage="binary32")
    with pytest.raises(ValueError, match="the power method stores one vector"):
        ebla.power_method(L, storage="p=binary32,r=binary64")
