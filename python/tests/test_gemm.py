"""ebla.gemm: the C++ API bit for bit, the certified bounds against the exact product, the
tolerance-driven selection, and the errors."""

import numpy as np
import pytest

import ebla
from conftest import hex_floats, same_bits


def _matrices(m, k, n, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))


@pytest.mark.parametrize("fmt, words, unit", [("bfloat16", 1, "fma_binary32"), ("binary16", 2, "v100_fp16"),
                                              ("bfloat16", 3, "a100_bf16")])
def test_equals_cpp_gemm(reference, fmt, words, unit):
    m, k, n = 7, 33, 5
    A, B = _matrices(m, k, n, 1)
    out = hex_floats(reference("gemm", fmt, words, "emulated", unit, numbers=np.concatenate([[m, k, n], A.ravel(), B.ravel()])))
    r = ebla.gemm(A, B, input=fmt, words=words, unit=unit)
    assert same_bits([r.normwise_bound], out[:1])
    assert same_bits(r.C, out[1:1 + m * n].reshape(m, n))
    assert same_bits(r.bound, out[1 + m * n:].reshape(m, n))


def test_bounds_hold_against_the_exact_product():
    A, B = _matrices(20, 64, 12, 2)
    A *= np.exp2(np.random.default_rng(3).integers(-4, 4, A.shape))  # a few binades of range
    exact = ebla.exact_gemm(A, B)
    for words in (1, 2, 3):
        r = ebla.gemm(A, B, input="bfloat16", words=words, reference=True)
        err = np.abs(r.C - exact)
        assert np.all(err <= r.bound) and np.all(r.probable_bound <= r.bound)
        assert np.max(err.sum(axis=1)) <= r.normwise_bound
        assert same_bits(r.exact, exact) and r.observed_normwise == pytest.approx(np.max(err.sum(axis=1)))
        assert r.relative_bound == pytest.approx(r.normwise_bound / (r.norm_a * r.norm_b))
    one, three = (ebla.gemm(A, B, input="bfloat16", words=w) for w in (1, 3))
    # three words leave the binary32 accumulation as the main error: 2^-24-ish, not 2^-8
    assert three.normwise_bound < one.normwise_bound / 100


def test_strided_and_float32_inputs():
    A, B = _matrices(16, 24, 8, 4)
    r = ebla.gemm(A, B, input="binary16")
    assert same_bits(ebla.gemm(np.asfortranarray(A), B[:, :], input="binary16").C, r.C)
    wide = np.zeros((16, 48))
    wide[:, ::2] = A
    assert same_bits(ebla.gemm(wide[:, ::2], B, input="binary16").C, r.C)
    A32 = A.astype(np.float32)
    assert same_bits(ebla.gemm(A32, B, input="binary16").C, ebla.gemm(A32.astype(np.float64), B, input="binary16").C)


def test_selection_meets_the_tolerance():
    A, B = _matrices(32, 32, 32, 5)
    r = ebla.gemm(A, B, tolerance=1e-3)
    assert r.meets_tolerance and r.relative_bound <= 1e-3 and len(r.candidates) > 1
    assert np.max(np.abs(r.C - A @ B).sum(axis=1)) <= r.normwise_bound
    assert r.config["description"]


@pytest.mark.parametrize("call, message", [
    (lambda A, B: ebla.gemm(A, B.T), "A is 4 x 6 but B is 3 x 6"),
    (lambda A, B: ebla.gemm(A, B, words=4), "words"),
    (lambda A, B: ebla.gemm(A, B, input="fp9"), "fp9"),
    (lambda A, B: ebla.gemm(A, B, engine="gpu"), "gpu"),
    (lambda A, B: ebla.gemm(A, B, unit="tpu"), "tpu"),
    (lambda A, B: ebla.gemm(A * np.inf, B), "finite"),
    (lambda A, B: ebla.gemm(A, B, tolerance=-1), "tolerance"),
    (lambda A, B: ebla.gemm(A[0], B), "1 dimensions"),
])
def test_errors_are_value_errors(call, message):
    A, B = _matrices(4, 6, 3, 6)
    with pytest.raises(ValueError, match=message):
        call(A, B)


def test_selection_keeps_its_throughputs_in_a_profile(tmp_path):
    A, B = _matrices(16, 16, 16, 6)
    profile = tmp_path / "gemm-profile"
    first = ebla.gemm(A, B, tolerance=1e-3, profile=profile)
    # the first call measures and stores what agreed; the second reads the file
    assert not first.throughputs["read"] and first.throughputs["profile"] == str(profile)
    assert first.throughputs["stored"] == profile.is_file()
    if profile.is_file():
        second = ebla.gemm(A, B, tolerance=1e-3, profile=profile)
        assert second.throughputs["read"] and second.throughputs["age_seconds"] >= 0
        assert second.throughputs["measured"] == [] or set(second.throughputs["measured"]) <= set(first.throughputs["noisy"])


def test_a_corrupt_profile_is_measured_again_with_a_warning(tmp_path):
    A, B = _matrices(16, 16, 16, 7)
    profile = tmp_path / "gemm-profile"
    profile.write_text("not a profile\n")
    with pytest.warns(UserWarning, match="ebla.gemm: .*gemm-profile"):
        r = ebla.gemm(A, B, tolerance=1e-3, profile=profile)
    assert not r.throughputs["read"] and r.meets_tolerance


def test_without_a_profile_nothing_is_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("EBLA_GEMM_PROFILE", str(tmp_path / "default-profile"))
    assert ebla.default_gemm_profile_path() == str(tmp_path / "default-profile")
    A, B = _matrices(16, 16, 16, 8)
    r = ebla.gemm(A, B, tolerance=1e-3, profile=False)
    assert r.throughputs["profile"] is None and not r.throughputs["stored"]
    assert not (tmp_path / "default-profile").exists()
    assert ebla.gemm(A, B).throughputs is None  # no selection, no throughputs


@pytest.mark.parametrize("profile, error, message", [
    ("", ValueError, "profile '' is empty"),
    (".", ValueError, "is a directory"),
    (3, TypeError, "profile must be a path, None or False, not int"),
])
def test_bad_profiles_are_named(profile, error, message):
    A, B = _matrices(4, 4, 4, 9)
    with pytest.raises(error, match=message):
        ebla.gemm(A, B, tolerance=1e-3, profile=profile)
