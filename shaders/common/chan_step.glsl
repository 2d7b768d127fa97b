/*
 * chan_step.glsl — walking an (N,C,HW) tensor without an integer division per element.
 *
 * Integer division has no SIMD instruction on x86, so lavapipe divides lane by lane (and it
 * is a long sequence on GPUs); a per-element (i / HW) % C made bias_add cost about twice an
 * `add` of the same size. These helpers divide once per invocation and then step the
 * position along with the flat index.
 *
 * Grid-stride loops over flat i = (n*C + c)*HW + j with stride S (uniform):
 *   CHAN_STEP_INIT(i, S, HW, C) declares j, c (the position of i) and the stride split
 *   into whole planes and values; CHAN_STEP_NEXT(HW, C) advances (j, c) by S.
 * Per-channel loops over the channel's values i = n*HW + j (lid, lid + WG, ...):
 *   PLANE_STEP_INIT(i, S, HW) declares n, j (the position of i); PLANE_STEP_NEXT(HW) advances
 *   them by S (which may exceed HW: 7x7 planes with 64-wide groups).
 */
#define CHAN_STEP_INIT(i, S, HW, C) \
    const uint cs_sq_ = (S) / (HW), cs_sr_ = (S) - cs_sq_ * (HW), cs_cq_ = cs_sq_ % (C); \
    const uint cs_p_ = (i) / (HW); \
    uint j = (i) - cs_p_ * (HW), c = cs_p_ % (C)

/* j + sr < 2 HW: at most one carry into the next plane; then c <= 2C - 1 */
#define CHAN_STEP_NEXT(HW, C) \
    j += cs_sr_; \
    c += cs_cq_; \
    if (j >= (HW)) { j -= (HW); c++; } \
    if (c >= (C)) c -= (C)

#define PLANE_STEP_INIT(i, S, HW) \
    const uint ps_q_ = (S) / (HW), ps_r_ = (S) - ps_q_ * (HW); \
    uint n = (i) / (HW), j = (i) - n * (HW)

#define PLANE_STEP_NEXT(HW) \
    j += ps_r_; \
    n += ps_q_; \
    if (j >= (HW)) { j -= (HW); n++; }
