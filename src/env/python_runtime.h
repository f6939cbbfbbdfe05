// The Python a ModelNew's process runs in (env/judge.h): its interpreter, and the folders it needs shown beyond a
// sandbox's minimal root.
#pragma once
#include <string>
#include <vector>

namespace kforge {

struct PythonRuntime {
  std::string exe = "python3";
  std::vector<std::string> roots;  // its prefix and site folders outside /usr (a virtual environment, pyenv)
  std::string kforge_dir;          // the folder holding the kforge package
};

// The folder holding the kforge Python package the command runs (`python -m kforge.*`): $KFORGE_PYTHON_DIR, else
// the package the command was installed in (`pip install .` puts it at kforge/_bin/kforge), else `built_in`, the
// clone it was built from.
std::string kforge_python_dir(const std::string& built_in);

// Asks the interpreter that the CLI and the service run ($KFORGE_PYTHON, else python3 on PATH) where it lives.
// Throws UserError naming the cause when it cannot be run.
PythonRuntime find_python(const std::string& kforge_dir);

}  // namespace kforge
