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
 *
 * (I_g: the block's integer dot product, S_g: the sum of its quantized x.)
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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define QK 32
/* an int4 row: its K / 2 bytes of nibbles, then d [G] and mn [G] in fp32 (G = K / 32): one stream */
#define Q4_ROW_BYTES(K) ((K) / 2 + 8 * ((K) / QK))

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

/* x [M, K] bf16 → q [M, K] int8, dx [M, G], xs [M, G] = dx · (sum of the block's q) */
static void quantize_rows(const uint16_t *x, int64_t M, int64_t K, int8_t *q, float *dx, float *xs) {
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
            float t = nearbyintf(v[j] * id);
            t = t > 127.0f ? 127.0f : (t < -127.0f ? -127.0f : t);
            q[r * QK + j] = (int8_t)t;
            sum += (int)t;
        }
        dx[r] = d;
        xs[r] = d * (float)sum;
    }
}

__attribute__((target("avx2,fma"))) static inline float hsum8(__m256 v) { /* one fixed order */
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

typedef struct {
    const int8_t *xq;
    const float *dx, *xs;
    int64_t M, K;
    const uint8_t *w; /* int4 rows [N, Q4_ROW_BYTES(K)] or int8 [N, K] */
    const float *d;   /* int8: the row scales s [N]; int4: unused (in the rows) */
    int64_t n0, n1;
    uint16_t *y; /* [M, N] */
    int64_t N;
} Job;

/* Each output's float arithmetic, on every path: two 8-lane accumulators, E over the even blocks
 * and O over the odd ones (a lone last block goes to E), lane l of a block holding the integer sum
 * of its bytes 4l..4l+3; acc += float(lane) * (weight scale * dx); then hsum8(E + O) (int4:
 * hsum8((E + O) + M), M the zero term's 8 lanes, min_lanes). Both paths use 8-lane registers;
 * only the instruction that makes a block's integers differs. */

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

/* A tile of COLS output columns over ROWS rows (both constants in each expansion, so the
 * accumulators stay in registers): the columns' weights are unpacked once for those rows, and the
 * ROWS x COLS accumulator chains are independent, so their latencies overlap. Every output is
 * still computed by the same sequence of operations, whatever tile it falls in. Every loop over
 * ROWS or COLS is unrolled (the pragmas): with one loop left rolled, GCC kept the accumulator
 * arrays in memory and stored four of them to the stack on every pass of the inner loop (one
 * 256-bit store a cycle on Zen 4), which made a second row cost ~0.5 of the first; unrolled,
 * the 135M model's linears went 11.5 / 16.9 / 24.4 -> 9.0 / 12.1 / 14.8 ms at 1 / 2 / 4 rows. */
#define MR 8
#define MC 4
#define DEFINE_COLUMN(SUFFIX, TARGET, DOT)                                                                          \
    __attribute__((target(TARGET), always_inline)) static inline void q4_tile_##SUFFIX(                           \
        const Job *j, int64_t n, int64_t m0, const int ROWS, const int COLS) {                                    \
        const int64_t G = j->K / QK, P = G / 2, rowb = Q4_ROW_BYTES(j->K);                                         \
        const __m256i low = _mm256_set1_epi8(0x0f);                                                                 \
        __m256 e[MR][MC], o[MR][MC];                                                                                \
        const int8_t *xr[MR];                                                                                       \
        const float *dr[MR];                                                                                        \
        const uint8_t *wc[MC];                                                                                      \
        const float *dc[MC];                                                                                        \
        _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) wc[c] = j->w + (n + c) * rowb, dc[c] = (const float *)(wc[c] + j->K / 2); \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                    \
            xr[r] = j->xq + (m0 + r) * j->K, dr[r] = j->dx + (m0 + r) * G;                                          \
            _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) e[r][c] = _mm256_setzero_ps(), o[r][c] = _mm256_setzero_ps(); \
        }                                                                                                           \
        for (int64_t p = 0; p < P; p++) {                                                                           \
            __m256i we[MC], wo[MC];                                                                                 \
            __m256 se[MC], so[MC];                                                                                  \
            _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) {                                                \
                const __m256i raw = _mm256_loadu_si256((const __m256i *)(wc[c] + p * 32));                          \
                we[c] = _mm256_and_si256(raw, low), wo[c] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);       \
                se[c] = _mm256_broadcast_ss(dc[c] + 2 * p), so[c] = _mm256_broadcast_ss(dc[c] + 2 * p + 1);         \
            }                                                                                                       \
            _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                \
                const __m256i xe = _mm256_loadu_si256((const __m256i *)(xr[r] + p * 64));                           \
                const __m256i xo = _mm256_loadu_si256((const __m256i *)(xr[r] + p * 64 + 32));                      \
                const __m256 de = _mm256_broadcast_ss(dr[r] + 2 * p), dd = _mm256_broadcast_ss(dr[r] + 2 * p + 1);  \
                _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) {                                            \
                    e[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(we[c], xe)), _mm256_mul_ps(se[c], de), e[r][c]); \
                    o[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(wo[c], xo)), _mm256_mul_ps(so[c], dd), o[r][c]); \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                    \
            const int64_t m = m0 + r;                                                                               \
            _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) {                                                \
                const int64_t row = n + c;                                                                          \
                __m256 acc = e[r][c];                                                                               \
                if (G % 2) acc = q4_tail_##SUFFIX(wc[c] + P * 32, xr[r] + P * 64, dc[c][G - 1] * dr[r][G - 1], acc); \
                const float t = hsum8(_mm256_add_ps(_mm256_add_ps(acc, o[r][c]), min_lanes(dc[c] + G, j->xs + m * G, G))); \
                j->y[m * j->N + row] = f32_to_bf16(t);                                                              \
            }                                                                                                       \
        }                                                                                                           \
    }                                                                                                               \
    __attribute__((target(TARGET), always_inline)) static inline void q8_tile_##SUFFIX(                           \
        const Job *j, int64_t n, int64_t m0, const int ROWS, const int COLS) {                                    \
        const int64_t G = j->K / QK;                                                                                \
        __m256 e[MR][MC], o[MR][MC];                                                                                \
        const int8_t *xr[MR];                                                                                       \
        const float *dr[MR];                                                                                        \
        const int8_t *wc[MC];                                                                                       \
        _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) wc[c] = (const int8_t *)j->w + (n + c) * j->K;       \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                    \
            xr[r] = j->xq + (m0 + r) * j->K, dr[r] = j->dx + (m0 + r) * G;                                          \
            _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) e[r][c] = _mm256_setzero_ps(), o[r][c] = _mm256_setzero_ps(); \
        }                                                                                                           \
        int64_t g = 0;                                                                                              \
        for (; g + 2 <= G; g += 2) {                                                                                \
            __m256i we[MC], wo[MC], ae[MC], ao[MC];                                                                 \
            _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) {                                                \
                we[c] = _mm256_loadu_si256((const __m256i *)(wc[c] + g * QK));                                      \
                wo[c] = _mm256_loadu_si256((const __m256i *)(wc[c] + g * QK + QK));                                 \
                ae[c] = _mm256_sign_epi8(we[c], we[c]), ao[c] = _mm256_sign_epi8(wo[c], wo[c]);                     \
            }                                                                                                       \
            _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                \
                const __m256i xe = _mm256_loadu_si256((const __m256i *)(xr[r] + g * QK));                           \
                const __m256i xo = _mm256_loadu_si256((const __m256i *)(xr[r] + g * QK + QK));                      \
                const __m256 de = _mm256_broadcast_ss(dr[r] + g), dd = _mm256_broadcast_ss(dr[r] + g + 1);          \
                _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) {                                            \
                    e[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(ae[c], _mm256_sign_epi8(xe, we[c]))), de, e[r][c]); \
                    o[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DOT(ao[c], _mm256_sign_epi8(xo, wo[c]))), dd, o[r][c]); \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < ROWS; r++) {                                                    \
            const int64_t m = m0 + r;                                                                               \
            _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++) {                                                \
                __m256 acc = e[r][c];                                                                               \
                if (g < G) acc = q8_block_##SUFFIX(wc[c] + g * QK, xr[r] + g * QK, dr[r][g], acc);                  \
                j->y[m * j->N + n + c] = f32_to_bf16(hsum8(_mm256_add_ps(acc, o[r][c])) * j->d[n + c]);            \
            }                                                                                                       \
        }                                                                                                           \
    }

DEFINE_COLUMN(avx2, "avx2,fma", DOT_AVX2)
DEFINE_COLUMN(vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", DOT_VNNI)

/* One column at a time, its rows in tiles of MAXR (8 under AVX-512's 32 vector registers, 4 under
 * AVX2's 16) and one tile for the rest: each tile unpacks the column's weights once, and that
 * costs about half of a one-row pass even from L1 (tiles of 4, 2, 1 made 3 rows cost 1.60 one-row
 * steps and 2 rows 1.13). Interleaving several columns read from memory was up to 2x slower for
 * int4 (AMD EPYC; 20 % faster from L2 only) and 3x slower for SmolLM2's 49,152 x 576 int8 head. */
#define TILE_REST(KIND, SUFFIX, MAXR, j, n, m, rest)                                          \
    do {                                                                                      \
        if (MAXR > 7 && (rest) == 7) KIND##_tile_##SUFFIX(j, n, m, 7 % MAXR, 1);              \
        else if (MAXR > 6 && (rest) == 6) KIND##_tile_##SUFFIX(j, n, m, 6 % MAXR, 1);         \
        else if (MAXR > 5 && (rest) == 5) KIND##_tile_##SUFFIX(j, n, m, 5 % MAXR, 1);         \
        else if (MAXR > 4 && (rest) == 4) KIND##_tile_##SUFFIX(j, n, m, 4 % MAXR, 1);         \
        else if ((rest) == 3) KIND##_tile_##SUFFIX(j, n, m, 3, 1);                            \
        else if ((rest) == 2) KIND##_tile_##SUFFIX(j, n, m, 2, 1);                            \
        else if ((rest) == 1) KIND##_tile_##SUFFIX(j, n, m, 1, 1);                            \
    } while (0)
#define DEFINE_COLS(KIND, SUFFIX, TARGET, MAXR)                                                                     \
    __attribute__((target(TARGET))) static void KIND##_cols_##SUFFIX(const Job *j, int64_t n, int cols) {          \
        for (int c = 0; c < cols; c++) {                                                                            \
            int64_t m = 0;                                                                                          \
            for (; m + MAXR <= j->M; m += MAXR) KIND##_tile_##SUFFIX(j, n + c, m, MAXR, 1);                         \
            TILE_REST(KIND, SUFFIX, MAXR, j, n + c, m, j->M - m);                                                   \
        }                                                                                                           \
    }

DEFINE_COLS(q4, avx2, "avx2,fma", 4)
DEFINE_COLS(q4, vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", 8)
DEFINE_COLS(q8, avx2, "avx2,fma", 4)
DEFINE_COLS(q8, vnni, "avx2,fma,avx512f,avx512vl,avx512vnni", 8)

typedef void (*ColsFn)(const Job *, int64_t, int);
typedef struct {
    Job job;
    ColsFn fn;
} Task;

static void run_task(const Task *t) {
    int64_t n = t->job.n0;
    for (; n + MC <= t->job.n1; n += MC) t->fn(&t->job, n, MC);
    for (; n < t->job.n1; n++) t->fn(&t->job, n, 1);
}

static void *thread_main(void *arg) {
    run_task((const Task *)arg);
    return NULL;
}

#define MAX_THREADS 64
#define THREAD_WORK (1 << 22) /* multiply-adds below which one thread does the whole call */

static void run(Job job, ColsFn fn, int threads) { /* the columns [job.n0, job.n1) */
    const int64_t cols = job.n1 - job.n0;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads < 2 || job.M * cols * job.K < THREAD_WORK) {
        Task t = {job, fn};
        run_task(&t);
        return;
    }
    Task tasks[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    const int64_t per = ((cols / threads + MC - 1) / MC) * MC;
    for (int i = 0; i < threads; i++) {
        tasks[i].job = job, tasks[i].fn = fn;
        tasks[i].job.n0 = job.n0 + (i * per < cols ? i * per : cols);
        tasks[i].job.n1 = job.n0 + ((i + 1) * per < cols && i + 1 < threads ? (i + 1) * per : cols);
    }
    for (int i = 1; i < threads; i++) started[i] = pthread_create(&ids[i], NULL, thread_main, &tasks[i]) == 0;
    run_task(&tasks[0]);
    for (int i = 1; i < threads; i++) {
        if (started[i]) pthread_join(ids[i], NULL);
        else run_task(&tasks[i]); /* no thread to be had: this one does it */
    }
}

/* Python: q4_mm(x, M, K, rows, 0, 0, N, y, threads, vnni) and q8_mm(x, M, K, w, s, 0, N, y, threads,
 * vnni), the pointers as integers; and q4_mm_cat / q8_mm_cat(x, M, K, y, threads, vnni, then w, s, N
 * for each of up to MAX_PARTS weights over the same K): the rows quantized once and the parts'
 * outputs side by side in y [M, N0 + N1 + ...] (q | k | v, gate | up). Every output is computed
 * as in its own call, so a part's columns are bit-identical to that part's q4_mm / q8_mm. */
static int args_i64(PyObject *const *args, Py_ssize_t nargs, int64_t *out) {
    for (Py_ssize_t i = 0; i < nargs; i++) {
        out[i] = PyLong_AsLongLong(args[i]);
        if (out[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

#define MAX_PARTS 8
typedef struct {
    const uint8_t *w;
    const float *s;
    int64_t N;
} Part;

static PyObject *mm_parts(int64_t xp, int64_t M, int64_t K, int64_t yp, int threads, int vnni, int int4,
                          const Part *parts, int nparts) {
    int64_t total = 0;
    for (int i = 0; i < nparts; i++) {
        if (parts[i].N <= 0) {
            PyErr_Format(PyExc_ValueError, "bad shape N=%lld", (long long)parts[i].N);
            return NULL;
        }
        total += parts[i].N;
    }
    if (M <= 0 || K <= 0 || K % QK) {
        PyErr_Format(PyExc_ValueError, "bad shape M=%lld K=%lld", (long long)M, (long long)K);
        return NULL;
    }
    const int64_t G = K / QK;
    int8_t *xq = (int8_t *)malloc((size_t)(M * K) + 2 * sizeof(float) * (size_t)(M * G) + 64);
    if (!xq) return PyErr_NoMemory();
    float *dx = (float *)(((uintptr_t)(xq + M * K) + 63) & ~(uintptr_t)63);
    float *xs = dx + M * G;
    Py_BEGIN_ALLOW_THREADS;
    quantize_rows((const uint16_t *)(uintptr_t)xp, M, K, xq, dx, xs);
    ColsFn fn = int4 ? (vnni ? q4_cols_vnni : q4_cols_avx2) : (vnni ? q8_cols_vnni : q8_cols_avx2);
    uint16_t *y = (uint16_t *)(uintptr_t)yp;
    for (int i = 0; i < nparts; i++) {
        Job job = {xq, dx, xs, M, K, parts[i].w, parts[i].s, 0, parts[i].N, y, total};
        run(job, fn, threads);
        y += parts[i].N; /* the next part's first column */
    }
    Py_END_ALLOW_THREADS;
    free(xq);
    Py_RETURN_NONE;
}

static PyObject *mm(PyObject *const *args, Py_ssize_t nargs, int int4) {
    int64_t a[10];
    if (nargs != 10) {
        PyErr_Format(PyExc_TypeError, "expected 10 arguments, got %zd", nargs);
        return NULL;
    }
    if (args_i64(args, nargs, a) < 0) return NULL;
    const Part part = {(const uint8_t *)(uintptr_t)a[3], (const float *)(uintptr_t)a[4], a[6]};
    return mm_parts(a[0], a[1], a[2], a[7], (int)a[8], (int)a[9], int4, &part, 1);
}

static PyObject *mm_cat(PyObject *const *args, Py_ssize_t nargs, int int4) {
    int64_t a[6 + 3 * MAX_PARTS];
    if (nargs < 9 || nargs > 6 + 3 * MAX_PARTS || (nargs - 6) % 3) {
        PyErr_Format(PyExc_TypeError, "expected 6 arguments and 1 to %d (w, s, N) parts, got %zd arguments",
                     MAX_PARTS, nargs);
        return NULL;
    }
    if (args_i64(args, nargs, a) < 0) return NULL;
    Part parts[MAX_PARTS];
    const int nparts = (int)((nargs - 6) / 3);
    for (int i = 0; i < nparts; i++)
        parts[i] = (Part){(const uint8_t *)(uintptr_t)a[6 + 3 * i], (const float *)(uintptr_t)a[7 + 3 * i], a[8 + 3 * i]};
    return mm_parts(a[0], a[1], a[2], a[3], (int)a[4], (int)a[5], int4, parts, nparts);
}

static PyObject *q4_mm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return mm(args, nargs, 1); }
static PyObject *q8_mm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return mm(args, nargs, 0); }
static PyObject *q4_mm_cat(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return mm_cat(args, nargs, 1); }
static PyObject *q8_mm_cat(PyObject *self, PyObject *const *args, Py_ssize_t nargs) { return mm_cat(args, nargs, 0); }

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

/* rms_norm(x, rows, H, w, eps, y): per row of bf16 x [rows, H], y = bf16(w * bf16(x * r)) with
 * r = 1 / sqrt(mean(x²) + eps) in fp32, the square sum in 8 partial sums combined in one fixed
 * order: Llama's RMSNorm formula (fp32 variance, the weight times the input-dtype result), the
 * same bits for a row whatever else is in the call. */
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
 * query head h reads kv head h / (H / Hkv). In fp32, in one fixed order for every row:
 *   s_j = (q · k_j, 8 partial sums, hsum8) · scale;   m = max_j s_j;   p_j = exp(s_j − m), 8 at a
 *   time from j = 0 (exp8 below; past the prefix a lane is exp(−inf) = 0);   l = sum of the p in 8
 *   partial sums, hsum8;   out = (sum_j p_j · v_j, j in order) / l, rounded to bf16.
 * A row's arithmetic depends on its own prefix only, so a block's rows are bit-identical to
 * the rows decoded one at a time; one code path on every CPU (AVX2 + FMA). */
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
                                                            uint16_t *out, int64_t oh, int64_t ot, float *p) {
    const int64_t group = H / Hkv, chunks = D / 8;
    for (int64_t h = 0; h < H; h++) {
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
                D, p);
    Py_END_ALLOW_THREADS;
    free(p);
    Py_RETURN_NONE;
}

/* attend_layer(qkv, T, H, Hkv, D, cos, sin, kbuf, vbuf, ks, vs, start, scale, out): a decoder layer's
 * attention for T new rows in one call, as transformers computes it op for op in bf16:
 *   q, k rotated: x·cos + rotate_half(x)·sin, each product and the sum rounded to bf16 (rotate_half(x)
 *   is (−x[half:], x[:half]));  the rotated k and the v of row t written at position start + t of
 *   the cache's buffers (kbuf, vbuf [Hkv, capacity, D], heads ks / vs elements apart); then each
 *   row's attention over its own prefix (attend_rows), out [T, H·D] (the o projection's rows).
 * qkv [T, (H + 2·Hkv)·D] bf16 (q | k | v, each head's D values together); cos, sin [T, D] bf16. */
static inline uint16_t bf16_mul(uint16_t a, uint16_t b) { return f32_to_bf16(bf16_to_f32(a) * bf16_to_f32(b)); }

static void rope_row(const uint16_t *x, const uint16_t *cos, const uint16_t *sin, int64_t D, uint16_t *out) {
    const int64_t half = D / 2;
    for (int64_t d = 0; d < D; d++) {
        const uint16_t rot = d < half ? (uint16_t)(x[d + half] ^ 0x8000u) : x[d - half]; /* −x: the sign bit */
        const float sum = bf16_to_f32(bf16_mul(x[d], cos[d])) + bf16_to_f32(bf16_mul(rot, sin[d]));
        out[d] = f32_to_bf16(sum);
    }
}

static PyObject *attend_layer(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t a[14];
    double scale;
    if (ints_and_float(args, nargs, 14, 12, "attend_layer", a, &scale) < 0) return NULL;
    const int64_t T = a[1], H = a[2], Hkv = a[3], D = a[4], ks = a[9], vs = a[10], start = a[11];
    if (T <= 0 || H <= 0 || Hkv <= 0 || H % Hkv || D <= 0 || D % 8 || D > ATTEND_MAX_D || start < 0) {
        PyErr_Format(PyExc_ValueError, "attend_layer: bad shape T=%lld H=%lld Hkv=%lld D=%lld start=%lld",
                     (long long)T, (long long)H, (long long)Hkv, (long long)D, (long long)start);
        return NULL;
    }
    const uint16_t *qkv = (const uint16_t *)(uintptr_t)a[0], *cos = (const uint16_t *)(uintptr_t)a[5],
                   *sin = (const uint16_t *)(uintptr_t)a[6];
    uint16_t *kbuf = (uint16_t *)(uintptr_t)a[7], *vbuf = (uint16_t *)(uintptr_t)a[8], *out = (uint16_t *)(uintptr_t)a[13];
    const int64_t L = start + T, width = (H + 2 * Hkv) * D;
    uint16_t *q = (uint16_t *)malloc(sizeof(uint16_t) * (size_t)(H * T * D));
    float *p = (float *)malloc(sizeof(float) * (size_t)(L + 8));
    if (!q || !p) {
        free(q), free(p);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS;
    for (int64_t t = 0; t < T; t++) {
        const uint16_t *row = qkv + t * width, *c = cos + t * D, *sn = sin + t * D;
        for (int64_t h = 0; h < H; h++) rope_row(row + h * D, c, sn, D, q + (h * T + t) * D);
        for (int64_t h = 0; h < Hkv; h++) {
            rope_row(row + (H + h) * D, c, sn, D, kbuf + h * ks + (start + t) * D);
            memcpy(vbuf + h * vs + (start + t) * D, row + (H + Hkv + h) * D, sizeof(uint16_t) * (size_t)D);
        }
    }
    attend_rows(q, H, T, D, kbuf, vbuf, Hkv, L, ks, vs, (float)scale, out, D, H * D, p);
    Py_END_ALLOW_THREADS;
    free(q), free(p);
    Py_RETURN_NONE;
}

static PyObject *cpu(PyObject *self, PyObject *unused) { /* which paths this CPU runs */
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int vnni = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni");
    return Py_BuildValue("(ii)", avx2, vnni);
}

static PyMethodDef methods[] = {
    {"q4_mm", (PyCFunction)(void (*)(void))q4_mm, METH_FASTCALL, "int4 weights x bf16 rows (int8 activations)"},
    {"q8_mm", (PyCFunction)(void (*)(void))q8_mm, METH_FASTCALL, "int8 weights x bf16 rows (int8 activations)"},
    {"q4_mm_cat", (PyCFunction)(void (*)(void))q4_mm_cat, METH_FASTCALL, "int4 weights over one K x bf16 rows, side by side"},
    {"q8_mm_cat", (PyCFunction)(void (*)(void))q8_mm_cat, METH_FASTCALL, "int8 weights over one K x bf16 rows, side by side"},
    {"attend", (PyCFunction)(void (*)(void))attend, METH_FASTCALL, "one-row attention, each row over its own prefix"},
    {"attend_layer", (PyCFunction)(void (*)(void))attend_layer, METH_FASTCALL, "a layer's rotary, cache write and attention"},
    {"rms_norm", (PyCFunction)(void (*)(void))rms_norm, METH_FASTCALL, "Llama's RMSNorm over bf16 rows"},
    {"cpu", cpu, METH_NOARGS, "(avx2, vnni): the paths this CPU runs"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_q8mm", NULL, -1, methods};

PyMODINIT_FUNC PyInit__q8mm(void) { return PyModule_Create(&module); }
