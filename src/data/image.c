/*
 * image.c — decoding one image file with stb_image behind checks, and the crops (see image.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "data/image.h"
#include "data/jpeg_scan.h"

#include <math.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <stb/stb_image.h>

#include "core/alloc.h"
#include "core/fileio.h"

typedef enum image_format { FORMAT_NONE, FORMAT_JPEG, FORMAT_PNG } image_format;

static image_format format_of_name(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return FORMAT_NONE;
    if (!strcasecmp(dot, ".jpeg") || !strcasecmp(dot, ".jpg")) return FORMAT_JPEG;
    if (!strcasecmp(dot, ".png")) return FORMAT_PNG;
    return FORMAT_NONE;
}

bool dbk_image_is_image_name(const char *name) { return format_of_name(name) != FORMAT_NONE; }

static image_format format_of_bytes(const unsigned char *b, size_t n) {
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return FORMAT_JPEG;
    if (n >= 8 && !memcmp(b, png_sig, 8)) return FORMAT_PNG;
    return FORMAT_NONE;
}

static const char *format_name(image_format f) {
    return f == FORMAT_JPEG ? "JPEG" : f == FORMAT_PNG ? "PNG" : "unknown";
}

/* stb_image decodes a JPEG cut short without complaint (the missing scan reads as grey), so a
 * truncated file is caught here: the end-of-image marker FF D9 must close the data, allowing
 * the padding some writers append after it. */
static bool jpeg_has_end_marker(const unsigned char *b, size_t n) {
    size_t tail = n < 4096 ? n : 4096;
    for (size_t i = n - tail; i + 1 < n; i++)
        if (b[i] == 0xff && b[i + 1] == 0xd9) return true;
    return false;
}

static uint32_t be16(const unsigned char *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t be32(const unsigned char *p) { return be16(p) << 16 | be16(p + 2); }

/* The dimensions a header declares, read here rather than by stb_image: its own cap would
 * hide the size behind "unknown image type", and a size must be judged before anything is
 * decoded. PNG: the IHDR chunk that must come first. JPEG: the first start-of-frame marker
 * (SOF0..SOF15 but DHT, JPG and DAC), walking the marker segments. False when not found. */
static bool header_dimensions(const unsigned char *b, size_t n, image_format f, uint32_t *w, uint32_t *h) {
    if (f == FORMAT_PNG) {
        if (n < 24 || memcmp(b + 12, "IHDR", 4)) return false;
        *w = be32(b + 16);
        *h = be32(b + 20);
        return true;
    }
    size_t i = 2;
    while (i + 4 <= n) {
        if (b[i] != 0xff) return false;
        const unsigned char m = b[i + 1];
        if (m == 0xff) { i++; continue; }                      /* fill byte */
        if (m == 0xd8 || (m >= 0xd0 && m <= 0xd7)) { i += 2; continue; }
        const size_t len = be16(b + i + 2);
        if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
            if (i + 9 > n || len < 7) return false;
            *h = be16(b + i + 5);
            *w = be16(b + i + 7);
            return true;
        }
        if (len < 2) return false;
        i += 2 + len;
    }
    return false;
}

/* Debian 12's stb_image (2.27) builds a JPEG Huffman table from its 16 code-length counts
 * without checking that they total at most 256, the size of its tables: a corrupt DHT segment
 * writes past them (found by fuzz_image under UBSan). Every DHT segment is checked here first.
 * A marker is FF followed by the marker byte, and FF C4 can occur nowhere else in a JPEG
 * (entropy-coded data stuffs FF as FF 00), so every FF C4 is read the way stb_image reads
 * one: its length, then tables of a class/id byte, 16 counts and that many symbols. */
static bool jpeg_huffman_tables_fit(const unsigned char *b, size_t n) {
    for (size_t i = 0; i + 4 <= n; i++) {
        if (b[i] != 0xff || b[i + 1] != 0xc4) continue;
        long left = (long)be16(b + i + 2) - 2;
        size_t p = i + 4;
        while (left > 0 && p + 17 <= n) {
            unsigned symbols = 0;
            for (int k = 0; k < 16; k++) symbols += b[p + 1 + k];
            if (symbols > 256) return false;
            p += 17 + symbols;
            left -= 17 + (long)symbols;
        }
    }
    return true;
}

/* Checks name against contents and the header's dimensions against the limits. */
static dbk_status check_before_decode(const unsigned char *bytes, size_t n, const char *path, int *w, int *h) {
    const image_format named = format_of_name(path), actual = format_of_bytes(bytes, n);
    if (n == 0) return dbk_set_error(DBK_ERR_FORMAT, "image %s: empty file", path);
    if (actual == FORMAT_NONE)
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: not a JPEG or PNG file (no JPEG or PNG signature)", path);
    if (named != FORMAT_NONE && named != actual)
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: a %s file named as %s; rename it or re-encode it", path,
                             format_name(actual), format_name(named));
    if (n > DBK_IMAGE_MAX_FILE_BYTES || n > (size_t)0x7fffffff)
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: %zu bytes, over the limit of %zu", path, n,
                             DBK_IMAGE_MAX_FILE_BYTES);
    uint32_t hw, hh;
    if (!header_dimensions(bytes, n, actual, &hw, &hh))
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: corrupt %s header (no image size found)", path,
                             format_name(actual));
    if (hw < 1 || hh < 1 || hw > DBK_IMAGE_MAX_SIDE || hh > DBK_IMAGE_MAX_SIDE ||
        (int64_t)hw * hh > DBK_IMAGE_MAX_PIXELS)
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: %ux%u pixels, over the limit of %d per side and %lld in all; "
                             "refused before decoding", path, (unsigned)hw, (unsigned)hh, DBK_IMAGE_MAX_SIDE,
                             (long long)DBK_IMAGE_MAX_PIXELS);
    if (actual == FORMAT_JPEG && !jpeg_huffman_tables_fit(bytes, n))
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: corrupt JPEG (a Huffman table with more than 256 codes)", path);
    /* stb_image's own reading of the header must agree (and parses what ours skips). */
    int comp;
    if (!stbi_info_from_memory(bytes, (int)n, w, h, &comp))
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: corrupt %s header (%s)", path, format_name(actual),
                             stbi_failure_reason());
    if ((uint32_t)*w != hw || (uint32_t)*h != hh)
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: corrupt %s header (size %ux%u, decoder reads %dx%d)", path,
                             format_name(actual), (unsigned)hw, (unsigned)hh, *w, *h);
    if (actual == FORMAT_JPEG && !jpeg_has_end_marker(bytes, n))
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: truncated JPEG (no end-of-image marker in its %zu bytes)",
                             path, n);
    /* A file cut short and closed with FF D9 again has an end marker: its scans tell. */
    char why[160];
    if (actual == FORMAT_JPEG && !dbk_jpeg_scan_complete(bytes, n, why, sizeof why))
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: truncated or corrupt JPEG: %s", path, why);
    return DBK_OK;
}

dbk_status dbk_image_decode(const unsigned char *bytes, size_t n, const char *path, dbk_rgb_image *out) {
    memset(out, 0, sizeof *out);
    int w, h, comp;
    DBK_TRY(check_before_decode(bytes, n, path, &w, &h));
    /* desired_channels 3: stb converts grey, grey+alpha, RGBA and Adobe CMYK to RGB. */
    unsigned char *px = stbi_load_from_memory(bytes, (int)n, &w, &h, &comp, 3);
    if (!px)
        return dbk_set_error(DBK_ERR_FORMAT, "image %s: corrupt %s data (%s)", path,
                             format_name(format_of_bytes(bytes, n)), stbi_failure_reason());
    /* Into our allocator so that every buffer of the program is counted and freed alike. */
    const size_t bytes_out = (size_t)w * (size_t)h * 3;
    out->pixels = dbk_malloc(bytes_out);
    if (!out->pixels) {
        stbi_image_free(px);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    memcpy(out->pixels, px, bytes_out);
    stbi_image_free(px);
    out->width = w;
    out->height = h;
    return DBK_OK;
}

dbk_status dbk_image_load(const char *path, dbk_rgb_image *out) {
    memset(out, 0, sizeof *out);
    int fd;
    size_t size;
    DBK_TRY(dbk_file_open_regular(path, "image", DBK_IMAGE_MAX_FILE_BYTES, &fd, &size));
    unsigned char *bytes = dbk_malloc(size ? size : 1);
    if (!bytes) {
        close(fd);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    dbk_status st = dbk_file_read_exact(fd, path, bytes, size);
    close(fd);
    if (st == DBK_OK) st = dbk_image_decode(bytes, size, path, out);
    dbk_free(bytes);
    return st;
}

void dbk_rgb_image_deinit(dbk_rgb_image *img) {
    if (!img) return;
    dbk_free(img->pixels);
    memset(img, 0, sizeof *img);
}

/* ---------------------------------------------------------------------------------- */
/* crops                                                                              */

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Bilinear sample of channel-interleaved img at (sy, sx) in pixel-centre coordinates,
 * clamped to the edges; adds the three channels into acc. */
static void bilinear_add(const dbk_rgb_image *img, float sy, float sx, float acc[3]) {
    sy = clampf(sy, 0.0f, (float)(img->height - 1));
    sx = clampf(sx, 0.0f, (float)(img->width - 1));
    const int y0 = (int)sy, x0 = (int)sx;
    const int y1 = y0 + 1 < img->height ? y0 + 1 : y0, x1 = x0 + 1 < img->width ? x0 + 1 : x0;
    const float fy = sy - (float)y0, fx = sx - (float)x0;
    const uint8_t *p00 = img->pixels + ((size_t)y0 * img->width + x0) * 3;
    const uint8_t *p01 = img->pixels + ((size_t)y0 * img->width + x1) * 3;
    const uint8_t *p10 = img->pixels + ((size_t)y1 * img->width + x0) * 3;
    const uint8_t *p11 = img->pixels + ((size_t)y1 * img->width + x1) * 3;
    for (int c = 0; c < 3; c++) {
        const float top = (float)p00[c] + fx * (float)(p01[c] - p00[c]);
        const float bottom = (float)p10[c] + fx * (float)(p11[c] - p10[c]);
        acc[c] += top + fy * (bottom - top);
    }
}

void dbk_image_crop_resize(const dbk_rgb_image *img, dbk_crop_rect rect, int out_h, int out_w, bool flip,
                           uint8_t *dst) {
    const float step_y = rect.h / (float)out_h, step_x = rect.w / (float)out_w;
    /* Taps per output pixel and axis: one up to 2x shrink, then one per source pixel covered. */
    const int ty = step_y > 2.0f ? (int)ceilf(step_y) : 1, tx = step_x > 2.0f ? (int)ceilf(step_x) : 1;
    const float norm = 1.0f / (float)(ty * tx);
    const size_t plane = (size_t)out_h * (size_t)out_w;
    for (int oy = 0; oy < out_h; oy++) {
        for (int ox = 0; ox < out_w; ox++) {
            const int sx_index = flip ? out_w - 1 - ox : ox;
            float acc[3] = {0.0f, 0.0f, 0.0f};
            for (int j = 0; j < ty; j++) {
                /* Tap j of ty sits at the centre of the j-th slice of the output pixel's footprint. */
                const float sy = rect.y + step_y * ((float)oy + ((float)j + 0.5f) / (float)ty) - 0.5f;
                for (int i = 0; i < tx; i++) {
                    const float sx = rect.x + step_x * ((float)sx_index + ((float)i + 0.5f) / (float)tx) - 0.5f;
                    bilinear_add(img, sy, sx, acc);
                }
            }
            for (int c = 0; c < 3; c++) {
                const float v = acc[c] * norm + 0.5f;
                dst[(size_t)c * plane + (size_t)oy * out_w + ox] = (uint8_t)clampf(v, 0.0f, 255.0f);
            }
        }
    }
}

dbk_crop_rect dbk_image_center_rect(int width, int height, int resize, int crop) {
    /* After scaling the short side to resize, a crop x crop window is crop / scale source pixels. */
    const int short_side = width < height ? width : height;
    const float scale = (float)resize / (float)short_side;
    float side_h = (float)crop / scale, side_w = side_h;
    if (side_h > (float)height) side_h = (float)height;
    if (side_w > (float)width) side_w = (float)width;
    return (dbk_crop_rect){.y = ((float)height - side_h) * 0.5f, .x = ((float)width - side_w) * 0.5f,
                           .h = side_h, .w = side_w};
}

dbk_crop_rect dbk_image_random_rect(int width, int height, float min_scale, const float u[DBK_IMAGE_RANDOM_DRAWS]) {
    const float area = (float)width * (float)height;
    const float log_lo = logf(3.0f / 4.0f), log_hi = logf(4.0f / 3.0f);
    for (int attempt = 0; attempt < 10; attempt++) {
        const float target = area * (min_scale + (1.0f - min_scale) * u[2 * attempt]);
        const float ratio = expf(log_lo + (log_hi - log_lo) * u[2 * attempt + 1]);
        const float w = roundf(sqrtf(target * ratio)), h = roundf(sqrtf(target / ratio));
        if (w >= 1.0f && h >= 1.0f && w <= (float)width && h <= (float)height) {
            /* The corner, uniform over the positions that fit (torchvision's randint). */
            return (dbk_crop_rect){.y = floorf(u[20] * ((float)height - h + 1.0f)),
                                   .x = floorf(u[21] * ((float)width - w + 1.0f)), .h = h, .w = w};
        }
    }
    /* Fallback (torchvision): the whole image cut to the nearest allowed ratio, centred. */
    const float in_ratio = (float)width / (float)height;
    float w = (float)width, h = (float)height;
    if (in_ratio < 3.0f / 4.0f) h = roundf(w / (3.0f / 4.0f));
    else if (in_ratio > 4.0f / 3.0f) w = roundf(h * (4.0f / 3.0f));
    return (dbk_crop_rect){.y = ((float)height - h) * 0.5f, .x = ((float)width - w) * 0.5f, .h = h, .w = w};
}
