/*
 * fake_vk_icd.c — a Vulkan driver library that loads but gives the loader no vkCreateInstance,
 * as NVIDIA's libGLX_nvidia.so.0 does without a display (test_icd: `daybreak devices` must say
 * so instead of "loads").
 */
#include <stddef.h>
#include <stdint.h>

typedef void (*fake_fn)(void);

int32_t vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *version);
fake_fn vk_icdGetInstanceProcAddr(void *instance, const char *name);

int32_t vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *version) {
    if (*version > 5) *version = 5;
    return 0;
}

fake_fn vk_icdGetInstanceProcAddr(void *instance, const char *name) {
    (void)instance, (void)name;
    return NULL;
}
