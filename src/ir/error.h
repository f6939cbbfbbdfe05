// Errors: a UserError is the caller's fault (bad problem file, unsupported op, illegal schedule) and its
// message says what to change; an InternalError is a kforge bug. Front ends print the first and exit 2,
// and print the second with a request to report it (exit 3). (Halide's Error.h keeps the same split.)
#pragma once
#include <stdexcept>
#include <string>

namespace kforge {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

// Checks an internal invariant; the message names what broke.
#define KF_ASSERT(cond, msg)                                                                   \
  do {                                                                                         \
    if (!(cond))                                                                               \
      throw ::kforge::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                    ": " + (msg));                                             \
  } while (0)

}  // namespace kforge
