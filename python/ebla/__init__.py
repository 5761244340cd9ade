"""ebla: error-bounded linear algebra from Python.

The C++ library's kernels on NumPy arrays and SciPy sparse matrices, each result with the
bound the library certifies:

- ``formats()``, ``format_info(name)``: the number formats (seed 001, Table 2.1, and custom
  ``"custom:t=..,emin=..,emax=.."`` formats);
- ``round(x, format, mode, rng=...)``: every element rounded to a format, bit-exactly;
- ``qdot(x, y, tol, ...)``: the error-bounded quantized dot product (seed 002), and its two
  phases ``qdot_select`` (a :class:`QdotPlan`) and ``qdot_compute``; ``qdot_store(x, tol)``
  keeps x in the formats its exponent bins allow, for many dot products ``.dot(y)``;
- ``gemm(A, B, ...)``: mixed-precision matrix products with certified bounds (seed 001);
- ``mma(unit, A, B, C)``: many dot products through a matrix-multiply unit, bit for bit;
- ``cg(A, b, ...)`` and ``power_method(A, ...)``: conjugate gradients and the power method
  with exact, approximate (qdot), fixed-format or automatically chosen dot products; ``cg``
  takes the arguments of ``scipy.sparse.linalg.cg`` (rtol, atol, maxiter, M, callback) too;
- ``hpccg_problem``, ``diffusion_problem``, ``graph_laplacian``, ``random_unit_vector``,
  ``read_matrix_market``: the test problems of the experiments.

Inputs are float64 or float32 arrays of any stride (copied only where they are not
contiguous, or where a float32 array meets a float64 kernel); matrices for the solvers are
``scipy.sparse`` CSR or CSC matrices (CSC is converted) or dense 2-D arrays, and for ``cg``
also a ``scipy.sparse.linalg.LinearOperator``. Invalid arguments raise ``ValueError`` with
ebla's message, which names the function and the value. Kokkos is initialised when the module
is imported (unless something else did) and finalised at interpreter exit. The kernels release
the GIL, so other Python threads run meanwhile (cg takes it again to call a Python operator,
preconditioner or callback).
"""

from dataclasses import dataclass, field
import operator as _operator
import os as _os
import warnings as _warnings


def _numpy():
    """NumPy: this Python's own, else (same Python version) the one of the Python ebla was built for."""
    import sys
    try:
        import numpy
        return numpy
    except ImportError as missing:
        from . import _built_for
        home = _built_for.NUMPY_DIR
        if sys.version_info[:2] == _built_for.VERSION and home and home not in sys.path:
            import os
            if os.path.isfile(os.path.join(home, "numpy", "__init__.py")):
                sys.path.append(home)  # after this Python's own directories: nothing of its own is shadowed
                try:
                    import numpy
                    return numpy
                except ImportError:
                    sys.path.remove(home)
        raise ImportError(
            f"ebla needs NumPy, which this Python ({sys.executable}, {sys.version.split()[0]}) cannot "
            f"import; run the Python ebla was built for ({_built_for.PYTHON}, CMake's Python3_EXECUTABLE), "
            "or install NumPy for this one") from missing


_np = _numpy()

from . import _ebla

__all__ = [
    "Format", "formats", "format_info", "round", "QdotPlan", "QdotResult", "qdot", "qdot_select",
    "qdot_compute", "QdotStored", "qdot_store", "GemmResult", "gemm", "default_gemm_profile_path", "exact_gemm",
    "mma", "matrix_units", "DotHistory", "CgResult",
    "cg", "PowerResult", "power_method", "hpccg_problem", "diffusion_problem", "graph_laplacian",
    "random_unit_vector", "read_matrix_market",
]

QdotPlan = _ebla.QdotPlan


# ---- argument checks ----------------------------------------------------------------------

def _float_array(a, name, function):
    """a as a NumPy array of float64 or float32 (no copy); ValueError for anything else."""
    arr = _np.asarray(a)
    if arr.dtype not in (_np.float64, _np.float32):
        raise ValueError(f"{function}: {name} has dtype {arr.dtype}, not float64 or float32")
    return arr


def _contiguous(arr, name, function, dtype=_np.float64):
    """arr as a C-contiguous array of dtype, copied (memory permitting) only if it is not one."""
    if arr.dtype != dtype or not arr.flags.c_contiguous:  # a broadcast view may need far more
        _check_memory(function, f"a copy of {name} ({arr.size} values)", arr.size * _np.dtype(dtype).itemsize)
    return _np.ascontiguousarray(arr, dtype=dtype)


def _vector(a, name, function, dtype=_np.float64):
    """a as a C-contiguous 1-D array of dtype (a copy only if it is strided or of another dtype)."""
    arr = _float_array(a, name, function)
    if arr.ndim != 1:
        raise ValueError(f"{function}: {name} has {arr.ndim} dimensions, not 1")
    return _contiguous(arr, name, function, dtype)


def _matrix(a, name, function):
    """a as a C-contiguous 2-D float64 array."""
    arr = _float_array(a, name, function)
    if arr.ndim != 2:
        raise ValueError(f"{function}: {name} has {arr.ndim} dimensions, not 2")
    return _contiguous(arr, name, function)


def _real(v, name, function):
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{function}: {name} = {v!r} is not a number") from None


_INT = (-2**31, 2**31 - 1)  # a C++ int
_UINT64 = (0, 2**64 - 1)    # a size or a seed


def _integer(v, name, function, bounds=_INT):
    """v as an int in [low, high] = bounds (by default those of the C++ int it is passed as)."""
    try:
        v = _operator.index(v)
    except TypeError:
        raise ValueError(f"{function}: {name} = {v!r} is not an integer") from None
    low, high = bounds
    if not low <= v <= high:
        raise ValueError(f"{function}: {name} = {v} is outside [{low}, {high}]")
    return v


def _check_memory(function, what, bytes):
    """ValueError "function: what needs about X of memory, and Y are available" unless the
    process may allocate `bytes` (an estimate; a Python number, so it cannot overflow)."""
    _ebla.check_memory(function, what, float(bytes))


def _name(v, name, function):
    """A name-valued argument (a format, policy, mode...) as a str; C++ refuses unknown names."""
    if not isinstance(v, str):
        raise ValueError(f"{function}: {name} = {v!r} is not a name (a str)")
    return v


def _ladder(ladder, function):
    """A ladder given as a list of names or one comma-separated string, as one string."""
    if ladder is None:
        return ""
    if isinstance(ladder, str):
        return ladder
    try:
        names = list(ladder)
    except TypeError:
        names = None
    if names is None or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{function}: ladder {ladder!r} is not a list of format names")
    return ",".join(names)


# ---- formats and rounding -----------------------------------------------------------------

@dataclass(frozen=True)
class Format:
    """A binary floating-point format (seed 001, (2.1)-(2.3)).

    t is the precision in bits (implicit bit included), [emin, emax] the exponents of the
    normal numbers; u = 2^-t is the unit roundoff, fmin = 2^emin the smallest normal number,
    fmax the largest finite one, gmin the underflow constant (u fmin with subnormals).
    ``bits`` is the width of the standard encoding (0 if there is none).
    """

    name: str
    t: int
    emin: int
    emax: int
    subnormals: bool
    specials: str
    overflow: str
    u: float
    fmin: float
    fmax: float
    gmin: float
    smallest_positive: float
    bits: int


def format_info(name):
    """The :class:`Format` of a catalogue name ("binary16", "bf16", "fp8_e4m3", ...) or a
    custom spec "custom:t=<t>,emin=<emin>,emax=<emax>[,subnormals=0|1][,specials=...]
    [,overflow=...]". Raises ValueError for an unknown name."""
    return Format(**_ebla.format_info(_name(name, "name", "ebla.format_info")))


def formats():
    """Every format of the catalogue, widest first (seed 001, Table 2.1, and the OCP formats)."""
    return [format_info(n) for n in _ebla.format_names()]


def round(x, format, mode="nearest_even", rng=None):  # noqa: A001 (ebla.round, like numpy's)
    """Rounds every element of x to ``format`` in rounding ``mode``, bit-exactly.

    x: a float or an array of float64 or float32 of any shape and stride. format: a name
    (see :func:`formats`) or custom spec. mode: "nearest_even", "toward_zero", "upward",
    "downward" or "stochastic" (also "rn", "rz", "ru", "rd", "sr").
    rng, for stochastic rounding only: an int seed (element i then uses the i-th number of
    ebla's counter-based generator, as ebla::quantize(x, y, f, mode, seed) in C++), or a
    ``numpy.random.Generator`` (one uniform number per element drawn from it), or None
    (a fresh ``numpy.random.default_rng()``).

    Returns float64 values (every format is a subset of float64) of x's shape; a float for a
    scalar x. Raises ValueError for an unknown format or mode, or a non-float dtype.
    """
    function = "ebla.round"
    scalar = _np.ndim(x) == 0 and isinstance(x, (float, int, _np.floating, _np.integer))
    arr = _np.asarray(_real(x, "x", function)) if scalar else _float_array(x, "x", function)
    shape = arr.shape
    _check_memory(function, f"the result ({arr.size} values)", 8 * arr.size)
    flat = _contiguous(arr, "x", function).reshape(-1)
    format = _name(format, "format", function)
    canonical = _ebla.rounding_name(_name(mode, "mode", function))
    if canonical != "stochastic":  # rng plays no part
        y = _ebla.round_seeded(flat, format, canonical, 0)
    elif isinstance(rng, (int, _np.integer)) and not isinstance(rng, bool):
        if rng < 0 or rng >= 2**64:
            raise ValueError(f"{function}: seed {rng} is not in [0, 2^64)")
        y = _ebla.round_seeded(flat, format, canonical, int(rng))
    else:
        if rng is None:
            rng = _np.random.default_rng()
        if not isinstance(rng, _np.random.Generator):
            raise ValueError(f"{function}: rng = {rng!r} is not an int seed or a numpy.random.Generator")
        y = _ebla.round_with(flat, format, canonical, rng.random(flat.size))
    return float(y[0]) if scalar else y.reshape(shape)


# ---- qdot ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class QdotResult:
    """An approximate dot product and its certified bound (kernels/qdot.hpp).

    |value - x^T y| <= bound holds against the exact real dot product of the inputs;
    bound = quantization_bound + accumulation_bound. The precision mix: ``levels`` names the
    rungs of the ladder, ``count_per_level`` the components computed at each, ``mix`` their
    fractions of the nonzero products. abs_sum approximates |x|^T |y|.
    """

    value: float
    bound: float
    quantization_bound: float
    accumulation_bound: float
    abs_sum: float
    levels: list
    count_per_level: _np.ndarray
    zeros: int
    outside_plan: int
    bins: int
    e_min: int
    e_max: int
    nonfinite: bool
    early_termination: bool
    kept_top_bin: bool
    passes: int
    select_seconds: float
    compute_seconds: float

    @property
    def mix(self):
        """{rung name: fraction of the nonzero products computed there}."""
        total = int(self.count_per_level.sum())
        return {n: (int(c) / total if total else 0.0) for n, c in zip(self.levels, self.count_per_level)}


def _qdot_pair(x, y, function):
    """x and y as contiguous vectors of one dtype: float32 if both are, else float64."""
    ax = _float_array(x, "x", function)
    ay = _float_array(y, "y", function)
    dtype = _np.float32 if ax.dtype == _np.float32 and ay.dtype == _np.float32 else _np.float64
    return _vector(ax, "x", function, dtype), _vector(ay, "y", function, dtype)


def qdot(x, y, tol=1e-8, policy="budget", ladder=None, reuse_plan=True, plan_margin=-1, perforate_all=True):
    """The error-bounded quantized dot product x^T y (seed 002, Algorithm 3.3).

    x, y: 1-D float64 or float32 arrays of equal length (float32 only if both are; any stride).
    tol: the tolerance eps > 0. policy: "budget" (the approximation error is at most
    tol |x|^T |y|) or "paper" (seed 002's selection, (3.9)-(3.10)). ladder: the formats to
    choose from, most precise first, optionally ending with "perforate" (a list of names or
    "binary64,binary32,binary16,perforate"); None is the seed's ladder. reuse_plan,
    plan_margin (-1: ebla's default, which is 0 for a dot product on its own) and perforate_all:
    as ebla::QdotOptions (kernels/qdot.hpp). Returns a :class:`QdotResult`.
    """
    function = "ebla.qdot"
    x, y = _qdot_pair(x, y, function)
    call = _ebla.qdot_f32 if x.dtype == _np.float32 else _ebla.qdot_f64
    return QdotResult(**call(x, y, _real(tol, "tol", function), _name(policy, "policy", function), _ladder(ladder, function),
                             bool(reuse_plan), _integer(plan_margin, "plan_margin", function), bool(perforate_all)))


def qdot_select(x, y, tol=1e-8, policy="budget", ladder=None, perforate_all=True):
    """The selection phase of qdot (seed 002, Algorithm 3.2): a :class:`QdotPlan` giving a
    format for each exponent bin of x_i y_i. Arguments as :func:`qdot`."""
    function = "ebla.qdot_select"
    x, y = _qdot_pair(x, y, function)
    call = _ebla.qdot_select_f32 if x.dtype == _np.float32 else _ebla.qdot_select_f64
    return call(x, y, _real(tol, "tol", function), _name(policy, "policy", function), _ladder(ladder, function), bool(perforate_all))


def qdot_compute(plan, x, y):
    """The computation phase of qdot (seed 002, Algorithm 3.1) under ``plan`` (from
    :func:`qdot_select` on vectors of the same length and dtype): a :class:`QdotResult`,
    certified for these x and y even if they are not the ones the plan was selected for."""
    function = "ebla.qdot_compute"
    if not isinstance(plan, QdotPlan):
        raise ValueError(f"{function}: plan is a {type(plan).__name__}, not an ebla.QdotPlan")
    x, y = _qdot_pair(x, y, function)
    call = _ebla.qdot_compute_f32 if x.dtype == _np.float32 else _ebla.qdot_compute_f64
    return QdotResult(**call(plan, x, y))


class QdotStored:
    """x kept in the formats its exponent bins allow, for many dot products (made by
    :func:`qdot_store`; kernels/qdot_stored.hpp).

    ``dot(y)`` returns a :class:`QdotResult` for x^T y, its bound certified for that y; the
    stored values x~ satisfy ||x~ - x||_1 <= tol ||x||_1, so that
    |x~^T y - x^T y| <= tol ||x||_1 ||y||_inf for every y. ``bytes``: what the stored form
    holds (8 n for binary64); ``levels``, ``count_per_level`` and ``tiles_per_level``: the
    components and tiles of 512 stored at each rung of the ladder; ``error_l1`` >= ||x - x~||_1,
    ``l1`` >= ||x||_1; ``values()``: x~ as a float64 array; ``str()`` the selection, bin by bin.
    """

    def __init__(self, stored, tol):
        self._stored = stored
        self.tol = tol

    n = property(lambda self: self._stored.n, doc="Length of x.")
    bytes = property(lambda self: self._stored.bytes, doc="Bytes held by the stored form.")
    tiles = property(lambda self: self._stored.tiles, doc="Tiles of 512 components.")
    levels = property(lambda self: self._stored.levels, doc="The rungs of the ladder, most precise first.")
    count_per_level = property(lambda self: self._stored.count_per_level, doc="Components stored at each rung.")
    tiles_per_level = property(lambda self: self._stored.tiles_per_level, doc="Tiles stored at each rung.")
    error_l1 = property(lambda self: self._stored.error_l1, doc="An upper bound on ||x - x~||_1.")
    l1 = property(lambda self: self._stored.l1, doc="An upper bound on ||x||_1.")
    plan = property(lambda self: self._stored.plan, doc="The selection on x's exponent bins (a QdotPlan).")
    store_seconds = property(lambda self: self._stored.store_seconds, doc="Time of qdot_store.")

    def values(self):
        """The stored values x~, exactly, as a float64 array."""
        return self._stored.values()

    def dot(self, y):
        """x^T y from the stored x, y a 1-D float64 (or float32, widened) array of length n:
        a :class:`QdotResult` whose bound holds for this y (select_seconds: that of the store)."""
        function = "ebla.QdotStored.dot"
        return QdotResult(**self._stored.dot(_vector(y, "y", function)))

    def __str__(self):
        return str(self._stored)

    def __repr__(self):
        return f"<ebla.QdotStored n={self.n} tol={self.tol:g} bytes={self.bytes}>"


def qdot_store(x, tol=1e-8, ladder=None, perforate_all=True):
    """Stores x for many dot products (kernels/qdot_stored.hpp): the formats of x's exponent
    bins selected once (budget policy, with the cost of rounding x_i alone) so that
    ||x~ - x||_1 <= tol ||x||_1, and x kept in tiles of 512 in the cheapest format each tile
    allows. x: a 1-D float64 (or float32, widened) array of any stride; ladder: names from
    binary64, binary32, binary16, bfloat16 and "perforate" (None: binary64, binary32,
    binary16, perforate); perforate_all: as in :func:`qdot`. Returns a :class:`QdotStored`."""
    function = "ebla.qdot_store"
    tol = _real(tol, "tol", function)
    ax = _vector(x, "x", function)
    return QdotStored(_ebla.qdot_store_f64(ax, tol, _ladder(ladder, function), bool(perforate_all)), tol)


# ---- gemm ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class GemmResult:
    """C = A B computed in mixed precision, with certified bounds (kernels/gemm.hpp).

    ||C - A B||_inf <= normwise_bound always; entrywise |C - A B| <= bound (certified) and
    <= probable_bound (with probability 1 - failure), both None unless componentwise.
    relative_bound = normwise_bound / (||A||_inf ||B||_inf). With a tolerance, the chosen
    configuration, whether it meets the tolerance and every candidate tried; with reference,
    ``exact`` (A B correctly rounded) and the observed errors.
    """

    C: _np.ndarray
    normwise_bound: float
    relative_bound: float
    norm_a: float
    norm_b: float
    bound: object
    probable_bound: object
    paper_normwise: float
    theta: float
    config: dict
    exact: object
    observed_normwise: float
    observed_max_ratio: float
    meets_tolerance: object
    tolerance: object
    candidates: list
    seconds: float
    throughputs: object = None


def _factors(A, B, function):
    """A and B as C-contiguous float64 matrices whose product is defined."""
    A = _matrix(A, "A", function)
    B = _matrix(B, "B", function)
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"{function}: A is {A.shape[0]} x {A.shape[1]} but B is {B.shape[0]} x {B.shape[1]}")
    return A, B


def gemm(A, B, tolerance=None, input="bfloat16", words=1, engine="emulated", unit="fma_binary32",
         scaling=True, subnormals=True, failure=0.01, componentwise=True, reference=False, profile=None):
    """C = A B with Model 1 of seed 001: A and B split into ``words`` words of the ``input``
    format, their products computed by ``engine`` ("emulated" runs the matrix ``unit``
    bit-exactly, see :func:`matrix_units`; "sgemm", "onednn_bf16", "dgemm"), with
    power-of-two ``scaling``. With ``tolerance``, the cheapest configuration whose certified
    bound meets ||C - A B|| <= tolerance ||A|| ||B|| is chosen instead (input, words, engine
    and unit are then ignored). A, B: 2-D float64/float32 arrays of any stride.

    The selection models each candidate's time from this machine's throughputs, kept in a
    ``profile`` file as ``ebla gemm --tolerance`` and ``ebla tune`` keep them: None (the
    default) is ebla's own profile (:func:`default_gemm_profile_path`), a path another file;
    a profile that is missing, corrupt, stale or from another machine is measured again and
    rewritten (with a warning). ``profile=False`` measures in this process and stores nothing.
    ``GemmResult.throughputs`` says where they came from.
    Returns a :class:`GemmResult`.
    """
    function = "ebla.gemm"
    A, B = _factors(A, B, function)
    (m, k), n = A.shape, B.shape[1]
    # C, its bounds, the exact product and their copies; the words of A and B
    _check_memory(function, f"a {m} x {k} times {k} x {n} product", 8 * (6 * m * n + 6 * (m * k + k * n)))
    tol = None if tolerance is None else _real(tolerance, "tolerance", function)
    path = _profile_path(profile, function)
    r = _ebla.gemm(A, B, tol, _name(input, "input", function), _integer(words, "words", function),
                   _name(engine, "engine", function), _name(unit, "unit", function),
                   bool(scaling), bool(subnormals), _real(failure, "failure", function), bool(componentwise),
                   bool(reference), path)
    for message in (r["throughputs"] or {}).get("warnings", []):
        _warnings.warn(f"{function}: {message}", stacklevel=2)
    return GemmResult(**r)


def default_gemm_profile_path():
    """Where ebla keeps its GEMM throughput profile: $EBLA_GEMM_PROFILE, else
    $XDG_CACHE_HOME/ebla/gemm-profile, else ~/.cache/ebla/gemm-profile (None if none is set)."""
    return _ebla.default_gemm_profile_path() or None


def _profile_path(profile, function):
    """The profile file of ebla.gemm's ``profile`` argument ("" for none: measure now)."""
    if profile is None:
        return _ebla.default_gemm_profile_path()
    if profile is False:
        return ""
    if isinstance(profile, (str, _os.PathLike)):
        path = _os.fspath(profile)
        if path and not _os.path.isdir(path):
            return path
        raise ValueError(f"{function}: profile {path!r} is {'a directory' if path else 'empty'}: give a file "
                         f"name, None (ebla's profile) or False (measure now, store nothing)")
    raise TypeError(f"{function}: profile must be a path, None or False, not {type(profile).__name__}")


def exact_gemm(A, B):
    """A B with every entry correctly rounded to float64 (exact products and sums). Entries
    with an inf or NaN factor are those of IEEE arithmetic (in any order of the sum): NaN for a
    NaN, inf * 0 or inf - inf, else the infinity."""
    function = "ebla.exact_gemm"
    A, B = _factors(A, B, function)
    _check_memory(function, f"the {A.shape[0]} x {B.shape[1]} product", 16 * A.shape[0] * B.shape[1])
    return _ebla.exact_gemm(A, B)


def mma(unit, A, B, C, bits=False):
    """Many dot products through the matrix ``unit`` (a name of :func:`matrix_units`) at once:
    ``d[r] = C[r] + sum_i A[r, i] B[r, i]`` for every row r, each computed as the unit computes
    it, bit for bit (``ebla mma``; rows of more elements than the unit's block take several
    operations, as a GEMM does). A and B: arrays of shape (rows, k) of *values* (float64 or
    float32; the unit reads them rounded to nearest in its input format, as it reads C in its
    accumulation format, so decode bit patterns first, e.g. ``x.view(numpy.float16)``); C: shape
    (rows,). Returns d as float64 values, or with ``bits=True`` as the bit patterns of the
    unit's accumulation format (uint16 for 16-bit formats, uint32 for binary32, uint64 for
    binary64). The rows are shared among Kokkos's host threads; the results do not depend on
    their number.
    """
    function = "ebla.mma"
    unit = _name(unit, "unit", function)
    A = _matrix(A, "A", function)
    B = _matrix(B, "B", function)
    C = _vector(C, "C", function)
    if A.shape != B.shape or C.shape[0] != A.shape[0]:
        raise ValueError(f"{function}: A is {A.shape[0]} x {A.shape[1]}, B {B.shape[0]} x {B.shape[1]}, "
                         f"C has {C.shape[0]} elements; need rows x k, rows x k and rows")
    d = _ebla.mma(unit, A, B, C)
    if not bits:
        return d
    patterns, width = _ebla.mma_bits(unit, d)
    return patterns.astype(_np.uint16 if width <= 16 else _np.uint32 if width <= 32 else _np.uint64)


def matrix_units():
    """The names of the emulated matrix-multiply units (``gemm(..., unit=...)``)."""
    return list(_ebla.matrix_unit_names())


# ---- solvers ------------------------------------------------------------------------------

class DotHistory:
    """Per-iteration arrays of a solver (one entry per iteration).

    For each kind of dot product (CG: ``pq`` = p^T A p and ``rr`` = r^T r, or r^T z with
    Jacobi; power method: ``yy`` = y^T y and ``xy`` = x^T y) the arrays ``<kind>_value``,
    ``<kind>_bound`` (|value - exact| <= bound; NaN where not computed), ``<kind>_tolerance``
    (the qdot tolerance of the call), ``<kind>_accuracy`` (automatic policy: the accuracy
    asked), ``<kind>_abs_sum``, ``<kind>_zero_fraction`` and ``<kind>_fraction`` (iterations x
    rungs: the precision mix); and CG's ``residual``, ``alpha``, ``beta``, or the power
    method's ``eigenvalue`` and ``change``. With record_levels, ``<kind>_levels`` (iterations
    x n, the rung of each component, 255 for a zero product).
    """

    def __init__(self, arrays):
        self.__dict__.update(arrays)

    def names(self):
        """The names of the arrays."""
        return sorted(self.__dict__)

    def __repr__(self):
        return f"<ebla.DotHistory {len(next(iter(self.__dict__.values()), []))} iterations: {', '.join(self.names())}>"


@dataclass(frozen=True, repr=False)
class CgResult:
    """The result of :func:`cg` (solvers/cg.hpp).

    x: the iterate at exit; status "converged", "max_iterations", "breakdown" or
    "unconfirmed" (the stopping test passed, the true residual did not meet tau);
    tolerance_used: tau; true_residual = ||b - A x|| in double-double; recursive_residual
    the ||r_k|| the stopping test saw; levels the rungs of the dot products' precision mix;
    history a :class:`DotHistory`; rr0 the record of the first r^T r; events what the
    automatic policy's safeguards did, as (iteration, text); storage the storage policy of
    p, q and r, replacements the residual replacements it took, bytes_moved the bytes its
    iterations read and wrote (model; 0 for binary64); pc the preconditioner ("none",
    "jacobi", "block-jacobi", "sgs", "ic0", or "function" for an M of the caller's),
    pc_blocks its diagonal blocks (Jacobi, block-Jacobi), pc_colours the colours of SGS's
    ordering, pc_levels the levels of IC(0)'s triangular solves, pc_shift the alpha of the
    A + alpha diag(A) IC(0) factorised (0: A itself) after pc_restarts breakdowns, and pc_bytes
    the bytes it stores; block-Jacobi: pc_binary64_bytes what its factors would take in
    binary64, pc_block_formats its blocks per format ({"bfloat16": k, "binary32": k,
    "binary64": k}), pc_delta the largest d of its blocks (kappa(M~^-1 A) <= ((1 + d) /
    (1 - d))^2 kappa(M^-1 A)).

    SciPy's pair: ``x, info = ebla.cg(...)`` unpacks a result into x and :attr:`info`, as
    ``scipy.sparse.linalg.cg`` returns them. Its repr is one line (status, iterations, true
    residual and tau), not the vectors.
    """

    x: _np.ndarray
    iterations: int
    status: str
    stop_reason: str
    breakdown: str
    tolerance_used: float
    initial_residual: float
    recursive_residual: float
    true_residual: float
    b_norm: float
    seconds: float
    iteration_seconds: float
    storage: str
    replacements: int
    bytes_moved: float
    pc: str
    pc_blocks: int
    pc_bytes: float
    pc_binary64_bytes: float
    pc_block_formats: dict
    pc_delta: float
    pc_colours: int
    pc_levels: int
    pc_shift: float
    pc_restarts: int
    dots: str
    levels: list
    events: list
    history: DotHistory
    rr0: DotHistory

    @property
    def info(self):
        """SciPy's info: 0 converged; the iterations (at least 1) where tau was not met
        (max_iterations, unconfirmed); -1 for a breakdown."""
        if self.status == "converged":
            return 0
        if self.status == "breakdown":
            return -1
        return max(self.iterations, 1)

    def __iter__(self):
        """x and info, for ``x, info = ebla.cg(...)``."""
        return iter((self.x, self.info))

    def __repr__(self):
        return (f"<ebla.CgResult {self.status} after {self.iterations} iterations: ||b - A x|| = "
                f"{self.true_residual:.3e}, tau = {self.tolerance_used:.3e}, n = {self.x.size}>")


@dataclass(frozen=True)
class PowerResult:
    """The result of :func:`power_method` (solvers/power.hpp): the eigenvalue estimate, the
    unit eigenvector, residual = ||A x - lambda x||, the status and a :class:`DotHistory`
    (entry 0 is the start); storage the storage policy and bytes_moved the modelled bytes of
    a stored iteration's passes (0 for binary64)."""

    eigenvalue: float
    eigenvector: _np.ndarray
    iterations: int
    status: str
    stop_reason: str
    breakdown: str
    residual: float
    seconds: float
    dots: str
    levels: list
    events: list
    history: DotHistory
    storage: str = "binary64"
    bytes_moved: float = 0.0


def _index_array(arr, name, function):
    arr = _np.asarray(arr)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{function}: {name} is a {arr.ndim}-D array of {arr.dtype}, not a 1-D array of integers")
    return arr


def _check_indices(indices, name, bound, function):
    """ValueError unless every entry of `indices` is in [0, bound)."""
    outside = _np.flatnonzero((indices < 0) | (indices >= bound))
    if outside.size:
        k = outside[0]
        raise ValueError(f"{function}: {name}[{k}] = {indices[k]} is outside [0, {bound})")


def _check_sparse_structure(A, function, name="A"):
    """ValueError unless the arrays of a sparse matrix in CSR, CSC, BSR or COO describe one:
    SciPy's conversions trust them (and read out of bounds where they lie)."""
    if A.format in ("csr", "csc", "bsr"):
        rows, columns = A.blocksize if A.format == "bsr" else (1, 1)
        major, minor = A.shape[0] // rows, A.shape[1] // columns
        if A.format == "csc":
            major, minor = minor, major
        indptr = _index_array(A.indptr, f"{name}.indptr", function)
        indices = _index_array(A.indices, f"{name}.indices", function)
        if indptr.size != major + 1:
            raise ValueError(f"{function}: {name}.indptr has {indptr.size} entries, not {major + 1}")
        if indptr[0] != 0:
            raise ValueError(f"{function}: {name}.indptr[0] = {indptr[0]}, not 0")
        decreasing = _np.flatnonzero(_np.diff(indptr) < 0)
        if decreasing.size:
            i = decreasing[0]
            raise ValueError(f"{function}: {name}.indptr decreases from {indptr[i]} to {indptr[i + 1]} at {i + 1}")
        values = _np.shape(A.data)[0] if _np.ndim(A.data) else 0
        if indptr[-1] != indices.size or indptr[-1] != values:
            raise ValueError(f"{function}: {name}.indptr ends at {indptr[-1]} but {name} has {indices.size} indices "
                             f"and {values} values")
        _check_indices(indices, f"{name}.indices", minor, function)
    elif A.format == "coo":
        row = _index_array(A.row, f"{name}.row", function)
        col = _index_array(A.col, f"{name}.col", function)
        if not row.size == col.size == _np.size(A.data):
            raise ValueError(f"{function}: {name} has {row.size} rows, {col.size} columns and "
                             f"{_np.size(A.data)} values")
        _check_indices(row, f"{name}.row", A.shape[0], function)
        _check_indices(col, f"{name}.col", A.shape[1], function)


def _operator_arrays(A, function):
    """(indptr int64, indices int32, data float64, n, dense): a square scipy.sparse matrix in
    canonical CSR (CSC and other formats converted; sorted indices, duplicates summed), or a
    dense 2-D array."""
    try:
        import scipy.sparse as sparse
    except ImportError:  # pragma: no cover - scipy is a dependency of the sparse path only
        sparse = None
    if sparse is not None and sparse.issparse(A):
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"{function}: A is {A.shape[0]} x {A.shape[1]}, not square")
        if A.dtype not in (_np.float64, _np.float32):
            raise ValueError(f"{function}: A has dtype {A.dtype}, not float64 or float32")
        if A.shape[0] >= 2**31:
            raise ValueError(f"{function}: A has {A.shape[0]} rows, more than ebla's int column indices hold")
        _check_sparse_structure(A, function)
        n = A.shape[0]
        # SciPy's CSR, its copies for ebla, and the solver's vectors
        _check_memory(function, f"the {n} x {n} matrix A with {A.nnz} stored entries", 60 * A.nnz + 96 * n)
        csr = sparse.csr_matrix(A, dtype=_np.float64, copy=True)
        csr.sum_duplicates()  # sorts the column indices of every row, as ebla's readers do
        return (_np.ascontiguousarray(csr.indptr, dtype=_np.int64), _np.ascontiguousarray(csr.indices, dtype=_np.int32),
                _np.ascontiguousarray(csr.data, dtype=_np.float64), int(csr.shape[0]), None)
    dense = _matrix(A, "A", function)
    if dense.shape[0] != dense.shape[1]:
        raise ValueError(f"{function}: A is {dense.shape[0]} x {dense.shape[1]}, not square")
    return None, None, None, 0, dense


def _dot_args(dot, qdot_tol, function):
    """The dot policy's kind: as given, or "qdot" where only a tolerance is."""
    if dot is None:
        dot = "exact" if qdot_tol is None else "qdot"
    dot = _name(dot, "dot", function)
    if dot == "qdot" and qdot_tol is None:
        raise ValueError(f"{function}: dot='qdot' needs qdot_tol (e.g. qdot_tol=1e-2)")
    if dot != "qdot" and qdot_tol is not None:
        raise ValueError(f"{function}: qdot_tol applies to dot='qdot', not to dot='{dot}'")
    return dot, (1.0 if qdot_tol is None else _real(qdot_tol, "qdot_tol", function))


def _operator_like(A):
    """Whether A is an operator given by its product (a scipy.sparse.linalg.LinearOperator,
    or anything with .matvec and .shape), not a matrix (a sparse one takes ebla's kernels)."""
    return hasattr(A, "matvec") and hasattr(A, "shape") and not isinstance(A, _np.ndarray) and not _is_sparse(A)


def _is_sparse(A):
    try:
        import scipy.sparse as sparse
    except ImportError:  # pragma: no cover - scipy is a dependency of the sparse path only
        return False
    return sparse.issparse(A)


def _shape_text(shape):
    return " x ".join(str(d) for d in shape)


def _product_function(op, name, n, function):
    """y = op.matvec(x) as a C-contiguous float64 vector of n entries; ValueError (naming
    `name`) where op is not n x n, op.matvec is not callable or returns anything else."""
    try:
        shape = tuple(_operator.index(d) for d in op.shape)
    except TypeError:
        raise ValueError(f"{function}: {name}.shape = {op.shape!r} is not a pair of integers") from None
    if shape != (n, n):
        raise ValueError(f"{function}: {name} is {_shape_text(shape)}, not {n} x {n} (b has {n} entries)")
    matvec = op.matvec
    if not callable(matvec):
        raise ValueError(f"{function}: {name}.matvec is a {type(matvec).__name__}, not callable")

    def apply(x):
        y = _np.asarray(matvec(x))
        if y.dtype.kind not in "fiu":
            raise ValueError(f"{function}: {name}.matvec returned dtype {y.dtype}, not a real one")
        if y.shape not in ((n,), (n, 1)):
            raise ValueError(f"{function}: {name}.matvec returned shape {y.shape}, not ({n},)")
        return _np.ascontiguousarray(y.reshape(n), dtype=_np.float64)
    return apply


_PC_NAMES = ("jacobi", "block-jacobi", "sgs", "ic0")


def _preconditioner(M, n, function):
    """(name, z = M r as a function or None) for cg's M: None, one of _PC_NAMES, an
    n x n scipy.sparse matrix or dense array, or an operator with .matvec and .shape; name is
    ebla's preconditioner ("none" for none or one of the caller's)."""
    if M is None:
        return "none", None
    if isinstance(M, str):
        if M not in _PC_NAMES:
            raise ValueError(f"{function}: M = {M!r} is not a preconditioner (the names are "
                             f"{', '.join(repr(k) for k in _PC_NAMES)})")
        return M, None
    if _operator_like(M):
        return "none", _product_function(M, "M", n, function)
    if _is_sparse(M):
        import scipy.sparse as sparse
        if M.shape != (n, n):
            raise ValueError(f"{function}: M is {_shape_text(M.shape)}, not {n} x {n} (b has {n} entries)")
        if M.dtype.kind not in "fiu":
            raise ValueError(f"{function}: M has dtype {M.dtype}, not a real one")
        _check_sparse_structure(M, function, "M")
        csr = sparse.csr_matrix(M, dtype=_np.float64)
        return "none", lambda r: _np.ascontiguousarray(csr @ r, dtype=_np.float64)
    if isinstance(M, _np.ndarray) or hasattr(M, "__array__") or isinstance(M, (list, tuple)):
        dense = _matrix(M, "M", function)
        if dense.shape != (n, n):
            raise ValueError(f"{function}: M is {_shape_text(dense.shape)}, not {n} x {n} (b has {n} entries)")
        return "none", lambda r: _np.ascontiguousarray(dense @ r)
    raise ValueError(f"{function}: M is a {type(M).__name__}: not {', '.join(repr(k) for k in _PC_NAMES)}, a matrix or "
                     "an operator with .matvec and .shape")


def _cg_tolerance(rtol, atol, tol, norm, function):
    """(tol, atol, norm) for the C++ call from SciPy's rtol and atol or ebla's tol and norm."""
    scipy_style = [k for k, v in (("rtol", rtol), ("atol", atol)) if v is not None]
    ebla_style = [k for k, v in (("tol", tol), ("norm", norm)) if v is not None]
    if scipy_style and ebla_style:
        raise ValueError(f"{function}: {' and '.join(scipy_style)} (SciPy's tolerance) and {' and '.join(ebla_style)} "
                         "(ebla's) both set tau: give rtol/atol or tol/norm, not both")
    if ebla_style:
        return (1e-8 if tol is None else _real(tol, "tol", function)), 0.0, \
            ("absolute" if norm is None else _name(norm, "norm", function))
    rtol = 1e-5 if rtol is None else _real(rtol, "rtol", function)
    atol = 0.0 if atol is None else _real(atol, "atol", function)
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not (v >= 0 and _np.isfinite(v)):
            raise ValueError(f"{function}: {name} = {v} is not a nonnegative finite number")
    if rtol > 0:
        return rtol, atol, "relative"
    if atol > 0:
        return atol, 0.0, "absolute"
    raise ValueError(f"{function}: rtol and atol are both 0: give one of them > 0")


def cg(A, b, x0=None, *, rtol=None, atol=None, maxiter=None, M=None, callback=None, tol=None, norm=None,
       stop="exact", max_iterations=None, jacobi=False, dot=None, qdot_tol=None, qdot_policy="budget", ladder=None,
       format=None, plan_margin=-1, record_levels=False, stall_window=500, check_symmetry=True, storage="binary64",
       pc_block_size=32, pc_storage="binary64"):
    """Conjugate gradients with approximate dot products (seed 002, Algorithm 4.1), called as
    ``scipy.sparse.linalg.cg``.

    A: symmetric positive definite, a scipy.sparse matrix (CSR; CSC and others converted) or
    dense 2-D array (both applied by ebla's kernels), or an operator given by its product: a
    ``scipy.sparse.linalg.LinearOperator`` or anything with ``.matvec`` and ``.shape``, called
    from the solver with the GIL taken (its true residual ||b - A x|| is that of the products
    it returns, and its symmetry is not checked). b, x0 (default zeros): 1-D arrays.

    Tolerance, SciPy's way: the loop stops when ||b - A x_k|| <= tau = max(rtol ||b||, atol)
    (rtol=1e-5 and atol=0 where neither is given); or ebla's way: tau = tol (norm="absolute",
    the default of this style) or tol ||b|| (norm="relative"), tol=1e-8 where only norm is
    given. Giving rtol or atol together with tol or norm raises ValueError naming them.
    maxiter or max_iterations (the same limit; not both): 10000 where neither is given
    (SciPy's default is 10 n). M: the preconditioner, z = M r with M approximating A^-1 (a
    matrix or operator as A, applied through SciPy and NumPy with the GIL taken), or
    'jacobi' for diag(A)^-1 in ebla's kernels (jacobi=True says the same; not with M), or
    'block-jacobi' for blockdiag(A)^-1: diagonal blocks of up to pc_block_size rows (default
    32) found from A's sparsity pattern, each factorised by Cholesky in ebla's kernels (a
    sparse A, binary64 storage; a block that is not positive definite raises ValueError
    naming its rows), its factors kept in pc_storage ("binary64", "binary32", "bfloat16", or
    "auto": each block in the narrowest that keeps kappa(M^-1 A) within 1/16 of binary64's;
    docs/solvers.md, "Block storage"), 'sgs' for symmetric Gauss-Seidel in a multicolour ordering, or 'ic0' for
    incomplete Cholesky with zero fill, shifted by alpha diag(A) where a pivot fails (both a
    sparse A, binary64 storage; docs/solvers.md, "Preconditioners").
    callback(xk): called after each iteration with a copy of the iterate x_k.

    stop: "exact" (the exact residual norm; also "exact_norm"), "certified" (qdot's certified
    r^T r) or "approximate" (HPCCG's sqrt(r^T r) as computed), as the command line's --stop;
    a preconditioner needs "exact". The dot products (dot): "exact"; "qdot" with qdot_tol,
    qdot_policy ("budget"/"paper") and ladder; "fixed" in one format (format="bfloat16");
    "auto" (the tolerance of each call chosen from what the iteration needs). Giving qdot_tol
    alone means dot="qdot". plan_margin: qdot's plan reuse margin (-1: ebla's default).
    check_symmetry: refuse (ValueError) a matrix A that is not exactly symmetric, as the
    command line does unless --no-symmetry-check. storage: the format of the Krylov vectors
    p, q and r ("binary64", "binary32", "bfloat16", "binary16", "block16", "block8",
    "p=F,r=G" or "auto"; docs/solvers.md, "Stored Krylov vectors"; narrow storage needs a
    sparse A and no M but 'jacobi').

    Returns a :class:`CgResult`; ``x, info = ebla.cg(...)`` unpacks it as SciPy's pair.
    Exceptions of A.matvec, M.matvec and callback propagate.
    """
    function = "ebla.cg"
    b = _vector(b, "b", function)
    matvec = None
    if _operator_like(A):
        matvec = _product_function(A, "A", b.size, function)
        indptr, indices, data, n, dense = None, None, None, b.size, None
        size = b.size
    else:
        indptr, indices, data, n, dense = _operator_arrays(A, function)
        size = n if dense is None else dense.shape[0]
        if b.size != size:
            raise ValueError(f"{function}: A has {size} rows but b has {b.size} entries")
    if x0 is not None:
        x0 = _vector(x0, "x0", function)
        if x0.size != size:
            raise ValueError(f"{function}: A has {size} rows but x0 has {x0.size} entries")
    tol, atol, norm = _cg_tolerance(rtol, atol, tol, norm, function)
    if maxiter is not None and max_iterations is not None:
        raise ValueError(f"{function}: maxiter and max_iterations are the same limit: give one of them")
    limit = maxiter if maxiter is not None else max_iterations
    limit = 10000 if limit is None else _integer(limit, "maxiter" if maxiter is not None else "max_iterations",
                                                 function, (0, _INT[1]))
    if M is not None and jacobi:
        raise ValueError(f"{function}: M and jacobi=True both set the preconditioner: give one of them "
                         "(M='jacobi' is jacobi=True)")
    pc, precondition = _preconditioner(M, size, function)
    if matvec is not None and (pc == "jacobi" or jacobi):
        raise ValueError(f"{function}: Jacobi (M='jacobi' or jacobi=True) needs the diagonal of A, which an "
                         "operator A does not give: pass M=diags(1 / d) for a diagonal d you know")
    if pc in ("block-jacobi", "sgs", "ic0") and (matvec is not None or dense is not None):
        raise ValueError(f"{function}: M={pc!r} needs A's sparsity pattern: give A as a scipy.sparse "
                         "matrix")
    if callback is not None and not callable(callback):
        raise ValueError(f"{function}: callback is a {type(callback).__name__}, not callable")
    dot, qtol = _dot_args(dot, qdot_tol, function)
    r = _ebla.cg(indptr, indices, data, n, dense, matvec, b, x0, tol, atol, norm, _name(stop, "stop", function),
                 limit, bool(jacobi), pc, _integer(pc_block_size, "pc_block_size", function), precondition,
                 callback, dot, qtol,
                 _name(qdot_policy, "qdot_policy", function),
                 _ladder(ladder, function), "" if format is None else _name(format, "format", function),
                 _integer(plan_margin, "plan_margin", function), bool(record_levels),
                 _integer(stall_window, "stall_window", function), bool(check_symmetry),
                 _name(storage, "storage", function), _name(pc_storage, "pc_storage", function))
    r["history"] = DotHistory(r["history"])
    r["rr0"] = DotHistory(r["rr0"])
    return CgResult(**r)


def power_method(A, x0=None, tol=1e-6, max_iterations=300, dot=None, qdot_tol=None, qdot_policy="budget",
                 ladder=None, format=None, plan_margin=-1, record_levels=False, seed=1, check_symmetry=True,
                 storage="binary64"):
    """The power method for the largest eigenvalue of a symmetric A (seed 002, section 4.3).

    A as for :func:`cg`; x0: the start vector (default ``random_unit_vector(n, seed)``, as
    ebla's experiments start). It stops when |lambda_{k+1} - lambda_k| <= tol. Dot products
    as for :func:`cg`. check_symmetry: warn (RuntimeWarning) where A is not exactly symmetric,
    as the command line does. storage: the format of the stored iterate, as ``ebla power
    --storage`` (binary64, binary32, bfloat16, binary16, block16, block8 or "auto"; anything
    but binary64 runs one fused pass per iteration on a sparse A, its dot products binary64
    sums; docs/solvers.md, "Stored iterate"). Returns a :class:`PowerResult`.
    """
    function = "ebla.power_method"
    indptr, indices, data, n, dense = _operator_arrays(A, function)
    size = n if dense is None else dense.shape[0]
    if x0 is None:
        x0 = random_unit_vector(size, seed)
    x0 = _vector(x0, "x0", function)
    if x0.size != size:
        raise ValueError(f"{function}: A has {size} rows but x0 has {x0.size} entries")
    dot, qtol = _dot_args(dot, qdot_tol, function)
    r = _ebla.power_method(indptr, indices, data, n, dense, x0, _real(tol, "tol", function),
                           _integer(max_iterations, "max_iterations", function), dot, qtol, _name(qdot_policy, "qdot_policy", function),
                           _ladder(ladder, function), "" if format is None else _name(format, "format", function),
                           _integer(plan_margin, "plan_margin", function), bool(record_levels),
                           bool(check_symmetry), _name(storage, "storage", function))
    r["history"] = DotHistory(r["history"])
    return PowerResult(**r)


# ---- test problems ------------------------------------------------------------------------

def _csr(arrays):
    import scipy.sparse as sparse
    indptr, indices, data, rows, cols = arrays
    return sparse.csr_matrix((data, indices, indptr), shape=(rows, cols))


def hpccg_problem(nx, ny, nz):
    """HPCCG's 27-point matrix on an nx x ny x nz grid (scipy CSR) and b = A 1."""
    function = "ebla.hpccg_problem"
    arrays, b = _ebla.hpccg_problem(_integer(nx, "nx", function), _integer(ny, "ny", function),
                                    _integer(nz, "nz", function))
    return _csr(arrays), b


def diffusion_problem(nx, ny, nz, seed=1):
    """-div(k grad u) by 7-point finite volumes on an nx x ny x nz grid, k_i in [1e-3, 1e3] drawn
    from seed (docs/solvers.md), as scipy CSR, and b = A 1 (exact)."""
    function = "ebla.diffusion_problem"
    arrays, b = _ebla.diffusion_problem(_integer(nx, "nx", function), _integer(ny, "ny", function),
                                        _integer(nz, "nz", function), _integer(seed, "seed", function, _UINT64))
    return _csr(arrays), b


def graph_laplacian(n, mean_degree, seed):
    """The Laplacian D - A of a seeded Erdos-Renyi graph (scipy CSR): the power method's test."""
    function = "ebla.graph_laplacian"
    n = _integer(n, "n", function, _UINT64)
    seed = _integer(seed, "seed", function, _UINT64)
    return _csr(_ebla.graph_laplacian(n, _real(mean_degree, "mean_degree", function), seed))


def random_unit_vector(n, seed):
    """The power method's start vector: uniform entries from std::mt19937_64(seed), unit norm."""
    function = "ebla.random_unit_vector"
    n = _integer(n, "n", function, _UINT64)
    seed = _integer(seed, "seed", function, _UINT64)
    _check_memory(function, f"n = {n}", 16 * n)  # the vector and its NumPy copy
    return _ebla.random_unit_vector(n, seed)


def read_matrix_market(path):
    """A Matrix Market file read by ebla's reader (symmetric files expanded), as scipy CSR."""
    return _csr(_ebla.read_matrix_market(_os.fspath(path)))
