# GsmrtWarnings.cmake -- the warning set every first-party target builds with.
function(gsmrt_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wshadow -Wvla
    -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers)
endfunction()
