// Error-bound constants: products of n rounding errors, prod_i (1 + delta_i)^(+-1).
//
// Deterministic (worst case, every |delta_i| <= u):
//   gamma_n = n u / (1 - n u),  for n u < 1.
//   Higham, Accuracy and Stability of Numerical Algorithms (2002), Lemma 3.1;
//   seed 000 (Bhola & Duraisamy), Lemma 2.1.
//
// Probabilistic, Higham & Mary, "A new approach to probabilistic rounding error
// analysis", SIAM J. Sci. Comput. 41(5), 2019, Theorem 2.4: if the delta_i are
// independent, mean zero and |delta_i| <= u, then for lambda >= 0
//   |prod (1 + delta_i)^(+-1) - 1| <= gamma~_n(lambda) = exp(lambda sqrt(n) u + n u^2/(1-u)) - 1
// with probability at least P(lambda) = 1 - 2 exp(-lambda^2 (1-u)^2 / 2).
//
// Variance-informed, seed 000 Lemma 2.2 (Bhola & Duraisamy 2024, Theorem 3.4): if the
// delta_i are independent and uniform on [-u, u], the same gamma~_n(lambda) holds with
// probability at least
//   p_b(lambda, u, n) = 1 - 2 exp( -lambda^2 n u^2 / (2 (sigma^2 + lambda sqrt(n) u^2 / (3 (1-u)))) ),
//   sigma^2 = n (4u^2 + kappa (log(1-u)^2 - 2 log(1-u) log(1+u) + log(1+u)^2)) / (4u^2),
//   kappa = u^2 - 1,
// which is Bernstein's inequality for sum_i log(1 + delta_i): sigma^2 is n times the
// variance of log(1 + delta) for delta ~ U[-u, u], and u/(1-u) bounds each centred term.
// The seed's statement of the lemma leaves gamma~_n(lambda) undefined; its deviation
// lambda sqrt(n) u plus the mean term n u^2/(1-u) (|E log(1+delta)| <= u^2/(2(1-u)^2)
// <= u^2/(1-u) for u <= 1/2) give exactly the Higham-Mary constant, used here.
//
// The variance-informed probability is the larger (sharper) one for lambda up to about
// 2 sqrt(n), which covers every lambda where gamma~_n(lambda) is below the worst case
// (1-u)^-n - 1; beyond that the bound holds with certainty anyway.
//
// All functions are pure; invalid arguments (u outside (0, 1/2], n < 0, lambda < 0,
// a probability outside (0, 1)) throw ebla::InvalidArgument naming the function and
// value. A deterministic bound that does not exist (n u >= 1) is +infinity.
//
// Where it runs: on the host (scalar constants).
#pragma once

namespace ebla::bounds {

/// gamma_n = n u / (1 - n u) (Lemma 2.1 of seed 000); +infinity when n u >= 1.
double gamma(double n, double u);

/// (1 + delta)^d - 1, rounded up: the growth of d steps of relative error delta each (the
/// tree lemma of docs/gemm.md). 0 if delta or d is 0.
double growth(double delta, double d);

/// gamma~_n(lambda) = exp(lambda sqrt(n) u + n u^2 / (1 - u)) - 1 (Higham & Mary 2019).
double gamma_tilde(double n, double u, double lambda);

/// Probability that gamma~_n(lambda) holds for independent mean-zero errors:
/// P(lambda) = 1 - 2 exp(-lambda^2 (1-u)^2 / 2) (may be negative: then no guarantee).
double hm_probability(double lambda, double u);

/// The smallest lambda with hm_probability(lambda, u) >= 1 - failure.
double hm_lambda(double failure, double u);

/// sigma^2 of seed 000 Lemma 2.2: n Var(log(1 + delta)), delta ~ U[-u, u], evaluated
/// without the cancellation of the printed formula for small u.
double vibea_sigma2(double n, double u);

/// p_b(lambda, u, n) of seed 000 Lemma 2.2 (may be negative: then no guarantee).
double vibea_probability(double lambda, double u, double n);

/// The smallest lambda with vibea_probability(lambda, u, n) >= 1 - failure.
double vibea_lambda(double failure, double u, double n);

/// 1 - p_b(lambda, u, n), the failure probability of Lemma 2.2, computed without the
/// cancellation of 1 - p_b for large lambda (may exceed 1: then no guarantee).
double vibea_failure(double lambda, double u, double n);

/// The failure sum of seed 000 Theorems 3.9 and 3.10 for one entry of a product with inner
/// dimension n on a unit that adds blocks of b products (q = ceil(n / b) blocks):
///   sum_{i=1}^{q} sum_{j=(i-1)b+1}^{ib} (1 - p_b(lambda, u_bar, c1)) + (1 - p_b(lambda, u_fma, c2)),
///   c1 = b - ((j-1) mod b) + b (q - max(2, i) + 1),   c2 = q - i + 1.
/// The theorems' bound fails for that entry with probability at most this sum, and for some
/// entry of an m x t product with probability at most m t times it.
double tensor_core_failure(double lambda, double u_bar, double u_fma, double n, double b);

/// The smallest lambda (to about 1e-9 relative) with entries * tensor_core_failure(lambda, ...)
/// <= failure, the sum evaluated with an allowance for its own rounding: the lambda that makes
/// "fails with probability <= failure" true per entry (entries = 1) or for a whole product
/// (entries = m t).
double tensor_core_lambda(double failure, double u_bar, double u_fma, double n, double b,
                          double entries = 1);

}  // namespace ebla::bounds
