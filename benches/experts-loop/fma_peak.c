/*
 * The CPU's peak rate of 256-bit fused multiply-adds (eight independent chains), and the
 * same with half of them replaced by vminpd: if the two take the same time, the minima run
 * on the multiply-add pipes. Prints CPU nanoseconds per eight operations.
 */
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  const long iterations = 200000000;
  long n = iterations;
  double start = now();
  __asm__ volatile(
      "vxorpd %%ymm0,%%ymm0,%%ymm0\n vxorpd %%ymm1,%%ymm1,%%ymm1\n"
      "vxorpd %%ymm2,%%ymm2,%%ymm2\n vxorpd %%ymm3,%%ymm3,%%ymm3\n"
      "vxorpd %%ymm4,%%ymm4,%%ymm4\n vxorpd %%ymm5,%%ymm5,%%ymm5\n"
      "vxorpd %%ymm6,%%ymm6,%%ymm6\n vxorpd %%ymm7,%%ymm7,%%ymm7\n"
      "vxorpd %%ymm8,%%ymm8,%%ymm8\n vxorpd %%ymm9,%%ymm9,%%ymm9\n"
      "1:\n"
      "vfmadd231pd %%ymm8,%%ymm9,%%ymm0\n vfmadd231pd %%ymm8,%%ymm9,%%ymm1\n"
      "vfmadd231pd %%ymm8,%%ymm9,%%ymm2\n vfmadd231pd %%ymm8,%%ymm9,%%ymm3\n"
      "vfmadd231pd %%ymm8,%%ymm9,%%ymm4\n vfmadd231pd %%ymm8,%%ymm9,%%ymm5\n"
      "vfmadd231pd %%ymm8,%%ymm9,%%ymm6\n vfmadd231pd %%ymm8,%%ymm9,%%ymm7\n"
      "dec %0\n jnz 1b\n"
      : "+r"(n)::"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
        "xmm9");
  double fma = now() - start;
  n = iterations;
  start = now();
  __asm__ volatile(
      "vxorpd %%ymm8,%%ymm8,%%ymm8\n vxorpd %%ymm9,%%ymm9,%%ymm9\n"
      "1:\n"
      "vminpd %%ymm8,%%ymm9,%%ymm0\n vminpd %%ymm8,%%ymm9,%%ymm1\n"
      "vminpd %%ymm8,%%ymm9,%%ymm2\n vminpd %%ymm8,%%ymm9,%%ymm3\n"
      "vfmadd231pd %%ymm8,%%ymm9,%%ymm4\n vfmadd231pd %%ymm8,%%ymm9,%%ymm5\n"
      "vfmadd231pd %%ymm8,%%ymm9,%%ymm6\n vfmadd231pd %%ymm8,%%ymm9,%%ymm7\n"
      "dec %0\n jnz 1b\n"
      : "+r"(n)::"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
        "xmm9");
  double mixed = now() - start;
  printf("8 FMAs: %.3f ns; 4 minima + 4 FMAs: %.3f ns\n", fma / iterations * 1e9,
         mixed / iterations * 1e9);
  return 0;
}
