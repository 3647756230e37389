/*
 * The inner loop of the experts' fused round (Hedge, fixed rate, every expert awake,
 * N = 1,000; `RoundPass` in crates/pacstream/src/experts/weights.rs) written again with
 * AVX2 + FMA intrinsics, in variants, to find what bounds it on this machine. It is not
 * the library's code: the release build's loop is the same operations (the exponential of
 * `kernels::exp_quad`, the mixture, the charges, their minima and maximum, three stores)
 * and runs at the same speed (1.2 µs per round here against 1.2–1.3 µs for the library's
 * own loop, both at load 6–10).
 *
 * Variants (compile-time): default = the library's loop; HORNER = the polynomial by
 * Horner's rule (one multiply fewer, the polynomial's chain about twice as long); TWO = two chunks of four
 * experts per iteration; PIPELINED = the reduction of chunk j and the polynomial of chunk
 * j - 1 in the same iteration (the chain per iteration halved, the same operations);
 * ONESTORE = C' written once (the twin store of L' dropped); NOFLOOR = no compare-and-select
 * at the exponential's floor; NOMINMAX = no range or minimum tracking; NOMIX = no mixture;
 * TABLE = the exponential from a table of 2^(j/4) and a degree-7 polynomial; PAIRED = two
 * chunks per step, each operation applied to both, each constant read once per step.
 * The variants that drop work are not correct rounds; they measure what that work costs.
 *
 * Run: benches/experts-loop/run.sh  (needs gcc; prints CPU ns per round, min and median).
 */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef __m256d V;

/* kernels::EXP_Q */
static const double Q[8] = {0.49999999999640693,    0.16666666666634014,
                            0.04166666699569589,    0.008333333363234996,
                            0.0013888804236758135,  0.00019841192908229906,
                            2.488446163856036e-5,   2.7632642126375148e-6};

struct Constants { V q[8], log2e, rounder, ln2, one, floor; };
struct Reduced { V shifted, r, x; };
struct Lanes { V mixture, lowest, highest, least, total; };

#define INLINE static inline __attribute__((always_inline))

INLINE struct Reduced reduce(const struct Constants *c, V x) {
  struct Reduced o;
  o.shifted = _mm256_fmadd_pd(x, c->log2e, c->rounder);
  V k = _mm256_sub_pd(o.shifted, c->rounder);
  o.r = _mm256_fnmadd_pd(k, c->ln2, x);
  o.x = x;
  return o;
}

#ifdef TABLE
/* 2^(j/4), j = 0..3, as eight floats (vpermps picks 32-bit halves), and the degree-5
 * q(r) of 1 + r + r^2 q(r) on |r| <= ln 2 / 8 (Taylor coefficients: the timing is what this
 * variant measures; a minimax fit would have the same operations). */
static const double TABLE4[4] = {1.0, 1.189207115002721, 1.4142135623730951, 1.6817928305074290};
static const double QT[6] = {1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040};
INLINE V finish_table(const struct Constants *c, V x) {
  V shifted = _mm256_fmadd_pd(x, _mm256_set1_pd(4 * 1.4426950408889634), c->rounder);
  V k = _mm256_sub_pd(shifted, c->rounder);
  V r = _mm256_fnmadd_pd(k, _mm256_set1_pd(0.6931471805599453 / 4), x);
  V r2 = _mm256_mul_pd(r, r), r4 = _mm256_mul_pd(r2, r2);
  V p01 = _mm256_fmadd_pd(_mm256_set1_pd(QT[1]), r, _mm256_set1_pd(QT[0]));
  V p23 = _mm256_fmadd_pd(_mm256_set1_pd(QT[3]), r, _mm256_set1_pd(QT[2]));
  V p45 = _mm256_fmadd_pd(_mm256_set1_pd(QT[5]), r, _mm256_set1_pd(QT[4]));
  V p03 = _mm256_fmadd_pd(p23, r2, p01);
  V q = _mm256_fmadd_pd(p45, r4, p03);
  V poly = _mm256_fmadd_pd(q, r2, _mm256_add_pd(r, c->one));
  __m256i bits = _mm256_castpd_si256(shifted);
  __m256i j = _mm256_and_si256(bits, _mm256_set1_epi64x(3));
  __m256i index = _mm256_or_si256(_mm256_or_si256(_mm256_slli_epi64(j, 1), _mm256_slli_epi64(j, 33)),
                                  _mm256_set1_epi64x(1LL << 32));
  V table = _mm256_loadu_pd(TABLE4);
  V scale = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(table), index));
  V scaled = _mm256_mul_pd(poly, scale);
  __m256i e = _mm256_slli_epi64(_mm256_srli_epi64(bits, 2), 52);
  V value = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(scaled), e));
  return _mm256_andnot_pd(_mm256_cmp_pd(x, c->floor, _CMP_LT_OQ), value);
}
#endif

INLINE V finish(const struct Constants *c, struct Reduced d) {
#ifdef TABLE
  return finish_table(c, d.x);
#endif
  V r = d.r, r2 = _mm256_mul_pd(r, r), poly;
#ifdef HORNER
  V p = c->q[7];
  for (int i = 6; i >= 0; i--) p = _mm256_fmadd_pd(p, r, c->q[i]);
  poly = _mm256_fmadd_pd(p, r2, _mm256_add_pd(r, c->one));
#else
  V p01 = _mm256_fmadd_pd(c->q[1], r, c->q[0]);
  V p23 = _mm256_fmadd_pd(c->q[3], r, c->q[2]);
  V p45 = _mm256_fmadd_pd(c->q[5], r, c->q[4]);
  V p67 = _mm256_fmadd_pd(c->q[7], r, c->q[6]);
  V r4 = _mm256_mul_pd(r2, r2);
  V p03 = _mm256_fmadd_pd(p23, r2, p01);
  V p47 = _mm256_fmadd_pd(p67, r2, p45);
  V pp = _mm256_fmadd_pd(p47, r4, p03);
  poly = _mm256_fmadd_pd(pp, r2, _mm256_add_pd(r, c->one));
#endif
  __m256i e = _mm256_slli_epi64(_mm256_castpd_si256(d.shifted), 52);
  V value = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(poly), e));
#ifdef NOFLOOR
  return value;
#else
  return _mm256_andnot_pd(_mm256_cmp_pd(d.x, c->floor, _CMP_LT_OQ), value);
#endif
}

/* Everything of one chunk but the polynomial; returns the reduced exponent. */
INLINE struct Reduced front(const struct Constants *c, struct Lanes *a, const double *v,
                            const double *ch, const double *w, double *cn, double *tn,
                            V minus_eta, V shift) {
  V value = _mm256_loadu_pd(v);
#ifndef NOMIX
  a->mixture = _mm256_fmadd_pd(_mm256_loadu_pd(w), value, a->mixture);
#endif
  V charged = _mm256_add_pd(_mm256_loadu_pd(ch), value);
#ifndef NOMINMAX
  a->lowest = _mm256_min_pd(value, a->lowest);
  a->highest = _mm256_max_pd(value, a->highest);
  a->least = _mm256_min_pd(charged, a->least);
#endif
  _mm256_storeu_pd(cn, charged);
#ifndef ONESTORE
  _mm256_storeu_pd(tn, charged);
#else
  (void)tn;
#endif
  return reduce(c, _mm256_mul_pd(minus_eta, _mm256_sub_pd(charged, shift)));
}

INLINE void back(const struct Constants *c, struct Lanes *a, double *w, struct Reduced d) {
  V weight = finish(c, d);
  a->total = _mm256_add_pd(a->total, weight);
  _mm256_storeu_pd(w, weight);
}

#ifdef PAIRED
/* Two chunks per step, each operation applied to both before the next, so that each
 * constant is read from memory once per eight experts. */
typedef struct { V a, b; } P;
#define P2(expr_a, expr_b) ((P){(expr_a), (expr_b)})
INLINE void step_pair(const struct Constants *cm, struct Lanes *l, const double *v,
                      const double *ch, double *w, double *cn, double *tn, V minus_eta,
                      V shift) {
  /* Read the constants once for both chunks (the barrier keeps the compiler from
   * re-reading them through memory operands per use). */
  struct Constants c = *cm;
  __asm__ volatile("" : "+x"(c.log2e), "+x"(c.rounder), "+x"(c.ln2));
  P value = P2(_mm256_loadu_pd(v), _mm256_loadu_pd(v + 4));
  P weight_old = P2(_mm256_loadu_pd(w), _mm256_loadu_pd(w + 4));
  l->mixture = _mm256_fmadd_pd(weight_old.a, value.a, l->mixture);
  l->mixture = _mm256_fmadd_pd(weight_old.b, value.b, l->mixture);
  P charged = P2(_mm256_add_pd(_mm256_loadu_pd(ch), value.a), _mm256_add_pd(_mm256_loadu_pd(ch + 4), value.b));
  l->lowest = _mm256_min_pd(value.a, l->lowest);
  l->lowest = _mm256_min_pd(value.b, l->lowest);
  l->highest = _mm256_max_pd(value.a, l->highest);
  l->highest = _mm256_max_pd(value.b, l->highest);
  l->least = _mm256_min_pd(charged.a, l->least);
  l->least = _mm256_min_pd(charged.b, l->least);
  P x = P2(_mm256_mul_pd(minus_eta, _mm256_sub_pd(charged.a, shift)),
           _mm256_mul_pd(minus_eta, _mm256_sub_pd(charged.b, shift)));
  P shifted = P2(_mm256_fmadd_pd(x.a, c.log2e, c.rounder), _mm256_fmadd_pd(x.b, c.log2e, c.rounder));
  P k = P2(_mm256_sub_pd(shifted.a, c.rounder), _mm256_sub_pd(shifted.b, c.rounder));
  P r = P2(_mm256_fnmadd_pd(k.a, c.ln2, x.a), _mm256_fnmadd_pd(k.b, c.ln2, x.b));
  P r2 = P2(_mm256_mul_pd(r.a, r.a), _mm256_mul_pd(r.b, r.b));
  V q0 = c.q[0], q1 = c.q[1];
  __asm__ volatile("" : "+x"(q0), "+x"(q1));
  P p01 = P2(_mm256_fmadd_pd(q1, r.a, q0), _mm256_fmadd_pd(q1, r.b, q0));
  V q2 = c.q[2], q3 = c.q[3];
  __asm__ volatile("" : "+x"(q2), "+x"(q3));
  P p23 = P2(_mm256_fmadd_pd(q3, r.a, q2), _mm256_fmadd_pd(q3, r.b, q2));
  V q4 = c.q[4], q5 = c.q[5];
  __asm__ volatile("" : "+x"(q4), "+x"(q5));
  P p45 = P2(_mm256_fmadd_pd(q5, r.a, q4), _mm256_fmadd_pd(q5, r.b, q4));
  V q6 = c.q[6], q7 = c.q[7];
  __asm__ volatile("" : "+x"(q6), "+x"(q7));
  P p67 = P2(_mm256_fmadd_pd(q7, r.a, q6), _mm256_fmadd_pd(q7, r.b, q6));
  P r4 = P2(_mm256_mul_pd(r2.a, r2.a), _mm256_mul_pd(r2.b, r2.b));
  P p03 = P2(_mm256_fmadd_pd(p23.a, r2.a, p01.a), _mm256_fmadd_pd(p23.b, r2.b, p01.b));
  P p47 = P2(_mm256_fmadd_pd(p67.a, r2.a, p45.a), _mm256_fmadd_pd(p67.b, r2.b, p45.b));
  P pp = P2(_mm256_fmadd_pd(p47.a, r4.a, p03.a), _mm256_fmadd_pd(p47.b, r4.b, p03.b));
  V one = c.one;
  __asm__ volatile("" : "+x"(one));
  P poly = P2(_mm256_fmadd_pd(pp.a, r2.a, _mm256_add_pd(r.a, one)), _mm256_fmadd_pd(pp.b, r2.b, _mm256_add_pd(r.b, one)));
  P value_w;
  value_w.a = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(poly.a), _mm256_slli_epi64(_mm256_castpd_si256(shifted.a), 52)));
  value_w.b = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(poly.b), _mm256_slli_epi64(_mm256_castpd_si256(shifted.b), 52)));
  V fl = c.floor;
  __asm__ volatile("" : "+x"(fl));
  value_w.a = _mm256_andnot_pd(_mm256_cmp_pd(x.a, fl, _CMP_LT_OQ), value_w.a);
  value_w.b = _mm256_andnot_pd(_mm256_cmp_pd(x.b, fl, _CMP_LT_OQ), value_w.b);
  l->total = _mm256_add_pd(l->total, value_w.a);
  l->total = _mm256_add_pd(l->total, value_w.b);
  _mm256_storeu_pd(cn, charged.a); _mm256_storeu_pd(cn + 4, charged.b);
  _mm256_storeu_pd(tn, charged.a); _mm256_storeu_pd(tn + 4, charged.b);
  _mm256_storeu_pd(w, value_w.a); _mm256_storeu_pd(w + 4, value_w.b);
}
#endif

__attribute__((noinline)) double pass(const struct Constants *c0, int n, const double *v,
                                      const double *ch, double *w, double *cn, double *tn,
                                      double eta, double shift_value) {
  struct Constants c = *c0;
  /* Constants in memory, as the library keeps them (`ExpConstants`, black_box). */
  __asm__ volatile("" : : "r"(&c) : "memory");
  V minus_eta = _mm256_set1_pd(-eta), shift = _mm256_set1_pd(shift_value);
  struct Lanes a = {_mm256_setzero_pd(), _mm256_set1_pd(INFINITY), _mm256_set1_pd(-INFINITY),
                    _mm256_set1_pd(INFINITY), _mm256_setzero_pd()};
#if defined(PAIRED)
  for (int i = 0; i < n; i += 8)
    step_pair(&c, &a, v + i, ch + i, w + i, cn + i, tn + i, minus_eta, shift);
#elif defined(PIPELINED)
  struct Reduced pending = front(&c, &a, v, ch, w, cn, tn, minus_eta, shift);
  for (int i = 4; i < n; i += 4) {
    struct Reduced next = front(&c, &a, v + i, ch + i, w + i, cn + i, tn + i, minus_eta, shift);
    back(&c, &a, w + i - 4, pending);
    pending = next;
  }
  back(&c, &a, w + n - 4, pending);
#elif defined(TWO)
  for (int i = 0; i < n; i += 8) {
    back(&c, &a, w + i, front(&c, &a, v + i, ch + i, w + i, cn + i, tn + i, minus_eta, shift));
    back(&c, &a, w + i + 4,
         front(&c, &a, v + i + 4, ch + i + 4, w + i + 4, cn + i + 4, tn + i + 4, minus_eta, shift));
  }
#else
  for (int i = 0; i < n; i += 4)
    back(&c, &a, w + i, front(&c, &a, v + i, ch + i, w + i, cn + i, tn + i, minus_eta, shift));
#endif
  double t[4];
  V all = _mm256_add_pd(a.total, _mm256_add_pd(a.mixture, _mm256_add_pd(a.lowest,
                                              _mm256_add_pd(a.highest, a.least))));
  _mm256_storeu_pd(t, all);
  return t[0] + t[1] + t[2] + t[3];
}

static double *allocate(int n) {
  double *p;
  if (posix_memalign((void **)&p, 64, (size_t)n * sizeof(double))) exit(1);
  return p;
}

int main(int argc, char **argv) {
  const int n = 1000;
  long rounds = argc > 1 ? atol(argv[1]) : 200000;
  double *v = allocate(n), *ch = allocate(n), *w = allocate(n), *cn = allocate(n),
         *tn = allocate(n);
  for (int i = 0; i < n; i++) {
    double u = i * 0.6180339887;
    v[i] = u - floor(u);
    ch[i] = 3 * v[i];
    w[i] = 1;
  }
  struct Constants c;
  for (int i = 0; i < 8; i++) c.q[i] = _mm256_set1_pd(Q[i]);
  c.log2e = _mm256_set1_pd(1.4426950408889634);
  c.rounder = _mm256_set1_pd(6755399441055744.0);
  c.ln2 = _mm256_set1_pd(0.6931471805599453);
  c.one = _mm256_set1_pd(1.0);
  c.floor = _mm256_set1_pd(-708.0);
  struct timespec start, end;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  double sink = 0;
  for (long r = 0; r < rounds; r++) sink += pass(&c, n, v, ch, w, cn, tn, 0.7, 0.5);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
  double seconds = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) * 1e-9;
  /* The weight checked against libm, so that a broken variant shows. */
  double expected = exp(-0.7 * (ch[7] + v[7] - 0.5));
  printf("%.0f %s %.3g\n", seconds / rounds * 1e9, fabs(w[7] - expected) < 1e-13 ? "ok" : "WRONG",
         sink);
  return 0;
}
