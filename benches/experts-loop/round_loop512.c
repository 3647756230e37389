/*
 * The inner loop of the experts' fused round (Hedge, fixed rate, every expert awake,
 * N = 1,000) on AVX-512: eight experts per iteration, the sums (mixture, weight total) kept
 * on four lanes and taking the low four experts, then the high four, as the library's
 * eight-lane path does (`kernels::Wide`, `RoundPass` in crates/pacstream/src/experts/
 * weights.rs), so that the bits are the four-lane loop's. Issue 16, sixth step: to compare
 * with round_loop.c (AVX2) on a CPU with AVX-512, and to price what the exact sums cost.
 *
 * Variants (compile-time): default = the library's operations; REGCONST = constants without
 * the memory barrier; SUMWIDE = sums on eight lanes (NOT the four-lane bits: what the
 * ordered sums cost); SUMLOAD = the weight total read back from the stored weights instead
 * of an extract; NORANGE = no range tracking; NOMIX = no mixture; ONESTORE = C' stored once.
 *
 * Build and run (CPU ns per round):
 *   gcc -O2 -march=x86-64-v4 benches/experts-loop/round_loop512.c -o /tmp/l512 -lm && /tmp/l512 200000
 */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef __m512d V;
typedef __m256d H;
static const double Q[8] = {0.49999999999640693,    0.16666666666634014,
                            0.04166666699569589,    0.008333333363234996,
                            0.0013888804236758135,  0.00019841192908229906,
                            2.488446163856036e-5,   2.7632642126375148e-6};
struct Constants { V q[8], log2e, rounder, ln2, one, floor; };
#define INLINE static inline __attribute__((always_inline))
__attribute__((noinline)) double pass(const struct Constants *c0, int n, const double *v,
                                      const double *ch, double *w, double *cn, double *tn,
                                      double eta, double shift_value) {
  struct Constants c = *c0;
#ifndef REGCONST
  __asm__ volatile("" : : "r"(&c) : "memory");
#endif
  V minus_eta = _mm512_set1_pd(-eta), shift = _mm512_set1_pd(shift_value);
  H mixture = _mm256_setzero_pd(), total = _mm256_setzero_pd();
  V mixture8 = _mm512_setzero_pd(), total8 = _mm512_setzero_pd();
  V lowest = _mm512_set1_pd(INFINITY), highest = _mm512_set1_pd(-INFINITY), least = _mm512_set1_pd(INFINITY);
  for (int i = 0; i < n; i += 8) {
    V value = _mm512_loadu_pd(v + i);
#ifdef SUMWIDE
    mixture8 = _mm512_fmadd_pd(_mm512_loadu_pd(w + i), value, mixture8);
#elif !defined(NOMIX)
    mixture = _mm256_fmadd_pd(_mm256_loadu_pd(w + i), _mm256_loadu_pd(v + i), mixture);
    mixture = _mm256_fmadd_pd(_mm256_loadu_pd(w + i + 4), _mm256_loadu_pd(v + i + 4), mixture);
#endif
    V charged = _mm512_add_pd(_mm512_loadu_pd(ch + i), value);
#ifndef NORANGE
    lowest = _mm512_min_pd(value, lowest);
    highest = _mm512_max_pd(value, highest);
#endif
    least = _mm512_min_pd(charged, least);
    _mm512_storeu_pd(cn + i, charged);
#ifndef ONESTORE
    _mm512_storeu_pd(tn + i, charged);
#endif
    V x = _mm512_mul_pd(minus_eta, _mm512_sub_pd(charged, shift));
    V shifted = _mm512_fmadd_pd(x, c.log2e, c.rounder);
    V k = _mm512_sub_pd(shifted, c.rounder);
    V r = _mm512_fnmadd_pd(k, c.ln2, x);
    V r2 = _mm512_mul_pd(r, r);
    V p01 = _mm512_fmadd_pd(c.q[1], r, c.q[0]);
    V p23 = _mm512_fmadd_pd(c.q[3], r, c.q[2]);
    V p45 = _mm512_fmadd_pd(c.q[5], r, c.q[4]);
    V p67 = _mm512_fmadd_pd(c.q[7], r, c.q[6]);
    V r4 = _mm512_mul_pd(r2, r2);
    V p03 = _mm512_fmadd_pd(p23, r2, p01);
    V p47 = _mm512_fmadd_pd(p67, r2, p45);
    V pp = _mm512_fmadd_pd(p47, r4, p03);
    V poly = _mm512_fmadd_pd(pp, r2, _mm512_add_pd(r, c.one));
    __m512i e = _mm512_slli_epi64(_mm512_castpd_si512(shifted), 52);
#ifdef NOFLOOR
    V weight = _mm512_castsi512_pd(_mm512_add_epi64(_mm512_castpd_si512(poly), e));
#else
    __mmask8 keep = _mm512_cmp_pd_mask(x, c.floor, _CMP_NLT_UQ);
    V weight = _mm512_castsi512_pd(_mm512_maskz_add_epi64(keep, _mm512_castpd_si512(poly), e));
#endif
#ifdef SUMWIDE
    total8 = _mm512_add_pd(total8, weight);
#elif defined(SUMLOAD)
    _mm512_storeu_pd(w + i, weight);
    __asm__ volatile("" ::: "memory");
    total = _mm256_add_pd(total, _mm256_loadu_pd(w + i));
    total = _mm256_add_pd(total, _mm256_loadu_pd(w + i + 4));
#else
    total = _mm256_add_pd(total, _mm512_castpd512_pd256(weight));
    total = _mm256_add_pd(total, _mm512_extractf64x4_pd(weight, 1));
#endif
#ifndef SUMLOAD
    _mm512_storeu_pd(w + i, weight);
#endif
  }
  double t[8];
  V all = _mm512_add_pd(lowest, _mm512_add_pd(highest, _mm512_add_pd(least, _mm512_add_pd(mixture8, total8))));
  all = _mm512_add_pd(all, _mm512_castpd256_pd512(_mm256_add_pd(mixture, total)));
  _mm512_storeu_pd(t, all);
  return t[0] + t[1] + t[2] + t[3];
}
static double *allocate(int n) { double *p; if (posix_memalign((void **)&p, 64, (size_t)n * sizeof(double))) exit(1); return p; }
int main(int argc, char **argv) {
  const int n = 1000;
  long rounds = argc > 1 ? atol(argv[1]) : 200000;
  double *v = allocate(n), *ch = allocate(n), *w = allocate(n), *cn = allocate(n), *tn = allocate(n);
  for (int i = 0; i < n; i++) { double u = i * 0.6180339887; v[i] = u - floor(u); ch[i] = 3 * v[i]; w[i] = 1; }
  struct Constants c;
  for (int i = 0; i < 8; i++) c.q[i] = _mm512_set1_pd(Q[i]);
  c.log2e = _mm512_set1_pd(1.4426950408889634); c.rounder = _mm512_set1_pd(6755399441055744.0);
  c.ln2 = _mm512_set1_pd(0.6931471805599453); c.one = _mm512_set1_pd(1.0); c.floor = _mm512_set1_pd(-708.0);
  struct timespec start, end;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  double sink = 0;
  for (long r = 0; r < rounds; r++) sink += pass(&c, n, v, ch, w, cn, tn, 0.7, 0.5);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
  double seconds = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) * 1e-9;
  double expected = exp(-0.7 * (ch[7] + v[7] - 0.5));
  printf("%.0f %s %.3g\n", seconds / rounds * 1e9, fabs(w[7] - expected) < 1e-13 ? "ok" : "WRONG", sink);
  return 0;
}
