! `use ebla` from Fortran: ebla_dqdot and ebla_sqdot with BLAS increments against the same
! elements passed contiguously (the same bits), the certified bound against a reference sum
! in quadruple precision, the guard against a value of exactly 0 with every product
! perforated, and a bad tolerance named in the error. Stops with a nonzero code on failure.
program test_fortran
  use, intrinsic :: iso_c_binding
  use ebla
  implicit none
  integer, parameter :: n = 2000, qp = selected_real_kind(30)
  real(c_double) :: x(n), y(n), xs(2 * n), yr(n), v, w
  real(c_float) :: xf(n), yf(n)
  type(ebla_qdot_options) :: opt
  type(ebla_qdot_info) :: info
  real(qp) :: exact
  integer :: i, failures
  character(len=7, kind=c_char), target :: paper = c_char_"paper" // c_null_char

  failures = 0
  do i = 1, n  ! magnitudes 2^-9 .. 2^9, both signs
    x(i) = (1 + mod(i * 37, 101) / 101d0) * 2d0**(mod(i * 7, 19) - 9) * merge(1, -1, mod(i, 3) /= 0)
    y(i) = (1 + mod(i * 53, 97) / 97d0) * 2d0**(mod(i * 11, 19) - 9)
  end do
  xs = -1d300             ! x in every second slot, the others never read
  xs(1:2 * n:2) = x
  yr = y(n:1:-1)          ! y backwards: read with increment -1
  call ebla_qdot_options_init(opt)
  opt%tolerance = 1d-6

  v = ebla_dqdot(int(n, c_size_t), x, 1_c_ptrdiff_t, y, 1_c_ptrdiff_t, opt, info)
  call check(info%status == EBLA_OK, "contiguous call")
  exact = sum(real(x, qp) * real(y, qp))
  call check(abs(real(v, qp) - exact) <= real(info%bound, qp), "bound")
  w = ebla_dqdot(int(n, c_size_t), xs, 2_c_ptrdiff_t, yr, -1_c_ptrdiff_t, opt, info)
  call check(transfer(w, 0_c_int64_t) == transfer(v, 0_c_int64_t), "increments 2 and -1: the same bits")
  call check(transfer(ebla_qdot(x, y, int(n, c_size_t), 1d-6, info), 0_c_int64_t) == transfer(v, 0_c_int64_t), &
             "ebla_qdot: the same bits")

  opt%policy = c_loc(paper)
  v = ebla_dqdot(int(n, c_size_t), x, 1_c_ptrdiff_t, y, 1_c_ptrdiff_t, opt, info)
  call check(info%status == EBLA_OK .and. abs(real(v, qp) - exact) <= real(info%bound, qp), "paper policy")
  opt%policy = c_null_ptr

  xf = real(x, c_float)
  yf = real(y, c_float)
  v = ebla_sqdot(int(n, c_size_t), xf, 1_c_ptrdiff_t, yf, 1_c_ptrdiff_t, opt, info)
  exact = sum(real(xf, qp) * real(yf, qp))
  call check(info%status == EBLA_OK .and. abs(real(v, qp) - exact) <= real(info%bound, qp), "ebla_sqdot")

  opt%tolerance = 1d2     ! would perforate every product
  v = ebla_dqdot(int(n, c_size_t), x, 1_c_ptrdiff_t, x, 1_c_ptrdiff_t, opt, info)
  call check(v > 0 .and. info%kept_top_bin == 1, "no value of 0 from nothing computed")

  opt%tolerance = -1
  v = ebla_dqdot(int(n, c_size_t), x, 1_c_ptrdiff_t, y, 1_c_ptrdiff_t, opt, info)
  call check(v /= v .and. info%status == EBLA_INVALID_ARGUMENT, "bad tolerance: NaN and the status")
  call check(index(ebla_error_message(), "ebla_dqdot") > 0 .and. index(ebla_error_message(), "tolerance") > 0, &
             "bad tolerance: the message names the function and the tolerance")
  print '(a, a)', "test_fortran: bad tolerance says: ", ebla_error_message()

  if (failures > 0) error stop 1
  print '(a)', "test_fortran: all checks passed"

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a, a)', "FAILED: ", what
      failures = failures + 1
    end if
  end subroutine check

end program test_fortran
