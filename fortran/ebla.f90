! ebla from Fortran: `use ebla` for the C calls of ebla/qdot.h, declared through iso_c_binding.
!
!   use ebla
!   type(ebla_qdot_options) :: opt
!   type(ebla_qdot_info) :: info
!   call ebla_qdot_options_init(opt)
!   opt%tolerance = 1d-6
!   v = ebla_dqdot(int(n, c_size_t), x, 1_c_ptrdiff_t, y, 1_c_ptrdiff_t, opt, info)
!
! The arguments are those of BLAS ddot/sdot (n, x, incx, y, incy; a negative increment reads
! the array from its end), then the options and the info (docs/qdot.md, "From C"). The
! options' policy and ladder are C strings: c_null_ptr for the defaults, or c_loc of a
! character array ending in c_null_char. ebla_error_message() returns the message of this
! thread's last failure as a Fortran string.
module ebla
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: ebla_qdot_info, ebla_qdot_options, ebla_qdot_options_init, ebla_dqdot, ebla_sqdot, &
            ebla_qdot, ebla_error_message, EBLA_OK, EBLA_INVALID_ARGUMENT, EBLA_INTERNAL_ERROR

  integer(c_int), parameter :: EBLA_OK = 0, EBLA_INVALID_ARGUMENT = 1, EBLA_INTERNAL_ERROR = 2

  ! ebla_qdot_info of ebla/qdot.h, field for field
  type, bind(c) :: ebla_qdot_info
    integer(c_int) :: status
    real(c_double) :: bound
    integer(c_size_t) :: count(4)
    integer(c_size_t) :: zeros
    integer(c_int) :: bins
    integer(c_int) :: nonfinite
    real(c_double) :: select_seconds
    real(c_double) :: compute_seconds
    integer(c_int) :: kept_top_bin
  end type ebla_qdot_info

  ! ebla_qdot_options of ebla/qdot.h
  type, bind(c) :: ebla_qdot_options
    real(c_double) :: tolerance
    type(c_ptr) :: policy
    type(c_ptr) :: ladder
  end type ebla_qdot_options

  interface
    subroutine ebla_qdot_options_init(options) bind(c, name="ebla_qdot_options_init")
      import :: ebla_qdot_options
      type(ebla_qdot_options), intent(out) :: options
    end subroutine ebla_qdot_options_init

    function ebla_dqdot(n, x, incx, y, incy, options, info) result(v) bind(c, name="ebla_dqdot")
      import :: c_size_t, c_double, c_ptrdiff_t, ebla_qdot_options, ebla_qdot_info
      integer(c_size_t), value :: n
      real(c_double), intent(in) :: x(*), y(*)
      integer(c_ptrdiff_t), value :: incx, incy
      type(ebla_qdot_options), intent(in) :: options
      type(ebla_qdot_info), intent(out) :: info
      real(c_double) :: v
    end function ebla_dqdot

    function ebla_sqdot(n, x, incx, y, incy, options, info) result(v) bind(c, name="ebla_sqdot")
      import :: c_size_t, c_float, c_double, c_ptrdiff_t, ebla_qdot_options, ebla_qdot_info
      integer(c_size_t), value :: n
      real(c_float), intent(in) :: x(*), y(*)
      integer(c_ptrdiff_t), value :: incx, incy
      type(ebla_qdot_options), intent(in) :: options
      type(ebla_qdot_info), intent(out) :: info
      real(c_double) :: v
    end function ebla_sqdot

    function ebla_qdot(x, y, n, tolerance, info) result(v) bind(c, name="ebla_qdot")
      import :: c_size_t, c_double, ebla_qdot_info
      real(c_double), intent(in) :: x(*), y(*)
      integer(c_size_t), value :: n
      real(c_double), value :: tolerance
      type(ebla_qdot_info), intent(out) :: info
      real(c_double) :: v
    end function ebla_qdot

    function c_last_error() result(p) bind(c, name="ebla_last_error")
      import :: c_ptr
      type(c_ptr) :: p
    end function c_last_error

    function c_strlen(s) result(n) bind(c, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function c_strlen
  end interface

contains

  ! The message of this thread's last failure ("" if none), copied into a Fortran string.
  function ebla_error_message() result(message)
    character(len=:), allocatable :: message
    type(c_ptr) :: p
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    p = c_last_error()
    n = int(c_strlen(p))
    allocate(character(len=n) :: message)
    if (n == 0) return
    call c_f_pointer(p, chars, [n])
    do i = 1, n
      message(i:i) = chars(i)
    end do
  end function ebla_error_message

end module ebla
