// One GPU's device nodes for a sandbox: a job is shown the GPU it was given and no other. The driver opens
// /dev/nvidia<minor> for each GPU it uses (beside the control and unified-memory nodes every process needs),
// so a sandbox that binds only that GPU's node cannot open another's, whatever its environment says; the
// GPU's UUID in CUDA_VISIBLE_DEVICES makes it the process's device 0. What the kernel enforces is the
// missing node; the variable only keeps the driver from trying the others.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "env/sandbox.h"

namespace kforge {

struct GpuDevice {
  std::string uuid;  // "GPU-8c1c...": CUDA_VISIBLE_DEVICES takes it
  int minor = -1;    // its node is /dev/nvidia<minor>
};

// The GPU at a PCI bus id ("0000:18:00.0", as cuDeviceGetPCIBusId writes it), from the driver's
// <gpus_dir>/<bus id>/information ("GPU UUID:", "Device Minor:"); nullopt where there is no such GPU.
std::optional<GpuDevice> gpu_device_at(const std::string& pci_bus_id, const std::string& gpus_dir = "/proc/driver/nvidia/gpus");

// GPU `ordinal` of this process's CUDA numbering (its CUDA_VISIBLE_DEVICES applied). Throws UserError naming
// why where it cannot be told (no driver, no such device, no /proc/driver/nvidia).
GpuDevice gpu_device(int ordinal);

// The device nodes a process needs to use `gpu` alone: /dev/nvidiactl, the unified-memory nodes and MIG's
// capabilities where they exist, and /dev/nvidia<minor>. Under `dev` (a test's folder; /dev otherwise).
std::vector<std::string> device_nodes_of(const GpuDevice& gpu, const std::string& dev = "/dev");

// Shows `o` (a sandbox with o.gpu) that GPU alone: its nodes, and CUDA_VISIBLE_DEVICES set to its UUID.
void show_only(SandboxOptions& o, const GpuDevice& gpu);

}  // namespace kforge
