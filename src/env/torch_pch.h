// torch/extension.h precompiled once per machine (python/kforge/extension_build.py): a ModelNew's load_inline
// builds read it instead of parsing torch's headers (about 350k lines) for each candidate. Trusted work: it
// compiles torch's headers only, never a candidate's code, as the caller's own user, into a folder that
// candidates are shown read-only.
#pragma once
#include <string>

#include "env/python_runtime.h"

namespace kforge {

// Builds the precompiled headers under `dir` where they are missing or stale (once per process and folder; the
// Python side keeps concurrent builders to one). Returns "" when they are ready, else why not: the builds then
// parse torch's headers, slower, making the same modules.
std::string ensure_torch_pch(const PythonRuntime& py, const std::string& dir);

}  // namespace kforge
