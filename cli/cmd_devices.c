/* cmd_devices.c -- `gsm devices [--json]`: every Vulkan device with its
 * capability record, as a table or as JSON. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_DEVICES 16

static const char *type_name(gsmrt_device_type t)
{
    switch (t) {
    case GSMRT_DEVICE_INTEGRATED_GPU: return "integrated-gpu";
    case GSMRT_DEVICE_DISCRETE_GPU: return "discrete-gpu";
    case GSMRT_DEVICE_VIRTUAL_GPU: return "virtual-gpu";
    case GSMRT_DEVICE_CPU: return "cpu";
    default: return "other";
    }
}

static void memory_flags(uint32_t f, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s%s", f & GSMRT_MEMORY_DEVICE_LOCAL ? "device-local " : "",
             f & GSMRT_MEMORY_HOST_VISIBLE ? "host-visible " : "",
             f & GSMRT_MEMORY_HOST_COHERENT ? "host-coherent " : "",
             f & GSMRT_MEMORY_HOST_CACHED ? "host-cached " : "");
    size_t n = strlen(buf);
    if (n) buf[n - 1] = '\0';
}

static const char *yes(bool b) { return b ? "yes" : "no"; }

static void print_text(const gsmrt_device_info *d)
{
    char mf[96];
    printf("device %u: %s\n", d->index, d->name);
    printf("  type                 %s%s\n", type_name(d->type), d->usable ? "" : " (not usable: needs Vulkan 1.2 and compute)");
    printf("  vendor / device id   0x%04x / 0x%04x\n", d->vendor_id, d->device_id);
    printf("  Vulkan               %u.%u.%u\n", d->api_version >> 22, (d->api_version >> 12) & 0x3ff,
           d->api_version & 0xfff);
    printf("  driver               %s %s\n", d->driver_name, d->driver_info);
    printf("  fp16 arithmetic      %s\n", yes(d->fp16_arithmetic));
    printf("  8/16-bit storage     %s / %s\n", yes(d->storage_8bit), yes(d->storage_16bit));
    printf("  subgroup             size %u, arithmetic %s, shuffle %s\n", d->subgroup_size,
           yes(d->subgroup_arithmetic), yes(d->subgroup_shuffle));
    printf("  max binding range    %llu bytes (%.0f MiB)\n", (unsigned long long)d->max_storage_buffer_range,
           d->max_storage_buffer_range / 1048576.0);
    printf("  max allocation       %.0f MiB\n", d->max_memory_allocation_size / 1048576.0);
    printf("  push constants       %u bytes\n", d->max_push_constants_size);
    printf("  shared memory        %u bytes, %u invocations per workgroup\n", d->max_compute_shared_memory,
           d->max_workgroup_invocations);
    printf("  unified memory       %s\n", yes(d->unified_memory));
    printf("  transfer queue       %s\n", yes(d->transfer_queue));
    printf("  timestamps           %s (%.3g ns per tick)\n", yes(d->timestamps), d->timestamp_period_ns);
    printf("  memory budget ext    %s\n", yes(d->memory_budget));
    printf("  push descriptors     %s\n", yes(d->push_descriptor));
    for (uint32_t h = 0; h < d->n_memory_heaps && h < GSMRT_MAX_MEMORY_HEAPS; h++)
        printf("  heap %u               %.0f MiB%s\n", h, d->memory_heap_size[h] / 1048576.0,
               d->memory_heap_flags[h] & 1 ? " device-local" : "");
    for (uint32_t t = 0; t < d->n_memory_types && t < GSMRT_MAX_MEMORY_TYPES; t++) {
        memory_flags(d->memory_type_flags[t], mf, sizeof mf);
        printf("  memory type %-2u       heap %u: %s\n", t, d->memory_type_heap[t], mf[0] ? mf : "(none)");
    }
    printf("  quirks               %s\n", d->quirks[0] ? d->quirks : "(none)");
}

static void print_json(const gsmrt_device_info *devs, uint32_t n)
{
    printf("[");
    for (uint32_t i = 0; i < n; i++) {
        const gsmrt_device_info *d = &devs[i];
        printf("%s\n  {\"index\": %u, \"name\": ", i ? "," : "", d->index);
        json_string(stdout, d->name);
        printf(", \"type\": \"%s\", \"usable\": %s, \"vendor_id\": %u, \"device_id\": %u, "
               "\"api_version\": \"%u.%u.%u\", \"driver_name\": ",
               type_name(d->type), d->usable ? "true" : "false", d->vendor_id, d->device_id,
               d->api_version >> 22, (d->api_version >> 12) & 0x3ff, d->api_version & 0xfff);
        json_string(stdout, d->driver_name);
        printf(", \"driver_info\": ");
        json_string(stdout, d->driver_info);
        printf(",\n   \"fp16_arithmetic\": %s, \"storage_8bit\": %s, \"storage_16bit\": %s, "
               "\"subgroup_size\": %u, \"subgroup_arithmetic\": %s, \"subgroup_shuffle\": %s,\n"
               "   \"max_storage_buffer_range\": %llu, \"max_memory_allocation_size\": %llu, "
               "\"max_push_constants_size\": %u, \"max_compute_shared_memory\": %u, "
               "\"max_workgroup_invocations\": %u, \"min_storage_buffer_offset_alignment\": %llu,\n"
               "   \"unified_memory\": %s, \"transfer_queue\": %s, \"timestamps\": %s, "
               "\"timestamp_period_ns\": %g, \"memory_budget\": %s, \"push_descriptor\": %s,\n   \"heaps\": [",
               d->fp16_arithmetic ? "true" : "false", d->storage_8bit ? "true" : "false",
               d->storage_16bit ? "true" : "false", d->subgroup_size,
               d->subgroup_arithmetic ? "true" : "false", d->subgroup_shuffle ? "true" : "false",
               (unsigned long long)d->max_storage_buffer_range,
               (unsigned long long)d->max_memory_allocation_size, d->max_push_constants_size,
               d->max_compute_shared_memory, d->max_workgroup_invocations,
               (unsigned long long)d->min_storage_buffer_offset_alignment,
               d->unified_memory ? "true" : "false", d->transfer_queue ? "true" : "false",
               d->timestamps ? "true" : "false", d->timestamp_period_ns,
               d->memory_budget ? "true" : "false", d->push_descriptor ? "true" : "false");
        for (uint32_t h = 0; h < d->n_memory_heaps && h < GSMRT_MAX_MEMORY_HEAPS; h++)
            printf("%s{\"size\": %llu, \"device_local\": %s}", h ? ", " : "",
                   (unsigned long long)d->memory_heap_size[h], d->memory_heap_flags[h] & 1 ? "true" : "false");
        printf("],\n   \"memory_types\": [");
        for (uint32_t t = 0; t < d->n_memory_types && t < GSMRT_MAX_MEMORY_TYPES; t++)
            printf("%s{\"heap\": %u, \"flags\": %u}", t ? ", " : "", d->memory_type_heap[t],
                   d->memory_type_flags[t]);
        printf("],\n   \"quirks\": ");
        json_string(stdout, d->quirks);
        printf("}");
    }
    printf("\n]\n");
}

int cmd_devices(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: gsm devices [--json]\n\n"
                   "Lists every Vulkan device with its capability record: features, limits,\n"
                   "memory heaps and types, and the driver quirks gsmrt applies to it.\n"
                   "The device gsmrt uses by default is the first discrete GPU, then integrated,\n"
                   "virtual, CPU; choose another with GSMRT_DEVICE=<index or name>.\n\n"
                   "  --json   print a JSON array instead of the table\n");
            return 0;
        } else {
            fprintf(stderr, "gsm devices: unknown option '%s' (see gsm devices --help)\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    gsmrt_device_info devs[MAX_DEVICES];
    for (int i = 0; i < MAX_DEVICES; i++) gsmrt_device_info_init(&devs[i], sizeof devs[i]);
    uint32_t n = 0;
    char err[512];
    gsmrt_status st = gsmrt_device_enumerate(devs, MAX_DEVICES, &n, err, sizeof err);
    if (st != GSMRT_OK) {
        fprintf(stderr, "gsm devices: %s (%s)\n", err, gsmrt_status_name(st));
        return EXIT_RUNTIME;
    }
    if (n > MAX_DEVICES) n = MAX_DEVICES;
    if (json) print_json(devs, n);
    else if (n == 0) printf("no Vulkan devices found\n");
    else
        for (uint32_t i = 0; i < n; i++) print_text(&devs[i]);
    return 0;
}
