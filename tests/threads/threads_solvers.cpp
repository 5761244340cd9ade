// CG and ACG (qdot riding in the update pass, plans tried again) on HPCCG's problem with the
// stencil and CSR operators, CG with block-Jacobi, mixed-precision refinement (float CG
// inside) on the same, CG with SGS and IC(0), and the power method with qdot on a graph Laplacian: every iterate's
// scalars and the solution.
#include "digest.hpp"

#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/power.hpp>
#include <ebla/solvers/preconditioner.hpp>
#include <ebla/solvers/problems.hpp>
#include <ebla/solvers/refined_cg.hpp>

namespace {

using ebla_threads::Digest;

void record(Digest& d, const ebla::CgResult& r) {
  d.add(r.iterations);
  d.add(r.true_residual);
  for (const auto& it : r.history) {
    d.add(it.alpha);
    d.add(it.beta);
    d.add(it.residual);
    d.add(it.pq.value);
    d.add(it.pq.bound);
    d.add(it.rr.value);
    d.add(it.rr.bound);
  }
  d.add(r.x.data(), r.x.extent(0));
}

void cg_cases(Digest& d) {
  const auto problem = ebla::hpccg_problem(40, 40, 30);  // 48,000 rows: several chunks
  const ebla::StencilOperator stencil(40, 40, 30);
  const ebla::CsrOperator csr(problem.A);
  ebla::CgOptions o;
  o.tolerance = 1e-8;
  ebla::QdotOptions q;
  q.tolerance = 1e-4;
  ebla::QdotOptions widened = q;  // the remembered plan widened (QdotOptions::plan_margin)
  widened.plan_margin = 8;
  for (const auto& dots : {ebla::DotPolicy::exact(), ebla::DotPolicy::approximate(q),
                           ebla::DotPolicy::approximate(widened)}) {
    record(d, ebla::cg(stencil, problem.b, problem.x0, dots, o));
    record(d, ebla::cg(csr, problem.b, problem.x0, dots, o));
  }
  o.jacobi = true;
  record(d, ebla::cg(csr, problem.b, problem.x0, ebla::DotPolicy::approximate(q), o));
}

// CG with block-Jacobi (one block per work item, each solved in a fixed order) on the
// diffusion problem, whose coefficients span six decades, and on the stencil (its matrix
// built once): every iterate's scalars and the solution.
void cg_block_jacobi_cases(Digest& d) {
  const auto diffusion = ebla::diffusion_problem(30, 30, 20, 5);  // 18,000 rows
  const auto hpccg = ebla::hpccg_problem(30, 30, 20);
  ebla::CgOptions o;
  o.tolerance = 1e-8;
  o.pc = ebla::PcKind::block_jacobi;
  record(d, ebla::cg(ebla::CsrOperator(diffusion.A), diffusion.b, diffusion.x0, ebla::DotPolicy::exact(), o));
  o.pc_block_size = 7;
  ebla::QdotOptions q;
  q.tolerance = 1e-4;
  record(d, ebla::cg(ebla::StencilOperator(30, 30, 20), hpccg.b, hpccg.x0, ebla::DotPolicy::approximate(q), o));
  o.pc_storage = ebla::BlockStorage::chosen();  // factors in bfloat16, binary32 and binary64 by the rule
  record(d, ebla::cg(ebla::CsrOperator(diffusion.A), diffusion.b, diffusion.x0, ebla::DotPolicy::exact(), o));
}

// Multicolour SGS and IC(0) (one parallel_for per colour or level, each row's sum in a fixed
// order): z = M^-1 r of a random r on the diffusion problem, then CG with each on it (exact
// dots) and on the stencil (its matrix built once; qdot): every iterate's scalars and x.
void cg_sgs_ic0_cases(Digest& d) {
  const auto diffusion = ebla::diffusion_problem(30, 30, 20, 5);  // 18,000 rows
  const auto hpccg = ebla::hpccg_problem(30, 30, 20);
  const ebla::SymmetricGaussSeidel sgs(diffusion.A);
  const ebla::IncompleteCholesky ic0(diffusion.A);
  const ebla::Vector r = ebla::random_unit_vector(18000, 7), z("z", 18000);
  sgs.apply(r, z);
  d.add(z.data(), z.extent(0));
  d.add(static_cast<int>(sgs.colours()));
  ic0.apply(r, z);
  d.add(z.data(), z.extent(0));
  d.add(static_cast<int>(ic0.levels()));
  ebla::CgOptions o;
  o.tolerance = 1e-8;
  ebla::QdotOptions q;
  q.tolerance = 1e-4;
  for (ebla::PcKind pc : {ebla::PcKind::sgs, ebla::PcKind::ic0}) {
    o.pc = pc;
    record(d, ebla::cg(ebla::CsrOperator(diffusion.A), diffusion.b, diffusion.x0, ebla::DotPolicy::exact(), o));
    record(d, ebla::cg(ebla::StencilOperator(30, 30, 20), hpccg.b, hpccg.x0, ebla::DotPolicy::approximate(q), o));
  }
}

// CG with narrow storage: each kind of format for p, q and r (tiles merged in tile order),
// with and without Jacobi, on both operators; the iterates, gap bounds and replacements. The
// passes run in the form this CPU takes (AVX-512, AVX2 or generic: EBLA_ISA chooses).
void cg_storage_cases(Digest& d) {
  const auto problem = ebla::hpccg_problem(40, 40, 20);  // 32,000 rows: 63 tiles
  const ebla::StencilOperator stencil(40, 40, 20);
  const ebla::CsrOperator csr(problem.A);
  ebla::CgOptions o;
  o.tolerance = 1e-6;
  const ebla::Storage formats[][2] = {{ebla::Storage::binary32, ebla::Storage::binary64},
                                      {ebla::Storage::block8, ebla::Storage::binary16},
                                      {ebla::Storage::bfloat16, ebla::Storage::block16},
                                      {ebla::Storage::binary16, ebla::Storage::bfloat16},
                                      {ebla::Storage::block16, ebla::Storage::binary32}};
  for (const auto& f : formats) {
    o.storage = ebla::StoragePolicy::of(f[0], f[1]);
    for (bool jacobi : {false, true}) {
      o.jacobi = jacobi;
      for (const auto& r : {ebla::cg(stencil, problem.b, problem.x0, ebla::DotPolicy::exact(), o),
                            ebla::cg(csr, problem.b, problem.x0, ebla::DotPolicy::exact(), o)}) {
        record(d, r);
        d.add(r.replacements);
        for (const auto& it : r.history) d.add(it.gap);
      }
    }
  }
}

void refined_cases(Digest& d) {
  const auto problem = ebla::hpccg_problem(40, 40, 30);
  ebla::RefinedCgOptions o;
  o.tolerance = 1e-10;
  for (int op = 0; op < 2; ++op) {
    const ebla::RefinedCgResult r =
        op == 0 ? ebla::refined_cg(ebla::StencilOperator(40, 40, 30), problem.b, problem.x0, o)
                : ebla::refined_cg(ebla::CsrOperator(problem.A), problem.b, problem.x0, o);
    d.add(r.outer_iterations);
    d.add(r.inner_iterations);
    d.add(r.true_residual);
    for (const auto& step : r.history) {
      d.add(step.residual);
      d.add(step.inner_iterations);
      d.add(step.inner_residual);
    }
    d.add(r.x.data(), r.x.extent(0));
  }
}

void power_cases(Digest& d) {
  const ebla::CsrOperator L(ebla::graph_laplacian(30000, 10, 1));
  ebla::PowerOptions o;
  o.max_iterations = 40;
  ebla::QdotOptions q;
  q.tolerance = 1e-6;
  const auto r = ebla::power_method(L, ebla::random_unit_vector(30000, 2), ebla::DotPolicy::approximate(q), o);
  d.add(r.iterations);
  d.add(r.residual);
  d.add(r.eigenvalue);
  d.add(r.eigenvector.data(), r.eigenvector.extent(0));
}

// The power method with a stored iterate: a narrow format of each kind and auto, on a graph
// Laplacian (bfloat16 values) and on the stencil; every eigenvalue estimate and the vector.
void power_storage_cases(Digest& d) {
  const ebla::CsrOperator L(ebla::graph_laplacian(30000, 10, 1));
  const ebla::StencilOperator stencil(40, 40, 20);
  ebla::PowerOptions o;
  o.max_iterations = 30;
  for (const ebla::StoragePolicy& s :
       {ebla::StoragePolicy::of(ebla::Storage::binary32), ebla::StoragePolicy::of(ebla::Storage::block8),
        ebla::StoragePolicy::of(ebla::Storage::binary16), ebla::StoragePolicy::of(ebla::Storage::bfloat16),
        ebla::StoragePolicy::automatic()}) {
    o.storage = s;
    for (const auto& r : {ebla::power_method(L, ebla::random_unit_vector(30000, 2), ebla::DotPolicy::exact(), o),
                          ebla::power_method(stencil, ebla::random_unit_vector(32000, 3), ebla::DotPolicy::exact(), o)}) {
      d.add(r.iterations);
      d.add(r.residual);
      for (const auto& it : r.history) d.add(it.eigenvalue);
      d.add(r.eigenvector.data(), r.eigenvector.extent(0));
    }
  }
}

const ebla_threads::Register cg_case("solvers.cg", cg_cases);
const ebla_threads::Register refined_case("solvers.refined_cg", refined_cases);
const ebla_threads::Register power_case("solvers.power", power_cases);
const ebla_threads::Register cg_storage_case("solvers.cg_storage", cg_storage_cases);
const ebla_threads::Register cg_block_jacobi_case("solvers.cg_block_jacobi", cg_block_jacobi_cases);
const ebla_threads::Register cg_sgs_ic0_case("solvers.cg_sgs_ic0", cg_sgs_ic0_cases);
const ebla_threads::Register power_storage_case("solvers.power_storage", power_storage_cases);

}  // namespace
