"""ebla.cg called as scipy.sparse.linalg.cg: rtol and atol, maxiter, M, callback, LinearOperator
A and M, the (x, info) pair and the short repr, against SciPy's CG on the SPD matrices of
data/matrices; and the refusals of conflicting or malformed arguments."""

import inspect

import numpy as np
import pytest
import scipy.io
import scipy.sparse
import scipy.sparse.linalg

import ebla
from conftest import same_bits


def _matrix(source_dir, name):
    A = scipy.sparse.csr_matrix(scipy.io.mmread(str(source_dir / "data" / "matrices" / f"{name}.mtx")))
    b = A @ np.ones(A.shape[0]) + np.sin(np.arange(A.shape[0]))
    return A, b


def _scipy_cg(A, b, rtol, atol=0.0, **kwargs):
    """SciPy's CG with relative tolerance rtol (called tol before SciPy 1.12), and its iterations."""
    steps = []
    key = "rtol" if "rtol" in inspect.signature(scipy.sparse.linalg.cg).parameters else "tol"
    x, info = scipy.sparse.linalg.cg(A, b, atol=atol, callback=lambda xk: steps.append(1), **{key: rtol}, **kwargs)
    return x, info, len(steps)


def _operator(shape, matvec):
    """An operator known only by .shape and .matvec (SciPy's LinearOperator checks what its
    matvec returns; this one passes anything on)."""
    return type("Operator", (), {"shape": shape, "matvec": staticmethod(matvec)})()


def _residual(A, b, x):
    """||b - A x|| from SciPy's product (binary64; within about u ||A|| ||x|| of the exact one)."""
    return np.linalg.norm(b - A @ x)


# The SPD matrices of data/matrices, each with and without Jacobi (bcsstk13, cond 1e10, only with
# Jacobi: SciPy's CG does not reach rtol=1e-8 on it unpreconditioned within 10 n iterations).
CASES = [("gr_30_30", False), ("gr_30_30", True), ("1138_bus", False), ("1138_bus", True),
         ("bcsstk13", True), ("hpccg_2x2x2", False), ("hpccg_2x2x2", True)]


@pytest.mark.parametrize("name, jacobi", CASES)
def test_same_rtol_as_scipy_meets_the_target(source_dir, name, jacobi):
    A, b = _matrix(source_dir, name)
    rtol = 1e-8
    D = scipy.sparse.diags(1 / A.diagonal()).tocsr() if jacobi else None
    xs, info, steps = _scipy_cg(A, b, rtol, M=D, maxiter=20000)
    assert info == 0
    r = ebla.cg(A, b, rtol=rtol, maxiter=20000, M="jacobi" if jacobi else None)
    assert r.status == "converged" and r.info == 0
    tau = rtol * np.linalg.norm(b)
    assert r.tolerance_used == pytest.approx(tau, rel=1e-12)
    assert r.true_residual <= r.tolerance_used  # ebla's certificate: double-double ||b - A x||
    assert _residual(A, b, r.x) <= tau * (1 + 1e-6)
    # the same algorithm, rounded differently: the same count on the short runs, a few percent
    # on 1138_bus's 2500 iterations
    assert abs(r.iterations - steps) <= 2 + 0.05 * steps, (r.iterations, steps)
    # M as a matrix (diag(A)^-1) is Jacobi's z = D^-1 r: the same products, the same bits
    if jacobi:
        rm = ebla.cg(A, b, rtol=rtol, maxiter=20000, M=D)
        assert rm.iterations == r.iterations and same_bits(rm.x, r.x)


def test_atol_dominates(source_dir):
    A, b = _matrix(source_dir, "1138_bus")
    atol = 1e-3 * np.linalg.norm(b)
    r = ebla.cg(A, b, rtol=1e-12, atol=atol)
    assert r.status == "converged" and r.tolerance_used == atol
    assert r.true_residual <= atol and _residual(A, b, r.x) <= atol * (1 + 1e-9)
    history = r.history.residual
    assert history[-1] <= atol < history[-2]  # it stopped at the first iterate that met atol
    tight = ebla.cg(A, b, rtol=1e-12)  # rtol alone goes on much longer
    assert tight.tolerance_used < 1e-6 * atol and tight.iterations > r.iterations
    _, info, steps = _scipy_cg(A, b, 1e-12, atol=atol)
    assert info == 0 and abs(r.iterations - steps) <= 2 + 0.05 * steps, (r.iterations, steps)
    # rtol=0: atol alone
    r0 = ebla.cg(A, b, rtol=0, atol=atol)
    assert r0.tolerance_used == atol and r0.iterations == r.iterations and same_bits(r0.x, r.x)


def test_rtol_is_relative_and_tol_absolute(source_dir):
    A, b = _matrix(source_dir, "gr_30_30")
    b = 1e4 * b
    scipy_style = ebla.cg(A, b)  # SciPy's default: rtol=1e-5, atol=0
    assert scipy_style.tolerance_used == pytest.approx(1e-5 * np.linalg.norm(b), rel=1e-12)
    assert ebla.cg(A, b, tol=1e-3).tolerance_used == 1e-3
    relative = ebla.cg(A, b, tol=1e-5, norm="relative")
    assert relative.tolerance_used == scipy_style.tolerance_used
    assert relative.iterations == scipy_style.iterations and same_bits(relative.x, scipy_style.x)


def _counted(A):
    """A as a LinearOperator whose products SciPy computes, and the count of its products."""
    calls = [0]

    def matvec(x):
        calls[0] += 1
        return A @ x
    return scipy.sparse.linalg.LinearOperator(A.shape, matvec=matvec, dtype=np.float64), calls


def test_linear_operator_gives_the_iterates_of_the_sparse_matrix():
    # A tridiagonal SPD matrix (a 1-D diffusion with coefficients in [1, 101]): with at most
    # three entries a row, ebla's CSR product and SciPy's both sum each row in column order,
    # so the operator must give the sparse matrix's iterates bit for bit.
    n = 300
    k = 1 + 100 * np.random.default_rng(1).random(n + 1)
    A = scipy.sparse.diags([-k[1:-1], k[:-1] + k[1:], -k[1:-1]], [-1, 0, 1]).tocsr()
    b = np.sin(np.arange(n)) + 1
    op, calls = _counted(A)
    seen_op, seen_sparse = [], []
    r = ebla.cg(A, b, rtol=1e-10, callback=seen_sparse.append)
    ro = ebla.cg(op, b, rtol=1e-10, callback=seen_op.append)
    assert r.status == ro.status == "converged" and ro.iterations == r.iterations > 100
    # one product an iteration and one for the true residual (x0 = 0: r_0 = b, no product)
    assert calls[0] == r.iterations + 1
    assert same_bits(ro.x, r.x) and same_bits(ro.history.residual, r.history.residual)
    assert len(seen_op) == r.iterations and all(same_bits(u, v) for u, v in zip(seen_op, seen_sparse))
    # the true residual from SciPy's products: within rounding of ebla's double-double one
    assert ro.true_residual == pytest.approx(r.true_residual, rel=1e-4) and ro.true_residual <= ro.tolerance_used
    # anything with .matvec and .shape serves, and so does aslinearoperator
    assert same_bits(ebla.cg(_operator(A.shape, lambda x: A @ x), b, rtol=1e-10).x, r.x)
    assert same_bits(ebla.cg(scipy.sparse.linalg.aslinearoperator(A), b, rtol=1e-10).x, r.x)


def test_linear_operator_iterates_agree_to_rounding(source_dir):
    # gr_30_30 has 9 entries a row, which ebla's CSR product (Kokkos Kernels) may sum in another
    # order than SciPy's (the Serial backend keeps four partial sums): the products differ by
    # rounding, and on this well-conditioned matrix (cond 195) so do the iterates, by a few u.
    A, b = _matrix(source_dir, "gr_30_30")
    op, calls = _counted(A)
    seen_op, seen_sparse = [], []
    r = ebla.cg(A, b, rtol=1e-10, callback=seen_sparse.append)
    ro = ebla.cg(op, b, rtol=1e-10, callback=seen_op.append)
    assert ro.status == "converged" and abs(ro.iterations - r.iterations) <= 1
    assert calls[0] == ro.iterations + 1
    for u, v in zip(seen_op, seen_sparse):
        assert np.linalg.norm(u - v) <= 1e-13 * np.linalg.norm(v)
    assert ro.true_residual <= ro.tolerance_used and _residual(A, b, ro.x) <= ro.tolerance_used * (1 + 1e-6)


def test_linear_operator_preconditioner(source_dir):
    A, b = _matrix(source_dir, "bcsstk13")
    d = A.diagonal()
    M = scipy.sparse.linalg.LinearOperator(A.shape, matvec=lambda r: r / d, dtype=np.float64)
    r = ebla.cg(A, b, rtol=1e-8, M=M)
    xs, info, steps = _scipy_cg(A, b, 1e-8, M=M)
    assert r.status == "converged" and info == 0
    assert r.true_residual <= 1e-8 * np.linalg.norm(b)
    assert abs(r.iterations - steps) <= 2 + 0.05 * steps, (r.iterations, steps)
    # r / d rounds differently from r * (1 / d): close to Jacobi, not its bits
    jacobi = ebla.cg(A, b, rtol=1e-8, jacobi=True)
    assert abs(r.iterations - jacobi.iterations) <= 0.05 * jacobi.iterations


@pytest.mark.parametrize("name", ["bcsstk13", "1138_bus"])
def test_block_jacobi_takes_fewer_iterations_than_jacobi(source_dir, name):
    A, b = _matrix(source_dir, name)
    jacobi = ebla.cg(A, b, rtol=1e-8, M="jacobi")
    blocks = ebla.cg(A, b, rtol=1e-8, M="block-jacobi")
    assert blocks.status == "converged" and blocks.true_residual <= blocks.tolerance_used
    assert blocks.iterations < jacobi.iterations, (blocks.iterations, jacobi.iterations)
    assert (blocks.pc, jacobi.pc) == ("block-jacobi", "jacobi")
    assert 0 < blocks.pc_blocks < A.shape[0] and blocks.pc_bytes > 0
    ones = ebla.cg(A, b, rtol=1e-8, M="block-jacobi", pc_block_size=1)  # blocks of one row: Jacobi
    assert ones.iterations == jacobi.iterations and ones.pc_blocks == A.shape[0]


@pytest.mark.parametrize("name", ["bcsstk13", "1138_bus"])
def test_block_jacobi_factors_stored_by_the_rule(source_dir, name):
    A, b = _matrix(source_dir, name)
    binary64 = ebla.cg(A, b, rtol=1e-8, M="block-jacobi")
    chosen = ebla.cg(A, b, rtol=1e-8, M="block-jacobi", pc_storage="auto")
    assert chosen.status == "converged" and chosen.true_residual <= chosen.tolerance_used
    assert chosen.iterations <= 1.03 * binary64.iterations + 1, (chosen.iterations, binary64.iterations)
    assert chosen.pc_bytes < binary64.pc_bytes == chosen.pc_binary64_bytes
    assert sum(chosen.pc_block_formats.values()) == chosen.pc_blocks and chosen.pc_block_formats["bfloat16"] > 0
    assert 0 < chosen.pc_delta <= 0.015154
    assert binary64.pc_block_formats == {"bfloat16": 0, "binary32": 0, "binary64": binary64.pc_blocks}
    with pytest.raises(ValueError, match=r"^ebla\.cg: pc_storage: unknown block storage 'half'"):
        ebla.cg(A, b, M="block-jacobi", pc_storage="half")
    with pytest.raises(ValueError, match=r"block storage auto stores the blocks of block-Jacobi, not of Jacobi"):
        ebla.cg(A, b, M="jacobi", pc_storage="auto")


def test_block_jacobi_refusals():
    A = scipy.sparse.csr_matrix(np.array([[1.0, 2, 0], [2, 1, 0], [0, 0, 1]]))
    with pytest.raises(ValueError, match=r"^ebla::cg: block-Jacobi: the diagonal block of rows 0\.\.2 is not "
                                         r"positive definite: Cholesky pivot 1 \(row 1\) is -3"):
        ebla.cg(A, np.ones(3), M="block-jacobi")
    spd = scipy.sparse.identity(3, format="csr")
    with pytest.raises(ValueError, match=r"block-Jacobi block size 0 must be at least 1"):
        ebla.cg(spd, np.ones(3), M="block-jacobi", pc_block_size=0)
    with pytest.raises(ValueError, match=r"storage binary32 preconditions with Jacobi only: block-Jacobi needs binary64"):
        ebla.cg(spd, np.ones(3), M="block-jacobi", storage="binary32")
    with pytest.raises(ValueError, match=r"^ebla\.cg: M='block-jacobi' needs A's sparsity pattern"):
        ebla.cg(np.eye(3), np.ones(3), M="block-jacobi")
    with pytest.raises(ValueError, match=r"^ebla\.cg: M and jacobi=True"):
        ebla.cg(A, np.ones(3), M="block-jacobi", jacobi=True)


@pytest.mark.parametrize("name", ["bcsstk13", "1138_bus", "gr_30_30"])
def test_sgs_and_ic0_take_fewer_iterations_than_jacobi(source_dir, name):
    A, b = _matrix(source_dir, name)
    jacobi = ebla.cg(A, b, rtol=1e-8, M="jacobi")
    sgs = ebla.cg(A, b, rtol=1e-8, M="sgs")
    ic0 = ebla.cg(A, b, rtol=1e-8, M="ic0")
    for r in (sgs, ic0):
        assert r.status == "converged" and r.true_residual <= r.tolerance_used
        assert r.iterations < jacobi.iterations, (r.pc, r.iterations, jacobi.iterations)
        assert r.pc_bytes > 0
    assert ic0.iterations < sgs.iterations
    assert (sgs.pc, ic0.pc) == ("sgs", "ic0")
    assert sgs.pc_colours >= 2 and ic0.pc_levels >= 2
    # bcsstk13's IC(0) breaks down; A + alpha diag(A) with alpha = 1e-3 2^8 is the first that does not
    assert (ic0.pc_shift, ic0.pc_restarts) == ((0.256, 9) if name == "bcsstk13" else (0.0, 0))


def test_sgs_and_ic0_refusals():
    spd = scipy.sparse.identity(3, format="csr")
    for M, title in (("sgs", "SGS"), ("ic0", r"IC\(0\)")):
        with pytest.raises(ValueError, match=rf"storage binary32 preconditions with Jacobi only: {title} needs binary64"):
            ebla.cg(spd, np.ones(3), M=M, storage="binary32")
        with pytest.raises(ValueError, match=rf"^ebla\.cg: M='{M}' needs A's sparsity pattern"):
            ebla.cg(np.eye(3), np.ones(3), M=M)


def test_callback_sees_each_iterate(source_dir):
    A, b = _matrix(source_dir, "1138_bus")
    seen = []
    r = ebla.cg(A, b, rtol=1e-6, callback=lambda xk: seen.append(xk.copy()))
    assert len(seen) == r.iterations > 10
    assert same_bits(seen[-1], r.x)
    for k in (1, 2, 7, r.iterations // 2):  # the k-th call saw the iterate where maxiter=k stops
        stopped = ebla.cg(A, b, rtol=1e-6, maxiter=k)
        assert stopped.status == "max_iterations" and stopped.iterations == k
        assert same_bits(seen[k - 1], stopped.x)
    # with b outside double's range, the callback sees the iterates of the system as given
    big = []
    rb = ebla.cg(A, 2.0**700 * b, rtol=1e-6, callback=big.append)
    assert len(big) == rb.iterations and same_bits(big[-1], rb.x)
    assert same_bits(big[3], 2.0**700 * seen[3])


def test_callback_exceptions_propagate(source_dir):
    A, b = _matrix(source_dir, "gr_30_30")

    def stop_at_three(xk, count=[0]):
        count[0] += 1
        if count[0] == 3:
            raise KeyError("enough")
    with pytest.raises(KeyError, match="enough"):
        ebla.cg(A, b, callback=stop_at_three)
    op = scipy.sparse.linalg.LinearOperator(A.shape, matvec=lambda x: 1 / 0, dtype=np.float64)
    with pytest.raises(ZeroDivisionError):
        ebla.cg(op, b)


def test_x_info_pair_and_short_repr(source_dir):
    A, b = _matrix(source_dir, "1138_bus")
    r = ebla.cg(A, b, rtol=1e-8)
    x, info = r
    assert info == 0 and x is r.x
    text = repr(r)
    assert len(text) < 160 and "\n" not in text, text
    assert text.startswith("<ebla.CgResult converged after") and f"{r.iterations} iterations" in text
    assert f"{r.true_residual:.3e}" in text and f"{r.tolerance_used:.3e}" in text
    x, info = ebla.cg(A, b, rtol=1e-8, maxiter=5)
    assert info == 5 and x.shape == b.shape
    assert repr(ebla.cg(A, b, maxiter=5)).startswith("<ebla.CgResult max_iterations after 5 iterations")


def test_stop_tests_have_the_command_line_names(source_dir):
    A, b = _matrix(source_dir, "gr_30_30")
    exact = ebla.cg(A, b, rtol=1e-8, stop="exact")
    old = ebla.cg(A, b, rtol=1e-8, stop="exact_norm")
    assert exact.stop_reason == "||r|| <= tau" and same_bits(exact.x, old.x)
    certified = ebla.cg(A, b, rtol=1e-8, stop="certified", qdot_tol=1e-3)
    assert certified.stop_reason == "sqrt(c + bound) <= tau"
    assert ebla.cg(A, b, rtol=1e-8, stop="approximate", qdot_tol=1e-3).stop_reason.startswith("sqrt(c) <= tau")
    with pytest.raises(ValueError, match=r"unknown stop test 'exactly' \(known: exact, certified, approximate\)"):
        ebla.cg(A, b, stop="exactly")
    with pytest.raises(ValueError, match="use exact_norm with a preconditioner"):
        ebla.cg(A, b, stop="certified", M=scipy.sparse.identity(900), qdot_tol=1e-3)


@pytest.mark.parametrize("kwargs, names", [
    ({"rtol": 1e-6, "tol": 1e-6}, r"rtol \(SciPy's tolerance\) and tol \(ebla's\)"),
    ({"atol": 1e-6, "norm": "relative"}, r"atol \(SciPy's tolerance\) and norm \(ebla's\)"),
    ({"rtol": 1e-6, "atol": 0.0, "tol": 1e-6, "norm": "absolute"}, r"rtol and atol .* and tol and norm"),
    ({"maxiter": 5, "max_iterations": 5}, r"maxiter and max_iterations"),
    ({"M": "jacobi", "jacobi": True}, r"M and jacobi=True"),
])
def test_conflicting_keywords_are_refused(kwargs, names):
    A = scipy.sparse.identity(4, format="csr")
    with pytest.raises(ValueError, match=r"^ebla\.cg: " + names):
        ebla.cg(A, np.ones(4), **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"rtol": -1e-6}, r"rtol = -1e-06 is not a nonnegative finite number"),
    ({"atol": float("nan")}, r"atol = nan is not a nonnegative finite number"),
    ({"rtol": 0.0}, r"rtol and atol are both 0"),
    ({"maxiter": -1}, r"maxiter = -1 is outside \[0, 2147483647\]"),
    ({"max_iterations": -1}, r"max_iterations = -1 is outside"),
    ({"maxiter": 2**31}, r"maxiter = 2147483648 is outside"),
    ({"M": scipy.sparse.identity(3)}, r"M is 3 x 3, not 4 x 4 \(b has 4 entries\)"),
    ({"M": np.eye(5)}, r"M is 5 x 5, not 4 x 4"),
    ({"M": scipy.sparse.linalg.aslinearoperator(np.ones((4, 3)))}, r"M is 4 x 3, not 4 x 4"),
    ({"M": type("NotCallable", (), {"shape": (4, 4), "matvec": 3})()}, r"M\.matvec is a int, not callable"),
    ({"M": _operator((4,), lambda r: r)}, r"M is 4, not 4 x 4"),
    ({"M": 3}, r"M is a int: not 'jacobi', 'block-jacobi', 'sgs', 'ic0', a matrix or an operator"),
    ({"M": "ilu"}, r"M = 'ilu' is not a preconditioner \(the names are 'jacobi', 'block-jacobi', 'sgs', 'ic0'\)"),
    ({"M": _operator((4, 4), lambda r: r[:3])},
     r"M\.matvec returned shape \(3,\), not \(4,\)"),
    ({"M": _operator((4, 4), lambda r: r * 1j)},
     r"M\.matvec returned dtype complex128"),
    ({"callback": "print"}, r"callback is a str, not callable"),
])
def test_bad_arguments_are_refused(kwargs, message):
    A = scipy.sparse.diags([2.0, 3.0, 4.0, 5.0]).tocsr()
    with pytest.raises(ValueError, match=r"^ebla\.cg: " + message):
        ebla.cg(A, np.ones(4), **kwargs)


def test_bad_operators_are_refused():
    A = scipy.sparse.diags([2.0, 3.0, 4.0, 5.0]).tocsr()
    wide = scipy.sparse.linalg.aslinearoperator(np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"^ebla\.cg: A is 4 x 5, not 4 x 4 \(b has 4 entries\)"):
        ebla.cg(wide, np.ones(4))
    op = scipy.sparse.linalg.aslinearoperator(A)
    with pytest.raises(ValueError, match=r"^ebla\.cg: Jacobi \(M='jacobi' or jacobi=True\) needs the diagonal of A"):
        ebla.cg(op, np.ones(4), M="jacobi")
    with pytest.raises(ValueError, match=r"storage binary32 needs an operator that reads stored vectors"):
        ebla.cg(op, np.ones(4), storage="binary32")
    with pytest.raises(ValueError, match=r"storage binary32 preconditions with Jacobi only"):
        ebla.cg(A, np.ones(4), storage="binary32", M=np.eye(4))
    broken = scipy.sparse.csr_matrix(np.eye(4))
    broken.indices[0] = 7  # SciPy trusts its arrays; ebla checks them
    with pytest.raises(ValueError, match=r"^ebla\.cg: M\.indices\[0\] = 7 is outside \[0, 4\)"):
        ebla.cg(A, np.ones(4), M=broken)
    short = _operator((4, 4), lambda x: x[:2])
    with pytest.raises(ValueError, match=r"^ebla\.cg: A\.matvec returned shape \(2,\), not \(4,\)"):
        ebla.cg(short, np.ones(4))
