/* fuzz_image.c — libFuzzer target: the image decoder behind its checks (data/image.h), the
 * entry point every image-folder file goes through, under both names the reader accepts, and
 * the class-list parser (data/imagefolder.h), on the same arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "data/image.h"
#include "data/imagefolder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const names[] = {"fuzz.JPEG", "fuzz.png"};
    for (int i = 0; i < 2; i++) {
        dbk_rgb_image img;
        if (dbk_image_decode(data, size, names[i], &img) == DBK_OK) {
            /* accepted images are within the limits, and every pixel byte is addressable */
            if (img.width < 1 || img.height < 1 || img.width > DBK_IMAGE_MAX_SIDE || img.height > DBK_IMAGE_MAX_SIDE)
                __builtin_trap();
            uint8_t crop[3 * 8 * 8];
            dbk_image_crop_resize(&img, (dbk_crop_rect){0, 0, (float)img.height, (float)img.width}, 8, 8, i == 1, crop);
            dbk_rgb_image_deinit(&img);
        } else if (img.pixels) {
            __builtin_trap();   /* a refused image holds nothing */
        }
    }
    dbk_class_name *names_out;
    int32_t count;
    if (dbk_imagefolder_parse_classes((const char *)data, size, "fuzz", &names_out, &count) == DBK_OK) {
        for (int32_t c = 0; c < count; c++)
            if (!names_out[c][0] || strchr(names_out[c], '/')) __builtin_trap();
        dbk_free(names_out);
    }
    return 0;
}
