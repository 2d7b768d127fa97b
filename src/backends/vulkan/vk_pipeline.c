/*
 * vk_pipeline.c — compute pipelines for the Vulkan backend: SPIR-V modules embedded at build
 * time (vulkan.cmake: glslc -> gen/vk_shaders.c), one pipeline per (shader, specialization
 * constants), created on first use and kept until the backend is destroyed.
 *
 * Conventions every shader follows (shaders/common/):
 *  - bindings 0..n-1 are storage buffers in set 0, pushed per dispatch (push descriptors);
 *    a windowed binding is an array of DBK_VK_WINDOWS windows. Both are read from the
 *    SPIR-V (reflect below), so there is no table of shaders to keep: a shader is found by
 *    its file name;
 *  - one push-constant block of at most DBK_VK_PUSH_BYTES bytes for shapes and offsets;
 *  - specialization constant 0 is the work-group size (local_size_x_id = 0); the GEMM-shaped
 *    shaders take BM, BN, BK, TM, TN as constants 1..5.
 *
 * Tile sizes come from the device's profile (platforms/, "vulkan" section):
 *   vulkan.wg                     work-group size of elementwise and reduction shaders
 *   vulkan.gemm.{bm,bn,bk,tm,tn}  gemm_tiled.comp tiles
 *   vulkan.conv.{bm,bn,bk,tm,tn}  conv2d_*.comp tiles
 * and where the profile has no value, from the device's vendor, subgroup size and limits
 * (backend/tiles.h: e.g. 128x128x16/8x8 on NVIDIA and AMD, 64x64x16/4x4 on unknown vendors)
 *   vulkan.block_mib              memory block size (256)
 *   vulkan.conv_algorithm, winograd_min_channels, conv_by_shape, winograd_workspace_mb
 *                                 Winograd per 3x3 layer (backend/conv_choice.h)
 * and are checked against the device limits (work-group invocations and size, shared memory)
 * and the shaders' needs (TM and TN multiples of 4, BK a divisor of the split-K chunk);
 * a profile value the device cannot run falls back to the defaults with a warning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tiles.h"
#include "backends/vulkan/vk_internal.h"
#include "core/alloc.h"
#include "core/embedded.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/profile.h"
#include "core/timer.h"

/* gen/vk_shaders.c (tools/embed.cmake) */
extern const dbk_embedded_file dbk_vk_shaders[];
extern const int               dbk_vk_shaders_count;

/* ---------------------------------------------------------------------------------- */
/* tiles from the profile                                                               */

static bool tiles_fit(const dbk_vk_state *vk, const dbk_vk_tiles *t) {
    const VkPhysicalDeviceLimits *l = &vk->props.limits;
    if (!t->bm || !t->bn || !t->bk || !t->tm || !t->tn || t->bm % t->tm || t->bn % t->tn) return false;
    if (t->tm % 4 || t->tn % 4) return false;  /* gemm_core.glsl reads shared memory as vec4 */
    if (DBK_VK_KCHUNK % t->bk) return false;   /* split-K parts must start on a BK step */
    const uint32_t threads = (t->bm / t->tm) * (t->bn / t->tn);
    return threads <= l->maxComputeWorkGroupInvocations && threads <= l->maxComputeWorkGroupSize[0] &&
           (t->bm + t->bn) * t->bk * 4 <= l->maxComputeSharedMemorySize && t->tm * t->tn <= 64;
}

/* The tiles backend/tiles.h derives from this device's limits. */
static dbk_tile_choice derived_tiles(const dbk_vk_state *vk) {
    const VkPhysicalDeviceLimits *l = &vk->props.limits;
    const uint32_t max_inv = l->maxComputeWorkGroupInvocations < l->maxComputeWorkGroupSize[0]
                                 ? l->maxComputeWorkGroupInvocations : l->maxComputeWorkGroupSize[0];
    const dbk_device_limits lim = {.vendor_id = vk->props.vendorID, .subgroup_size = vk->subgroup,
                                   .max_invocations = max_inv, .shared_bytes = l->maxComputeSharedMemorySize};
    return dbk_tiles_from_limits(&lim);
}

static void read_tiles(dbk_vk_state *vk, const dbk_profile *p, const char *key, dbk_vk_tiles *out) {
    const dbk_tile_choice d = derived_tiles(vk);
    const dbk_vk_tiles def = {d.bm, d.bn, d.bk, d.tm, d.tn}, small = {32, 32, 8, 4, 4};
    char path[64];
    dbk_vk_tiles t;
    uint32_t *fields[5] = {&t.bm, &t.bn, &t.bk, &t.tm, &t.tn};
    const uint32_t defaults[5] = {def.bm, def.bn, def.bk, def.tm, def.tn};
    static const char *const names[5] = {"bm", "bn", "bk", "tm", "tn"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "vulkan.%s.%s", key, names[i]);
        *fields[i] = p ? (uint32_t)dbk_profile_number(p, path, defaults[i]) : defaults[i];
    }
    if (!tiles_fit(vk, &t)) {
        dbk_log(DBK_LOG_LEVEL_WARN, "profile tiles vulkan.%s (%u x %u x %u, %u x %u per thread) do not fit '%s'; "
                "using defaults", key, t.bm, t.bn, t.bk, t.tm, t.tn, vk->props.deviceName);
        t = tiles_fit(vk, &def) ? def : small;
    }
    *out = t;
}

dbk_status dbk_vk_pipeline_init(dbk_backend *be) {
    dbk_vk_state *vk = dbk_vk(be);
    vk->shader_dir = dbk_env_shader_dir();
    dbk_profile *owned = NULL;
    if (!be->profile && dbk_profile_for_device("vulkan", be->info.name, &owned) != DBK_OK) {
        dbk_log(DBK_LOG_LEVEL_WARN, "no profile for '%s' (%s); using defaults", be->info.name, dbk_last_error());
        owned = NULL;
    }
    const dbk_profile *p = be->profile ? be->profile : owned;
    read_tiles(vk, p, "gemm", &vk->gemm_tiles);
    read_tiles(vk, p, "conv", &vk->conv_tiles);
    const uint32_t derived_wg = derived_tiles(vk).wg;
    uint32_t wg = p ? (uint32_t)dbk_profile_number(p, "vulkan.wg", derived_wg) : derived_wg;
    const VkPhysicalDeviceLimits *l = &vk->props.limits;
    /* Reductions use a power-of-two tree in shared memory. */
    if (wg < 32 || (wg & (wg - 1)) || wg > l->maxComputeWorkGroupInvocations || wg > l->maxComputeWorkGroupSize[0])
        wg = 64;
    vk->wg = wg;
    const double block_mib = p ? dbk_profile_number(p, "vulkan.block_mib", 256) : 256;
    vk->block_bytes = (VkDeviceSize)(block_mib > 1 ? block_mib : 1) << 20;
    dbk_log(DBK_LOG_LEVEL_INFO, "Vulkan tiles on '%s' (profile %s): gemm %ux%ux%u/%ux%u, conv %ux%ux%u/%ux%u, wg %u",
            be->info.name, p ? dbk_profile_id(p) : "none", vk->gemm_tiles.bm, vk->gemm_tiles.bn, vk->gemm_tiles.bk,
            vk->gemm_tiles.tm, vk->gemm_tiles.tn, vk->conv_tiles.bm, vk->conv_tiles.bn, vk->conv_tiles.bk,
            vk->conv_tiles.tm, vk->conv_tiles.tn, vk->wg);
    dbk_status st = dbk_conv_choice_read(p, "vulkan", (size_t)vk->max_alloc, &vk->conv);
    if (st == DBK_OK && dbk_conv_choice_names_direct(&vk->conv))
        st = dbk_set_error(DBK_ERR_INVALID_ARG,
                           "Vulkan has no \"direct\" convolution (OpenCL only), named by %s; use im2col, winograd or "
                           "winograd4", dbk_env_force_conv() ? "DBK_FORCE_CONV" : "the profile's vulkan section");
    if (st == DBK_OK) dbk_log(DBK_LOG_LEVEL_INFO, "Vulkan conv on '%s': %s", be->info.name, dbk_conv_choice_name(&vk->conv));
    dbk_profile_destroy(owned);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* pipelines                                                                            */

static void pipeline_free(dbk_vk_state *vk, dbk_vk_pipeline *pp) {
    if (pp->pipeline) vkDestroyPipeline(vk->dev, pp->pipeline, NULL);
    if (pp->layout) vkDestroyPipelineLayout(vk->dev, pp->layout, NULL);
    if (pp->dsl) vkDestroyDescriptorSetLayout(vk->dev, pp->dsl, NULL);
}

void dbk_vk_pipeline_destroy(dbk_vk_state *vk) {
    if (vk->npipes)
        dbk_log(DBK_LOG_LEVEL_INFO, "Vulkan: %d pipelines created in %.2f s", vk->npipes, vk->pipe_seconds);
    for (int i = 0; i < vk->npipes; i++) pipeline_free(vk, &vk->pipes[i]);
    free(vk->pipes);
    vk->pipes = NULL;
    vk->npipes = 0;
}

/* A tiny SPIR-V reflection (DESIGN 3.7): the number of bindings (highest Binding + 1), of
 * specialization constants (highest SpecId + 1), and which bindings are arrays (windowed),
 * so the host needs no table of shaders and a host/shader drift fails loudly (DBK_ASSERT in
 * dbk_vk_emit) instead of binding garbage. SPIR-V declares decorations before types and
 * types before variables, so one pass suffices. */
static dbk_status reflect(const uint32_t *words, size_t count, int *bindings, int *specs, unsigned *windowed) {
    enum { OP_TYPE_ARRAY = 28, OP_TYPE_POINTER = 32, OP_VARIABLE = 59, OP_DECORATE = 71 };
    enum { DEC_SPEC_ID = 1, DEC_BINDING = 33 };
    *bindings = *specs = 0;
    *windowed = 0;
    const uint32_t bound = count > 3 ? words[3] : 0;
    uint32_t *binding = calloc(bound + 1, sizeof *binding);   /* id -> binding + 1 */
    uint32_t *pointee = calloc(bound + 1, sizeof *pointee);   /* pointer type id -> type id */
    unsigned char *array = calloc(bound + 1, 1);              /* type id -> is an array */
    if (!binding || !pointee || !array) {
        free(binding);
        free(pointee);
        free(array);
        return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory reading a shader");
    }
    for (size_t i = 5; i < count;) {
        const uint32_t n = words[i] >> 16, op = words[i] & 0xffff;
        if (n == 0 || i + n > count) break;
        const uint32_t a = n > 1 ? words[i + 1] : 0, b = n > 2 ? words[i + 2] : 0;
        if (op == OP_DECORATE && n >= 4) {
            const int v = (int)words[i + 3] + 1;
            if (b == DEC_BINDING && v > *bindings) *bindings = v;
            if (b == DEC_SPEC_ID && v > *specs) *specs = v;
            if (b == DEC_BINDING && a <= bound) binding[a] = (uint32_t)v;
        } else if (op == OP_TYPE_ARRAY && a <= bound) {
            array[a] = 1;
        } else if (op == OP_TYPE_POINTER && n >= 4 && a <= bound) {
            pointee[a] = words[i + 3];
        } else if (op == OP_VARIABLE && n >= 4 && b <= bound && a <= bound && binding[b] &&
                   pointee[a] <= bound && array[pointee[a]] && binding[b] <= 32) {
            *windowed |= 1u << (binding[b] - 1);
        }
        i += n;
    }
    free(binding);
    free(pointee);
    free(array);
    return DBK_OK;
}

static dbk_status spirv_head(const char *path, const unsigned char *head, size_t n, size_t size) {
    static const unsigned char magic[4] = {0x03, 0x02, 0x23, 0x07};   /* 0x07230203, little-endian */
    if (n < 4 || memcmp(head, magic, 4) || size % 4)
        return dbk_set_error(DBK_ERR_FORMAT, "%s is not a SPIR-V module (glslc's .spv: the magic 0x07230203 and a "
                             "multiple of 4 bytes)", path);
    return DBK_OK;
}

/* The SPIR-V words of a shader: DBK_SHADER_DIR's <shader>.spv when the folder has one, else the
 * embedded copy. *words from dbk_malloc (uint32_t aligned; dbk_free it); *bytes its size. */
static dbk_status shader_code(const dbk_vk_state *vk, const char *shader, uint32_t **words, size_t *bytes) {
    char file[DBK_VK_SHADER_NAME + 8];
    snprintf(file, sizeof file, "%s.spv", shader);
    if (vk->shader_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", vk->shader_dir, file);
        const dbk_file_spec spec = {.what = "Vulkan shader", .max_bytes = (size_t)16 << 20, .head_bytes = 4,
                                    .check_head = spirv_head};
        void *data = NULL;
        dbk_status st = dbk_file_read_spec(path, &spec, &data, bytes);
        if (st == DBK_OK) {
            dbk_log(DBK_LOG_LEVEL_INFO, "Vulkan: shader %s from %s (DBK_SHADER_DIR)", shader, path);
            *words = data;
            return DBK_OK;
        }
        if (st != DBK_ERR_NOT_FOUND) return st;
        dbk_clear_error();
    }
    const dbk_embedded_file *f = dbk_embedded_find(dbk_vk_shaders, dbk_vk_shaders_count, file);
    if (!f || f->size % 4)
        return dbk_set_error(DBK_ERR_COMPILE, "Vulkan: shader %s is not embedded in this build (shaders/%s.comp)",
                             file, shader);
    /* The embedded bytes are an unsigned char array: copy them to uint32_t alignment. */
    if (!(*words = dbk_malloc(f->size))) return DBK_ERR_OUT_OF_HOST_MEMORY;
    memcpy(*words, f->data, f->size);
    *bytes = f->size;
    return DBK_OK;
}

static dbk_status build(dbk_vk_state *vk, dbk_vk_pipeline *pp) {
    uint32_t *code = NULL;
    size_t code_bytes = 0;
    DBK_TRY(shader_code(vk, pp->shader, &code, &code_bytes));
    int nspec;
    dbk_status rs = reflect(code, code_bytes / 4, &pp->nbind, &nspec, &pp->windowed);
    if (rs != DBK_OK) {
        dbk_free(code);
        return rs;
    }
    if (pp->nbind > DBK_VK_MAX_BINDINGS || pp->nspec > nspec) {   /* a replaced shader that does not fit */
        dbk_free(code);
        return dbk_set_error(DBK_ERR_COMPILE, "Vulkan: shader %s declares %d bindings and %d specialization "
                             "constants; the backend binds at most %d and sets %d", pp->shader, pp->nbind, nspec,
                             DBK_VK_MAX_BINDINGS, pp->nspec);
    }

    VkDescriptorSetLayoutBinding b[DBK_VK_MAX_BINDINGS];
    for (int i = 0; i < pp->nbind; i++)
        b[i] = (VkDescriptorSetLayoutBinding){
            .binding = (uint32_t)i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = (pp->windowed >> i) & 1u ? DBK_VK_WINDOWS : 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    const VkDescriptorSetLayoutCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
        .bindingCount = (uint32_t)pp->nbind,
        .pBindings = b,
    };
    VkResult dr = vkCreateDescriptorSetLayout(vk->dev, &dci, NULL, &pp->dsl);
    if (dr != VK_SUCCESS) {
        dbk_free(code);
        return dbk_vk_fail(dr, "vkCreateDescriptorSetLayout");
    }
    const VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = DBK_VK_PUSH_BYTES};
    const VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                            .setLayoutCount = 1,
                                            .pSetLayouts = &pp->dsl,
                                            .pushConstantRangeCount = 1,
                                            .pPushConstantRanges = &pcr};
    VkResult lr = vkCreatePipelineLayout(vk->dev, &lci, NULL, &pp->layout);
    if (lr != VK_SUCCESS) {
        dbk_free(code);
        return dbk_vk_fail(lr, "vkCreatePipelineLayout");
    }
    const VkShaderModuleCreateInfo mci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                          .codeSize = code_bytes,
                                          .pCode = code};
    VkShaderModule mod;
    VkResult mr = vkCreateShaderModule(vk->dev, &mci, NULL, &mod);
    dbk_free(code);
    if (mr != VK_SUCCESS) return dbk_vk_fail(mr, "vkCreateShaderModule");
    VkSpecializationMapEntry map[DBK_VK_MAX_SPEC];
    for (int i = 0; i < pp->nspec; i++)
        map[i] = (VkSpecializationMapEntry){.constantID = (uint32_t)i, .offset = (uint32_t)(4 * i), .size = 4};
    const VkSpecializationInfo spec = {.mapEntryCount = (uint32_t)pp->nspec,
                                       .pMapEntries = map,
                                       .dataSize = (size_t)pp->nspec * 4,
                                       .pData = pp->spec};
    const VkComputePipelineCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = pp->layout,
    };
    VkResult r = vkCreateComputePipelines(vk->dev, VK_NULL_HANDLE, 1, &pci, NULL, &pp->pipeline);
    vkDestroyShaderModule(vk->dev, mod, NULL);
    if (r != VK_SUCCESS) {
        char what[128];
        snprintf(what, sizeof what, "vkCreateComputePipelines for %s.spv", pp->shader);
        return dbk_vk_fail(r, what);
    }
    return DBK_OK;
}

dbk_status dbk_vk_pipeline_get(dbk_vk_state *vk, const char *sh, const uint32_t *spec, int nspec,
                               const dbk_vk_pipeline **out) {
    DBK_ASSERT(nspec <= DBK_VK_MAX_SPEC && strlen(sh) < DBK_VK_SHADER_NAME);
    for (int i = 0; i < vk->npipes; i++) {
        const dbk_vk_pipeline *pp = &vk->pipes[i];
        if (!strcmp(pp->shader, sh) && pp->nspec == nspec && !memcmp(pp->spec, spec, sizeof *spec * (size_t)nspec)) {
            *out = pp;
            return DBK_OK;
        }
    }
    dbk_vk_pipeline *grown = realloc(vk->pipes, sizeof *grown * (size_t)(vk->npipes + 1));
    if (!grown) return DBK_ERR_OUT_OF_HOST_MEMORY;
    vk->pipes = grown;
    dbk_vk_pipeline *pp = &vk->pipes[vk->npipes];
    memset(pp, 0, sizeof *pp);
    snprintf(pp->shader, sizeof pp->shader, "%s", sh);
    pp->nspec = nspec;
    memcpy(pp->spec, spec, sizeof *spec * (size_t)nspec);
    const double t0 = dbk_time_now();
    dbk_status st = build(vk, pp);
    const double dt = dbk_time_now() - t0;
    vk->pipe_seconds += dt;
    if (st != DBK_OK) {
        pipeline_free(vk, pp);
        return st;
    }
    dbk_log(DBK_LOG_LEVEL_DEBUG, "Vulkan: pipeline %s (%d spec constants, first %u) created in %.3f s", sh, nspec,
            nspec ? spec[0] : 0u, dt);
    vk->npipes++;
    *out = pp;
    return DBK_OK;
}
