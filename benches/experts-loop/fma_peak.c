/*
 * What the round loop's operations cost beside each other. Eight independent chains of
 * 256-bit fused multiply-adds (latency 4, two pipes: 4 cycles per iteration, which also
 * measures the clock), alone and with more independent work per iteration: minima,
 * compares, adds, 256-bit loads, 256-bit stores. Work on other pipes leaves the iteration
 * at 4 cycles; work that competes lengthens it. Prints CPU nanoseconds per iteration.
 */
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define FMAS                                                                               \
  "vfmadd231pd %%ymm8,%%ymm9,%%ymm0\n vfmadd231pd %%ymm8,%%ymm9,%%ymm1\n"                  \
  "vfmadd231pd %%ymm8,%%ymm9,%%ymm2\n vfmadd231pd %%ymm8,%%ymm9,%%ymm3\n"                  \
  "vfmadd231pd %%ymm8,%%ymm9,%%ymm4\n vfmadd231pd %%ymm8,%%ymm9,%%ymm5\n"                  \
  "vfmadd231pd %%ymm8,%%ymm9,%%ymm6\n vfmadd231pd %%ymm8,%%ymm9,%%ymm7\n"
#define ZERO                                                                               \
  "vxorpd %%ymm0,%%ymm0,%%ymm0\n vxorpd %%ymm1,%%ymm1,%%ymm1\n"                            \
  "vxorpd %%ymm2,%%ymm2,%%ymm2\n vxorpd %%ymm3,%%ymm3,%%ymm3\n"                            \
  "vxorpd %%ymm4,%%ymm4,%%ymm4\n vxorpd %%ymm5,%%ymm5,%%ymm5\n"                            \
  "vxorpd %%ymm6,%%ymm6,%%ymm6\n vxorpd %%ymm7,%%ymm7,%%ymm7\n"                            \
  "vxorpd %%ymm8,%%ymm8,%%ymm8\n vxorpd %%ymm9,%%ymm9,%%ymm9\n"
#define CLOBBERS                                                                           \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
      "xmm11", "xmm12", "xmm13"
#define EXTRA(op)                                                                          \
  op " %%ymm8,%%ymm9,%%ymm10\n " op " %%ymm8,%%ymm9,%%ymm11\n " op                         \
     " %%ymm8,%%ymm9,%%ymm12\n " op " %%ymm8,%%ymm9,%%ymm13\n"

#define LOADS4                                                                             \
  "vmovupd (%1),%%ymm10\n vmovupd 32(%1),%%ymm11\n vmovupd 64(%1),%%ymm12\n "                \
  "vmovupd 96(%1),%%ymm13\n"
#define STORES2 "vmovupd %%ymm8,128(%1)\n vmovupd %%ymm9,192(%1)\n"

static double buffer[64] __attribute__((aligned(64)));
static const long ITERATIONS = 200000000;

#define TIME(body)                                                                         \
  ({                                                                                       \
    long n = ITERATIONS;                                                                   \
    double start = now();                                                                  \
    __asm__ volatile(ZERO "1:\n" body "dec %0\n jnz 1b\n"                                \
                     : "+r"(n)                                                             \
                     : "r"(buffer)                                                         \
                     : CLOBBERS, "memory");            \
    (now() - start) / ITERATIONS * 1e9;                                                    \
  })

int main(void) {
  double fma = TIME(FMAS);
  printf("8 FMAs: %.3f ns per iteration (%.2f GHz at 4 cycles)\n", fma, 4 / fma);
  printf("  + 4 minima: %.3f\n", TIME(FMAS EXTRA("vminpd")));
  printf("  + 4 compares: %.3f\n", TIME(FMAS EXTRA("vcmpltpd")));
  printf("  + 4 adds: %.3f\n", TIME(FMAS EXTRA("vaddpd")));
  printf("  + 4 adds + 4 minima: %.3f\n", TIME(FMAS EXTRA("vaddpd") EXTRA("vminpd")));
  printf("  + 4 adds + 4 minima + 4 compares: %.3f\n",
         TIME(FMAS EXTRA("vaddpd") EXTRA("vminpd") EXTRA("vcmpltpd")));
  printf("  + 8 loads: %.3f\n", TIME(FMAS LOADS4 LOADS4));
  printf("  + 16 loads: %.3f\n", TIME(FMAS LOADS4 LOADS4 LOADS4 LOADS4));
  printf("  + 4 stores: %.3f\n", TIME(FMAS STORES2 STORES2));
  return 0;
}
