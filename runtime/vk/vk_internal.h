/* vk_internal.h -- functions shared between the files of runtime/vk only. */
#ifndef GSMRT_VK_INTERNAL_H
#define GSMRT_VK_INTERNAL_H

#include "vk/vk.h"

/* path NULL: the default location; "": no persistence. */
gsmrt_status gsmrt_vk_pipeline_cache_open(struct gsmrt_vk_device *dev, const char *path,
                                          struct gsmrt_err *err);
void gsmrt_vk_pipelines_destroy(struct gsmrt_vk_device *dev);
void gsmrt_vk_memory_destroy(struct gsmrt_vk_device *dev);

#endif
