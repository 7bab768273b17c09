/* volk_impl.c -- compiles Debian's volk (header-only mode) into the library.
 * Its symbols stay hidden: the shared library exports gsmrt_* only. */
#define VOLK_IMPLEMENTATION
#include <volk.h>
