// The GPU kforge compiles for and tunes to, told once from the driver: its architecture, SMs, L2 and shared
// memory. Compilation (NVRTC's and nvcc's architecture), the search's pruning and features and the checks'
// launch sizes read it from here, not from constants of one chip. Where no GPU is (CI, code generation on a
// laptop) it is the H100/H200 the generator's rules were measured on, so that GPU-free tests compile what a
// Hopper machine would.
#pragma once
#include <cstdint>
#include <string>

#include "codegen/partition.h"

namespace kforge {

struct Target {
  std::string name = "NVIDIA H100 (default: no GPU here)";
  int major = 9, minor = 0;             // compute capability
  int sms = 132;
  int64_t l2_bytes = 50LL << 20;
  int64_t smem_per_block = 227 << 10;   // the opt-in maximum a kernel may ask for
  int64_t smem_per_sm = 228 << 10;
  bool measured = false;                // told by the driver (else the default above)

  // "sm_90": real architecture, CUBIN that loads without JIT.
  std::string arch() const { return std::string("sm_").append(std::to_string(sm())); }
  int sm() const { return major * 10 + minor; }
  TargetFacts facts() const { return {sm(), sms}; }  // what code generation is told (KernelGroup::target)
  // Device `ordinal`'s properties (this process's numbering); throws UserError without a driver or device.
  static Target of_device(int ordinal);
  // Device 0's, told once; the default where there is no usable GPU.
  static const Target& here();
};

}  // namespace kforge
