/*
 * vk_error.c — VkResult names and the Vulkan backend's error messages (dbk_vk_fail), and the
 * report of validation-layer errors counted by the messenger (vk_device.c); the lowest layer
 * of the backend: every other file reports through it and it calls none of them.
 */
#include <stdio.h>

#include "backends/vulkan/vk_internal.h"

const char *dbk_vk_result_name(VkResult r) {
    /* A table rather than a switch: VkResult grows with every header release. */
    static const struct { VkResult r; const char *name; } names[] = {
#define N(x) {x, #x},
        N(VK_SUCCESS) N(VK_NOT_READY) N(VK_TIMEOUT) N(VK_EVENT_SET) N(VK_EVENT_RESET) N(VK_INCOMPLETE)
        N(VK_ERROR_OUT_OF_HOST_MEMORY) N(VK_ERROR_OUT_OF_DEVICE_MEMORY) N(VK_ERROR_INITIALIZATION_FAILED)
        N(VK_ERROR_DEVICE_LOST) N(VK_ERROR_MEMORY_MAP_FAILED) N(VK_ERROR_LAYER_NOT_PRESENT)
        N(VK_ERROR_EXTENSION_NOT_PRESENT) N(VK_ERROR_FEATURE_NOT_PRESENT) N(VK_ERROR_INCOMPATIBLE_DRIVER)
        N(VK_ERROR_TOO_MANY_OBJECTS) N(VK_ERROR_FORMAT_NOT_SUPPORTED) N(VK_ERROR_FRAGMENTED_POOL)
        N(VK_ERROR_UNKNOWN) N(VK_ERROR_OUT_OF_POOL_MEMORY) N(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        N(VK_ERROR_FRAGMENTATION) N(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS) N(VK_PIPELINE_COMPILE_REQUIRED)
        N(VK_ERROR_VALIDATION_FAILED_EXT) N(VK_ERROR_INVALID_SHADER_NV)
#undef N
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].r == r) return names[i].name;
    return "VK_RESULT_UNKNOWN";
}

dbk_status dbk_vk_fail(VkResult r, const char *what) {
    dbk_status code = DBK_ERR_DEVICE;
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY) code = DBK_ERR_OUT_OF_DEVICE_MEMORY;
    else if (r == VK_ERROR_OUT_OF_HOST_MEMORY) code = DBK_ERR_OUT_OF_HOST_MEMORY;
    else if (r == VK_ERROR_DEVICE_LOST) code = DBK_ERR_DEVICE_LOST;
    return dbk_set_error(code, "Vulkan: %s failed: %s (%d)", what, dbk_vk_result_name(r), (int)r);
}

dbk_status dbk_vk_check_validation(dbk_vk_state *vk) {
    if (!vk->validation_errors) return DBK_OK;
    int n = vk->validation_errors;
    vk->validation_errors = 0;
    return dbk_set_error(DBK_ERR_DEVICE, "Vulkan validation layer reported %d error%s; first: %.900s", n,
                         n == 1 ? "" : "s", vk->validation_first);
}
