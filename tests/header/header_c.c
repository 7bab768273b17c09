/* header_c.c -- gsmrt.h compiles alone as strict C11 (-pedantic). */
#include "gsmrt.h"

int main(void)
{
    gsmrt_device_info info;
    gsmrt_device_info_init(&info, sizeof info);
    return gsmrt_version() == GSMRT_VERSION && info.struct_size == sizeof info ? 0 : 1;
}
