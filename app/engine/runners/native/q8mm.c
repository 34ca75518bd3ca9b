/* SpecChat's CPU kernels for weight-only int4 / int8 linears with int8 activations.
 *
 * y[m, n] = sum_k x[m, k] * w[n, k] for bf16 rows x [M, K] and quantized weights, the way
 * llama.cpp computes its Q4_1 x Q8_1 and Q8_0 x Q8_0 dot products: each row of x is quantized
 * to int8 in blocks of 32 (scale dx = max|x| / 127, round to nearest even), each block's dot
 * product is an exact int32 sum (AVX-512 VNNI vpdpbusd, or AVX2 vpmaddubsw + vpmaddwd: the same
 * integers), and the blocks are combined in float in one fixed order.
 *
 *   int4: w = d[n, g] * q + mn[n, g], q in 0..15; a row is its K / 2 bytes of nibbles (a pair of
 *         blocks in 32 bytes, see below) followed by its d [G] and mn [G] in fp32, so that one
 *         column is one stream from memory;   y = sum_g (d·dx)_g * I_g + sum_g mn_g * (dx·S)_g
 *   int8: w = s[n] * q, q in -128..127 [N, K];     y = s[n] * sum_g dx_g * I_g
 *   q4k:  llama.cpp's Q4_K as it is in the file: super-blocks of 256 weights (8 blocks of 32),
 *         w = d·sc_b·q − dmin·m_b with d, dmin fp32 (the file's fp16, exact) and 6-bit integer
 *         sc_b, m_b; x quantized to int8 per 256 (one scale dk, as llama.cpp's Q8_K), so a
 *         block's dot product is one exact int32 sum and a super-block costs a row two float
 *         multiply-adds in 8 lanes:   y = sum_s sum_b (sc_b·d)_s · I_b · dk_s − (m_b·dmin)_s · (S_b·dk_s)
 *   q6k:  llama.cpp's Q6_K as it is in the file: super-blocks of 256 weights (16 sub-blocks of 16),
 *         w = d·sc_j·(q − 32), q in 0..63, d fp32 (the file's fp16, exact) and int8 sc_j; x as for
 *         q4k, with the sums of each 16 (llama.cpp's Q8_K bsums) for the offset 32, so that again a
 *         super-block is one exact int32 sum and one float multiply-add:   y = sum_s (d·dk)_s · J_s,
 *         J_s = sum_j sc_j · (sum_i q_i·x_i − 32 · S_j)
 *         q4k and q6k take any K that is a multiple of 32: their rows then run over K rounded up to
 *         256 (KQ below), the padding's weights whatever they are (zero as SpecChat quantizes them)
 *         and the padding's quantized x zero, so it adds nothing (a 0.5B draft's K = 896 → 1024)
 *
 * (I_g: the block's integer dot product, S_g: the sum of its quantized x; J_s: sum_b sc_b · I_b.)
 *
 * Batch invariance by construction: every output is computed by the same instruction sequence
 * whatever M, N, the thread split or the column group it falls in, so row i of an M-row call is
 * bit-identical to the row fed alone; and because the block sums are exact integers, the VNNI and
 * the AVX2 paths give the same bits. Compiled with -ffp-contract=off: no FMA the code does not ask for.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define QK 32
/* an int4 row: its K / 2 bytes of nibbles, then d [G] and mn [G] in fp32 (G = K / 32): one stream */
#define Q4_ROW_BYTES(K) ((K) / 2 + 8 * ((K) / QK))
/* a q4k super-block: d, dmin (fp32), sc [8], m [8] (uint8), then its 128 bytes of nibbles (four
 * chunks of 32, block pairs as int4's); a row over K inputs (a multiple of 32) is K / 256 of them,
 * then, where 256 does not divide K, its tail: a last super-block of the T = K mod 256 / 32 blocks
 * of 32 left, d, dmin, sc [8], m [8] as a whole one's, and of each of its four chunks only the first
 * 4T bytes (lanes 0..T-1: the blocks of 32 it has; the nibbles of blocks T..7 would meet x's zero
 * padding, so they are not stored). One stream: a 0.5B draft's K = 896 read as 3.5 super-blocks
 * instead of 4 (its rows 0.875x the bytes). */
#define QKK 256
#define Q4K_SB_BYTES 152
#define Q4K_TAIL(K) ((K) % QKK / QK)
#define Q4K_TAIL_BYTES(T) ((T) ? 24 + 16 * (T) : 0)
#define Q4K_ROW_BYTES(K) ((K) / QKK * Q4K_SB_BYTES + Q4K_TAIL_BYTES(Q4K_TAIL(K)))
/* a q6k super-block: per half of 128 weights 96 bytes of their 6-bit q (q6_chunks), then the 16
 * sub-scales (int8) and d (fp32); a row is K / 256 of them, one stream */
#define Q6K_SB_BYTES 212
#define Q6K_ROW_BYTES(K) ((K) / QKK * Q6K_SB_BYTES)
/* the inputs a q4k / q6k row runs over: K rounded up to a whole super-block */
#define KQ(K) (((K) + QKK - 1) / QKK * QKK)

static inline float bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t f32_to_bf16(float f) { /* round to nearest even, as torch's .to(bfloat16) */
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40); /* quiet NaN */
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

/* Rounding half to even, as nearbyintf in the default rounding mode, inlined as one vroundss:
 * glibc's nearbyintf is a call that saves and restores the floating-point environment, and the
 * activations' quantization made one per input of every linear call (a 1.5B's pass: ~380,000). */
#define ROUND_EVEN(t) __builtin_roundevenf(t)

/* x [M, K] bf16 → q [M, K] int8, dx [M, G], xs [M, G] = dx · (sum of the block's q) */
__attribute__((target("avx2,fma"))) static void quantize_rows(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *dx, float *xs) {
    const int64_t G = K / QK;
    for (int64_t r = 0; r < M * G; r++) {
        const uint16_t *src = x + r * QK;
        float v[QK], amax = 0.0f;
        for (int j = 0; j < QK; j++) {
            v[j] = bf16_to_f32(src[j]);
            float a = fabsf(v[j]);
            amax = a > amax ? a : amax;
        }
        const float d = amax / 127.0f;
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        int sum = 0;
        for (int j = 0; j < QK; j++) {
            float t = ROUND_EVEN(v[j] * id);
            t = t > 127.0f ? 127.0f : (t < -127.0f ? -127.0f : t);
            q[r * QK + j] = (int8_t)t;
            sum += (int)t;
        }
        dx[r] = d;
        xs[r] = d * (float)sum;
    }
}

/* x [M, K] bf16 → q [M, KQ(K)] int8 in blocks of 256 (one scale dk [M, KQ(K) / 256] each, as above;
 * the inputs past K zero) and the sums of each `per` of them (32 for q4k, 16 for q6k), bs
 * [M, KQ(K) / per] int16 (|bs| <= 32 · 127).
 * Each 256 is laid out as the form's weights are (see its tile). q4k (per 32): 8 runs of 32 bytes,
 * run r holding inputs 4r..4r+3 of each block of 32 in turn (byte 4b + t: input 32b + 4r + t).
 * q6k (per 16): per half of 128, 4 runs of 32 bytes, run 2g + u holding inputs 8u..8u+7 of each of
 * the half's sub-blocks 4g..4g+3 in turn (byte 8s + t: input 16(4g + s) + 8u + t of the half).
 * `natural`: the inputs in their own order instead (the AMX tile's rows, q4k_cols_amx).
 *
 * quantize_256: one 256 of x scaled by id, rounded and clamped, into out (laid out, or in its
 * natural order) and the sums of each `per` into bs. Eight inputs at a time: each rounded to the
 * nearest integer (ties to even) and clamped to ±127 as one input at a time would be (the same
 * floats, the same integers; a NaN input, garbage either way, now -128 rather than 0), packed in
 * their order, then moved to the form's layout a word at a time: q4k's is an 8 x 8
 * transpose of 4-byte words (natural word 8b + c, inputs 4c..4c+3 of block b, goes to word 8c + b),
 * q6k's, per half, a 2 x 4 transpose of 8-byte words within each run of 4 sub-blocks (natural word
 * 8g + 2s + u goes to 8g + 4u + s). The inputs one at a time, the amax's and the rounding's
 * dependency chains scalar, were 11 % of a 2-thread prompt pass's critical path (the real 1.5B). */
__attribute__((target("avx2,fma"), always_inline)) static inline void quantize_256(const float *v, float id, int per,
                                                                                   const int natural, int8_t *out,
                                                                                   int16_t *bs) {
    int32_t iv[QKK] __attribute__((aligned(32)));
    int8_t packed[QKK] __attribute__((aligned(32)));
    const __m256 scale = _mm256_set1_ps(id), hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
    for (int j = 0; j < QKK; j += 32) {
        __m256i n[4];
        for (int t = 0; t < 4; t++) {
            const __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(v + j + 8 * t), scale),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            n[t] = _mm256_cvtps_epi32(_mm256_max_ps(_mm256_min_ps(r, hi), lo));
            _mm256_store_si256((__m256i *)(iv + j + 8 * t), n[t]);
        }
        const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
        const __m256i in_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); /* the packs interleave 128-bit lanes */
        _mm256_store_si256((__m256i *)(packed + j), _mm256_permutevar8x32_epi32(b, in_order));
    }
    for (int b = 0; b < QKK / per; b++) {
        int sum = 0;
        for (int j = b * per; j < (b + 1) * per; j++) sum += iv[j];
        bs[b] = (int16_t)sum;
    }
    if (natural) {
        memcpy(out, packed, QKK);
    } else if (per == QK) {
        for (int w = 0; w < QKK / 4; w++) memcpy(out + 4 * (8 * (w % 8) + w / 8), packed + 4 * w, 4);
    } else {
        for (int w = 0; w < QKK / 8; w++) {
            const int g = w / 8, s = (w % 8) / 2, u = w % 2;
            memcpy(out + 8 * (8 * g + 4 * u + s), packed + 8 * w, 8);
        }
    }
}

__attribute__((target("avx2,fma"))) static void quantize_rows_k(const uint16_t *x, int64_t M, int64_t K, int per,
                                                                int natural, int8_t *q, float *dk, int16_t *bs) {
    const int64_t S = KQ(K) / QKK;
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t r = 0; r < M * S; r++) {
        const int64_t at = r % S * QKK, have = K - at < QKK ? K - at : QKK; /* inputs of x here */
        const uint16_t *src = x + r / S * K + at;
        float v[QKK] __attribute__((aligned(32)));
        int j = 0;
        for (; j + 8 <= have; j += 8) /* bf16 → fp32: the bits shifted into the high half */
            _mm256_store_ps(v + j, _mm256_castsi256_ps(_mm256_slli_epi32(
                                       _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + j))), 16)));
        for (; j < QKK; j++) v[j] = j < have ? bf16_to_f32(src[j]) : 0.0f;
        __m256 m = _mm256_setzero_ps();
        for (j = 0; j < QKK; j += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_load_ps(v + j), magnitude), m);
        float lanes[8], amax = 0.0f; /* a maximum: the same whatever the order (a NaN input ignored, as before) */
        _mm256_storeu_ps(lanes, m);
        for (int t = 0; t < 8; t++) amax = lanes[t] > amax ? lanes[t] : amax;
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        /* the order a constant in each call, so each loop is compiled for its own (a choice per
         * input made a 5-row 1536 x 8960 q4k call 1.05x the time) */
        if (natural) quantize_256(v, id, per, 1, q + r * QKK, bs + r * (QKK / per));
        else quantize_256(v, id, per, 0, q + r * QKK, bs + r * (QKK / per));
        dk[r] = amax / 127.0f;
    }
}

__attribute__((target("avx2,fma"))) static inline float hsum8(__m256 v) { /* one fixed order */
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

typedef struct {
    const uint8_t *w; /* int4 rows [N, Q4_ROW_BYTES(K)], q4k / q6k rows, or int8 [N, K] */
    const float *s;   /* int8: the row scales [N]; int4: NULL (d and mn are in the rows) */
    int64_t N;
} Part;

typedef struct Job Job;
typedef void (*ColsFn)(const Job *, const Part *, uint16_t *, int64_t, int64_t);
struct Job {
    const int8_t *xq;
    const float *dx, *xs; /* q4k, q6k: dx the per-256 scales dk; xs unused (its room holds bs) */
    const int16_t *bs;    /* q4k: the sums of each 32 quantized x; q6k: of each 16 */
    const float *bf;      /* q4k: each sum of 32 times its 256's scale dk, float(bs) · dk */
    int64_t M, K;
    const Part *parts;
    int nparts;
    uint16_t *y; /* [M, ldy]: the parts' outputs side by side in its first N columns */
    int64_t N;   /* the parts' columns together */
    int64_t ldy; /* y's row stride (N, or wider: a call writing some columns of a wider row) */
    ColsFn fn;   /* the form's and the path's column loop */
    int64_t group; /* columns a chunk of the thread split is a multiple of (16 for AMX's tiles, else 1) */
    const void *ctx; /* what a job other than a linear works on (attention's heads: Attention) */
    int64_t inputs;  /* x's inputs, K before KQ's padding (q4k: its rows' length, Q4K_ROW_BYTES) */
};

/* Each output's float arithmetic is the one stated beside its test (tests/test_native_kernels.py,
 * test_int4_computes_int8_rows_times_d_q_plus_mn / test_int8_computes_int8_rows_times_q_scale): both
 * paths use 8-lane registers; only the instruction that makes a block's integers differs. */

/* the int4 zero term sum_g mn[g] * xs[g] as 8 lanes (lane l: the groups g = l mod 8, in order; a
 * last partial 8 read through a mask), added to E + O before the one horizontal sum: a second
 * horizontal sum and a scalar tail per output cost ~10 % of a K = 576 call */
__attribute__((target("avx2,fma"))) static inline __m256 min_lanes(const float *mn, const float *xs, int64_t G) {
    __m256 acc = _mm256_setzero_ps();
    int64_t g = 0;
    for (; g + 8 <= G; g += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(mn + g), _mm256_loadu_ps(xs + g), acc);
    if (g < G) {
        static const int32_t ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
        const __m256i mask = _mm256_loadu_si256((const __m256i *)(ones + 8 - (G - g)));
        acc = _mm256_fmadd_ps(_mm256_maskload_ps(mn + g, mask), _mm256_maskload_ps(xs + g, mask), acc);
    }
    return acc;
}

/* int4 weight block layout: a pair of blocks (2p, 2p+1) is 32 bytes, byte j holding weight j of
 * the even block (low nibble) and weight j of the odd one (high nibble); a lone last block is 16
 * bytes, byte j holding its weights j (low) and j + 16 (high). */

/* The block's 8 int32 lanes of u8 x s8 products: the same integers either way. */
#define DOT_AVX2(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1))
#define DOT_VNNI(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), (u), (s))

#define DEFINE_TAIL(SUFFIX, TARGET, DOT)                                                                          \
    __attribute__((target(TARGET))) static inline __m256 q4_tail_##SUFFIX(const uint8_t *w, const int8_t *x,      \
                                                                         float scale, __m256 acc) {               \
        const __m128i raw = _mm_loadu_si128((const __m128i *)w), low = _mm_set1_epi8(0x0f);                       \
        const __m256i wv = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), low), _mm_and_si128(raw, low)); \
        const __m256i dot = DOT(wv, _mm256_loadu_si256((const __m256i *)x));                                     \
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(scale), acc);                              \
    }                                                                                                             \
    __attribute__((target(TARGET))) static inline __m256 q8_block_##SUFFIX(const int8_t *w, const int8_t *x,      \
                                                                          float scale, __m256 acc) {              \
        const __m256i wv = _mm256_loadu_si256((const __m256i *)w), xv = _mm256_loadu_si256((const __m256i *)x);   \
        const __m256i dot = DOT(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv));                              \
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(scale), acc);                              \
    }

DEFINE_TAIL(avx2, "avx2,fma", DOT_AVX2)
DEFINE_TAIL(vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", DOT_VNNI)

/* Software prefetch of the weight stream, in two steps: PREFETCH_DISTANCE bytes ahead of where a
 * tile reads into L2, then PREFETCH_NEAR bytes ahead from there into L1. The weights come from
 * memory once per pass (a model is far larger than the caches) and one core's share of the
 * bandwidth is bounded by the misses it keeps in flight: with two or more rows a tile's loop is
 * long enough that the hardware prefetcher alone fell behind (a real 1.5B Q4_K_M pass, 1 thread,
 * Xeon with AVX-512: linears 79.6 / 120 / 163 ms at 1 / 2 / 3 rows without, 64.8 / 75.3 / 89.0
 * with an L1 prefetch 2 KiB ahead, 71.7 / 85.4 / 103.2 at 512 B, 70.7 / 80.5 / 91.5 at 4 KiB;
 * tools/pass_profile.py), and an L1 prefetch holds one of the core's few L1 fill buffers for the
 * whole trip to memory, where an L2 prefetch holds one of L2's many more. The L2 step far ahead and
 * the L1 step near (the same Xeon, 2 cores, 2026-12-06; a Q4_K call from memory, 1 row: 18.3 ->
 * 24.3 GB/s at 2 threads, 10.7 -> 12.3 at 1; 4 rows 14.6 -> 19.7 and 8.1 -> 9.7; the passes, which
 * are not all linears, 3-7 % faster: the 0.5B draft's one token 12.4 -> 11.8 ms and the 1.5B
 * target's 41.0 -> 38.6 at 2 threads; L2 steps 4 to 8 KiB ahead the same within 2 %, the L1 step
 * alone 2 or 3 KiB ahead or a non-temporal one slower). A prefetch never faults, past the end too. */
#ifndef PREFETCH_DISTANCE
#define PREFETCH_DISTANCE 6144
#endif
#ifndef PREFETCH_NEAR
#define PREFETCH_NEAR 1024
#endif
#define PREFETCH_LINES(p, LINES)                                                                      \
    do {                                                                                              \
        _Pragma("GCC unroll 4") for (int l_ = 0; l_ < (LINES); l_++) {                                \
            _mm_prefetch((const char *)(p) + PREFETCH_DISTANCE + 64 * l_, _MM_HINT_T1);             \
            _mm_prefetch((const char *)(p) + PREFETCH_NEAR + 64 * l_, _MM_HINT_T0);                 \
        }                                                                                             \
    } while (0)
#define PREFETCH_SB(b) PREFETCH_LINES(b, 3)

/* A tile of ROWS rows of one output column (ROWS a constant in each expansion, so the accumulators
 * stay in registers): the column's weights are unpacked once for those rows, and the ROWS
 * accumulator chains are independent, so their latencies overlap. Every output is still computed
 * by the same sequence of operations, whatever tile it falls in. Every loop over ROWS is unrolled
 * (the pragmas): with one loop left rolled, GCC kept the accumulator arrays in memory and stored
 * four of them to the stack on every pass of the inner loop (one 256-bit store a cycle on Zen 4),
 * which made a second row cost ~0.5 of the first; unrolled, the 135M model's linears went
 * 11.5 / 16.9 / 24.4 -> 9.0 / 12.1 / 14.8 ms at 1 / 2 / 4 rows. y: the part's first column. */
#define MR 8
#define DEFINE_TILES(SUFFIX, TARGET, DOT)                                                                           \
    __attribute__((target(TARGET), always_inline)) static inline void q4_tile_##SUFFIX(                           \
        const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS) {                     \
        const int64_t G = j->K / QK, P = G / 2;                                                                     \
        const __m256i low = _mm256_set1_epi8(0x0f);                                                                 \
        __m256 e[MR], o[MR];                                                                                        \
        const int8_t *xr[MR];                                                                                       \
        const float *dr[MR];                                                                                        \
        const uint8_t *wc = part->w + n * Q4_ROW_BYTES(j->K);                                                       \
        const float *dc = (const float *)(wc + j->K / 2);                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                    \
            xr[r] = j->xq + (m0 + r) * j->K, dr[r] = j->dx + (m0 + r) * G;                                          \
            e[r] = _mm256_setzero_ps(), o[r] = _mm256_setzero_ps();                                                 \
        }                                                                                                           \
        for (int64_t p = 0; p < P; p++) {                                                                           \
            if (p % 2 == 0) PREFETCH_LINES(wc + p * 32, 1);                                                         \
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(wc + p * 32));                                 \
            const __m256i we = _mm256_and_si256(raw, low), wo = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);   \
            const __m256 se = _mm256_broadcast_ss(dc + 2 * p), so = _mm256_broadcast_ss(dc + 2 * p + 1);            \
            _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                \
                const __m256i xe = _mm256_loadu_si256((const __m256i *)(xr[r] + p * 64));                           \
                const __m256i xo = _mm256_loadu_si256((const __m256i *)(xr[r] + p * 64 + 32));                      \
                const __m256 de = _mm256_broadcast_ss(dr[r] + 2 * p), dd = _mm256_broadcast_ss(dr[r] + 2 * p + 1);  \
                e[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(we, xe)), _mm256_mul_ps(se, de), e[r]);               \
                o[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(wo, xo)), _mm256_mul_ps(so, dd), o[r]);               \
            }                                                                                                       \
        }                                                                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                    \
            const int64_t m = m0 + r;                                                                               \
            __m256 acc = e[r];                                                                                      \
            if (G % 2) acc = q4_tail_##SUFFIX(wc + P * 32, xr[r] + P * 64, dc[G - 1] * dr[r][G - 1], acc);          \
            const float t = hsum8(_mm256_add_ps(_mm256_add_ps(acc, o[r]), min_lanes(dc + G, j->xs + m * G, G)));    \
            y[m * j->ldy + n] = f32_to_bf16(t);                                                                     \
        }                                                                                                           \
    }                                                                                                               \
    __attribute__((target(TARGET), always_inline)) static inline void q8_tile_##SUFFIX(                           \
        const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS) {                     \
        const int64_t G = j->K / QK;                                                                                \
        __m256 e[MR], o[MR];                                                                                        \
        const int8_t *xr[MR];                                                                                       \
        const float *dr[MR];                                                                                        \
        const int8_t *wc = (const int8_t *)part->w + n * j->K;                                                      \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                    \
            xr[r] = j->xq + (m0 + r) * j->K, dr[r] = j->dx + (m0 + r) * G;                                          \
            e[r] = _mm256_setzero_ps(), o[r] = _mm256_setzero_ps();                                                 \
        }                                                                                                           \
        int64_t g = 0;                                                                                              \
        for (; g + 2 <= G; g += 2) {                                                                                \
            PREFETCH_LINES(wc + g * QK, 1);                                                                         \
            const __m256i we = _mm256_loadu_si256((const __m256i *)(wc + g * QK));                                  \
            const __m256i wo = _mm256_loadu_si256((const __m256i *)(wc + g * QK + QK));                             \
            const __m256i ae = _mm256_sign_epi8(we, we), ao = _mm256_sign_epi8(wo, wo);                             \
            _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                \
                const __m256i xe = _mm256_loadu_si256((const __m256i *)(xr[r] + g * QK));                           \
                const __m256i xo = _mm256_loadu_si256((const __m256i *)(xr[r] + g * QK + QK));                      \
                const __m256 de = _mm256_broadcast_ss(dr[r] + g), dd = _mm256_broadcast_ss(dr[r] + g + 1);          \
                e[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(ae, _mm256_sign_epi8(xe, we))), de, e[r]);            \
                o[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(ao, _mm256_sign_epi8(xo, wo))), dd, o[r]);            \
            }                                                                                                       \
        }                                                                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                    \
            const int64_t m = m0 + r;                                                                               \
            __m256 acc = e[r];                                                                                      \
            if (g < G) acc = q8_block_##SUFFIX(wc + g * QK, xr[r] + g * QK, dr[r][g], acc);                         \
            y[m * j->ldy + n] = f32_to_bf16(hsum8(_mm256_add_ps(acc, o[r])) * part->s[n]);                          \
        }                                                                                                           \
    }

DEFINE_TILES(avx2, "avx2,fma", DOT_AVX2)
DEFINE_TILES(vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", DOT_VNNI)

/* q4k: each super-block's 128 bytes of nibbles are 4 runs of 32 bytes, run p holding register 2p in
 * its low nibbles and register 2p + 1 in its high ones, and register r (32 weights) holds weights
 * 4r..4r+3 of each of the 8 blocks of 32 in turn (byte 4b + t: weight 4r + t of block b; the rows
 * of x are laid out the same way, quantize_rows_k). So int16 lanes 2b and 2b + 1 of every register's
 * u8 x s8 products belong to block b: AVX2 adds the 8 registers' products in 16 int16 lanes (no
 * overflow: |8 · 2 · 15 · 127| < 2^15), then pairwise into 8 int32 lanes, lane b = I_b (one vpmaddwd
 * by ones); under VNNI vpdpbusd adds each int32 lane's 4 products itself, and the 8 registers leave
 * I_b in lane b directly (one instruction per 32 weights and row against two). The same integers. */
#define SCALED_AVX2(acc, p, sc) _mm256_add_epi32((acc), _mm256_madd_epi16((p), (sc)))
#define SCALED_VNNI(acc, p, sc) _mm256_dpwssd_epi32((acc), (p), (sc))

/* A tile of ROWS rows of one q4k column: per super-block, each row's I_b in integers, then
 * acc += (float(I_b) · (float(sc_b) · d)) · dk and, for the mins, z += (float(m_b) · dmin) · (S_b · dk),
 * both in 8 lanes; y = hsum8(acc) − hsum8(z). The same sequence for every output, whatever tile it
 * falls in. What a row adds is only its integer sums and three vector operations per super-block:
 * the sub-scales and mins times d and dmin are the rows' in common (q4k_lanes), and S_b · dk is the
 * row's own, made once per call beside its quantized x (Job.bf). Against scaling the integers by
 * the sub-scales row by row (vpmulld, or vpmaddwd by the sub-scales), then d · dk and dmin · dk
 * broadcast per row and the mins as int16 products: a real 1.5B Q4_K_M pass over 4 / 5 tokens
 * 119.6 / 142-145 -> 111.6-114.2 / 131-138 ms, 1 to 3 tokens the same (1 thread, Xeon with AVX-512
 * VNNI; AVX2 forced: 4 tokens 127.7 -> 121-122 ms, 1 and 2 the same; tools/pass_profile.py). The
 * empty asm after each AVX2 row's sum keeps GCC from regrouping the sums into a tree it spilled to
 * the stack, as in q6k (4 to 8 rows 0.8x the time with it, AMD EPYC AVX2; the same integers). */
#define Q4K_SUM_avx2(sum, we, xe, wo, xo)                                                                   \
    do {                                                                                                    \
        const __m256i pe_ = _mm256_maddubs_epi16((we), (xe)), po_ = _mm256_maddubs_epi16((wo), (xo));        \
        (sum) = _mm256_add_epi16((sum), _mm256_add_epi16(pe_, po_));                                        \
        __asm__("" : "+v"(sum));                                                                            \
    } while (0)
#define Q4K_INTS_avx2(sum) _mm256_madd_epi16((sum), _mm256_set1_epi16(1))
#define Q4K_SUM_vnni(sum, we, xe, wo, xo) ((sum) = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32((sum), (we), (xe)), (wo), (xo)))
#define Q4K_INTS_vnni(sum) (sum)

/* lanes b of 8 bytes (sub-scales or mins) as floats times f */
__attribute__((target("avx2,fma"), always_inline)) static inline __m256 q4k_lanes(const uint8_t *b, float f) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)b))), _mm256_set1_ps(f));
}

/* chunk p (32 bytes) of a super-block's nibbles at qs; of a tail's (Q4K_ROW_BYTES), its 4T bytes in
 * lanes 0..T-1 and zeros above (mask: those lanes), the products of the blocks it lacks 0 as x's */
#define Q4K_CHUNK(qs, p, mask) _mm256_loadu_si256((const __m256i *)((qs) + (p) * 32))
#define Q4K_TAIL_AT(qs, p) ((qs) + (p) * 4 * Q4K_TAIL(j->inputs))
#define Q4K_TAIL_CHUNK_avx2(qs, p, mask) _mm256_maskload_epi32((const int *)Q4K_TAIL_AT(qs, p), (mask))
#define Q4K_TAIL_CHUNK_vnni(qs, p, mask) _mm256_maskz_loadu_epi32((mask), Q4K_TAIL_AT(qs, p))
/* lanes 0..T-1 of 8 int32 (T: the tail's blocks of 32), for Q4K_TAIL_CHUNK_avx2 / _vnni */
__attribute__((target("avx2,fma"), always_inline)) static inline __m256i q4k_tail_mask_avx2(int64_t T) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)T), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#define q4k_tail_mask_vnni(T) ((__mmask8)((1u << (T)) - 1))

/* super-block s of the one-column tile (b: its bytes; CHUNK: how its nibbles are read) */
#define Q4K_STEP(SUFFIX, b, s, CHUNK, mask)                                                                        \
    do {                                                                                                           \
        PREFETCH_SB(b);                                                                                            \
        float d, dmin;                                                                                             \
        memcpy(&d, (b), 4), memcpy(&dmin, (b) + 4, 4);                                                             \
        const uint8_t *qs = (b) + 24;                                                                              \
        __m256i sum[MR];                                                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) sum[r] = _mm256_setzero_si256();                    \
        _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) {                                                      \
            const __m256i raw = CHUNK(qs, p, mask);                                                                \
            const __m256i we = _mm256_and_si256(raw, low), wo = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);  \
            _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                               \
                const int8_t *x = j->xq + (m0 + r) * j->K + (s) * QKK + p * 64;                                    \
                Q4K_SUM_##SUFFIX(sum[r], we, _mm256_loadu_si256((const __m256i *)x), wo,                           \
                                 _mm256_loadu_si256((const __m256i *)(x + 32)));                                   \
            }                                                                                                      \
        }                                                                                                          \
        const __m256 scd = q4k_lanes((b) + 8, d), mnd = q4k_lanes((b) + 16, dmin); /* the rows' in common */      \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                   \
            const int64_t at = (m0 + r) * S + (s);                                                                 \
            const __m256 scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(Q4K_INTS_##SUFFIX(sum[r])), scd);               \
            acc[r] = _mm256_fmadd_ps(scaled, _mm256_broadcast_ss(j->dx + at), acc[r]);                             \
            z[r] = _mm256_fmadd_ps(mnd, _mm256_loadu_ps(j->bf + at * 8), z[r]);                                    \
        }                                                                                                          \
    } while (0)

/* The tile over rows with a tail (q4kt) and without (q4k): with the tail's step beside the whole
 * super-blocks' in one function, those took 1.04-1.10x the time (8960 x 1536, one row, in cache:
 * tools/native_ab.py), so a row over whole super-blocks runs a tile without it. */
#define DEFINE_Q4K(SUFFIX, TARGET)                                                                                 \
    __attribute__((target(TARGET), always_inline)) static inline void q4k_any_##SUFFIX(                           \
        const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS, const int TAIL) {     \
        const int64_t S = j->K / QKK, whole = j->inputs / QKK; /* super-blocks: x's (a tail's too), whole ones */ \
        const __m256i low = _mm256_set1_epi8(0x0f);                                                                \
        __m256 acc[MR], z[MR];                                                                                     \
        const uint8_t *wc = part->w + n * Q4K_ROW_BYTES(j->inputs);                                                \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) acc[r] = _mm256_setzero_ps(), z[r] = _mm256_setzero_ps(); \
        for (int64_t s = 0; s < (TAIL ? whole : S); s++) Q4K_STEP(SUFFIX, wc + s * Q4K_SB_BYTES, s, Q4K_CHUNK, 0); \
        if (TAIL)                                                                                                  \
            Q4K_STEP(SUFFIX, wc + whole * Q4K_SB_BYTES, whole, Q4K_TAIL_CHUNK_##SUFFIX,                            \
                     q4k_tail_mask_##SUFFIX(Q4K_TAIL(j->inputs)));                                                 \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++)                                                     \
            y[(m0 + r) * j->ldy + n] = f32_to_bf16(hsum8(acc[r]) - hsum8(z[r]));                                  \
    }                                                                                                              \
    __attribute__((target(TARGET), always_inline)) static inline void q4k_tile_##SUFFIX(                          \
        const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS) {                     \
        q4k_any_##SUFFIX(j, part, y, n, m0, ROWS, 0);                                                              \
    }                                                                                                              \
    __attribute__((target(TARGET), always_inline)) static inline void q4kt_tile_##SUFFIX(                         \
        const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS) {                     \
        q4k_any_##SUFFIX(j, part, y, n, m0, ROWS, 1);                                                              \
    }

DEFINE_Q4K(avx2, "avx2,fma")
DEFINE_Q4K(vnni, "avx2,fma,avx512f,avx512vl,avx512vnni")

/* q6k: the 4 chunks of 32 weights (q in 0..63, in the order of x) of a half super-block, from its 3
 * stored chunks of 32 bytes: byte i of chunk c < 3 holds q[32c + i] in bits 0..5 and two bits of
 * q[96 + i] in bits 6, 7 (chunk 0 its bits 0, 1; chunk 1 its 2, 3; chunk 2 its 4, 5). */
__attribute__((target("avx2,fma"), always_inline)) static inline void q6_chunks(const uint8_t *b, __m256i w[4]) {
    const __m256i six = _mm256_set1_epi8(0x3f), two = _mm256_set1_epi8((char)0xc0);
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)b), b1 = _mm256_loadu_si256((const __m256i *)(b + 32)),
                  b2 = _mm256_loadu_si256((const __m256i *)(b + 64));
    w[0] = _mm256_and_si256(b0, six), w[1] = _mm256_and_si256(b1, six), w[2] = _mm256_and_si256(b2, six);
    /* the top bits masked before the 16-bit shifts, so no bit crosses into the next byte */
    w[3] = _mm256_or_si256(_mm256_or_si256(_mm256_srli_epi16(_mm256_and_si256(b0, two), 6),
                                           _mm256_srli_epi16(_mm256_and_si256(b1, two), 4)),
                           _mm256_srli_epi16(_mm256_and_si256(b2, two), 2));
}

/* A tile of ROWS rows of one q6k column: per super-block, each row's J in integers. A half's 4 runs
 * of 32 weights (q in 0..63) hold, run 2g + u, weights 8u..8u+7 of each of its sub-blocks 4g..4g+3
 * (the rows of x laid out the same way, quantize_rows_k), so int16 lanes 4s..4s+3 of both runs 2g and
 * 2g + 1 belong to sub-block 4g + s: the two runs' u8 x s8 products are added in 16 int16 lanes (no
 * overflow: |2 · 2 · 63 · 127| < 2^15), then times the four sub-scales and added pairwise into 8
 * int32 lanes (SCALED): three vector multiplies per 64 weights and row instead of four. Then
 * 32 · (sc · S pairwise) taken off the lanes (S: the sums of each 16 quantized x) and
 * acc += float(J) · (d · dk); y = hsum8(acc). The same sequence for every output, whatever tile it
 * falls in. The empty asm after each row's sum keeps GCC from regrouping the integer sums into a tree
 * whose products it spilled to the stack (without it 4 to 8 rows took 1.09-1.11x the time, AMD EPYC;
 * the same integers either way). */
#define DEFINE_Q6K(SUFFIX, TARGET, SCALED)                                                                         \
    __attribute__((target(TARGET), always_inline)) static inline void q6k_tile_##SUFFIX(                          \
        const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS) {                     \
        const int64_t S = j->K / QKK;                                                                              \
        /* sub-scales 4q..4q+3 (q = 2 · half + g), each in 4 int16 lanes */                                        \
        const __m128i fours = _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);                       \
        __m256 acc[MR];                                                                                            \
        const uint8_t *wc = part->w + n * Q6K_ROW_BYTES(j->K);                                                     \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) acc[r] = _mm256_setzero_ps();                       \
        for (int64_t s = 0; s < S; s++) {                                                                          \
            const uint8_t *b = wc + s * Q6K_SB_BYTES;                                                              \
            PREFETCH_LINES(b, 4);                                                                                  \
            float d;                                                                                               \
            memcpy(&d, b + 208, 4);                                                                                \
            const __m128i sc8 = _mm_loadu_si128((const __m128i *)(b + 192));                                       \
            __m256i isum[MR];                                                                                      \
            _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) isum[r] = _mm256_setzero_si256();               \
            _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {                                                  \
                __m256i w[4];                                                                                      \
                q6_chunks(b + 96 * h, w);                                                                          \
                _Pragma("GCC unroll 2") for (int g = 0; g < 2; g++) {                                              \
                    const __m128i at = _mm_add_epi8(fours, _mm_set1_epi8((char)(4 * (2 * h + g))));                \
                    const __m256i scale = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, at));                         \
                    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                       \
                        const int8_t *x = j->xq + (m0 + r) * j->K + s * QKK + h * 128 + g * 64;                    \
                        const __m256i p0 = _mm256_maddubs_epi16(w[2 * g], _mm256_loadu_si256((const __m256i *)x)); \
                        const __m256i p1 = _mm256_maddubs_epi16(w[2 * g + 1], _mm256_loadu_si256((const __m256i *)(x + 32))); \
                        isum[r] = SCALED(isum[r], _mm256_add_epi16(p0, p1), scale);                                \
                        __asm__("" : "+v"(isum[r]));                                                               \
                    }                                                                                              \
                }                                                                                                  \
            }                                                                                                      \
            const __m256i natural = _mm256_cvtepi8_epi16(sc8); /* sc_0..15 as int16, the sums' order */            \
            _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                               \
                const int64_t at = (m0 + r) * S + s;                                                               \
                const __m256i sums = _mm256_loadu_si256((const __m256i *)(j->bs + at * 16));               \
                const __m256i offset = _mm256_madd_epi16(natural, sums);                                           \
                isum[r] = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(offset, 5));                                 \
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * j->dx[at]), acc[r]);      \
            }                                                                                                      \
        }                                                                                                          \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) y[(m0 + r) * j->ldy + n] = f32_to_bf16(hsum8(acc[r])); \
    }

DEFINE_Q6K(avx2, "avx2,fma", SCALED_AVX2)
DEFINE_Q6K(vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", SCALED_VNNI)

/* One column at a time, its rows in tiles of MAXR (8 under AVX-512's 32 vector registers, 4 under
 * AVX2's 16) and one tile for the rest: each tile unpacks the column's weights once, and that
 * costs about half of a one-row pass even from L1 (tiles of 4, 2, 1 made 3 rows cost 1.60 one-row
 * steps and 2 rows 1.13). Interleaving several columns read from memory was up to 2x slower for
 * int4 (AMD EPYC; 20 % faster from L2 only) and 3x slower for SmolLM2's 49,152 x 576 int8 head. */
#define TILE_REST(KIND, SUFFIX, MAXR, j, part, y, n, m, rest)                               \
    do {                                                                                    \
        if (MAXR > 7 && (rest) == 7) KIND##_tile_##SUFFIX(j, part, y, n, m, 7 % MAXR);      \
        else if (MAXR > 6 && (rest) == 6) KIND##_tile_##SUFFIX(j, part, y, n, m, 6 % MAXR); \
        else if (MAXR > 5 && (rest) == 5) KIND##_tile_##SUFFIX(j, part, y, n, m, 5 % MAXR); \
        else if (MAXR > 4 && (rest) == 4) KIND##_tile_##SUFFIX(j, part, y, n, m, 4 % MAXR); \
        else if ((rest) == 3) KIND##_tile_##SUFFIX(j, part, y, n, m, 3);                    \
        else if ((rest) == 2) KIND##_tile_##SUFFIX(j, part, y, n, m, 2);                    \
        else if ((rest) == 1) KIND##_tile_##SUFFIX(j, part, y, n, m, 1);                    \
    } while (0)
#define DEFINE_COLS(KIND, SUFFIX, TARGET, MAXR)                                                                    \
    __attribute__((target(TARGET))) static void KIND##_cols_##SUFFIX(const Job *j, const Part *part, uint16_t *y,  \
                                                                     int64_t n0, int64_t n1) {                     \
        for (int64_t n = n0; n < n1; n++) {                                                                        \
            int64_t m = 0;                                                                                         \
            for (; m + MAXR <= j->M; m += MAXR) KIND##_tile_##SUFFIX(j, part, y, n, m, MAXR);                      \
            TILE_REST(KIND, SUFFIX, MAXR, j, part, y, n, m, j->M - m);                                             \
        }                                                                                                          \
    }

DEFINE_COLS(q4, avx2, "avx2,fma", 4)
DEFINE_COLS(q4, vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", 8)
DEFINE_COLS(q8, avx2, "avx2,fma", 4)
DEFINE_COLS(q8, vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", 8)
DEFINE_COLS(q4k, avx2, "avx2,fma", 4)
DEFINE_COLS(q4k, vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", 8)
DEFINE_COLS(q4kt, avx2, "avx2,fma", 4)
DEFINE_COLS(q4kt, vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", 8)
DEFINE_COLS(q6k, avx2, "avx2,fma", 4)
DEFINE_COLS(q6k, vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", 8)

/* q4k under AVX-512 for calls of Q4K_WIDE_ROWS rows or more (a verified block): two columns side
 * by side in 512-bit registers, lanes 0-7 column n's and 8-15 column n + 1's, each lane computed by
 * the VNNI tile's operations in its order (the same integers from vpdpbusd, the same float
 * multiplies and fused adds, then each half's hsum8): the same bits. Each row's activations are
 * read once for both columns (a broadcast load) and one vpdpbusd does both columns' 64 products,
 * so a row costs about half the instructions a column pair. One row is bound by the weight stream
 * and two nearly so (1536 x 8960 over 2 rows 1.04-1.06x the time wide, 8960 x 1536 0.83-0.85x):
 * below Q4K_WIDE_ROWS the one-column tile runs. Over 3 rows a call took 0.76-0.87x the time wide
 * and the real 1.5B's pass over 3 tokens 0.97-0.98x (tools/native_ab.py, tools/pass_profile.py). */
#ifndef Q4K_WIDE_ROWS
#define Q4K_WIDE_ROWS 3
#endif
#define WIDE_TARGET "avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni"

/* two 256-bit halves in one 512-bit register (AVX-512F only: no DQ insert needed) */
__attribute__((target(WIDE_TARGET), always_inline)) static inline __m512 join_ps(__m256 lo, __m256 hi) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}
__attribute__((target(WIDE_TARGET), always_inline)) static inline __m256 high_ps(__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* super-block s of the wide tile (b0, b1: the two columns' bytes; CHUNK as in Q4K_STEP) */
#define Q4K_WIDE_STEP(b0, b1, s, CHUNK, mask)                                                                     \
    do {                                                                                                          \
        PREFETCH_SB(b0);                                                                                          \
        PREFETCH_SB(b1);                                                                                          \
        float d0, dmin0, d1, dmin1;                                                                               \
        memcpy(&d0, (b0), 4), memcpy(&dmin0, (b0) + 4, 4), memcpy(&d1, (b1), 4), memcpy(&dmin1, (b1) + 4, 4);     \
        __m512i sum[MR];                                                                                          \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) sum[r] = _mm512_setzero_si512();                   \
        _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) {                                                     \
            const __m512i raw = _mm512_inserti64x4(_mm512_castsi256_si512(CHUNK((b0) + 24, p, mask)),             \
                                                   CHUNK((b1) + 24, p, mask), 1);                                 \
            const __m512i we = _mm512_and_si512(raw, low), wo = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low); \
            _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                              \
                const int8_t *x = j->xq + (m0 + r) * j->K + (s) * QKK + p * 64;                                   \
                const __m512i xe = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x));                \
                const __m512i xo = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x + 32)));         \
                sum[r] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sum[r], we, xe), wo, xo);                        \
            }                                                                                                     \
        }                                                                                                         \
        const __m512 scd = join_ps(q4k_lanes((b0) + 8, d0), q4k_lanes((b1) + 8, d1));                             \
        const __m512 mnd = join_ps(q4k_lanes((b0) + 16, dmin0), q4k_lanes((b1) + 16, dmin1));                     \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                  \
            const int64_t at = (m0 + r) * S + (s);                                                                \
            const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(sum[r]), scd);                                 \
            acc[r] = _mm512_fmadd_ps(scaled, _mm512_set1_ps(j->dx[at]), acc[r]);                                  \
            const __m256 bf = _mm256_loadu_ps(j->bf + at * 8);                                                    \
            z[r] = _mm512_fmadd_ps(mnd, join_ps(bf, bf), z[r]);                                                   \
        }                                                                                                         \
    } while (0)

__attribute__((target(WIDE_TARGET), always_inline)) static inline void q4k_any_wide(
    const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS, const int TAIL) {
    const int64_t S = j->K / QKK, whole = j->inputs / QKK, rb = Q4K_ROW_BYTES(j->inputs);
    const __m512i low = _mm512_set1_epi8(0x0f);
    __m512 acc[MR], z[MR];
    const uint8_t *w0 = part->w + n * rb, *w1 = w0 + rb;
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) acc[r] = _mm512_setzero_ps(), z[r] = _mm512_setzero_ps();
    for (int64_t s = 0; s < (TAIL ? whole : S); s++)
        Q4K_WIDE_STEP(w0 + s * Q4K_SB_BYTES, w1 + s * Q4K_SB_BYTES, s, Q4K_CHUNK, 0);
    if (TAIL)
        Q4K_WIDE_STEP(w0 + whole * Q4K_SB_BYTES, w1 + whole * Q4K_SB_BYTES, whole, Q4K_TAIL_CHUNK_vnni,
                      q4k_tail_mask_vnni(Q4K_TAIL(j->inputs)));
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {
        uint16_t *row = y + (m0 + r) * j->ldy + n;
        row[0] = f32_to_bf16(hsum8(_mm512_castps512_ps256(acc[r])) - hsum8(_mm512_castps512_ps256(z[r])));
        row[1] = f32_to_bf16(hsum8(high_ps(acc[r])) - hsum8(high_ps(z[r])));
    }
}
__attribute__((target(WIDE_TARGET), always_inline)) static inline void q4k_tile_wide(
    const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS) {
    q4k_any_wide(j, part, y, n, m0, ROWS, 0);
}
__attribute__((target(WIDE_TARGET), always_inline)) static inline void q4kt_tile_wide(
    const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS) {
    q4k_any_wide(j, part, y, n, m0, ROWS, 1);
}

/* A form's wide calls: column pairs in the wide tile, an odd last column in the one-column tile
 * (the same bits). */
#define DEFINE_WIDE_COLS(KIND)                                                                                        \
    __attribute__((target(WIDE_TARGET))) static void KIND##_cols_wide(const Job *j, const Part *part, uint16_t *y, \
                                                                       int64_t n0, int64_t n1) {                  \
        int64_t n = n0;                                                                                              \
        for (; n + 2 <= n1; n += 2) {                                                                                \
            int64_t m = 0;                                                                                           \
            for (; m + MR <= j->M; m += MR) KIND##_tile_wide(j, part, y, n, m, MR);                                  \
            TILE_REST(KIND, wide, MR, j, part, y, n, m, j->M - m);                                                   \
        }                                                                                                            \
        if (n < n1) KIND##_cols_vnni(j, part, y, n, n1);                                                             \
    }

DEFINE_WIDE_COLS(q4k)
DEFINE_WIDE_COLS(q4kt)

/* q6k under AVX-512 for calls of Q6K_WIDE_ROWS rows or more (a verified block), as q4k's wide tile:
 * two columns side by side in 512-bit registers, lanes 0-7 column n's and 8-15 column n + 1's, each
 * half computed by the VNNI tile's operations in its order (the same integers from maddubs and
 * dpwssd, the same offset, the same float multiply-add, then each half's hsum8): the same bits.
 * Each row's activations are read once for both columns (a broadcast load). Against the one-column
 * tile (tools/native_ab.py, the real 1.5B's shapes, 1 and 2 threads): 3 rows 1.01-1.19x the time, 4
 * rows 0.96-1.04x, 5 rows 0.88-0.93x, 8 rows 0.79-0.88x, 16 and 64 rows (a prompt: Q6_K has no AMX
 * path here) 0.77-0.83x; hence Q6K_WIDE_ROWS. */
#ifndef Q6K_WIDE_ROWS
#define Q6K_WIDE_ROWS 5
#endif

__attribute__((target(WIDE_TARGET), always_inline)) static inline __m512i join_si(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

__attribute__((target(WIDE_TARGET), always_inline)) static inline void q6k_tile_wide(
    const Job *j, const Part *part, uint16_t *y, int64_t n, int64_t m0, const int ROWS) {
    const int64_t S = j->K / QKK;
    const __m128i fours = _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512 acc[MR];
    const uint8_t *w0 = part->w + n * Q6K_ROW_BYTES(j->K), *w1 = w0 + Q6K_ROW_BYTES(j->K);
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t s = 0; s < S; s++) {
        const uint8_t *b0 = w0 + s * Q6K_SB_BYTES, *b1 = w1 + s * Q6K_SB_BYTES;
        PREFETCH_LINES(b0, 4);
        PREFETCH_LINES(b1, 4);
        float d0, d1;
        memcpy(&d0, b0 + 208, 4), memcpy(&d1, b1 + 208, 4);
        const __m128i sc0 = _mm_loadu_si128((const __m128i *)(b0 + 192)), sc1 = _mm_loadu_si128((const __m128i *)(b1 + 192));
        __m512i isum[MR];
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) isum[r] = _mm512_setzero_si512();
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            __m256i c0[4], c1[4];
            q6_chunks(b0 + 96 * h, c0);
            q6_chunks(b1 + 96 * h, c1);
            _Pragma("GCC unroll 2") for (int g = 0; g < 2; g++) {
                const __m128i at = _mm_add_epi8(fours, _mm_set1_epi8((char)(4 * (2 * h + g))));
                const __m512i scale = join_si(_mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc0, at)),
                                              _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc1, at)));
                const __m512i we = join_si(c0[2 * g], c1[2 * g]), wo = join_si(c0[2 * g + 1], c1[2 * g + 1]);
                _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {
                    const int8_t *x = j->xq + (m0 + r) * j->K + s * QKK + h * 128 + g * 64;
                    const __m512i xe = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x));
                    const __m512i xo = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x + 32)));
                    const __m512i p = _mm512_add_epi16(_mm512_maddubs_epi16(we, xe), _mm512_maddubs_epi16(wo, xo));
                    isum[r] = _mm512_dpwssd_epi32(isum[r], p, scale);
                    __asm__("" : "+v"(isum[r]));
                }
            }
        }
        const __m512i natural = join_si(_mm256_cvtepi8_epi16(sc0), _mm256_cvtepi8_epi16(sc1));
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {
            const int64_t at = (m0 + r) * S + s;
            const __m512i sums = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(j->bs + at * 16)));
            const __m512i offset = _mm512_madd_epi16(natural, sums);
            isum[r] = _mm512_sub_epi32(isum[r], _mm512_slli_epi32(offset, 5));
            const __m512 dd = join_ps(_mm256_set1_ps(d0 * j->dx[at]), _mm256_set1_ps(d1 * j->dx[at]));
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r]), dd, acc[r]);
        }
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {
        uint16_t *row = y + (m0 + r) * j->ldy + n;
        row[0] = f32_to_bf16(hsum8(_mm512_castps512_ps256(acc[r])));
        row[1] = f32_to_bf16(hsum8(high_ps(acc[r])));
    }
}

DEFINE_WIDE_COLS(q6k)


/* ------------------------------------------------------------------ q4k on AMX, for wide calls
 *
 * A call of AMX_ROWS rows or more (a prompt, a draft model's catch-up) on a CPU with AMX-INT8 runs
 * q4k through the tile unit: per super-block and 16 columns, one tdpbsud per block of 32 gives a
 * 16-row x 16-column tile of the blocks' exact integer sums I_b (quantized x as A, signed; the
 * weights as B, unsigned nibbles), and the float arithmetic after it is the q4k tile's, lane for
 * lane (A += (float(I_b) · (float(sc_b) · d)) · dk, Z += (float(m_b) · dmin) · bf, then
 * hsum8(A) − hsum8(Z) as its three adds): the same bits as the VNNI and AVX2 paths, whatever the
 * row count (the batch-invariance test runs every path). The weights stay in the file's layout:
 * the 16 columns' nibble runs are transposed (dword b of every column side by side) into the B
 * tiles once per super-block and serve every 16 rows. The x rows are quantized in their natural
 * order (quantize_rows_k), padded with zero rows to a multiple of 16.
 * Measured against the q4k VNNI tile (1 thread, Xeon with AMX, weights in cache): 8960 x 1536
 * (x2) 8 / 12 / 16 / 40 rows 1.03 / 1.27 / 1.37 / 1.52x as fast, 1536 x 8960 1.16 / 1.51 / 1.76 /
 * 1.20x; 5 rows 0.76-0.82x (the transposes and tile stores outweigh 5 rows), hence AMX_ROWS. */
#ifndef AMX_ROWS
#define AMX_ROWS 12
#endif
/* the tile intrinsics need GCC 11 / clang 12, the permission Linux's arch_prctl: elsewhere no AMX path */
#if defined(__linux__) && defined(__x86_64__) && \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define Q8MM_AMX 1
#else
#define Q8MM_AMX 0
#endif
#if Q8MM_AMX
#define AMX_TARGET "avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni,amx-tile,amx-int8"
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} TileConfig;

static int amx_ok;
static void amx_check(void) { /* the CPU has AMX-INT8 and Linux lets this process use the tile data */
    unsigned a, b, c, d;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    const int has = (d >> 24 & 1) && (d >> 25 & 1); /* AMX-TILE, AMX-INT8 */
    amx_ok = has && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni") &&
             syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
static int amx_usable(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, amx_check);
    return amx_ok;
}

/* r[c] (16 dwords of column c) -> r[q] (dword q of the 16 columns), 64 shuffles */
__attribute__((target(AMX_TARGET), always_inline)) static inline void transpose16(__m512i r[16]) {
    __m512i t[16], u[16];
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) { /* u[4i + q], 128-bit lane l: column 4l + q, rows 4i.. */
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]), u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) { /* the 4 x 4 lanes of u[q], u[4 + q], u[8 + q], u[12 + q] */
        const __m512i x0 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0x44), x1 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0xEE);
        const __m512i x2 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0x44), x3 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0xEE);
        r[q] = _mm512_shuffle_i32x4(x0, x2, 0x88), r[4 + q] = _mm512_shuffle_i32x4(x0, x2, 0xDD);
        r[8 + q] = _mm512_shuffle_i32x4(x1, x3, 0x88), r[12 + q] = _mm512_shuffle_i32x4(x1, x3, 0xDD);
    }
}

/* B rows 2h, 2h + 1 of every block from r[q] = dword q of the 16 columns' 64 bytes of runs h, h + 1 */
#define AMX_B_ROWS(bt, r, first)                                                                             \
    _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++) {                                                  \
        const int b_ = q % 8, k_ = (first) + 2 * (q / 8);                                                    \
        _mm512_store_si512((bt) + 512 * b_ + 64 * k_, _mm512_and_si512(r[q], low));                          \
        _mm512_store_si512((bt) + 512 * b_ + 64 * (k_ + 1), _mm512_and_si512(_mm512_srli_epi16(r[q], 4), low)); \
    }
/* block b of 16 rows: C (tile c) = A (tile a: x) · B (tile b: weights), stored to cbuf */
#define AMX_BLOCK(blk, c, a, b)                                  \
    do {                                                         \
        _tile_loadd(b, bt + 512 * (blk), 64);                    \
        _tile_loadd(a, xs + 32 * (blk), j->K);                   \
        _tile_zero(c);                                           \
        _tile_dpbsud(c, a, b);                                   \
        _tile_stored(c, cbuf + (blk) * 256, 64);                 \
    } while (0)

/* columns 16g..16g+15 of the part, rows [r0, r0 + M), M <= AMX_SPAN; room: 16 floats x 8 lanes x 2 a row */
__attribute__((target(AMX_TARGET))) static void q4k_group_amx(const Job *j, const Part *part, uint16_t *y, int64_t g,
                                                              int64_t r0, int64_t M, float *room) {
    const int64_t S = j->K / QKK, Mp = (M + 15) / 16 * 16, rb = Q4K_ROW_BYTES(j->inputs);
    const int64_t whole = j->inputs / QKK, T = Q4K_TAIL(j->inputs);
    __attribute__((aligned(64))) uint8_t bt[8 * 512];  /* the 8 blocks' B tiles: row k, column c: 4 weights */
    __attribute__((aligned(64))) uint8_t tail[16][Q4K_SB_BYTES]; /* the columns' tails as whole super-blocks */
    __attribute__((aligned(64))) int32_t cbuf[8 * 256]; /* the 8 blocks' sums: [block][row][column] */
    const __m512i low = _mm512_set1_epi8(0x0f), byte = _mm512_set1_epi32(0xff);
    float(*acc)[8][16] = (float(*)[8][16])room, (*z)[8][16] = (float(*)[8][16])(room + Mp * 128);
    for (int64_t m = 0; m < M; m++)
        for (int b = 0; b < 8; b++) _mm512_store_ps(acc[m][b], _mm512_setzero_ps()), _mm512_store_ps(z[m][b], _mm512_setzero_ps());
    const uint8_t *wc = part->w + g * 16 * rb;
    if (T) /* the nibbles of the blocks a tail lacks 0 (x's are too), its chunks 32 bytes apart */
        for (int c = 0; c < 16; c++) {
            const uint8_t *src = wc + c * rb + whole * Q4K_SB_BYTES;
            memcpy(tail[c], src, 24);
            for (int p = 0; p < 4; p++)
                _mm256_storeu_si256((__m256i *)(tail[c] + 24 + 32 * p), Q4K_TAIL_CHUNK_vnni(src + 24, p, q4k_tail_mask_vnni(T)));
        }
    for (int64_t s = 0; s < S; s++) {
        __m512i h[16], r[16];
        /* column c's super-block s at base + c · stride */
        const uint8_t *base = s < whole ? wc + s * Q4K_SB_BYTES : tail[0];
        const int64_t stride = s < whole ? rb : Q4K_SB_BYTES;
        _Pragma("GCC unroll 16") for (int c = 0; c < 16; c++) {
            const uint8_t *sb = base + c * stride;
            PREFETCH_SB(sb);
            h[c] = _mm512_loadu_si512(sb);      /* d, dmin, sc [8], m [8], then nibbles */
            r[c] = _mm512_loadu_si512(sb + 24); /* runs 0, 1 */
        }
        transpose16(h);
        transpose16(r);
        AMX_B_ROWS(bt, r, 0);
        _Pragma("GCC unroll 16") for (int c = 0; c < 16; c++) r[c] = _mm512_loadu_si512(base + c * stride + 88);
        transpose16(r);
        AMX_B_ROWS(bt, r, 4);
        const __m512 d = _mm512_castsi512_ps(h[0]), dmin = _mm512_castsi512_ps(h[1]);
        __m512 scd[8], mnd[8]; /* q4k_lanes' products, a column a lane */
        _Pragma("GCC unroll 8") for (int b = 0; b < 8; b++) {
            const __m512i sc = _mm512_and_si512(_mm512_srli_epi32(h[2 + b / 4], 8 * (b % 4)), byte);
            const __m512i mn = _mm512_and_si512(_mm512_srli_epi32(h[4 + b / 4], 8 * (b % 4)), byte);
            scd[b] = _mm512_mul_ps(_mm512_cvtepi32_ps(sc), d), mnd[b] = _mm512_mul_ps(_mm512_cvtepi32_ps(mn), dmin);
        }
        for (int64_t m0 = 0; m0 < Mp; m0 += 16) {
            const int8_t *xs = j->xq + (r0 + m0) * j->K + s * QKK;
            AMX_BLOCK(0, 0, 4, 6);
            AMX_BLOCK(1, 1, 5, 7);
            AMX_BLOCK(2, 2, 4, 6);
            AMX_BLOCK(3, 3, 5, 7);
            AMX_BLOCK(4, 0, 4, 6);
            AMX_BLOCK(5, 1, 5, 7);
            AMX_BLOCK(6, 2, 4, 6);
            AMX_BLOCK(7, 3, 5, 7);
            const int64_t rows = M - m0 < 16 ? M - m0 : 16;
            for (int64_t i = 0; i < rows; i++) {
                const int64_t m = m0 + i, at = (r0 + m) * S + s;
                const __m512 dk = _mm512_set1_ps(j->dx[at]);
                _Pragma("GCC unroll 8") for (int b = 0; b < 8; b++) {
                    const __m512 ints = _mm512_cvtepi32_ps(_mm512_load_si512(cbuf + b * 256 + i * 16));
                    _mm512_store_ps(acc[m][b], _mm512_fmadd_ps(_mm512_mul_ps(ints, scd[b]), dk, _mm512_load_ps(acc[m][b])));
                    _mm512_store_ps(z[m][b], _mm512_fmadd_ps(mnd[b], _mm512_set1_ps(j->bf[at * 8 + b]), _mm512_load_ps(z[m][b])));
                }
            }
        }
    }
    for (int64_t m = 0; m < M; m++) { /* hsum8's adds, 16 columns at a time */
        __m512 a4[4], z4[4];
        _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {
            a4[q] = _mm512_add_ps(_mm512_load_ps(acc[m][q]), _mm512_load_ps(acc[m][q + 4]));
            z4[q] = _mm512_add_ps(_mm512_load_ps(z[m][q]), _mm512_load_ps(z[m][q + 4]));
        }
        const __m512 A = _mm512_add_ps(_mm512_add_ps(a4[0], a4[2]), _mm512_add_ps(a4[1], a4[3]));
        const __m512 Z = _mm512_add_ps(_mm512_add_ps(z4[0], z4[2]), _mm512_add_ps(z4[1], z4[3]));
        float out[16];
        _mm512_storeu_ps(out, _mm512_sub_ps(A, Z));
        for (int c = 0; c < 16; c++) y[(r0 + m) * j->ldy + g * 16 + c] = f32_to_bf16(out[c]);
    }
}

/* columns [n0, n1) of the part, both multiples of 16 (linear_rows takes AMX only then), AMX_SPAN rows
 * at a time (the accumulators' room on the stack: 64 KiB) */
#define AMX_SPAN 64
__attribute__((target(AMX_TARGET))) static void q4k_cols_amx(const Job *j, const Part *part, uint16_t *y, int64_t n0,
                                                             int64_t n1) {
    __attribute__((aligned(64))) float room[AMX_SPAN * 256];
    TileConfig cfg = {.palette = 1};
    for (int t = 0; t < 4; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64; /* C: 16 rows x 16 int32 */
    for (int t = 4; t < 6; t++) cfg.rows[t] = 16, cfg.colsb[t] = 32; /* A: 16 rows x 32 int8 (a block) */
    for (int t = 6; t < 8; t++) cfg.rows[t] = 8, cfg.colsb[t] = 64;  /* B: 8 rows x 16 columns x 4 */
    _tile_loadconfig(&cfg);
    for (int64_t r0 = 0; r0 < j->M; r0 += AMX_SPAN)
        for (int64_t g = n0 / 16; g < n1 / 16; g++)
            q4k_group_amx(j, part, y, g, r0, j->M - r0 < AMX_SPAN ? j->M - r0 : AMX_SPAN, room);
    _tile_release();
}
#else
static int amx_usable(void) { return 0; }
static void q4k_cols_amx(const Job *j, const Part *part, uint16_t *y, int64_t n0, int64_t n1) {
    q4k_cols_vnni(j, part, y, n0, n1); /* never chosen: amx_usable() says no */
}
#endif

/* The columns [c0, c1) of the parts side by side, each part's share by its own column loop. */
static void run_columns(const Job *j, int64_t c0, int64_t c1) {
    int64_t first = 0; /* the part's first column */
    for (int i = 0; i < j->nparts && c0 < c1; i++) {
        const int64_t end = first + j->parts[i].N;
        if (c0 < end) {
            const int64_t stop = c1 < end ? c1 : end;
            j->fn(j, &j->parts[i], j->y + first, c0 - first, stop - first);
            c0 = stop;
        }
        first = end;
    }
}

/* ------------------------------------------------------------------ the threads
 *
 * One pool of worker threads for the process (ggml's threadpool): made by the first call that
 * splits, kept between calls, remade when a call asks for another number of threads. A call
 * cuts its columns into chunks (CHUNKS_PER_THREAD a thread) and every thread, the caller
 * included, takes the next chunk until none is left: a worker the scheduler is late to wake
 * finds the chunks taken and costs the call nothing (on a busy machine that is most of the
 * time), and the caller waits only for chunks a worker has taken. Each output is computed by
 * exactly one thread in the one fixed order, so the bits do not depend on the split. Between
 * calls a worker spins for SPIN_NS (a pass's next linear comes within microseconds), then sleeps
 * on a condition variable, so it never holds a core while torch runs its own ops. One call at a
 * time has the pool; another thread's call meanwhile runs alone (the same bits). A child process
 * after fork has none of the workers and starts with none (pool_after_fork). */
#define MAX_THREADS 64
#ifndef THREAD_WORK
#define THREAD_WORK (1 << 19) /* multiply-adds below which one thread does the whole call (measured) */
#endif
#define CHUNKS_PER_THREAD 4
#ifndef SPIN_NS
#define SPIN_NS 50000 /* how long a worker spins before it sleeps (measured) */
#endif

static struct {
    pthread_mutex_t busy; /* held by the call that has the pool */
    pthread_mutex_t mu;   /* with `work`: the sleeping workers' wake-up; with `done`: the caller's */
    pthread_cond_t work, done;
    pthread_t ids[MAX_THREADS];
    uint64_t born[MAX_THREADS]; /* the generation a worker was made in */
    int size;                   /* the caller and size - 1 workers */
    int quit;
    atomic_uint_fast64_t generation; /* one more for each call (and for the workers' quitting) */
    atomic_uint_fast64_t ticket;     /* the call's generation << 32 | its chunks << 16 | the next chunk */
    atomic_int finished;             /* the call's chunks done */
    atomic_int used;                 /* threads that took a chunk of the call */
    const Job *job;
    int64_t cols, per; /* chunk c: columns [c·per, min((c + 1)·per, cols)) */
} pool = {.busy = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER, .size = 1};

static _Thread_local int last_threads; /* threads that computed columns of this thread's last call */

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* until `ready` says yes: a spin of SPIN_NS, then asleep on `cond` (signalled under pool.mu) */
#define WAIT(ready, cond)                                                    \
    do {                                                                     \
        const int64_t until_ = now_ns() + SPIN_NS;                           \
        for (int i_ = 1; !(ready); i_++) {                                   \
            _mm_pause();                                                     \
            if (i_ % 64 == 0 && now_ns() > until_) {                         \
                pthread_mutex_lock(&pool.mu);                                \
                while (!(ready)) pthread_cond_wait(&(cond), &pool.mu);       \
                pthread_mutex_unlock(&pool.mu);                              \
            }                                                                \
        }                                                                    \
    } while (0)

/* The chunks of call `generation` this thread takes, until none is left; worker: not the caller.
 * A chunk is taken by one compare-and-swap of the ticket, which also says whose call it is, so a
 * worker waking after its call is over takes nothing of the next one's by mistake. */
static void work(uint64_t generation, int worker) {
    const uint64_t call = generation & 0xffffffffu;
    int took = 0;
    uint64_t t = atomic_load_explicit(&pool.ticket, memory_order_acquire);
    while (t >> 32 == call && (t & 0xffff) < ((t >> 16) & 0xffff)) {
        if (!atomic_compare_exchange_weak_explicit(&pool.ticket, &t, t + 1, memory_order_acq_rel, memory_order_acquire))
            continue;
        if (!took) took = 1, atomic_fetch_add(&pool.used, 1);
        const int64_t c0 = (int64_t)(t & 0xffff) * pool.per, c1 = c0 + pool.per < pool.cols ? c0 + pool.per : pool.cols;
#ifdef Q8MM_IDLE_WORKER /* a mutant for the tests (test_a_worker_that_computes_nothing_is_caught) */
        if (!worker)
#endif
            run_columns(pool.job, c0, c1);
        const int chunks = (int)((t >> 16) & 0xffff);
        if (atomic_fetch_add(&pool.finished, 1) + 1 == chunks && worker) {
            pthread_mutex_lock(&pool.mu); /* the caller may be asleep */
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.mu);
        }
        t = atomic_load_explicit(&pool.ticket, memory_order_acquire);
    }
}

static void *worker(void *arg) {
    uint64_t seen = pool.born[(intptr_t)arg];
    for (;;) {
        WAIT(atomic_load_explicit(&pool.generation, memory_order_acquire) != seen, pool.work);
        seen = atomic_load_explicit(&pool.generation, memory_order_acquire);
        if (pool.quit) return NULL;
        work(seen, 1);
    }
}

static uint64_t next_generation(void) { /* wakes the sleeping workers */
    pthread_mutex_lock(&pool.mu);
    const uint64_t g = atomic_fetch_add(&pool.generation, 1) + 1;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);
    return g;
}

static int pool_resize(int threads) { /* with pool.busy held: the threads a call gets */
    if (threads < pool.size) { /* fewer: the workers quit and are made again */
        pool.quit = 1;
        next_generation();
        for (int i = 1; i < pool.size; i++) pthread_join(pool.ids[i], NULL);
        pool.quit = 0, pool.size = 1;
    }
    for (; pool.size < threads; pool.size++) {
        pool.born[pool.size] = atomic_load(&pool.generation);
        if (pthread_create(&pool.ids[pool.size], NULL, worker, (void *)(intptr_t)pool.size) != 0) break;
    }
    return pool.size;
}

static void pool_after_fork(void) { /* in a child: the parent's workers are not here */
    pthread_mutex_init(&pool.busy, NULL);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.work, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.size = 1, pool.quit = 0;
}

static void run(const Job *job, int threads) {
    const int64_t cols = job->N;
    threads = threads > MAX_THREADS ? MAX_THREADS : threads;
    if (threads < 2 || job->M * cols * job->K < THREAD_WORK || pthread_mutex_trylock(&pool.busy) != 0) {
        run_columns(job, 0, cols);
        last_threads = 1;
        return;
    }
    threads = pool_resize(threads);
    pool.job = job, pool.cols = cols;
    pool.per = (cols + threads * CHUNKS_PER_THREAD - 1) / (threads * CHUNKS_PER_THREAD);
    pool.per = (pool.per + job->group - 1) / job->group * job->group; /* AMX: whole 16-column groups */
    const uint64_t chunks = (uint64_t)((cols + pool.per - 1) / pool.per);
    atomic_store(&pool.finished, 0);
    atomic_store(&pool.used, 0);
    const uint64_t generation = atomic_load(&pool.generation) + 1; /* next_generation's */
    atomic_store_explicit(&pool.ticket, (generation & 0xffffffffu) << 32 | chunks << 16, memory_order_release);
    next_generation();
    work(generation, 0);
    WAIT(atomic_load_explicit(&pool.finished, memory_order_acquire) == (int)chunks, pool.done);
    last_threads = atomic_load(&pool.used);
    pthread_mutex_unlock(&pool.busy);
}

/* ------------------------------------------------------------------ the linears
 *
 * Python (through calls.py, which checks the tensors; path: 0 AVX2, 1 VNNI, 2 VNNI with q4k's wide
 * calls on AMX): q4_mm(x, M, K, y, threads, path, then w, N
 * for each of up to MAX_PARTS int4 weights over the same K) and q8_mm(x, M, K, y, threads, path,
 * then w, s, N for each int8 weight and its fp32 row scales; q4k_mm and q6k_mm as q4_mm, for their
 * super-block rows), the pointers as integers: the rows
 * quantized once and the parts' outputs side by side in y [M, N0 + N1 + ...] (q | k | v, gate |
 * up). Every output is computed as in its part's own call, so a part's columns are bit-identical
 * to a call with that part alone. */
#define MAX_PARTS 8

static int args_i64(PyObject *const *args, Py_ssize_t nargs, int64_t *out) {
    for (Py_ssize_t i = 0; i < nargs; i++) {
        out[i] = PyLong_AsLongLong(args[i]);
        if (out[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

enum { FORM_Q8, FORM_Q4, FORM_Q4K, FORM_Q6K };
static const char *const FORM_NAMES[] = {"q8_mm", "q4_mm", "q4k_mm", "q6k_mm"};

/* One linear call without the GIL: x [M, K] bf16 quantized once, then the parts' columns side by
 * side into the first total columns of y's rows (row stride ldy ≥ total). -1 when the quantized
 * rows' memory cannot be had, else 0. */
static int linear_rows(int form, const uint16_t *x, int64_t M, int64_t K, const Part *parts, int nparts,
                       int64_t total, uint16_t *y, int64_t ldy, int threads, int path) {
    const int64_t x_k = K;
    const int super = form == FORM_Q4K || form == FORM_Q6K; /* x quantized per 256 */
    K = super ? KQ(K) : K; /* from here the quantized rows' length (x's stays the caller's) */
    const int64_t G = K / QK;
    /* the quantized rows: q [M, K], then (64-aligned) dx [M, G] and xs [M, G] fp32, or for q4k
     * dk [M, K / 256] fp32, bs [M, G] int16 (the room of xs) and bf [M, G] fp32 after them, for
     * q6k bs [M, 2 · G] int16 */
    const size_t rooms = form == FORM_Q4K ? 3 : 2;
    int amx = form == FORM_Q4K && path >= 2 && M >= AMX_ROWS && amx_usable();
    for (int i = 0; i < nparts; i++) amx = amx && parts[i].N % 16 == 0;
    const int64_t Mp = amx ? (M + 15) / 16 * 16 : M; /* AMX: x's rows padded with zero rows to whole tiles */
    int8_t *xq = (int8_t *)malloc((size_t)(Mp * K) + rooms * sizeof(float) * (size_t)(M * G) + 64);
    if (!xq) return -1;
    memset(xq + M * K, 0, (size_t)((Mp - M) * K));
    float *dx = (float *)(((uintptr_t)(xq + Mp * K) + 63) & ~(uintptr_t)63);
    float *xs = dx + M * G, *bf = xs + M * G; /* bf: q4k's float(bs) · dk */
    int16_t *bs = (int16_t *)xs;
    ColsFn fn;
    if (form == FORM_Q6K) fn = !path ? q6k_cols_avx2 : M >= Q6K_WIDE_ROWS ? q6k_cols_wide : q6k_cols_vnni;
    else if (form == FORM_Q4K && Q4K_TAIL(x_k)) /* rows with a tail: their own tiles (q4k_any_) */
        fn = amx ? q4k_cols_amx : !path ? q4kt_cols_avx2 : M >= Q4K_WIDE_ROWS ? q4kt_cols_wide : q4kt_cols_vnni;
    else if (form == FORM_Q4K) fn = amx ? q4k_cols_amx : !path ? q4k_cols_avx2 : M >= Q4K_WIDE_ROWS ? q4k_cols_wide : q4k_cols_vnni;
    else if (form == FORM_Q4) fn = path ? q4_cols_vnni : q4_cols_avx2;
    else fn = path ? q8_cols_vnni : q8_cols_avx2;
    const Job job = {xq, dx, xs, bs, bf, M, K, parts, nparts, y, total, ldy, fn, amx ? 16 : 1, NULL, x_k};
    if (super) quantize_rows_k(x, M, x_k, form == FORM_Q6K ? 16 : QK, amx, xq, dx, bs);
    else quantize_rows(x, M, K, xq, dx, xs);
    if (form == FORM_Q4K)
        for (int64_t i = 0; i < M * G; i++) bf[i] = (float)bs[i] * dx[i / (QKK / QK)];
    run(&job, threads);
    free(xq);
    return 0;
}

static PyObject *mm(PyObject *const *args, Py_ssize_t nargs, int form) {
    const int per = form == FORM_Q8 ? 3 : 2; /* a part's arguments: (w, s, N) or (w, N) */
    const char *name = FORM_NAMES[form];
    int64_t a[6 + 3 * MAX_PARTS];
    if (nargs < 6 + per || nargs > 6 + per * MAX_PARTS || (nargs - 6) % per) {
        PyErr_Format(PyExc_TypeError, "%s expects 6 arguments and 1 to %d parts of %d, got %zd arguments", name,
                     MAX_PARTS, per, nargs);
        return NULL;
    }
    if (args_i64(args, nargs, a) < 0) return NULL;
    const int64_t M = a[1], K = a[2];
    Part parts[MAX_PARTS];
    const int nparts = (int)((nargs - 6) / per);
    int64_t total = 0;
    for (int i = 0; i < nparts; i++) {
        const int64_t *p = a + 6 + per * i;
        parts[i] = (Part){(const uint8_t *)(uintptr_t)p[0], form == FORM_Q8 ? (const float *)(uintptr_t)p[1] : NULL,
                          p[per - 1]};
        if (parts[i].N <= 0 || !parts[i].w || (form == FORM_Q8 && !parts[i].s)) {
            PyErr_Format(PyExc_ValueError, "part %d: bad weight (N=%lld)", i, (long long)parts[i].N);
            return NULL;
        }
        total += parts[i].N;
    }
    if (M <= 0 || K <= 0 || K % QK || !a[0] || !a[3]) {
        PyErr_Format(PyExc_ValueError, "bad call M=%lld K=%lld", (long long)M, (long long)K);
        return NULL;
    }
    int failed;
    Py_BEGIN_ALLOW_THREADS;
    failed = linear_rows(form, (const uint16_t *)(uintptr_t)a[0], M, K, parts, nparts, total,
                         (uint16_t *)(uintptr_t)a[3], total, (int)a[4], (int)a[5]);
    Py_END_ALLOW_THREADS;
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *q4_mm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return mm(args, nargs, FORM_Q4); }
static PyObject *q8_mm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return mm(args, nargs, FORM_Q8); }
static PyObject *q4k_mm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return mm(args, nargs, FORM_Q4K); }
static PyObject *q6k_mm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return mm(args, nargs, FORM_Q6K); }

static PyObject *threads_used(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(last_threads);
}

/* A call's arguments: `want` integers (pointers and sizes) with one float at index `at`; 0, or -1
 * with the Python error set. */
static int ints_and_float(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, Py_ssize_t at, const char *name,
                          int64_t *ints, double *f) {
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s expects %zd arguments, got %zd", name, want, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < want; i++) {
        if (i == at) continue;
        ints[i] = PyLong_AsLongLong(args[i]);
        if (ints[i] == -1 && PyErr_Occurred()) return -1;
    }
    *f = PyFloat_AsDouble(args[at]);
    return *f == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* rms_norm(x, rows, H, w, eps, y): Llama's RMSNorm over bf16 rows x [rows, H] with a bf16 weight
 * w [H], into y [rows, H]; its float order is stated beside its test
 * (test_rms_norm_is_llamas_formula_and_replaces_the_norms_of_a_bf16_model). */
static void rms_rows(const uint16_t *x, int64_t rows, int64_t H, const uint16_t *w, float eps, uint16_t *y) {
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *xr = x + r * H;
        float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 8 <= H; i += 8)
            for (int l = 0; l < 8; l++) {
                const float v = bf16_to_f32(xr[i + l]);
                s[l] = s[l] + v * v;
            }
        for (; i < H; i++) {
            const float v = bf16_to_f32(xr[i]);
            s[0] = s[0] + v * v;
        }
        const float sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
        const float inv = 1.0f / sqrtf(sum / (float)H + eps);
        for (int64_t k = 0; k < H; k++) {
            const float t = bf16_to_f32(f32_to_bf16(bf16_to_f32(xr[k]) * inv));
            y[r * H + k] = f32_to_bf16(bf16_to_f32(w[k]) * t);
        }
    }
}

static PyObject *rms_norm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t a[6];
    double eps;
    if (ints_and_float(args, nargs, 6, 4, "rms_norm", a, &eps) < 0) return NULL;
    if (a[1] < 0 || a[2] <= 0) {
        PyErr_SetString(PyExc_ValueError, "bad shape");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS;
    rms_rows((const uint16_t *)(uintptr_t)a[0], a[1], a[2], (const uint16_t *)(uintptr_t)a[3], (float)eps,
             (uint16_t *)(uintptr_t)a[5]);
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

/* attend(q, H, T, D, k, v, Hkv, L, k_head_stride, v_head_stride, scale, out): one-row attention for
 * each of T query rows, row i over its own causal prefix (the first L - T + i + 1 keys), the call
 * single-token decoding makes for that position. q [H, T, D] and out [H, T, D] bf16, contiguous;
 * k and v bf16 [Hkv, L, D] with rows of D and heads ks / vs elements apart (the cache's buffers);
 * query head h reads kv head h / (H / Hkv). In fp32, in the one fixed order stated beside its test
 * (test_one_row_attention_is_softmax_over_each_rows_own_prefix); one code path on every CPU. */
__attribute__((target("avx2,fma"))) static inline __m256 exp8(__m256 x) { /* Cephes' expf, 8 lanes, x <= 88 */
    const __m256 kept = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_GE_OQ); /* below: 0 (exp < 1.7e-38) */
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm256_sub_ps(x, _mm256_mul_ps(fx, _mm256_set1_ps(0.693359375f)));
    x = _mm256_sub_ps(x, _mm256_mul_ps(fx, _mm256_set1_ps(-2.12194440e-4f)));
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)), kept);
}

__attribute__((target("avx2,fma"))) static inline __m256 bf16x8(const uint16_t *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

#define ATTEND_MAX_D 256
__attribute__((target("avx2,fma"))) static void attend_rows(const uint16_t *q, int64_t H, int64_t T, int64_t D,
                                                            const uint16_t *k, const uint16_t *v, int64_t Hkv,
                                                            int64_t L, int64_t ks, int64_t vs, float scale,
                                                            uint16_t *out, int64_t oh, int64_t ot, float *p,
                                                            int64_t h0, int64_t h1) {
    const int64_t group = H / Hkv, chunks = D / 8;
    for (int64_t h = h0; h < h1; h++) {
        const uint16_t *kh = k + (h / group) * ks, *vh = v + (h / group) * vs;
        for (int64_t i = 0; i < T; i++) {
            const int64_t n = L - T + i + 1, padded = (n + 7) / 8 * 8;
            __m256 qf[ATTEND_MAX_D / 8];
            for (int64_t c = 0; c < chunks; c++) qf[c] = bf16x8(q + (h * T + i) * D + 8 * c);
            float m = -INFINITY;
            for (int64_t j = 0; j < n; j++) {
                const uint16_t *kj = kh + j * D;
                __m256 acc = _mm256_setzero_ps();
                for (int64_t c = 0; c < chunks; c++) acc = _mm256_fmadd_ps(qf[c], bf16x8(kj + 8 * c), acc);
                const float sj = hsum8(acc) * scale;
                p[j] = sj;
                m = sj > m ? sj : m;
            }
            for (int64_t j = n; j < padded; j++) p[j] = -INFINITY;
            const __m256 mv = _mm256_set1_ps(m);
            __m256 lv = _mm256_setzero_ps();
            for (int64_t j = 0; j < padded; j += 8) {
                const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(p + j), mv));
                _mm256_storeu_ps(p + j, e);
                lv = _mm256_add_ps(lv, e);
            }
            const __m256 l = _mm256_set1_ps(hsum8(lv));
            __m256 o[ATTEND_MAX_D / 8];
            for (int64_t c = 0; c < chunks; c++) o[c] = _mm256_setzero_ps();
            for (int64_t j = 0; j < n; j++) {
                const __m256 pj = _mm256_set1_ps(p[j]);
                const uint16_t *vj = vh + j * D;
                for (int64_t c = 0; c < chunks; c++) o[c] = _mm256_fmadd_ps(pj, bf16x8(vj + 8 * c), o[c]);
            }
            uint16_t *dst = out + h * oh + i * ot; /* row i of head h: [H, T, D] or [T, H, D] */
            for (int64_t c = 0; c < chunks; c++) {
                float r[8];
                _mm256_storeu_ps(r, _mm256_div_ps(o[c], l));
                for (int t = 0; t < 8; t++) dst[8 * c + t] = f32_to_bf16(r[t]);
            }
        }
    }
}

static PyObject *attend(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t a[12];
    double scale;
    if (ints_and_float(args, nargs, 12, 10, "attend", a, &scale) < 0) return NULL;
    const int64_t H = a[1], T = a[2], D = a[3], Hkv = a[6], L = a[7];
    if (H <= 0 || T <= 0 || D <= 0 || D % 8 || D > ATTEND_MAX_D || Hkv <= 0 || H % Hkv || L < T) {
        PyErr_Format(PyExc_ValueError, "attend: bad shape H=%lld T=%lld D=%lld Hkv=%lld L=%lld", (long long)H,
                     (long long)T, (long long)D, (long long)Hkv, (long long)L);
        return NULL;
    }
    float *p = (float *)malloc(sizeof(float) * (size_t)(L + 8));
    if (!p) return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS;
    attend_rows((const uint16_t *)(uintptr_t)a[0], H, T, D, (const uint16_t *)(uintptr_t)a[4],
                (const uint16_t *)(uintptr_t)a[5], Hkv, L, a[8], a[9], (float)scale, (uint16_t *)(uintptr_t)a[11], T * D,
                D, p, 0, H);
    Py_END_ALLOW_THREADS;
    free(p);
    Py_RETURN_NONE;
}

/* attend_layer(qkv, T, H, Hkv, D, cos, sin, kbuf, vbuf, ks, vs, start, scale, out, threads): a decoder layer's
 * attention for T new rows in one call: q and k rotated, the rotated k and the v of row t written at
 * position start + t of the cache's buffers (kbuf, vbuf [Hkv, capacity, D], heads ks / vs elements
 * apart), then each row's attention over its own prefix (attend_rows), out [T, H·D] (the o
 * projection's rows). qkv [T, (H + 2·Hkv)·D] bf16 (q | k | v, each head's D values together); cos,
 * sin [T, D] bf16. The rotary's roundings are stated beside its test
 * (test_attend_layer_is_the_rotary_the_cache_write_and_attend). */
static inline uint16_t bf16_mul(uint16_t a, uint16_t b) { return f32_to_bf16(bf16_to_f32(a) * bf16_to_f32(b)); }

static void rope_row(const uint16_t *x, const uint16_t *cos, const uint16_t *sin, int64_t D, uint16_t *out) {
    const int64_t half = D / 2;
    for (int64_t d = 0; d < D; d++) {
        const uint16_t rot = d < half ? (uint16_t)(x[d + half] ^ 0x8000u) : x[d - half]; /* −x: the sign bit */
        const float sum = bf16_to_f32(bf16_mul(x[d], cos[d])) + bf16_to_f32(bf16_mul(rot, sin[d]));
        out[d] = f32_to_bf16(sum);
    }
}

/* The heads of a layer's attention split among the kernels' pool (run) as a linear's columns are:
 * each head computed by attend_rows alone, in its order, with its chunk's own scratch, so the bits
 * do not depend on the split. Below THREAD_WORK (rows x heads x 2 · context · D) one thread does
 * them all: a short context's attention is a few microseconds. */
typedef struct {
    const uint16_t *q, *k, *v;
    int64_t H, T, D, Hkv, L, ks, vs;
    float scale;
    uint16_t *out;
    float *p; /* L + 8 floats a head */
} Attention;

static void attend_cols(const Job *j, const Part *part, uint16_t *y, int64_t h0, int64_t h1) {
    (void)part, (void)y;
    const Attention *a = (const Attention *)j->ctx;
    attend_rows(a->q, a->H, a->T, a->D, a->k, a->v, a->Hkv, a->L, a->ks, a->vs, a->scale, a->out, a->D, a->H * a->D,
                a->p + h0 * (a->L + 8), h0, h1);
}

/* attend_layer's work without the GIL: -1 when its scratch memory cannot be had, else 0. */
static int attend_new_rows(const uint16_t *qkv, int64_t T, int64_t H, int64_t Hkv, int64_t D, const uint16_t *cos,
                           const uint16_t *sin, uint16_t *kbuf, uint16_t *vbuf, int64_t ks, int64_t vs, int64_t start,
                           float scale, uint16_t *out, int threads) {
    const int64_t L = start + T, width = (H + 2 * Hkv) * D;
    uint16_t *q = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)(H * T * D));
    float *p = (float *)malloc(sizeof(float) * (size_t)(H * (L + 8)));
    if (!q || !p) {
        free(q), free(p);
        return -1;
    }
    for (int64_t t = 0; t < T; t++) {
        const uint16_t *row = qkv + t * width, *c = cos + t * D, *sn = sin + t * D;
        for (int64_t h = 0; h < H; h++) rope_row(row + h * D, c, sn, D, q + (h * T + t) * D);
        for (int64_t h = 0; h < Hkv; h++) {
            rope_row(row + (H + h) * D, c, sn, D, kbuf + h * ks + (start + t) * D);
            memcpy(vbuf + h * vs + (start + t) * D, row + (H + Hkv + h) * D, sizeof(uint16_t) * (size_t)D);
        }
    }
    const Attention attention = {q, kbuf, vbuf, H, T, D, Hkv, L, ks, vs, scale, out, p};
    const Part heads = {NULL, NULL, H};
    const Job job = {.M = T, .K = 2 * L * D, .parts = &heads, .nparts = 1, .y = out, .N = H, .ldy = H * D,
                     .fn = attend_cols, .group = 1, .ctx = &attention};
    run(&job, threads);
    free(q), free(p);
    return 0;
}

static PyObject *attend_layer(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t a[15];
    double scale;
    if (ints_and_float(args, nargs, 15, 12, "attend_layer", a, &scale) < 0) return NULL;
    const int64_t T = a[1], H = a[2], Hkv = a[3], D = a[4], ks = a[9], vs = a[10], start = a[11];
    if (T <= 0 || H <= 0 || Hkv <= 0 || H % Hkv || D <= 0 || D % 8 || D > ATTEND_MAX_D || start < 0) {
        PyErr_Format(PyExc_ValueError, "attend_layer: bad shape T=%lld H=%lld Hkv=%lld D=%lld start=%lld",
                     (long long)T, (long long)H, (long long)Hkv, (long long)D, (long long)start);
        return NULL;
    }
    const uint16_t *qkv = (const uint16_t *)(uintptr_t)a[0], *cos = (const uint16_t *)(uintptr_t)a[5],
                   *sin = (const uint16_t *)(uintptr_t)a[6];
    uint16_t *kbuf = (uint16_t *)(uintptr_t)a[7], *vbuf = (uint16_t *)(uintptr_t)a[8], *out = (uint16_t *)(uintptr_t)a[13];
    int failed;
    Py_BEGIN_ALLOW_THREADS;
    failed = attend_new_rows(qkv, T, H, Hkv, D, cos, sin, kbuf, vbuf, ks, vs, start, (float)scale, out, (int)a[14]);
    Py_END_ALLOW_THREADS;
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ SiLU(gate) · up
 *
 * silu_mul(gate_up, T, I, out): out [T, I] = bf16(bf16(silu(gate)) · up) for bf16 rows gate | up
 * [T, 2·I], I a multiple of 8: what the lean pass's ``F.silu(gate).mul_(up)`` computes, op for op.
 * torch's bf16 SiLU is, in fp32, x / (1 + exp(−x)) rounded once to bf16, with exp its vectorized
 * one: a Cody-Waite reduction by ln 2 in two parts, a degree-6 polynomial in fused multiply-adds
 * and a scale by 2^q in two halves (exp_lanes, the same steps in the same order); the product
 * with up is one fp32 multiply rounded to bf16. Nothing here is assumed to hold on every build of
 * torch: ``calls.silu_mul_is_torchs`` compares it with torch's own SiLU on all 65,536 bf16 values
 * at run time, and the lean pass takes it only where they agree bit for bit (NaN for NaN). */
__attribute__((target("avx2,fma"))) static inline __m256 exp_lanes(__m256 d) {
    const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(d, _mm256_set1_ps(1.442695040888963407359924681001892137426645954152985934135449406931f)));
    const __m256 qf = _mm256_cvtepi32_ps(q); /* d / ln 2 to the nearest integer, ties to even */
    __m256 s = _mm256_fmadd_ps(qf, _mm256_set1_ps(-0.693145751953125f), d);
    s = _mm256_fmadd_ps(qf, _mm256_set1_ps(-1.428606765330187045e-06f), s);
    __m256 u = _mm256_set1_ps(0.000198527617612853646278381f);
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00139304355252534151077271f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00833336077630519866943359f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.0416664853692054748535156f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.166666671633720397949219f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.5f));
    u = _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_mul_ps(s, s), u, s));
    const __m256i half = _mm256_srai_epi32(q, 1), bias = _mm256_set1_epi32(127); /* 2^q as 2^half · 2^(q − half) */
    u = _mm256_mul_ps(u, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23)));
    u = _mm256_mul_ps(u, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(q, half), bias), 23)));
    u = _mm256_andnot_ps(_mm256_cmp_ps(d, _mm256_set1_ps(-104.0f), _CMP_LT_OQ), u); /* underflow: 0 */
    return _mm256_blendv_ps(u, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(_mm256_set1_ps(100.0f), d, _CMP_LT_OQ));
}

__attribute__((target("avx2,fma"))) static inline __m256 bf16_lanes(const uint16_t *x) { /* 8 bf16 → fp32 */
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)x)), 16));
}

/* f32_to_bf16 of 8 lanes, each in the low 16 bits of its 32 */
__attribute__((target("avx2,fma"))) static inline __m256i bf16_bits(__m256 f) {
    const __m256i bits = _mm256_castps_si256(f), high = _mm256_srli_epi32(bits, 16);
    const __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q)));
}

__attribute__((target("avx2,fma"))) static void silu_mul_rows(const uint16_t *gate_up, int64_t T, int64_t I, uint16_t *out) {
    for (int64_t t = 0; t < T; t++) {
        const uint16_t *g = gate_up + t * 2 * I, *u = g + I;
        uint16_t *o = out + t * I;
        for (int64_t i = 0; i < I; i += 8) {
            const __m256 x = bf16_lanes(g + i);
            const __m256 e = exp_lanes(_mm256_sub_ps(_mm256_setzero_ps(), x));
            const __m256i silu = bf16_bits(_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e)));
            const __m256i y = bf16_bits(_mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(silu, 16)), bf16_lanes(u + i)));
            _mm_storeu_si128((__m128i *)(o + i), _mm_packus_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1)));
        }
    }
}

static PyObject *silu_mul(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t a[4];
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "silu_mul expects 4 arguments, got %zd", nargs);
        return NULL;
    }
    if (args_i64(args, nargs, a) < 0) return NULL;
    if (!a[0] || !a[3] || a[1] <= 0 || a[2] <= 0 || a[2] % 8) {
        PyErr_SetString(PyExc_ValueError, "silu_mul: bad call");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS;
    silu_mul_rows((const uint16_t *)(uintptr_t)a[0], a[1], a[2], (uint16_t *)(uintptr_t)a[3]);
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ a row of logits, read once
 *
 * row_stats(x, R, V, bf16, sums, ids, vals): per row r of logits x [R, V] (bf16 when bf16, else
 * fp32), the greedy token ids[r]: the highest value, the lowest id among ties (torch.argmax's rule,
 * which sampling.greedy_token states for every greedy decision); and, with sums, vals[3r..3r+2] =
 * the highest value, the second highest as torch.topk(row, 2) gives it (the highest again where it
 * occurs twice), and S = Σ exp(v − highest) over the row (exp_lanes, eight lanes summed along the
 * row in order, then the lanes in order): p(v) = exp(v − highest) / S, the row's softmax. What the
 * decoding loop read from a row with torch (an fp32 copy, argmax, topk, softmax) took ~0.65 ms a
 * row of 151,936 logits and ~4 ms for 4 rows on the Xeon (a fresh [R, V] fp32 tensor each time);
 * this reads each row twice and allocates nothing. A row holding a NaN gets id −1 and the caller
 * asks torch (whose argmax takes the first NaN). */
__attribute__((target("avx2,fma"))) static inline __m256 logit_lanes(const void *x, int bf16, int64_t i) {
    return bf16 ? bf16_lanes((const uint16_t *)x + i) : _mm256_loadu_ps((const float *)x + i);
}

__attribute__((target("avx2,fma"))) static float hmax8(__m256 v) {
    float lanes[8], m;
    _mm256_storeu_ps(lanes, v);
    m = lanes[0];
    for (int i = 1; i < 8; i++) m = lanes[i] > m ? lanes[i] : m;
    return m;
}

__attribute__((target("avx2,fma"))) static void row_stats_rows(const void *x, int64_t R, int64_t V, int bf16, int sums,
                                                               int64_t *ids, float *vals) {
    const int64_t whole = V / 8 * 8;
    for (int64_t r = 0; r < R; r++) {
        const void *row = bf16 ? (const void *)((const uint16_t *)x + r * V) : (const void *)((const float *)x + r * V);
        float tail[8]; /* the last V % 8 values, the rest -inf (never the highest, exp 0) */
        for (int i = 0; i < 8; i++) {
            const int64_t at = whole + i;
            if (at < V) {
                if (bf16) {
                    const uint32_t bits = (uint32_t)((const uint16_t *)row)[at] << 16;
                    memcpy(&tail[i], &bits, 4);
                } else {
                    tail[i] = ((const float *)row)[at];
                }
            } else {
                tail[i] = -INFINITY;
            }
        }
        const __m256 last = _mm256_loadu_ps(tail);
        __m256 top = last, nan = _mm256_cmp_ps(last, last, _CMP_UNORD_Q);
        for (int64_t i = 0; i < whole; i += 8) {
            const __m256 v = logit_lanes(row, bf16, i);
            top = _mm256_max_ps(top, v);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        }
        if (_mm256_movemask_ps(nan)) {
            ids[r] = -1;
            continue;
        }
        const float high = hmax8(top);
        const __m256 h = _mm256_set1_ps(high);
        int64_t first = -1, count = 0;
        __m256 second = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps();
        for (int64_t i = 0; i <= whole; i += 8) {
            const __m256 v = i < whole ? logit_lanes(row, bf16, i) : last;
            const __m256 is_high = _mm256_cmp_ps(v, h, _CMP_EQ_OQ);
            const int eq = _mm256_movemask_ps(is_high);
            if (eq) {
                if (first < 0) first = i + __builtin_ctz((unsigned)eq);
                count += __builtin_popcount((unsigned)eq);
                if (!sums) break;
            }
            if (sums) {
                second = _mm256_max_ps(second, _mm256_blendv_ps(v, _mm256_set1_ps(-INFINITY), is_high));
                sum = _mm256_add_ps(sum, exp_lanes(_mm256_sub_ps(v, h)));
            }
        }
        ids[r] = first;
        if (sums) {
            float lanes[8], s = 0.0f;
            _mm256_storeu_ps(lanes, sum);
            for (int i = 0; i < 8; i++) s += lanes[i];
            vals[3 * r] = high;
            vals[3 * r + 1] = count > 1 ? high : hmax8(second);
            vals[3 * r + 2] = s;
        }
    }
}

static PyObject *row_stats(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t a[7];
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "row_stats expects 7 arguments, got %zd", nargs);
        return NULL;
    }
    if (args_i64(args, nargs, a) < 0) return NULL;
    if (!a[0] || a[1] <= 0 || a[2] <= 0 || !a[5] || (a[4] && !a[6])) {
        PyErr_SetString(PyExc_ValueError, "row_stats: bad call");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS;
    row_stats_rows((const void *)(uintptr_t)a[0], a[1], a[2], (int)a[3], (int)a[4], (int64_t *)(uintptr_t)a[5],
                   (float *)(uintptr_t)a[6]);
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

/* decoder_layer(eps_in, eps_post, scale, h, T, W, in_w, post_w, cos, sin, kbuf, vbuf, ks, vs, path,
 * start, H, Hkv, D, bias, gate_up, threads, then the forms of q | k | v, of its rest, of o, gate | up
 * and down, then their part counts, then (w, s, N) for each of those parts in that order): a
 * decoder layer in one call, each step the very call the lean pass makes one at a time (the same
 * bits):
 *   x = rms_norm(h, in_w); qkv = x · [q | k | v] (+ bias, [(H + 2·Hkv)·D] bf16, when not 0); attend_layer;
 *   h += attended · o (in place, bf16); x = rms_norm(h, post_w); gate_up = x · [gate | up];
 * then, with down's parts (n_down > 0): m = silu_mul(gate_up); h += m · down (in place, bf16).
 * q | k | v may be two calls of two forms (a Q4_K_M file's Q4_K q and k beside a Q6_K v): the
 * first's columns, then the rest's (n_rest > 0), each written into its columns of the qkv rows.
 * With n_down = 0 the call stops at gate_up, for the caller's own activation.
 * h [T, W] bf16 (the residual stream), gate_up [T, Ng] bf16; the cache's buffers as attend_layer's.
 * s is 0 for every form but int8's row scales. */
enum { BLOCK_FLOATS = 3, BLOCK_INTS = 29, BLOCK_LINEARS = 5, MAX_BLOCK_PARTS = BLOCK_LINEARS * MAX_PARTS };
enum { QKV, QKV_REST, O, GATE_UP, DOWN }; /* a layer's linears, in the order of their forms, counts and parts */

/* the residual add the lean pass makes with torch's bf16 add_: h += y, each sum in fp32 rounded to bf16 */
static void add_rows(uint16_t *h, const uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) h[i] = f32_to_bf16(bf16_to_f32(h[i]) + bf16_to_f32(y[i]));
}

static int block_parts(const int64_t *a, int n, int form, Part *parts, int64_t *total) {
    *total = 0;
    for (int i = 0; i < n; i++) {
        parts[i] = (Part){(const uint8_t *)(uintptr_t)a[3 * i], (const float *)(uintptr_t)a[3 * i + 1], a[3 * i + 2]};
        if (parts[i].N <= 0 || !parts[i].w || (form == FORM_Q8) != (parts[i].s != NULL)) return -1;
        *total += parts[i].N;
    }
    return 0;
}

static PyObject *decoder_layer(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    double f[BLOCK_FLOATS];
    int64_t a[BLOCK_INTS + 3 * MAX_BLOCK_PARTS];
    if (nargs < BLOCK_FLOATS + BLOCK_INTS) {
        PyErr_Format(PyExc_TypeError, "decoder_layer expects at least %d arguments, got %zd",
                     BLOCK_FLOATS + BLOCK_INTS, nargs);
        return NULL;
    }
    for (int i = 0; i < BLOCK_FLOATS; i++) {
        f[i] = PyFloat_AsDouble(args[i]);
        if (f[i] == -1.0 && PyErr_Occurred()) return NULL;
    }
    if (args_i64(args + BLOCK_FLOATS, BLOCK_INTS, a) < 0) return NULL;
    const int64_t *forms = a + 19, *n = a + 19 + BLOCK_LINEARS;
    int64_t parts_args = 0;
    for (int i = 0; i < BLOCK_LINEARS; i++) {
        const int optional = (i == QKV_REST || i == DOWN) && n[i] == 0; /* one q | k | v call; no down */
        if (!optional && (n[i] < 1 || n[i] > MAX_PARTS || forms[i] < FORM_Q8 || forms[i] > FORM_Q6K)) {
            PyErr_SetString(PyExc_ValueError, "decoder_layer: bad forms or part counts");
            return NULL;
        }
        parts_args += 3 * n[i];
    }
    if (nargs != BLOCK_FLOATS + BLOCK_INTS + parts_args) {
        PyErr_Format(PyExc_TypeError, "decoder_layer expects %lld arguments for its parts, got %zd",
                     (long long)(BLOCK_FLOATS + BLOCK_INTS + parts_args), nargs);
        return NULL;
    }
    if (args_i64(args + BLOCK_FLOATS + BLOCK_INTS, nargs - BLOCK_FLOATS - BLOCK_INTS, a + BLOCK_INTS) < 0) return NULL;
    const int64_t T = a[1], W = a[2], start = a[12], H = a[13], Hkv = a[14], D = a[15];
    if (T <= 0 || W <= 0 || W % QK || H <= 0 || Hkv <= 0 || H % Hkv || D <= 0 || D % 8 || D > ATTEND_MAX_D ||
        (H * D) % QK || start < 0) {
        PyErr_SetString(PyExc_ValueError, "decoder_layer: bad shape");
        return NULL;
    }
    Part parts[BLOCK_LINEARS][MAX_PARTS];
    int64_t cols[BLOCK_LINEARS];
    const int64_t *p = a + BLOCK_INTS;
    int bad = 0;
    for (int i = 0; i < BLOCK_LINEARS; p += 3 * n[i], i++)
        bad |= block_parts(p, (int)n[i], (int)forms[i], parts[i], &cols[i]);
    const int64_t qkv_n = cols[QKV] + cols[QKV_REST];
    if (bad || qkv_n != (H + 2 * Hkv) * D || cols[O] != W) {
        PyErr_SetString(PyExc_ValueError, "decoder_layer: bad weights");
        return NULL;
    }
    const int64_t gu_n = cols[GATE_UP], I = gu_n / 2; /* down's inputs: gate's columns, up's as many */
    if (n[DOWN] && (gu_n % 2 || I % QK || cols[DOWN] != W)) {
        PyErr_SetString(PyExc_ValueError, "decoder_layer: down does not take gate | up's halves to the width");
        return NULL;
    }
    uint16_t *h = (uint16_t *)(uintptr_t)a[0];
    const uint16_t *in_w = (const uint16_t *)(uintptr_t)a[3], *post_w = (const uint16_t *)(uintptr_t)a[4],
                   *cos = (const uint16_t *)(uintptr_t)a[5], *sin = (const uint16_t *)(uintptr_t)a[6],
                   *bias = (const uint16_t *)(uintptr_t)a[16];
    uint16_t *kbuf = (uint16_t *)(uintptr_t)a[7], *vbuf = (uint16_t *)(uintptr_t)a[8],
             *gate_up = (uint16_t *)(uintptr_t)a[17];
    const int threads = (int)a[18], path = (int)a[11] < 0 ? 0 : (int)a[11] > 2 ? 2 : (int)a[11];
    const int64_t HD = H * D;
    /* x [T, W], qkv [T, (H + 2 Hkv) D], attended [T, H D], o [T, W] (o's rows, then down's), m [T, I] */
    uint16_t *x = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)(T * (2 * W + qkv_n + HD + (n[DOWN] ? I : 0))));
    if (!x) return PyErr_NoMemory();
    uint16_t *qkv = x + T * W, *attended = qkv + T * qkv_n, *o = attended + T * HD, *m = o + T * W;
    int failed;
    Py_BEGIN_ALLOW_THREADS;
    rms_rows(h, T, W, in_w, (float)f[0], x);
    failed = linear_rows((int)forms[QKV], x, T, W, parts[QKV], (int)n[QKV], cols[QKV], qkv, qkv_n, threads, path);
    if (!failed && n[QKV_REST])
        failed = linear_rows((int)forms[QKV_REST], x, T, W, parts[QKV_REST], (int)n[QKV_REST], cols[QKV_REST],
                             qkv + cols[QKV], qkv_n, threads, path);
    if (!failed && bias)
        for (int64_t t = 0; t < T; t++)
            for (int64_t j = 0; j < qkv_n; j++)
                qkv[t * qkv_n + j] = f32_to_bf16(bf16_to_f32(qkv[t * qkv_n + j]) + bf16_to_f32(bias[j]));
    if (!failed)
        failed = attend_new_rows(qkv, T, H, Hkv, D, cos, sin, kbuf, vbuf, a[9], a[10], start, (float)f[2], attended,
                                 threads);
    if (!failed) failed = linear_rows((int)forms[O], attended, T, HD, parts[O], (int)n[O], W, o, W, threads, path);
    if (!failed) {
        add_rows(h, o, T * W);
        rms_rows(h, T, W, post_w, (float)f[1], x);
        failed = linear_rows((int)forms[GATE_UP], x, T, W, parts[GATE_UP], (int)n[GATE_UP], gu_n, gate_up, gu_n,
                             threads, path);
    }
    if (!failed && n[DOWN]) {
        silu_mul_rows(gate_up, T, I, m);
        failed = linear_rows((int)forms[DOWN], m, T, I, parts[DOWN], (int)n[DOWN], W, o, W, threads, path);
        if (!failed) add_rows(h, o, T * W);
    }
    Py_END_ALLOW_THREADS;
    free(x);
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *cpu(PyObject *self, PyObject *unused) { /* which paths this CPU runs */
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int vnni = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"); /* BW: q4k_tile_wide */
    return Py_BuildValue("(iii)", avx2, vnni, vnni && amx_usable());
}

static PyMethodDef methods[] = {
    {"q4_mm", (PyCFunction)(void (*)(void))q4_mm, METH_FASTCALL, "int4 weights over one K x bf16 rows, side by side"},
    {"q8_mm", (PyCFunction)(void (*)(void))q8_mm, METH_FASTCALL, "int8 weights over one K x bf16 rows, side by side"},
    {"q4k_mm", (PyCFunction)(void (*)(void))q4k_mm, METH_FASTCALL, "Q4_K weights over one K x bf16 rows, side by side"},
    {"q6k_mm", (PyCFunction)(void (*)(void))q6k_mm, METH_FASTCALL, "Q6_K weights over one K x bf16 rows, side by side"},
    {"attend", (PyCFunction)(void (*)(void))attend, METH_FASTCALL, "one-row attention, each row over its own prefix"},
    {"attend_layer", (PyCFunction)(void (*)(void))attend_layer, METH_FASTCALL, "a layer's rotary, cache write and attention"},
    {"rms_norm", (PyCFunction)(void (*)(void))rms_norm, METH_FASTCALL, "Llama's RMSNorm over bf16 rows"},
    {"decoder_layer", (PyCFunction)(void (*)(void))decoder_layer, METH_FASTCALL,
     "a decoder layer in one call: norm, q | k | v, attention, o, residual, norm, gate | up (then SiLU · up, down, residual)"},
    {"silu_mul", (PyCFunction)(void (*)(void))silu_mul, METH_FASTCALL, "bf16(bf16(silu(gate)) · up) over gate | up rows"},
    {"row_stats", (PyCFunction)(void (*)(void))row_stats, METH_FASTCALL, "per row of logits: the greedy token, the top two values, the softmax's sum"},
    {"cpu", cpu, METH_NOARGS, "(avx2, vnni, amx): the paths this CPU runs"},
    {"threads_used", threads_used, METH_NOARGS, "threads that computed columns of this thread's last q4_mm / q8_mm"},
    {NULL, NULL, 0, NULL},
};

static void register_fork_handler(void) { pthread_atfork(NULL, NULL, pool_after_fork); }

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_q8mm", NULL, -1, methods};

PyMODINIT_FUNC PyInit__q8mm(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handler);
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddIntConstant(m, "QK", QK) || PyModule_AddIntConstant(m, "MAX_PARTS", MAX_PARTS) ||
              PyModule_AddIntConstant(m, "QKK", QKK) || PyModule_AddIntConstant(m, "Q4K_SB_BYTES", Q4K_SB_BYTES) ||
              PyModule_AddIntConstant(m, "Q6K_SB_BYTES", Q6K_SB_BYTES) ||
              PyModule_AddIntConstant(m, "ATTEND_MAX_D", ATTEND_MAX_D) ||
              PyModule_AddIntConstant(m, "THREAD_WORK", THREAD_WORK) ||
              PyModule_AddIntConstant(m, "AMX_ROWS", AMX_ROWS) ||
              PyModule_AddIntConstant(m, "MAX_THREADS", MAX_THREADS) ||
              PyModule_AddIntConstant(m, "FORM_Q8", FORM_Q8) || PyModule_AddIntConstant(m, "FORM_Q4", FORM_Q4) ||
              PyModule_AddIntConstant(m, "FORM_Q4K", FORM_Q4K) || PyModule_AddIntConstant(m, "FORM_Q6K", FORM_Q6K))) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
