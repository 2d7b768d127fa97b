/*
 * jpeg_scan.h — whether a JPEG's entropy-coded data is complete, checked before stb_image
 * decodes it.
 *
 * stb_image fills what is missing of a scan with zeros (a grey or smeared image) and reports
 * success, so a file cut short and closed with an end-of-image marker (FF D9) decodes "fine".
 * This walks the file's scans the way a decoder does, Huffman code by Huffman code without the
 * inverse DCT, and finds where the data stops short of the blocks the frame needs. It covers
 * the Huffman-coded sequential JPEGs (SOF0, SOF1: baseline and extended, nearly every camera
 * and dataset file); progressive (SOF2) and the rare lossless or arithmetic-coded files are
 * passed on unchecked (and said so in the header comment of image.c).
 */
#ifndef DBK_JPEG_SCAN_H
#define DBK_JPEG_SCAN_H

#include <stdbool.h>
#include <stddef.h>

/* True when every scan of the JPEG in b (n bytes, starting with FF D8) holds the Huffman codes
 * of all the blocks its frame needs and every component is scanned before the end-of-image
 * marker, or when the file is of a kind this does not check. Otherwise false, with why (cap
 * bytes) saying what is missing or corrupt ("the data ends after 412 of 784 blocks"). Reads
 * nothing outside b. */
bool dbk_jpeg_scan_complete(const unsigned char *b, size_t n, char *why, size_t cap);

#endif
