/* fuzz_cifar10.c — libFuzzer target: the CIFAR-10 batch record parser and the class-name
 * parser (data/cifar10.h), both on the same arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "data/cifar10.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* Output arrays sized for the whole records the input holds, as the loader sizes them. */
    size_t records = size / DBK_CIFAR10_RECORD_BYTES;
    uint8_t *labels = malloc(records + 1);
    uint8_t *images = malloc(records * DBK_CIFAR10_IMAGE_BYTES + 1);
    if (labels && images && dbk_cifar10_parse_records(data, size, "fuzz", labels, images) == DBK_OK) {
        for (size_t r = 0; r < records; r++)
            if (labels[r] >= DBK_CIFAR10_CLASSES) __builtin_trap();   /* accepted labels are in range */
    }
    free(labels);
    free(images);

    dbk_class_name names[DBK_CIFAR10_CLASSES];
    dbk_cifar10_parse_meta((const char *)data, size, "fuzz", names);
    return 0;
}
