// `kforge serve`: the command-line face of the service (server/service.h, server/http_api.h).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace kforge {

struct ServeArgs {
  std::string host = "127.0.0.1", work_dir = "kforge_service";
  int port = 8080, workers = 1, slots_per_gpu = 2, compile_workers = 2, drawn_every = 128;
  double gpu_memory_gib = 0;  // 0: 90% of the GPU's
  int64_t memory_mib = 32768;
  int64_t max_queue = 256;
  double job_timeout_s = 300;
  size_t max_body = 8 << 20;
  std::string sandbox_user = "nobody", memory_cgroup;
  std::string tokens, data_root;
  int64_t max_queue_per_token = 0;
  bool unsafe_shared = false;
  uint32_t sandbox_uid_base = 0;
  double rate_per_token = 0;
};

CLI::App* add_serve_command(CLI::App& app, ServeArgs& a);
int run_serve(const ServeArgs& a, const char* argv0);

}  // namespace kforge
