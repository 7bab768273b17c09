// header_cxx.cpp -- gsmrt.h compiles alone as C++ (and links from C++).
#include "gsmrt.h"

int main()
{
    gsmrt_device_info info;
    gsmrt_device_info_init(&info, sizeof info);
    return gsmrt_version() == GSMRT_VERSION && gsmrt_status_name(GSMRT_OK)[0] == 'G' ? 0 : 1;
}
