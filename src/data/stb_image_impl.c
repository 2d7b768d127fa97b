/*
 * stb_image_impl.c — the one translation unit that compiles stb_image (Debian libstb-dev's
 * header, not a vendored copy) for data/image.c. Only the decoders daybreak reads (JPEG, PNG),
 * no stdio (files are read through core/fileio.h), and a dimension cap as a second line behind
 * the header check in image.c. Built without the project's warnings (CMakeLists.txt): it is
 * third-party code.
 */
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_MAX_DIMENSIONS 16384
#include <stb/stb_image.h>
