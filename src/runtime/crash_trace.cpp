#include "runtime/crash_trace.h"

#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

namespace kforge {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kSignalSlots = 32;
struct sigaction previous[kSignalSlots];  // what was there before (Python's faulthandler, say): it runs after us

// Async-signal-safe except backtrace()'s first call, which may load libgcc: install_crash_trace calls it once.
void on_fatal_signal(int sig) {
  const char* name = strsignal(sig);
  const char head[] = "\nkforge: fatal signal: ";
  (void)!write(STDERR_FILENO, head, sizeof head - 1);
  (void)!write(STDERR_FILENO, name, strlen(name));
  const char tail[] = "; native stack (addr2line -f -C -e LIBRARY OFFSET names a frame):\n";
  (void)!write(STDERR_FILENO, tail, sizeof tail - 1);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  sigaction(sig, &previous[sig], nullptr);
  std::raise(sig);
}

}  // namespace

void install_crash_trace() {
  void* warm[1];
  backtrace(warm, 1);
  struct sigaction act {};
  act.sa_handler = on_fatal_signal;
  sigemptyset(&act.sa_mask);
  act.sa_flags = SA_RESETHAND;
  for (int sig : kFatalSignals) sigaction(sig, &act, &previous[sig]);
}

void install_crash_trace_if_asked() {
  const char* v = std::getenv("KFORGE_CRASH_TRACE");
  if (v && *v && std::strcmp(v, "0") != 0) install_crash_trace();
}

}  // namespace kforge
