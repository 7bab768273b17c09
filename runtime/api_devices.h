/* api_devices.h -- the public device record filled from the caps. */
#ifndef GSMRT_API_DEVICES_H
#define GSMRT_API_DEVICES_H

#include "vk/vk.h"

void gsmrt_device_info_fill(gsmrt_device_info *o, uint32_t index, const struct gsmrt_vk_caps *c);

#endif
