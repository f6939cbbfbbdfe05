#include "env/gpu_device.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "runtime/driver.h"

namespace kforge {
namespace fs = std::filesystem;

namespace {
std::string trimmed(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}
}  // namespace

std::optional<GpuDevice> gpu_device_at(const std::string& pci_bus_id, const std::string& gpus_dir) {
  std::string bus = pci_bus_id;  // the driver's folders are lower case
  std::transform(bus.begin(), bus.end(), bus.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  std::ifstream info(fs::path(gpus_dir) / bus / "information");
  if (!info) return std::nullopt;
  GpuDevice g;
  for (std::string line; std::getline(info, line);) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trimmed(line.substr(0, colon)), value = trimmed(line.substr(colon + 1));
    if (key == "GPU UUID") g.uuid = value;
    if (key == "Device Minor") try {
        g.minor = std::stoi(value);
      } catch (const std::exception&) {
      }
  }
  if (g.uuid.rfind("GPU-", 0) != 0 || g.minor < 0) return std::nullopt;
  return g;
}

GpuDevice gpu_device(int ordinal) {
  const Driver& d = driver();
  CUdevice dev;
  KF_CU(d.cuDeviceGet(&dev, ordinal));
  char bus[32] = {};
  KF_CU(d.cuDeviceGetPCIBusId(bus, sizeof bus, dev));
  std::optional<GpuDevice> g = gpu_device_at(bus);
  if (!g)
    throw UserError("GPU " + std::to_string(ordinal) + " (PCI " + bus + "): no UUID and device minor in "
                    "/proc/driver/nvidia/gpus/" + bus + "/information");
  return *g;
}

std::vector<std::string> device_nodes_of(const GpuDevice& gpu, const std::string& dev) {
  std::vector<std::string> nodes;
  for (const std::string& name : std::vector<std::string>{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps", "nvidia" + std::to_string(gpu.minor)}) {
    std::error_code ec;
    if (fs::exists(fs::path(dev) / name, ec)) nodes.push_back((fs::path(dev) / name).string());
  }
  return nodes;
}

void show_only(SandboxOptions& o, const GpuDevice& gpu) {
  o.gpu_nodes = device_nodes_of(gpu);
  if (o.gpu_nodes.empty() || o.gpu_nodes.back() != "/dev/nvidia" + std::to_string(gpu.minor))
    throw UserError("GPU " + gpu.uuid + ": no device node /dev/nvidia" + std::to_string(gpu.minor));
  std::erase_if(o.env, [](const auto& kv) { return kv.first == "CUDA_VISIBLE_DEVICES"; });
  o.env.push_back({"CUDA_VISIBLE_DEVICES", gpu.uuid});
}

}  // namespace kforge
