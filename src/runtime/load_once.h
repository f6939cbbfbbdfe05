// A library opened at run time (the CUDA driver, cuBLASLt): loaded on first use, once per process, and a
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

}  // namespace kforge
