/*
 * winograd4.glsl — the 1-D transforms of Winograd F(4x4, 3x3) (the scheme:
 * conv2d_winograd_gemm.comp), as cl/conv2d_winograd.cl has them: 4x4 output tiles from 6x6
 * input patches, interpolation points 0, 1, -1, 2, -2 and infinity (Lavin & Gray 2015,
 * section 4.2; the matrices andravin/wincnn prints for them):
 *   B^T = [4  0 -5  0 1 0;     G = [ 1/4     0    0  ;    A^T = [1 1  1 1  1 0;
 *          0 -4 -4  1 1 0;          -1/6  -1/6 -1/6  ;           0 1 -1 2 -2 0;
 *          0  4 -4 -1 1 0;          -1/6   1/6 -1/6  ;           0 1  1 4  4 0;
 *          0 -2 -1  2 1 0;           1/24  1/12 1/6  ;           0 1 -1 8 -8 1]
 *          0  2 -1 -2 1 0;           1/24 -1/12 1/6  ;
 *          0  4  0 -5 0 1]           0     0    1    ]
 * Each 2-D transform L X R^T applies one of these to the columns, then to the rows.
 */

/* B^T v (6) */
float[6] wino4_bt(const float v[6]) {
    return float[6](4.0 * v[0] - 5.0 * v[2] + v[4], -4.0 * (v[1] + v[2]) + v[3] + v[4],
                    4.0 * (v[1] - v[2]) - v[3] + v[4], 2.0 * (v[3] - v[1]) - v[2] + v[4],
                    2.0 * (v[1] - v[3]) - v[2] + v[4], 4.0 * v[1] - 5.0 * v[3] + v[5]);
}

/* G v (3 -> 6) */
float[6] wino4_g(const float v[3]) {
    const float even = v[0] + v[2];
    return float[6](0.25 * v[0], -(even + v[1]) / 6.0, -(even - v[1]) / 6.0,
                    v[0] / 24.0 + v[1] / 12.0 + v[2] / 6.0, v[0] / 24.0 - v[1] / 12.0 + v[2] / 6.0, v[2]);
}

/* A^T v (6 -> 4) */
float[4] wino4_at(const float v[6]) {
    const float s1 = v[1] + v[2], d1 = v[1] - v[2], s2 = v[3] + v[4], d2 = v[3] - v[4];
    return float[4](v[0] + s1 + s2, d1 + 2.0 * d2, s1 + 4.0 * s2, d1 + 8.0 * d2 + v[5]);
}

/* A v (4 -> 6; backward-filter: the gradient of A^T) */
float[6] wino4_a(const float v[4]) {
    return float[6](v[0], v[0] + v[1] + v[2] + v[3], v[0] - v[1] + v[2] - v[3],
                    v[0] + 2.0 * v[1] + 4.0 * v[2] + 8.0 * v[3], v[0] - 2.0 * v[1] + 4.0 * v[2] - 8.0 * v[3], v[3]);
}

/* G^T v (6 -> 3; backward-filter: the gradient of G) */
float[3] wino4_gt(const float v[6]) {
    return float[3](0.25 * v[0] - (v[1] + v[2]) / 6.0 + (v[3] + v[4]) / 24.0,
                    (v[2] - v[1]) / 6.0 + (v[3] - v[4]) / 12.0, (v[3] + v[4] - v[1] - v[2]) / 6.0 + v[5]);
}
