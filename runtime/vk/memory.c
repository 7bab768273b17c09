/* memory.c -- device memory by role: memory-type choice, blocks of at most
 * maxMemoryAllocationSize, first-fit sub-allocation with coalescing, byte
 * accounting per role and per heap, and upload/download.
 *
 * Each block is one VkDeviceMemory with one VkBuffer over all of it; a
 * sub-allocation is an aligned [offset, size) of that buffer. Blocks belong to
 * one role, so "bytes held per role" is exact; an emptied block is released. */
#include <inttypes.h>
#include <string.h>

#include "base/mem.h"
#include "vk/vk_internal.h"

struct free_range {
    VkDeviceSize offset, size;
};

struct gsmrt_vk_block {
    struct gsmrt_vk_block *next;
    enum gsmrt_vk_role role;
    uint32_t type_index, heap;
    VkDeviceMemory memory;
    VkBuffer buffer;
    VkDeviceSize size;
    unsigned char *mapped;        /* whole block, when host-visible */
    struct free_range *free;      /* sorted by offset, never adjacent */
    uint32_t n_free, cap_free;
    uint32_t n_live;              /* sub-allocations handed out */
};

static const char *const ROLE_NAMES[GSMRT_VK_ROLE_COUNT] = {
    "weights", "kv_hot", "kv_cold", "scratch", "staging", "readback",
};

const char *gsmrt_vk_role_name(enum gsmrt_vk_role role)
{
    return (unsigned)role < GSMRT_VK_ROLE_COUNT ? ROLE_NAMES[role] : "unknown";
}

void gsmrt_vk_role_memory_flags(enum gsmrt_vk_role role, VkMemoryPropertyFlags *required,
                                VkMemoryPropertyFlags *preferred, VkMemoryPropertyFlags *avoid)
{
    const VkMemoryPropertyFlags DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                CA = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    switch (role) {
    case GSMRT_VK_ROLE_WEIGHTS:
    case GSMRT_VK_ROLE_KV_HOT:
    case GSMRT_VK_ROLE_SCRATCH:
        /* Avoid host-visible device memory: on a discrete GPU without
         * resizable BAR that is a small 256 MiB window. */
        *required = DL, *preferred = 0, *avoid = HV;
        break;
    case GSMRT_VK_ROLE_KV_COLD:
        /* System RAM the GPU reads over the bus: what "swap" means. */
        *required = HV | HC, *preferred = 0, *avoid = DL;
        break;
    case GSMRT_VK_ROLE_STAGING:
        *required = HV | HC, *preferred = 0, *avoid = DL | CA;
        break;
    case GSMRT_VK_ROLE_READBACK:
    default:
        *required = HV | HC, *preferred = CA, *avoid = DL;
        break;
    }
}

int gsmrt_vk_pick_memory_type(const VkPhysicalDeviceMemoryProperties *mem, uint32_t type_bits,
                              VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                              VkMemoryPropertyFlags avoid)
{
    int best = -1, best_score = -1000;
    for (uint32_t i = 0; i < mem->memoryTypeCount; i++) {
        if (!(type_bits & (1u << i))) continue;
        VkMemoryPropertyFlags f = mem->memoryTypes[i].propertyFlags;
        if ((f & required) != required) continue;
        int score = __builtin_popcount(f & preferred) - __builtin_popcount(f & avoid);
        if (score > best_score) {
            best_score = score;
            best = (int)i;
        }
    }
    return best;
}

static uint64_t heap_budget(const struct gsmrt_vk_device *dev, uint32_t heap)
{
    uint64_t size = dev->caps.memory.memoryHeaps[heap].size;
    if (dev->caps.ext_memory_budget) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 p = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = &b};
        vkGetPhysicalDeviceMemoryProperties2(dev->phys, &p);
        /* The budget counts what this process already holds; add ours back so
         * the figure is comparable with heap_bytes. */
        if (b.heapBudget[heap]) size = b.heapBudget[heap];
    }
    return size;
}

static void block_destroy(struct gsmrt_vk_device *dev, struct gsmrt_vk_block *b)
{
    if (b->mapped) dev->vk.vkUnmapMemory(dev->device, b->memory);
    if (b->buffer) dev->vk.vkDestroyBuffer(dev->device, b->buffer, NULL);
    if (b->memory) {
        dev->vk.vkFreeMemory(dev->device, b->memory, NULL);
        dev->heap_bytes[b->heap] -= b->size;
    }
    gsmrt_mem_free(dev->alloc, b->free);
    gsmrt_mem_free(dev->alloc, b);
}

void gsmrt_vk_memory_destroy(struct gsmrt_vk_device *dev)
{
    struct gsmrt_vk_block *b = dev->blocks;
    while (b) {
        struct gsmrt_vk_block *next = b->next;
        block_destroy(dev, b);
        b = next;
    }
    dev->blocks = NULL;
}

/* The roles the runtime puts in device memory by choice. The others (cold
 * KV pages, staging, readback) belong in system memory; on a unified-memory
 * device they land in the one device-local heap all the same, and the forced
 * budget leaves them out so that it behaves as a discrete GPU's memory size
 * would (how GSM swap is tested on lavapipe). */
static bool role_wants_device(enum gsmrt_vk_role role)
{
    return role == GSMRT_VK_ROLE_WEIGHTS || role == GSMRT_VK_ROLE_KV_HOT || role == GSMRT_VK_ROLE_SCRATCH;
}

/* Bytes the forced budget counts: device-local blocks of device roles. */
static uint64_t device_local_held(const struct gsmrt_vk_device *dev)
{
    uint64_t sum = 0;
    for (const struct gsmrt_vk_block *b = dev->blocks; b; b = b->next)
        if ((dev->caps.memory.memoryHeaps[b->heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            role_wants_device(b->role))
            sum += b->size;
    return sum;
}

static gsmrt_status block_create(struct gsmrt_vk_device *dev, enum gsmrt_vk_role role,
                                 VkDeviceSize size, struct gsmrt_vk_block **out,
                                 struct gsmrt_err *err)
{
    *out = NULL;
    struct gsmrt_vk_block *b = gsmrt_mem_calloc(dev->alloc, 1, sizeof *b);
    if (!b) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "memory block record");
    b->role = role;
    b->size = size;
    gsmrt_status st;
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = dev->vk.vkCreateBuffer(dev->device, &bi, NULL, &b->buffer);
    if (r != VK_SUCCESS) {
        st = gsmrt_vk_result(err, r, "vkCreateBuffer");
        goto fail;
    }
    VkMemoryRequirements req;
    dev->vk.vkGetBufferMemoryRequirements(dev->device, b->buffer, &req);
    VkMemoryPropertyFlags required, preferred, avoid;
    gsmrt_vk_role_memory_flags(role, &required, &preferred, &avoid);
    int type = gsmrt_vk_pick_memory_type(&dev->caps.memory, req.memoryTypeBits, required,
                                         preferred, avoid);
    if (type < 0 && (required & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
        type = gsmrt_vk_pick_memory_type(&dev->caps.memory, req.memoryTypeBits, 0, 0, 0);
    if (type < 0) {
        st = gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "no memory type suits role %s",
                           gsmrt_vk_role_name(role));
        goto fail;
    }
    b->type_index = (uint32_t)type;
    b->heap = dev->caps.memory.memoryTypes[type].heapIndex;
    bool device_local = (dev->caps.memory.memoryHeaps[b->heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
                        role_wants_device(role);

    /* The forced budget (tests, and users who share the GPU) and the
     * driver's budget are checked before asking, so the error can say how
     * much was needed and how much there was. */
    uint64_t budget = heap_budget(dev, b->heap);
    if (dev->forced_budget && device_local && dev->forced_budget < budget) budget = dev->forced_budget;
    uint64_t held = device_local && dev->forced_budget ? device_local_held(dev) : dev->heap_bytes[b->heap];
    if (held + req.size > budget) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_DEVICE_MEMORY,
                           "%s: needed %.1f MiB more on heap %u, which has %.1f MiB of %.1f MiB "
                           "left",
                           gsmrt_vk_role_name(role), req.size / 1048576.0, b->heap,
                           (budget > held ? budget - held : 0) / 1048576.0, budget / 1048576.0);
        goto fail;
    }
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    r = dev->vk.vkAllocateMemory(dev->device, &ai, NULL, &b->memory);
    if (r != VK_SUCCESS) {
        st = gsmrt_vk_result(err, r, "vkAllocateMemory");
        gsmrt_err_prefix(err, "%s block of %.1f MiB: ", gsmrt_vk_role_name(role),
                         req.size / 1048576.0);
        goto fail;
    }
    dev->heap_bytes[b->heap] += b->size;
    r = dev->vk.vkBindBufferMemory(dev->device, b->buffer, b->memory, 0);
    if (r != VK_SUCCESS) {
        st = gsmrt_vk_result(err, r, "vkBindBufferMemory");
        goto fail;
    }
    if (dev->caps.memory.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        void *p = NULL;
        r = dev->vk.vkMapMemory(dev->device, b->memory, 0, VK_WHOLE_SIZE, 0, &p);
        if (r != VK_SUCCESS) {
            st = gsmrt_vk_result(err, r, "vkMapMemory");
            goto fail;
        }
        b->mapped = p;
    }
    b->free = gsmrt_mem_alloc(dev->alloc, 4 * sizeof *b->free);
    if (!b->free) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "memory block free list");
        goto fail;
    }
    b->cap_free = 4;
    b->n_free = 1;
    b->free[0] = (struct free_range){0, size};
    *out = b;
    return GSMRT_OK;
fail:
    block_destroy(dev, b);
    return st;
}

static bool free_list_insert(const struct gsmrt_vk_device *dev, struct gsmrt_vk_block *b,
                             uint32_t i, struct free_range r)
{
    if (b->n_free == b->cap_free) {
        uint32_t cap = b->cap_free * 2;
        struct free_range *f = gsmrt_mem_alloc(dev->alloc, cap * sizeof *f);
        if (!f) return false;
        memcpy(f, b->free, b->n_free * sizeof *f);
        gsmrt_mem_free(dev->alloc, b->free);
        b->free = f;
        b->cap_free = cap;
    }
    memmove(&b->free[i + 1], &b->free[i], (b->n_free - i) * sizeof *b->free);
    b->free[i] = r;
    b->n_free++;
    return true;
}

/* First fit in the block; false when nothing fits (or, rarely, when the free
 * list cannot grow: the block is then left unchanged). */
static bool block_take(const struct gsmrt_vk_device *dev, struct gsmrt_vk_block *b,
                       VkDeviceSize size, VkDeviceSize align, VkDeviceSize *offset)
{
    for (uint32_t i = 0; i < b->n_free; i++) {
        struct free_range f = b->free[i];
        VkDeviceSize start = gsmrt_align_up(f.offset, align);
        if (start + size > f.offset + f.size) continue;
        VkDeviceSize head = start - f.offset;
        VkDeviceSize tail = f.offset + f.size - (start + size);
        if (head && tail) {
            if (!free_list_insert(dev, b, i + 1, (struct free_range){start + size, tail}))
                return false;
            b->free[i].size = head;
        } else if (head) {
            b->free[i].size = head;
        } else if (tail) {
            b->free[i] = (struct free_range){start + size, tail};
        } else {
            memmove(&b->free[i], &b->free[i + 1], (b->n_free - i - 1) * sizeof *b->free);
            b->n_free--;
        }
        *offset = start;
        b->n_live++;
        return true;
    }
    return false;
}

/* Returns [offset, offset+size) to the block, merging with neighbours. */
static bool block_give(const struct gsmrt_vk_device *dev, struct gsmrt_vk_block *b,
                       VkDeviceSize offset, VkDeviceSize size)
{
    uint32_t i = 0;
    while (i < b->n_free && b->free[i].offset < offset) i++;
    bool merge_prev = i > 0 && b->free[i - 1].offset + b->free[i - 1].size == offset;
    bool merge_next = i < b->n_free && offset + size == b->free[i].offset;
    if (merge_prev && merge_next) {
        b->free[i - 1].size += size + b->free[i].size;
        memmove(&b->free[i], &b->free[i + 1], (b->n_free - i - 1) * sizeof *b->free);
        b->n_free--;
    } else if (merge_prev) {
        b->free[i - 1].size += size;
    } else if (merge_next) {
        b->free[i].offset = offset;
        b->free[i].size += size;
    } else {
        /* On failure the range stays unusable inside the block; the block is
         * still released when its last live allocation goes. */
        if (!free_list_insert(dev, b, i, (struct free_range){offset, size})) {
            b->n_live--;
            return false;
        }
    }
    b->n_live--;
    return true;
}

gsmrt_status gsmrt_vk_buf_alloc(struct gsmrt_vk_device *dev, enum gsmrt_vk_role role,
                                VkDeviceSize size, struct gsmrt_vk_buf *out,
                                struct gsmrt_err *err)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)role >= GSMRT_VK_ROLE_COUNT || size == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "buffer of %" PRIu64 " bytes, role %d",
                             (uint64_t)size, (int)role);
    /* Sizes are rounded to 16 bytes so a shader may read a whole vec4 at the end. */
    VkDeviceSize bytes = gsmrt_align_up(size, 16);
    VkDeviceSize align = dev->caps.min_storage_buffer_offset_alignment;
    if (align < 16) align = 16;
    if (bytes > dev->caps.max_memory_allocation_size)
        return gsmrt_err_set(err, GSMRT_E_OUT_OF_DEVICE_MEMORY,
                             "%s buffer of %.1f MiB exceeds the largest allocation the device "
                             "allows (%.1f MiB)",
                             gsmrt_vk_role_name(role), bytes / 1048576.0,
                             dev->caps.max_memory_allocation_size / 1048576.0);
    VkDeviceSize offset = 0;
    struct gsmrt_vk_block *b;
    for (b = dev->blocks; b; b = b->next)
        if (b->role == role && block_take(dev, b, bytes, align, &offset)) break;
    if (!b) {
        /* Grow geometrically per role: small roles stay small, big ones get
         * big blocks; a request larger than a block gets its own. */
        VkDeviceSize want = 2 * dev->role_bytes[role];
        if (want < (4u << 20)) want = 4u << 20;
        if (want > dev->block_bytes) want = dev->block_bytes;
        if (want < bytes) want = bytes;
        gsmrt_status st = block_create(dev, role, want, &b, err);
        if (st != GSMRT_OK) return st;
        b->next = dev->blocks;
        dev->blocks = b;
        if (!block_take(dev, b, bytes, align, &offset)) {
            /* only a free-list allocation can fail on a fresh block */
            return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "memory block free list");
        }
    }
    out->buffer = b->buffer;
    out->offset = offset;
    out->size = size;
    out->mapped = b->mapped ? b->mapped + offset : NULL;
    out->role = role;
    out->block = b;
    dev->role_bytes[role] += bytes;
    return GSMRT_OK;
}

void gsmrt_vk_buf_free(struct gsmrt_vk_device *dev, struct gsmrt_vk_buf *buf)
{
    if (!buf || !buf->block) return;
    struct gsmrt_vk_block *b = buf->block;
    VkDeviceSize bytes = gsmrt_align_up(buf->size, 16);
    block_give(dev, b, buf->offset, bytes);
    dev->role_bytes[buf->role] -= bytes;
    if (b->n_live == 0) {
        struct gsmrt_vk_block **link = &dev->blocks;
        while (*link != b) link = &(*link)->next;
        *link = b->next;
        block_destroy(dev, b);
    }
    memset(buf, 0, sizeof *buf);
}

void gsmrt_vk_usage(const struct gsmrt_vk_device *dev, struct gsmrt_vk_usage *u)
{
    memset(u, 0, sizeof *u);
    memcpy(u->role_bytes, dev->role_bytes, sizeof u->role_bytes);
    u->n_heaps = dev->caps.memory.memoryHeapCount;
    for (uint32_t h = 0; h < u->n_heaps; h++) {
        u->heap_bytes[h] = dev->heap_bytes[h];
        u->heap_size[h] = dev->caps.memory.memoryHeaps[h].size;
        u->heap_budget[h] = heap_budget(dev, h);
    }
    for (const struct gsmrt_vk_block *b = dev->blocks; b; b = b->next) u->n_blocks++;
}
