// A library opened at run time (the CUDA driver, cuBLASLt, cuDNN): loaded on first use, once per process, and a
// failure is remembered and thrown again, with its cause, at every later use.
#pragma once
#include <mutex>
#include <string>

#include "ir/error.h"

namespace kforge {

template <class Api, Api (*Load)()>
const Api& load_once() {
  static std::once_flag once;
  static Api api;
  static std::string error;
  std::call_once(once, [] {
    try {
      api = Load();
    } catch (const UserError& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw UserError(error);
  return api;
}

// Opens a CUDA toolkit library (cuBLASLt, cuDNN) with dlopen: `soname` from the loader's search path, then from
// the folder of the NVRTC kforge is linked with (the same toolkit's libraries lie beside it), then `fallback`
// (the unversioned name). Throws UserError "<soname> could not be loaded (<dlerror>); <need>" otherwise.
void* open_toolkit_library(const std::string& soname, const std::string& fallback, const std::string& need);

// Resolves `symbol` of `lib` into `fn`; UserError "<library> lacks <symbol>; <fix>" when it is missing.
void* resolve_symbol(void* lib, const char* symbol, const std::string& library, const std::string& fix);
template <class F>
void resolve(void* lib, F& fn, const char* symbol, const std::string& library, const std::string& fix) {
  fn = reinterpret_cast<F>(resolve_symbol(lib, symbol, library, fix));
}

}  // namespace kforge
