# GsmrtWarnings.cmake -- the warning set every first-party target builds with.
#
# -Werror is for developers and CI (scripts/test.sh turns it on): a user or a
# packager building Release with another compiler version must not be stopped
# by a new or false-positive warning (GCC 12's maybe-uninitialized at -O3 was
# one), so it is off by default.
option(GSMRT_WERROR "Treat compiler warnings as errors (developers and CI)" OFF)

function(gsmrt_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wvla
    -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers)
  if(GSMRT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
