// One GPU's device nodes for a sandbox (env/gpu_device.h), told from the driver's /proc files, here a stand-in.
#include "env/gpu_device.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ir/error.h"

namespace kforge {
namespace {
namespace fs = std::filesystem;

fs::path stand_in(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kforge-gpu-device-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(GpuDevice, ReadsTheUuidAndMinorOfTheGpuAtAPciBusId) {
  fs::path gpus = stand_in("proc");
  fs::create_directories(gpus / "0000:18:00.0");
  std::ofstream(gpus / "0000:18:00.0" / "information") << "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 42\n"
                                                       << "GPU UUID: \t GPU-8c1c2d3e-aaaa-bbbb-cccc-0123456789ab\n"
                                                       << "Bus Location: \t 0000:18:00.0\nDevice Minor: \t 3\n";
  std::optional<GpuDevice> g = gpu_device_at("0000:18:00.0", gpus.string());
  ASSERT_TRUE(g);
  EXPECT_EQ(g->uuid, "GPU-8c1c2d3e-aaaa-bbbb-cccc-0123456789ab");
  EXPECT_EQ(g->minor, 3);
  // The driver's bus ids are upper case where its folders are lower.
  EXPECT_TRUE(gpu_device_at("0000:18:00.0", gpus.string()));
  fs::rename(gpus / "0000:18:00.0", gpus / "0000:af:00.0");
  EXPECT_TRUE(gpu_device_at("0000:AF:00.0", gpus.string()));
  EXPECT_FALSE(gpu_device_at("0000:19:00.0", gpus.string()));
  std::ofstream(gpus / "0000:af:00.0" / "information") << "GPU UUID: \t GPU-1\n";  // no minor: not told
  EXPECT_FALSE(gpu_device_at("0000:af:00.0", gpus.string()));
  fs::remove_all(gpus);
}

TEST(GpuDevice, ShowsTheControlNodesAndThatGpusNodeOnly) {
  fs::path dev = stand_in("dev");
  for (const char* n : {"nvidiactl", "nvidia-uvm", "nvidia0", "nvidia1", "nvidia3", "nvidia-modeset"}) std::ofstream(dev / n).flush();
  std::vector<std::string> nodes = device_nodes_of({"GPU-x", 3}, dev.string());
  std::vector<std::string> want = {(dev / "nvidiactl").string(), (dev / "nvidia-uvm").string(), (dev / "nvidia3").string()};
  EXPECT_EQ(nodes, want);
  fs::remove_all(dev);
}

TEST(GpuDevice, SetsTheVisibleDeviceToTheUuidAndRefusesAGpuWithoutANode) {
  SandboxOptions o;
  o.gpu = true;
  o.env.push_back({"CUDA_VISIBLE_DEVICES", "1"});
  try {
    show_only(o, {"GPU-x", 97});  // no /dev/nvidia97 on any machine this runs on
    ADD_FAILURE() << "a GPU without a device node was shown";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no device node /dev/nvidia97"), std::string::npos) << e.what();
  }
  if (!fs::exists("/dev/nvidia0")) GTEST_SKIP() << "no GPU device node here";
  show_only(o, {"GPU-x", 0});
  EXPECT_EQ(o.gpu_nodes.back(), "/dev/nvidia0");
  ASSERT_EQ(o.env.size(), 1u);
  EXPECT_EQ(o.env[0].second, "GPU-x");
}

}  // namespace
}  // namespace kforge
