/*
 * image.h — one image file to RGB pixels, and the crops that turn it into a model input.
 *
 * Decoding uses stb_image (Debian libstb-dev) for JPEG and PNG. stb_image is not hardened
 * against hostile input, so every file is checked before it is decoded: a regular file of at
 * most DBK_IMAGE_MAX_FILE_BYTES, the format its name claims (a .JPEG must start with the JPEG
 * start-of-image marker and end with its end-of-image marker, a .png with the PNG signature),
 * and dimensions from the header (stbi_info_from_memory) within DBK_IMAGE_MAX_SIDE and
 * DBK_IMAGE_MAX_PIXELS. Grayscale, grayscale+alpha, RGBA and CMYK (Adobe) inputs come out as
 * RGB. Every error names the file.
 *
 * Layouts: a decoded image is u8 interleaved (H, W, 3), row-major; a crop written for the
 * model is u8 planar (3, h, w), CHW, which is what DBK_OP_AUGMENT reads.
 */
#ifndef DBK_IMAGE_H
#define DBK_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define DBK_IMAGE_MAX_FILE_BYTES ((size_t)32 << 20)   /* ILSVRC2012's largest JPEG is ~15 MB */
#define DBK_IMAGE_MAX_SIDE       16384                /* pixels, either side */
#define DBK_IMAGE_MAX_PIXELS     ((int64_t)40 << 20)  /* width * height (120 MiB decoded) */

typedef struct dbk_rgb_image {
    int      width, height;
    uint8_t *pixels;     /* (height, width, 3), owned; free with dbk_rgb_image_deinit */
} dbk_rgb_image;

/* A crop window in source pixels: rows [y, y + h), columns [x, x + w) (fractional). */
typedef struct dbk_crop_rect {
    float y, x, h, w;
} dbk_crop_rect;

/* Decodes n bytes of an image file; path names it in errors and its extension (.jpeg, .jpg,
 * .png, any case) says the format expected. DBK_ERR_FORMAT for a wrong format, a truncated
 * or corrupt file or dimensions over the limits (checked before decoding);
 * DBK_ERR_OUT_OF_HOST_MEMORY. *out is zeroed on failure. */
dbk_status dbk_image_decode(const unsigned char *bytes, size_t n, const char *path, dbk_rgb_image *out);

/* Reads (core/fileio.h: regular files only, size capped first) and decodes path. */
dbk_status dbk_image_load(const char *path, dbk_rgb_image *out);

void dbk_rgb_image_deinit(dbk_rgb_image *img);

/* Whether a file name has an image extension the reader takes (.jpeg, .jpg, .png, any case). */
bool dbk_image_is_image_name(const char *name);

/* Samples rect of img bilinearly (pixel centres, edges clamped) to out_h x out_w, mirrored
 * horizontally when flip, into dst as u8 (3, out_h, out_w). When the window is more than
 * twice the output, each output pixel averages a grid of bilinear taps (a box prefilter), so
 * a large photograph shrunk to 128 pixels does not alias. */
void dbk_image_crop_resize(const dbk_rgb_image *img, dbk_crop_rect rect, int out_h, int out_w, bool flip,
                           uint8_t *dst);

/* The evaluation view (torchvision Resize(resize) + CenterCrop(crop)): the short side scaled
 * to `resize`, then the central crop x crop, expressed as a window of the source. */
dbk_crop_rect dbk_image_center_rect(int width, int height, int resize, int crop);

/* torchvision's RandomResizedCrop window: area fraction in [min_scale, 1], aspect ratio
 * log-uniform in [3/4, 4/3], up to 10 tries, else the central crop of the clamped ratio; the
 * corner uniform over the positions that fit. The draws are u[0..19] (area and ratio of each
 * try) and u[20..21] (corner y, x), uniform in [0, 1), so a caller can make them deterministic. */
#define DBK_IMAGE_RANDOM_DRAWS 22
dbk_crop_rect dbk_image_random_rect(int width, int height, float min_scale, const float u[DBK_IMAGE_RANDOM_DRAWS]);

#endif
