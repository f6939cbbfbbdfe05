#include "env/python_runtime.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "ir/error.h"

namespace kforge {

std::string kforge_python_dir(const std::string& built_in) {
  if (const char* configured = std::getenv("KFORGE_PYTHON_DIR"); configured && *configured) return configured;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.parent_path().filename() == "_bin" && fs::is_regular_file(exe.parent_path().parent_path() / "__init__.py", ec))
    return exe.parent_path().parent_path().parent_path().string();  // site-packages/kforge/_bin/kforge
  return built_in;
}

PythonRuntime find_python(const std::string& kforge_dir) {
  const char* configured = std::getenv("KFORGE_PYTHON");
  std::string python = configured ? configured : "python3";
  // No torch import here (seconds): the interpreter's own folders are where its packages live. Not the user's
  // site-packages: a folder of somebody's home is no candidate's business.
  std::string cmd = python + " -c 'import json, site, sys; print(json.dumps({\"exe\": sys.executable, \"roots\": "
                             "[sys.prefix, sys.base_prefix] + site.getsitepackages()}))' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw UserError("cannot run " + python + " to find its folders");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  int rc = pclose(pipe);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (rc != 0 || !j.is_object()) throw UserError("cannot run " + python + " (set KFORGE_PYTHON to the interpreter with torch): " + out.substr(0, 500));
  PythonRuntime py;
  py.exe = j.value("exe", python);
  py.kforge_dir = kforge_dir;
  namespace fs = std::filesystem;
  for (const auto& r : j["roots"]) {
    std::error_code ec;
    std::string root = r.get<std::string>();
    if (root.rfind("/usr/", 0) == 0 || root == "/usr" || !fs::is_directory(root, ec)) continue;  // the minimal root has /usr
    bool inside = false;  // a folder inside one already kept (site-packages inside the prefix)
    for (const std::string& kept : py.roots) inside = inside || root.rfind(kept + "/", 0) == 0 || root == kept;
    if (!inside) py.roots.push_back(root);
  }
  return py;
}

}  // namespace kforge
