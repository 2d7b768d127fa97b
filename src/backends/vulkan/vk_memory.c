/*
 * vk_memory.c — device memory for the Vulkan backend: every dbk_buffer is a VkBuffer bound
 * to a range of one of a few large VkDeviceMemory blocks (first-fit sub-allocation), plus the
 * host copies of dbk_buffer_write/read.
 *
 * Memory type: device-local; when the device also offers a device-local type that is
 * host-visible and coherent on its largest heap (lavapipe, integrated GPUs, resizable BAR),
 * blocks use it and stay mapped, so host copies are memcpy. Otherwise (a discrete GPU such as
 * NVIDIA's, whose host-visible device-local heap is a 256 MiB window) copies go through a
 * host-visible staging buffer and vkCmdCopyBuffer. DBK_VK_MEMORY=staged forces the second
 * path on any device (a device-local type the host does not map, if there is one), so CI runs
 * a discrete GPU's copies on lavapipe. `daybreak devices` and result.json name the choice.
 *
 * Blocks are `vulkan.block_mib` from the profile (default 256 MiB) or larger for a larger
 * buffer, never above maxMemoryAllocationSize; blocks live until the backend is destroyed.
 *
 * Ordering of host copies with the queue (backend.h: "ordered after enqueued ops"):
 *  - a small write (<= 64 KiB, 4-byte aligned: the learning rate and augment state the
 *    session writes before each step) is recorded as vkCmdUpdateBuffer into the immediate
 *    command buffer. The data is copied at record time, the command runs in queue order
 *    after everything submitted before and before the next program run, and the host never
 *    waits: a replayed step is not stalled by its own scalar writes.
 *  - any other write and every read wait for the queue to drain (dbk_vk_sync), then copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_internal.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/profile.h"

#define STAGING_BYTES ((VkDeviceSize)16 << 20)

typedef struct staging {                   /* only when device memory is not host-visible */
    VkBuffer       buf;
    VkDeviceMemory mem;
    void          *mapped;
} staging;

static staging *staging_of(dbk_vk_state *vk) { return (staging *)vk->staging; }

static bool find_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits, VkMemoryPropertyFlags want,
                      uint32_t *out) {
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++)
        if ((bits & (1u << i)) && (mp->memoryTypes[i].propertyFlags & want) == want) {
            *out = i;
            return true;
        }
    return false;
}

bool dbk_vk_memory_choose(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type_bits, bool staged,
                          uint32_t *type, bool *host_visible) {
    uint32_t largest = 0;
    for (uint32_t h = 0; h < mp->memoryHeapCount; h++)
        if ((mp->memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            mp->memoryHeaps[h].size > mp->memoryHeaps[largest].size)
            largest = h;
    const VkMemoryPropertyFlags mapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags shared = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | mapped;
    uint32_t t;
    if (staged) {   /* a device-local type the host does not see, else any device-local one, unmapped */
        for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
            const VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
            if ((type_bits & (1u << i)) && (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) &&
                !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) {
                *type = i;
                *host_visible = false;
                return true;
            }
        }
        if (!find_type(mp, type_bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &t) && !find_type(mp, type_bits, 0, &t))
            return false;
        *type = t;
        *host_visible = false;
        return true;
    }
    if (find_type(mp, type_bits, shared, &t) && mp->memoryTypes[t].heapIndex == largest) {
        *type = t;
        *host_visible = true;
    } else if (find_type(mp, type_bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &t)) {
        *type = t;
        *host_visible = false;
    } else if (find_type(mp, type_bits, 0, &t)) {
        *type = t;
        *host_visible = (mp->memoryTypes[t].propertyFlags & mapped) == mapped;
    } else {
        return false;
    }
    return true;
}

void dbk_vk_memory_describe(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type, bool host_visible, char *out,
                            size_t cap) {
    const VkMemoryPropertyFlags f = mp->memoryTypes[type].propertyFlags;
    const uint32_t heap = mp->memoryTypes[type].heapIndex;
    char flags[96] = "";
    static const struct { VkMemoryPropertyFlags bit; const char *name; } names[] = {
        {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "device-local"}, {VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, "host-visible"},
        {VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "host-coherent"}, {VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "host-cached"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (f & names[i].bit) {
            const size_t used = strlen(flags);
            snprintf(flags + used, sizeof flags - used, "%s%s", used ? ", " : "", names[i].name);
        }
    snprintf(out, cap, "memory type %u (%s) on heap %u (%.0f MiB); host copies %s", type, flags[0] ? flags : "no flags",
             heap, (double)mp->memoryHeaps[heap].size / 1048576.0,
             host_visible ? "mapped (memcpy)" : "staged through a 16 MiB host-visible buffer");
}

dbk_status dbk_vk_memory_init(dbk_vk_state *vk) {
    /* A probe buffer tells which memory types storage buffers may use. */
    const VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                    .size = 256,
                                    .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                             VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkBuffer probe;
    DBK_VK_TRY(vkCreateBuffer(vk->dev, &bci, NULL, &probe), "vkCreateBuffer (probe)");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->dev, probe, &req);
    vkDestroyBuffer(vk->dev, probe, NULL);

    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(vk->phys, &mp);
    if (!dbk_vk_memory_choose(&mp, req.memoryTypeBits, dbk_env_vk_staged(), &vk->mem_type, &vk->host_visible))
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan device '%s': no memory type for storage buffers",
                             vk->props.deviceName);
    dbk_vk_memory_describe(&mp, vk->mem_type, vk->host_visible, vk->memory_note, sizeof vk->memory_note);
    uint32_t t;
    if (vk->block_bytes == 0) vk->block_bytes = (VkDeviceSize)256 << 20;
    if (vk->max_alloc && vk->block_bytes > vk->max_alloc) vk->block_bytes = vk->max_alloc;
    if (vk->host_visible) return DBK_OK;

    /* Staging buffer for host copies to device-only memory. */
    staging *sg = dbk_calloc(1, sizeof *sg);
    if (!sg) return DBK_ERR_OUT_OF_HOST_MEMORY;
    vk->staging = sg;
    VkBufferCreateInfo sci = bci;
    sci.size = STAGING_BYTES;
    sci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    DBK_VK_TRY(vkCreateBuffer(vk->dev, &sci, NULL, &sg->buf), "vkCreateBuffer (staging)");
    vkGetBufferMemoryRequirements(vk->dev, sg->buf, &req);
    if (!find_type(&mp, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                   &t))
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan device '%s': no host-visible coherent memory for staging",
                             vk->props.deviceName);
    const VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                     .allocationSize = req.size,
                                     .memoryTypeIndex = t};
    DBK_VK_TRY(vkAllocateMemory(vk->dev, &ai, NULL, &sg->mem), "vkAllocateMemory (16 MiB staging buffer)");
    DBK_VK_TRY(vkBindBufferMemory(vk->dev, sg->buf, sg->mem, 0), "vkBindBufferMemory (staging)");
    DBK_VK_TRY(vkMapMemory(vk->dev, sg->mem, 0, VK_WHOLE_SIZE, 0, &sg->mapped), "vkMapMemory (staging)");
    return DBK_OK;
}

void dbk_vk_memory_destroy(dbk_vk_state *vk) {
    for (int i = 0; i < vk->nblocks; i++) {
        if (vk->blocks[i].mem) vkFreeMemory(vk->dev, vk->blocks[i].mem, NULL);
        free(vk->blocks[i].used);
    }
    free(vk->blocks);
    vk->blocks = NULL;
    vk->nblocks = 0;
    staging *sg = staging_of(vk);
    if (sg) {
        if (sg->buf) vkDestroyBuffer(vk->dev, sg->buf, NULL);
        if (sg->mem) vkFreeMemory(vk->dev, sg->mem, NULL);
        dbk_free(sg);
        vk->staging = NULL;
    }
}

/* ---------------------------------------------------------------------------------- */
/* first-fit sub-allocation                                                              */

static VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }

/* A free offset of `size` bytes aligned to `align` in block b, or false. */
static bool block_fit(const dbk_vk_block *b, VkDeviceSize size, VkDeviceSize align, VkDeviceSize *at, int *pos) {
    VkDeviceSize cur = 0;
    for (int i = 0; i <= b->nused; i++) {
        const VkDeviceSize start = align_up(cur, align);
        const VkDeviceSize limit = i < b->nused ? b->used[i][0] : b->size;
        if (start + size <= limit) {
            *at = start;
            *pos = i;
            return true;
        }
        if (i < b->nused) cur = b->used[i][1];
    }
    return false;
}

static dbk_status block_insert(dbk_vk_block *b, int pos, VkDeviceSize at, VkDeviceSize size) {
    if (b->nused == b->cap) {
        int cap = b->cap ? 2 * b->cap : 16;
        VkDeviceSize(*grown)[2] = realloc(b->used, sizeof *grown * (size_t)cap);
        if (!grown) return DBK_ERR_OUT_OF_HOST_MEMORY;
        b->used = grown;
        b->cap = cap;
    }
    memmove(&b->used[pos + 1], &b->used[pos], sizeof *b->used * (size_t)(b->nused - pos));
    b->used[pos][0] = at;
    b->used[pos][1] = at + size;
    b->nused++;
    return DBK_OK;
}

static dbk_status new_block(dbk_vk_state *vk, VkDeviceSize need, int *out) {
    VkDeviceSize size = need > vk->block_bytes ? need : vk->block_bytes;
    dbk_vk_block *grown = realloc(vk->blocks, sizeof *grown * (size_t)(vk->nblocks + 1));
    if (!grown) return DBK_ERR_OUT_OF_HOST_MEMORY;
    vk->blocks = grown;
    dbk_vk_block *b = &vk->blocks[vk->nblocks];
    memset(b, 0, sizeof *b);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = size,
                               .memoryTypeIndex = vk->mem_type};
    VkResult r = vkAllocateMemory(vk->dev, &ai, NULL, &b->mem);
    if (r != VK_SUCCESS && size > need) {   /* a full block may not fit where the buffer does */
        size = need;
        ai.allocationSize = size;
        r = vkAllocateMemory(vk->dev, &ai, NULL, &b->mem);
    }
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        return dbk_set_error(DBK_ERR_OUT_OF_DEVICE_MEMORY,
                             "Vulkan device '%s' is out of memory allocating a %.1f MiB block for a %llu-byte "
                             "buffer (%s); a smaller batch needs less",
                             vk->props.deviceName, (double)size / 1048576.0, (unsigned long long)need,
                             dbk_vk_result_name(r));
    if (r != VK_SUCCESS) return dbk_vk_fail(r, "vkAllocateMemory");
    b->size = size;
    if (vk->host_visible) {
        r = vkMapMemory(vk->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->mapped);
        if (r != VK_SUCCESS) {
            vkFreeMemory(vk->dev, b->mem, NULL);
            return dbk_vk_fail(r, "vkMapMemory of a memory block");
        }
    }
    *out = vk->nblocks++;
    return DBK_OK;
}

dbk_status dbk_vk_buffer_alloc(dbk_backend *be, size_t nbytes, dbk_buffer *buf) {
    dbk_vk_state *vk = dbk_vk(be);
    dbk_vk_buffer *vb = dbk_calloc(1, sizeof *vb);
    if (!vb) return DBK_ERR_OUT_OF_HOST_MEMORY;
    /* Rounded to 16 bytes so shaders may read whole words of u8 tensors at the end. */
    vb->size = align_up(nbytes ? (VkDeviceSize)nbytes : 16, 16);
    const VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                    .size = vb->size,
                                    .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                             VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(vk->dev, &bci, NULL, &vb->buf);
    if (r != VK_SUCCESS) {
        dbk_free(vb);
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
            return dbk_set_error(DBK_ERR_OUT_OF_DEVICE_MEMORY, "Vulkan: out of device memory creating a %zu-byte buffer",
                                 nbytes);
        return dbk_vk_fail(r, "vkCreateBuffer");
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->dev, vb->buf, &req);
    dbk_status st = DBK_OK;
    int bi = -1, pos = 0;
    VkDeviceSize at = 0;
    for (int i = 0; i < vk->nblocks && bi < 0; i++)
        if (block_fit(&vk->blocks[i], req.size, req.alignment, &at, &pos)) bi = i;
    if (bi < 0) {
        st = new_block(vk, req.size, &bi);
        if (st == DBK_OK) {
            at = 0;
            pos = 0;
        }
    }
    if (st == DBK_OK) st = block_insert(&vk->blocks[bi], pos, at, req.size);
    if (st == DBK_OK) {
        r = vkBindBufferMemory(vk->dev, vb->buf, vk->blocks[bi].mem, at);
        if (r != VK_SUCCESS) st = dbk_vk_fail(r, "vkBindBufferMemory");
    }
    if (st != DBK_OK) {
        vkDestroyBuffer(vk->dev, vb->buf, NULL);
        dbk_free(vb);
        return st;
    }
    vb->block = bi;
    vb->at = at;
    buf->impl = vb;
    return DBK_OK;
}

void dbk_vk_buffer_free(dbk_backend *be, dbk_buffer *buf) {
    dbk_vk_state *vk = dbk_vk(be);
    dbk_vk_buffer *vb = buf->impl;
    if (!vb) return;
    /* Work recorded in the open immediate command buffer or still running may use it. */
    if (dbk_vk_sync(be) != DBK_OK)
        dbk_log(DBK_LOG_LEVEL_ERROR, "freeing a Vulkan buffer: %s", dbk_last_error());
    vkDestroyBuffer(vk->dev, vb->buf, NULL);
    dbk_vk_block *b = &vk->blocks[vb->block];
    for (int i = 0; i < b->nused; i++)
        if (b->used[i][0] == vb->at) {
            memmove(&b->used[i], &b->used[i + 1], sizeof *b->used * (size_t)(b->nused - i - 1));
            b->nused--;
            break;
        }
    dbk_free(vb);
    buf->impl = NULL;
}

/* ---------------------------------------------------------------------------------- */
/* host copies                                                                          */

dbk_status dbk_vk_buffer_write(dbk_backend *be, dbk_buffer *dst, size_t off, const void *src, size_t n) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_vk_buffer *vb = dbk_vk_buf(dst);
    if (n == 0) return DBK_OK;
    if (n <= 65536 && off % 4 == 0 && n % 4 == 0) {   /* in queue order, no host wait */
        dbk_vk_rec *rec = NULL;
        DBK_TRY(dbk_vk_imm(be, &rec));
        dbk_vk_emit_update(rec, vb->buf, off, src, n);
        return DBK_OK;
    }
    DBK_TRY(dbk_vk_sync(be));
    const dbk_vk_block *b = &vk->blocks[vb->block];
    if (b->mapped) {
        memcpy((char *)b->mapped + vb->at + off, src, n);
        return DBK_OK;
    }
    staging *sg = staging_of(vk);
    for (size_t done = 0; done < n;) {
        const size_t part = n - done < STAGING_BYTES ? n - done : (size_t)STAGING_BYTES;
        memcpy(sg->mapped, (const char *)src + done, part);
        dbk_vk_rec *rec = NULL;
        DBK_TRY(dbk_vk_imm(be, &rec));
        dbk_vk_emit_copy(rec, sg->buf, 0, vb->buf, off + done, part);
        DBK_TRY(dbk_vk_sync(be));
        done += part;
    }
    return DBK_OK;
}

dbk_status dbk_vk_buffer_read(dbk_backend *be, const dbk_buffer *src, size_t off, void *dst, size_t n) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_vk_buffer *vb = dbk_vk_buf(src);
    DBK_TRY(dbk_vk_sync(be));
    if (n == 0) return DBK_OK;
    const dbk_vk_block *b = &vk->blocks[vb->block];
    if (b->mapped) {
        memcpy(dst, (const char *)b->mapped + vb->at + off, n);
        return DBK_OK;
    }
    staging *sg = staging_of(vk);
    for (size_t done = 0; done < n;) {
        const size_t part = n - done < STAGING_BYTES ? n - done : (size_t)STAGING_BYTES;
        dbk_vk_rec *rec = NULL;
        DBK_TRY(dbk_vk_imm(be, &rec));
        dbk_vk_emit_copy(rec, vb->buf, off + done, sg->buf, 0, part);
        DBK_TRY(dbk_vk_sync(be));
        memcpy((char *)dst + done, sg->mapped, part);
        done += part;
    }
    return DBK_OK;
}
