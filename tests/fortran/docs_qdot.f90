! docs/qdot.md's Fortran example, whole: the part between "docs/qdot.md: begin" and
! "docs/qdot.md: end" is shown there as it is (tests/apps/doc_snippets.py compares them).
! docs/qdot.md: begin
program strided_qdot
  use, intrinsic :: iso_c_binding
  use ebla
  implicit none
  integer, parameter :: n = 1000
  integer :: i
  real(c_double) :: x(2 * n), y(n), v
  type(ebla_qdot_options) :: opt
  type(ebla_qdot_info) :: info
  x = 0.5d0                                  ! read with increment 2: x(1), x(3), ..., x(2n - 1)
  y = [(real(i, c_double), i = 1, n)]        ! read with increment -1: y(n), ..., y(1)
  call ebla_qdot_options_init(opt)
  opt%tolerance = 1d-6
  v = ebla_dqdot(int(n, c_size_t), x, 2_c_ptrdiff_t, y, -1_c_ptrdiff_t, opt, info)
  print '(a, f0.1, a, es9.2)', 'x^T y = ', v, ' +- ', info%bound
  if (info%status /= EBLA_OK .or. abs(v - 250250d0) > info%bound) error stop 1
end program strided_qdot
! docs/qdot.md: end
