// peak_rss OUT_FILE PROGRAM [ARGS...]: runs PROGRAM and writes the peak resident set of its
// own address space, in KB, to OUT_FILE; exits as PROGRAM did (a signal is raised again).
//
// Why a process of its own: a parent's wait4 reports the larger of the child's peak and the
// resident set the child's address space had before exec, which is a copy of the parent's. The
// scale benchmark holds hundreds of MB at 50,000 specs; started through this small program,
// the command's figure is its own.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: peak_rss OUT_FILE PROGRAM [ARGS...]\n");
    return 2;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("peak_rss: fork");
    return 127;
  }
  if (pid == 0) {
    ::execv(argv[2], argv + 2);
    std::perror("peak_rss: exec");
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (::wait4(pid, &status, 0, &usage) < 0) {
    std::perror("peak_rss: wait4");
    return 127;
  }
  if (std::FILE* out = std::fopen(argv[1], "w")) {
    std::fprintf(out, "%ld\n", usage.ru_maxrss);
    std::fclose(out);
  }
  if (WIFSIGNALED(status)) {
    std::signal(WTERMSIG(status), SIG_DFL);
    std::raise(WTERMSIG(status));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}
