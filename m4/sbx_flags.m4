# sbx_flags.m4: probe compiler and linker flags before using them, so that
# one configure.ac serves gcc and clang (clang rejects gcc-only warnings such
# as -Wjump-misses-init, gcc accepts any -Wno-foo silently). A small local
# equivalent of autoconf-archive's AX_CHECK_COMPILE_FLAG / AX_CHECK_LINK_FLAG,
# so that building sbx does not need autoconf-archive.

# SBX_CHECK_CFLAG(FLAG, VARIABLE, [PROBE])
# ---------------------------------------
# Appends FLAG to VARIABLE when the C compiler accepts PROBE (default: FLAG)
# with -Werror, i.e. without even a warning. A -Wno-foo is probed as -Wfoo.
AC_DEFUN([SBX_CHECK_CFLAG], [
  AS_VAR_PUSHDEF([sbx_cv], [sbx_cv_cflag_$1])
  AC_CACHE_CHECK([whether $CC accepts $1], [sbx_cv], [
    sbx_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS $$2 -Werror m4_default([$3], [$1])"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [[return 0;]])],
      [AS_VAR_SET([sbx_cv], [yes])], [AS_VAR_SET([sbx_cv], [no])])
    CFLAGS=$sbx_save_CFLAGS])
  AS_VAR_IF([sbx_cv], [yes], [$2="$$2 $1"])
  AS_VAR_POPDEF([sbx_cv])
])

# SBX_CHECK_CFLAGS(FLAGS, VARIABLE)
# ---------------------------------
# SBX_CHECK_CFLAG for each of the blank-separated FLAGS.
AC_DEFUN([SBX_CHECK_CFLAGS], [
  m4_foreach_w([sbx_flag], [$1], [
    m4_if(m4_substr(sbx_flag, 0, 5), [-Wno-],
      [SBX_CHECK_CFLAG(sbx_flag, [$2], [-W]m4_substr(sbx_flag, 5))],
      [SBX_CHECK_CFLAG(sbx_flag, [$2])])
  ])
])

# SBX_CHECK_LDFLAG(FLAG, VARIABLE)
# --------------------------------
# Appends FLAG to VARIABLE when a program links with it without a warning.
AC_DEFUN([SBX_CHECK_LDFLAG], [
  AS_VAR_PUSHDEF([sbx_cv], [sbx_cv_ldflag_$1])
  AC_CACHE_CHECK([whether the linker accepts $1], [sbx_cv], [
    sbx_save_LDFLAGS=$LDFLAGS
    sbx_save_CFLAGS=$CFLAGS
    LDFLAGS="$LDFLAGS $1"
    CFLAGS="$CFLAGS -Werror"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [[return 0;]])],
      [AS_VAR_SET([sbx_cv], [yes])], [AS_VAR_SET([sbx_cv], [no])])
    LDFLAGS=$sbx_save_LDFLAGS
    CFLAGS=$sbx_save_CFLAGS])
  AS_VAR_IF([sbx_cv], [yes], [$2="$$2 $1"])
  AS_VAR_POPDEF([sbx_cv])
])
