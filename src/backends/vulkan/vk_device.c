/*
 * vk_device.c — the Vulkan backend's devices: instance creation, the physical-device list
 * and what `daybreak devices` shows of each, the logical device and compute queue, the
 * validation-layer messenger, and the vtable / registry entry (VkResult names and error
 * messages: vk_error.c).
 *
 * Requirements (refused with the missing item named): Vulkan 1.2, a compute queue,
 * VK_KHR_push_descriptor (every op binds its tensors as push descriptors), 128 bytes of push
 * constants. Devices are listed in the order vkEnumeratePhysicalDevices gives; each listing
 * creates and destroys its own instance, so nothing device-related is process-wide (only the
 * headless-NVIDIA driver fix below, once per process, sets the loader's VK_DRIVER_FILES).
 *
 * Validation (DBK_VK_VALIDATION=1, read in core/profile.c): the instance enables
 * VK_LAYER_KHRONOS_validation with synchronisation validation (VK_EXT_validation_features)
 * and installs a VK_EXT_debug_utils messenger that counts errors; the next sync or buffer
 * read fails with the first message, so a test run under the layer fails on any error.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/icd.h"
#include "backends/vulkan/vk_internal.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/profile.h"

/* ---------------------------------------------------------------------------------- */
/* validation messages                                                                 */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)type;
    dbk_vk_state *vk = user;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        if (vk->validation_errors++ == 0)
            snprintf(vk->validation_first, sizeof vk->validation_first, "%s", data->pMessage);
        dbk_log(DBK_LOG_LEVEL_ERROR, "Vulkan validation: %s", data->pMessage);
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        dbk_log(DBK_LOG_LEVEL_WARN, "Vulkan validation: %s", data->pMessage);
    }
    return VK_FALSE;
}


/* ---------------------------------------------------------------------------------- */
/* instance and device listing                                                         */

static bool has_layer(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *l = calloc(n, sizeof *l);
    if (!l) return false;
    bool found = false;
    if (vkEnumerateInstanceLayerProperties(&n, l) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) found |= !strcmp(l[i].layerName, name);
    free(l);
    return found;
}

/* A headless NVIDIA machine (docs/gpu.md): the driver's nvidia_icd.json names libGLX_nvidia.so.0,
 * which gives the loader no vkCreateInstance without a display, so the GPU is missing. Once per
 * process, before the first instance, when the loader lists no NVIDIA device although
 * /dev/nvidiactl exists and no loader variable is set: an ICD file naming the same driver's
 * libEGL_nvidia.so.0 is written to the cache folder and VK_DRIVER_FILES set to it and the other
 * ICD files (backend/icd.h). Costs one stat() on other machines. */
static bool nvidia_device_listed(void) {
    const VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2};
    const VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance inst;
    if (vkCreateInstance(&ci, NULL, &inst) != VK_SUCCESS) return false;
    VkPhysicalDevice list[16];
    uint32_t n = 16;
    bool found = false;
    if (vkEnumeratePhysicalDevices(inst, &n, list) >= 0) {
        for (uint32_t i = 0; i < n; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(list[i], &p);
            found |= p.vendorID == 0x10DE;
        }
    }
    vkDestroyInstance(inst, NULL);
    return found;
}

static void fix_headless_nvidia(void) {
    if (dbk_icd_nvidia_fix_allowed(DBK_ICD_VULKAN) && !nvidia_device_listed()) dbk_icd_nvidia_fix(DBK_ICD_VULKAN);
}

/* Creates an instance; with `validation` (and vk for the messenger's user data) the Khronos
 * layer with synchronisation validation. */
static dbk_status make_instance(bool validation, dbk_vk_state *vk, VkInstance *out) {
    static pthread_once_t headless_once = PTHREAD_ONCE_INIT;
    pthread_once(&headless_once, fix_headless_nvidia);
    *out = VK_NULL_HANDLE;
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "daybreak",
        .applicationVersion = 1,
        .pEngineName = "daybreak",
        .apiVersion = VK_API_VERSION_1_2,
    };
    static const char *const layers[] = {"VK_LAYER_KHRONOS_validation"};
    static const char *const exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    const VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = enables,
    };
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    if (validation) {
        if (!has_layer(layers[0]))
            return dbk_set_error(DBK_ERR_UNSUPPORTED,
                                 "DBK_VK_VALIDATION is set but the layer VK_LAYER_KHRONOS_validation is not "
                                 "installed (Debian: vulkan-validationlayers)");
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = layers;
        ci.enabledExtensionCount = 2;
        ci.ppEnabledExtensionNames = exts;
        ci.pNext = &features;
    }
    DBK_VK_TRY(vkCreateInstance(&ci, NULL, out), validation ? "vkCreateInstance with the validation layer"
                                                            : "vkCreateInstance");
    if (validation && vk) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(*out, "vkCreateDebugUtilsMessengerEXT");
        const VkDebugUtilsMessengerCreateInfoEXT mci = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            .pfnUserCallback = on_message,
            .pUserData = vk,
        };
        if (!create) return dbk_set_error(DBK_ERR_DEVICE, "Vulkan: vkCreateDebugUtilsMessengerEXT is missing");
        DBK_VK_TRY(create(*out, &mci, NULL, &vk->messenger), "vkCreateDebugUtilsMessengerEXT");
    }
    return DBK_OK;
}

/* The instance's physical devices; *list is malloc'ed. */
static dbk_status list_devices(VkInstance inst, VkPhysicalDevice **list, uint32_t *count) {
    *list = NULL;
    *count = 0;
    DBK_VK_TRY(vkEnumeratePhysicalDevices(inst, count, NULL), "vkEnumeratePhysicalDevices");
    if (*count == 0) return DBK_OK;
    *list = calloc(*count, sizeof **list);
    if (!*list) return DBK_ERR_OUT_OF_HOST_MEMORY;
    DBK_VK_TRY(vkEnumeratePhysicalDevices(inst, count, *list), "vkEnumeratePhysicalDevices");
    return DBK_OK;
}

static int vk_device_count(void) {
    VkInstance inst;
    if (make_instance(false, NULL, &inst) != DBK_OK) return 0;
    VkPhysicalDevice *list;
    uint32_t n = 0;
    if (list_devices(inst, &list, &n) != DBK_OK) n = 0;
    free(list);
    vkDestroyInstance(inst, NULL);
    return (int)n;
}

static const char *vendor_name(uint32_t id) {
    switch (id) {
    case 0x10DE: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106B: return "Apple";
    case 0x10005: return "Mesa";
    default: return "unknown vendor";
    }
}

static bool has_device_ext(VkPhysicalDevice pd, const char *name) {
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS) return false;
    VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
    if (!e) return false;
    bool found = false;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) found |= !strcmp(e[i].extensionName, name);
    free(e);
    return found;
}

/* Fills a dbk_device_info (with the `details` lines) from a physical device. */
static void describe(VkPhysicalDevice pd, dbk_device_info *out) {
    VkPhysicalDeviceIDProperties ids = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
                                            .pNext = &ids};
    VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                              .pNext = &drv};
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
                                                 .pNext = &sub};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkPhysicalDeviceProperties *p = &p2.properties;
    const VkPhysicalDeviceLimits *l = &p->limits;
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    if (p->apiVersion >= VK_API_VERSION_1_2) vkGetPhysicalDeviceFeatures2(pd, &f2);
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);

    snprintf(out->name, sizeof out->name, "%s", p->deviceName);
    snprintf(out->vendor, sizeof out->vendor, "%s (0x%04x)", vendor_name(p->vendorID), p->vendorID);
    out->vendor_id = p->vendorID;
    out->has_uuid = true;
    memcpy(out->uuid, ids.deviceUUID, sizeof out->uuid);
    snprintf(out->driver, sizeof out->driver, "%.60s %.60s", drv.driverName, drv.driverInfo);
    snprintf(out->api_version, sizeof out->api_version, "Vulkan %u.%u.%u", VK_API_VERSION_MAJOR(p->apiVersion),
             VK_API_VERSION_MINOR(p->apiVersion), VK_API_VERSION_PATCH(p->apiVersion));
    out->type = p->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? DBK_DEVICE_TYPE_CPU
              : (p->deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                 p->deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                 p->deviceType == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU) ? DBK_DEVICE_TYPE_GPU
                                                                       : DBK_DEVICE_TYPE_OTHER;
    out->compute_units = 0;   /* Vulkan does not report compute units */
    uint64_t local = 0;
    char heaps[256] = "";
    for (uint32_t i = 0; i < mem.memoryHeapCount; i++) {
        const bool dl = mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
        if (dl) local += mem.memoryHeaps[i].size;
        size_t used = strlen(heaps);
        snprintf(heaps + used, sizeof heaps - used, "%s%.0f MiB%s", i ? ", " : "",
                 (double)mem.memoryHeaps[i].size / 1048576.0, dl ? " device-local" : "");
    }
    out->global_mem_bytes = local;
    uint32_t type;
    bool mapped;
    /* As dbk_vk_memory_init will choose (it also asks which types storage buffers may use). */
    if (dbk_vk_memory_choose(&mem, ~0u, dbk_env_vk_staged(), &type, &mapped))
        dbk_vk_memory_describe(&mem, type, mapped, out->memory, sizeof out->memory);
    out->max_alloc_bytes = m3.maxMemoryAllocationSize;
    out->local_mem_bytes = l->maxComputeSharedMemorySize;
    out->fp16 = f12.shaderFloat16 && f11.storageBuffer16BitAccess;
    snprintf(out->fp16_missing, sizeof out->fp16_missing, "%s%s%s",
             f12.shaderFloat16 ? "" : "the Vulkan feature shaderFloat16",
             !f12.shaderFloat16 && !f11.storageBuffer16BitAccess ? " and " : "",
             f11.storageBuffer16BitAccess ? "" : "the Vulkan feature storageBuffer16BitAccess");
    snprintf(out->details, sizeof out->details,
             /* continuation lines indented like the first, which `daybreak devices` indents */
             "device type: %s, driver version 0x%x, driver id %d\n"
             "      memory heaps: %s\n"
             "      maxStorageBufferRange: %u bytes, maxMemoryAllocationSize: %llu bytes, "
             "minStorageBufferOffsetAlignment: %llu\n"
             "      shared memory: %u bytes, work-group invocations: %u, size (%u, %u, %u), count (%u, %u, %u)\n"
             "      subgroup size: %u, push constants: %u bytes, timestampPeriod: %.3g ns\n"
             "      fp16 arithmetic: %s, 16-bit storage: %s, push descriptors: %s",
             p->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? "CPU"
             : p->deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? "discrete GPU"
             : p->deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? "integrated GPU"
             : p->deviceType == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU ? "virtual GPU" : "other",
             p->driverVersion, (int)drv.driverID, heaps, l->maxStorageBufferRange,
             (unsigned long long)m3.maxMemoryAllocationSize, (unsigned long long)l->minStorageBufferOffsetAlignment,
             l->maxComputeSharedMemorySize, l->maxComputeWorkGroupInvocations, l->maxComputeWorkGroupSize[0],
             l->maxComputeWorkGroupSize[1], l->maxComputeWorkGroupSize[2], l->maxComputeWorkGroupCount[0],
             l->maxComputeWorkGroupCount[1], l->maxComputeWorkGroupCount[2], sub.subgroupSize,
             l->maxPushConstantsSize, (double)l->timestampPeriod, f12.shaderFloat16 ? "yes" : "no",
             f11.storageBuffer16BitAccess ? "yes" : "no",
             has_device_ext(pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) ? "yes" : "no");
}

static dbk_status vk_device_info(int index, dbk_device_info *out) {
    VkInstance inst;
    DBK_TRY(make_instance(false, NULL, &inst));
    VkPhysicalDevice *list;
    uint32_t n;
    dbk_status st = list_devices(inst, &list, &n);
    if (st == DBK_OK && (index < 0 || (uint32_t)index >= n))
        st = dbk_set_error(DBK_ERR_NOT_FOUND, "vulkan device %d does not exist (%u found)", index, n);
    if (st == DBK_OK) describe(list[index], out);
    free(list);
    vkDestroyInstance(inst, NULL);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* backend lifetime                                                                     */

/* What this backend needs of a device; DBK_ERR_UNSUPPORTED names the first missing item. */
static dbk_status check_device(VkPhysicalDevice pd, const VkPhysicalDeviceProperties *p) {
    if (p->apiVersion < VK_API_VERSION_1_2)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan device '%s' supports Vulkan %u.%u; daybreak needs 1.2",
                             p->deviceName, VK_API_VERSION_MAJOR(p->apiVersion), VK_API_VERSION_MINOR(p->apiVersion));
    if (!has_device_ext(pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME))
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan device '%s' lacks the extension %s, which every op uses",
                             p->deviceName, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    if (p->limits.maxPushConstantsSize < DBK_VK_PUSH_BYTES)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan device '%s' has %u bytes of push constants; %d are needed",
                             p->deviceName, p->limits.maxPushConstantsSize, DBK_VK_PUSH_BYTES);
    return DBK_OK;
}

static void vk_destroy(dbk_backend *be) {
    dbk_vk_state *vk = dbk_vk(be);
    if (!vk) return;
    if (vk->dev) {
        vkDeviceWaitIdle(vk->dev);
        dbk_vk_workspace_destroy(be);
        dbk_vk_cmd_destroy(vk);
        dbk_vk_pipeline_destroy(vk);
        dbk_vk_memory_destroy(vk);
        if (dbk_vk_check_validation(vk) != DBK_OK)
            dbk_log(DBK_LOG_LEVEL_ERROR, "destroying the Vulkan backend: %s", dbk_last_error());
        vkDestroyDevice(vk->dev, NULL);
    }
    if (vk->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(vk->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(vk->instance, vk->messenger, NULL);
    }
    if (vk->instance) vkDestroyInstance(vk->instance, NULL);
    dbk_free(vk);
    be->impl = NULL;
}

static const dbk_backend_vtable vk_vtable = {
    .name         = "vulkan",
    .destroy      = vk_destroy,
    .buffer_alloc = dbk_vk_buffer_alloc,
    .buffer_free  = dbk_vk_buffer_free,
    .buffer_write = dbk_vk_buffer_write,
    .buffer_read  = dbk_vk_buffer_read,
    .sync         = dbk_vk_sync,
    .prepare      = dbk_vk_prepare,
    .op_algorithm = dbk_vk_op_algorithm,
    .run_op            = dbk_vk_run_op,
    .op_supported      = dbk_vk_op_supported,
    .program_record    = dbk_vk_program_record,
    .program_release   = dbk_vk_program_release,
    .program_run       = dbk_vk_program_run,
    .program_run_timed = dbk_vk_program_run_timed,
    .program_op_launches = dbk_vk_program_op_launches,
};

static dbk_status create_device(dbk_vk_state *vk, int index, dbk_device_info *info) {
    VkPhysicalDevice *list;
    uint32_t n;
    DBK_TRY(list_devices(vk->instance, &list, &n));
    if (index < 0 || (uint32_t)index >= n) {
        free(list);
        return dbk_set_error(DBK_ERR_NOT_FOUND, "vulkan device %d does not exist (%u found)", index, n);
    }
    vk->phys = list[index];
    free(list);
    describe(vk->phys, info);
    vkGetPhysicalDeviceProperties(vk->phys, &vk->props);
    DBK_TRY(check_device(vk->phys, &vk->props));
    VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sub};
    vkGetPhysicalDeviceProperties2(vk->phys, &p2);
    vk->subgroup = sub.subgroupSize ? sub.subgroupSize : 32;

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    if (nq > 16) nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, qf);
    int family = -1;
    for (uint32_t i = 0; i < nq && family < 0; i++)   /* prefer a compute queue without graphics */
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = (int)i;
    for (uint32_t i = 0; i < nq && family < 0; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = (int)i;
    if (family < 0)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan device '%s' has no compute queue", vk->props.deviceName);
    vk->queue_family = (uint32_t)family;
    vk->timestamp_bits = qf[family].timestampValidBits;

    const float prio = 1.0f;
    const VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                         .queueFamilyIndex = vk->queue_family,
                                         .queueCount = 1,
                                         .pQueuePriorities = &prio};
    static const char *const exts[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    /* fp16 (the *_f16 shader variants, --precision fp16): enabled only when the device has
     * both features, so a device without them is still created (fp16 is then refused). */
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .shaderFloat16 = info->fp16};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12, .storageBuffer16BitAccess = info->fp16};
    const VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                    .pNext = info->fp16 ? &f11 : NULL,
                                    .queueCreateInfoCount = 1,
                                    .pQueueCreateInfos = &qci,
                                    .enabledExtensionCount = 1,
                                    .ppEnabledExtensionNames = exts};
    DBK_VK_TRY(vkCreateDevice(vk->phys, &dci, NULL, &vk->dev), "vkCreateDevice");
    vkGetDeviceQueue(vk->dev, vk->queue_family, 0, &vk->queue);
    vk->push_descriptor = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(vk->dev, "vkCmdPushDescriptorSetKHR");
    if (!vk->push_descriptor)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan device '%s': vkCmdPushDescriptorSetKHR is missing",
                             vk->props.deviceName);

    vk->max_range = vk->props.limits.maxStorageBufferRange;
    vk->max_alloc = info->max_alloc_bytes;
    vk->align = vk->props.limits.minStorageBufferOffsetAlignment < 4 ? 4 : vk->props.limits.minStorageBufferOffsetAlignment;
    if (!vk->timestamp_bits)
        dbk_log(DBK_LOG_LEVEL_INFO, "Vulkan device '%s': the compute queue has no timestamps; --profile times ops "
                "on the host", vk->props.deviceName);
    return DBK_OK;
}

static dbk_status vk_create(int index, dbk_backend *be) {
    dbk_vk_state *vk = dbk_calloc(1, sizeof *vk);
    if (!vk) return DBK_ERR_OUT_OF_HOST_MEMORY;
    vk->imm_cur = -1;
    vk->tally = &be->tally;
    be->impl = vk;
    be->vt = &vk_vtable;
    const bool validation = dbk_env_vk_validation();
    dbk_status st = make_instance(validation, vk, &vk->instance);
    if (st == DBK_OK) st = create_device(vk, index, &be->info);
    if (st == DBK_OK) st = dbk_vk_memory_init(vk);
    if (st == DBK_OK) snprintf(be->info.memory, sizeof be->info.memory, "%s", vk->memory_note);
    if (st == DBK_OK) st = dbk_vk_cmd_init(vk);
    if (st == DBK_OK) st = dbk_vk_pipeline_init(be);
    if (st != DBK_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dbk_last_error());
        vk_destroy(be);
        be->vt = NULL;
        return dbk_set_error(st, "%s", msg);
    }
    dbk_log(DBK_LOG_LEVEL_INFO, "Vulkan backend on '%s'%s", be->info.name, validation ? " with validation" : "");
    return DBK_OK;
}

const dbk_backend_entry dbk_vk_backend_entry = {
    .kind         = DBK_BACKEND_KIND_VULKAN,
    .device_count = vk_device_count,
    .device_info  = vk_device_info,
    .create       = vk_create,
};
