#pragma once
// A native stack on stderr when the process dies of a fatal signal (segfault, bus error, abort, ...), for the
// crashes that no exception reports: a bad pointer in a library, a native crash inside a Python process.
// Frames print as `library(+offset)`: `addr2line -f -C -e library offset` names the function. The handler
// then hands the signal to the handler that was there before (Python's faulthandler prints the Python stack)
// or the default action, so the exit status (and a core dump) is unchanged.
namespace kforge {

void install_crash_trace();

// Installs it when the environment variable KFORGE_CRASH_TRACE is set (and not "0").
void install_crash_trace_if_asked();

}  // namespace kforge
