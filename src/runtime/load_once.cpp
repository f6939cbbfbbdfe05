#include "runtime/load_once.h"

#include <dlfcn.h>
#include <nvrtc.h>

namespace kforge {

namespace {
std::string nvrtc_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  return path.substr(0, path.rfind('/') + 1);
}
}  // namespace

void* open_toolkit_library(const std::string& soname, const std::string& fallback, const std::string& need) {
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen((nvrtc_folder() + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw UserError(soname + " could not be loaded (" + std::string(dlerror()) + "); " + need);
  return lib;
}

void* resolve_symbol(void* lib, const char* symbol, const std::string& library, const std::string& fix) {
  void* f = dlsym(lib, symbol);
  if (!f) throw UserError(library + " lacks " + symbol + "; " + fix);
  return f;
}

}  // namespace kforge
