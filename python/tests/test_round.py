"""ebla.formats and ebla.round: the catalogue, NumPy's own casts, and the C++ API bit for bit."""

import numpy as np
import pytest

import ebla
from conftest import hex_floats, same_bits


def test_catalogue_matches_table():
    names = [f.name for f in ebla.formats()]
    assert names[:3] == ["binary64", "binary32", "tf32"]
    assert "fp8_e4m3" in names and "fp4_e2m1" in names
    h = ebla.format_info("half")
    assert (h.name, h.t, h.emin, h.emax, h.bits) == ("binary16", 11, -14, 15, 16)
    assert h.u == 2.0**-11 and h.fmax == 65504.0 and h.fmin == 2.0**-14 and h.gmin == 2.0**-25
    e4m3 = ebla.format_info("fp8_e4m3")
    assert e4m3.fmax == 448.0 and e4m3.specials == "nan_only"
    custom = ebla.format_info("custom:t=5,emin=-6,emax=7")
    assert (custom.t, custom.emin, custom.emax) == (5, -6, 7)


def _samples(rng, n):
    """Values across binary16's and binary32's ranges: normal, subnormal, overflowing, ties."""
    x = rng.standard_normal(n) * np.exp2(rng.integers(-30, 20, n))
    ties = (np.arange(1, 65) + 0.5) * 2.0**-10  # exact halfway points of binary16 near 1/16
    tiny = rng.uniform(-1, 1, 64) * 2.0**-150     # binary32 subnormals and below
    return np.concatenate([x, ties, -ties, tiny, [0.0, -0.0, np.inf, -np.inf, 65519.0, 65520.0, 1e6]])


def test_nearest_even_matches_numpy_casts():
    x = _samples(np.random.default_rng(7), 4000)
    with np.errstate(over="ignore"):
        assert same_bits(ebla.round(x, "binary16"), x.astype(np.float16).astype(np.float64))
        assert same_bits(ebla.round(x, "binary32", "nearest_even"), x.astype(np.float32).astype(np.float64))


@pytest.mark.parametrize("mode", ["nearest_even", "toward_zero", "upward", "downward", "stochastic"])
@pytest.mark.parametrize("fmt", ["bfloat16", "fp8_e4m3", "custom:t=7,emin=-10,emax=10,subnormals=0"])
def test_round_equals_cpp_quantize(reference, mode, fmt):
    x = _samples(np.random.default_rng(11), 500)
    seed = 12345
    expected = hex_floats(reference("round", fmt, mode, seed, numbers=np.concatenate([[x.size], x])))
    assert same_bits(ebla.round(x, fmt, mode, rng=seed), expected)


def test_shapes_strides_and_dtypes():
    rng = np.random.default_rng(3)
    m = rng.standard_normal((40, 30))
    full = ebla.round(m, "bfloat16")
    assert full.shape == (40, 30) and full.dtype == np.float64
    assert same_bits(ebla.round(m[::3, 1::2], "bfloat16"), full[::3, 1::2])
    assert same_bits(ebla.round(m.T, "bfloat16"), full.T)
    f32 = m.astype(np.float32)
    assert same_bits(ebla.round(f32, "bfloat16"), ebla.round(f32.astype(np.float64), "bfloat16"))
    assert ebla.round(np.pi, "binary16") == 3.140625
    # a generator or seed has no part in a deterministic mode
    assert same_bits(ebla.round(m, "bfloat16", "upward", rng=np.random.default_rng(2)),
                     ebla.round(m, "bfloat16", "upward"))
    assert ebla.round(np.float32(0.1), "binary32") == float(np.float32(0.1))


def test_stochastic_rounding_with_a_generator():
    up = 1 + 2.0**-10  # binary16's next number after 1 (t = 11): stochastic rounding keeps it
    x = np.full(20000, up)
    assert np.all(ebla.round(x, "binary16", "stochastic", rng=np.random.default_rng(1)) == up)
    y = np.full(20000, 1 + 2.0**-12)  # a quarter of binary16's spacing 2^-10 above 1
    r = ebla.round(y, "binary16", "stochastic", rng=np.random.default_rng(5))
    assert set(np.unique(r)) <= {1.0, 1 + 2.0**-10}
    assert abs(np.mean(r == 1 + 2.0**-10) - 0.25) < 0.02
    again = ebla.round(y, "binary16", "stochastic", rng=np.random.default_rng(5))
    assert same_bits(r, again)


@pytest.mark.parametrize("call, message", [
    (lambda: ebla.round([1.0], "binary17"), "binary17"),
    (lambda: ebla.round([1.0], "binary16", "sideways"), "sideways"),
    (lambda: ebla.round(np.arange(3), "binary16"), "int64"),
    (lambda: ebla.round([1.0], "custom:t=60,emin=-10,emax=10"), "t"),
    (lambda: ebla.round([1.0], "binary16", "stochastic", rng="x"), "rng"),
    (lambda: ebla.round([1.0], "binary16", "stochastic", rng=-1), "seed -1"),
])
def test_errors_are_value_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
