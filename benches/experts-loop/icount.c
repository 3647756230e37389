/* Counts the instructions a program executes by single-stepping it with ptrace (every
 * instruction set the CPU runs, AVX-512 included, which valgrind does not emulate). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
  pid_t pid = fork();
  if (pid == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    execv(argv[1], argv + 1);
    perror("execv");
    _exit(127);
  }
  int status;
  waitpid(pid, &status, 0); /* stopped at exec */
  unsigned long long count = 0;
  while (1) {
    if (ptrace(PTRACE_SINGLESTEP, pid, 0, 0) < 0) break;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) || WIFSIGNALED(status)) break;
    count++;
  }
  fprintf(stderr, "instructions: %llu\n", count);
  return 0;
}
