// The CUDA source every generated kernel starts with: float versions of the elementwise ops and the
// warp/block reduction helpers. Kept in one place so a generated file reads as prelude + one kernel.
#pragma once
#include <string>

namespace kforge {

const std::string& device_prelude();

}  // namespace kforge
