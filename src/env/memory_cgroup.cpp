#include "env/memory_cgroup.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace kforge {

namespace fs = std::filesystem;

namespace {
bool write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
  f.flush();
  return bool(f);
}
std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

std::unique_ptr<MemoryCgroup> MemoryCgroup::create(const std::string& parent, int64_t limit, int64_t max_processes,
                                                   std::string& why) {
  static std::atomic<int> counter{0};
  if (read_text(fs::path(parent) / "cgroup.subtree_control").find("memory") == std::string::npos) {
    why = parent + " is not a cgroup v2 folder with the memory controller enabled for its children";
    return nullptr;
  }
  auto cg = std::unique_ptr<MemoryCgroup>(new MemoryCgroup);
  cg->dir_ = (fs::path(parent) / ("kforge-" + std::to_string(getpid()) + "-" + std::to_string(counter++))).string();
  cg->procs_ = cg->dir_ + "/cgroup.procs";
  cg->limit_ = limit;
  std::error_code ec;
  if (!fs::create_directory(cg->dir_, ec)) {
    why = "cannot create " + cg->dir_ + (ec ? ": " + ec.message() : "");
    cg->dir_.clear();
    return nullptr;
  }
  if (!write_file(fs::path(cg->dir_) / "memory.max", std::to_string(limit))) {
    why = "cannot set memory.max in " + cg->dir_;
    return nullptr;  // the destructor removes the folder
  }
  write_file(fs::path(cg->dir_) / "memory.swap.max", "0");  // absent without swap accounting: fine
  write_file(fs::path(cg->dir_) / "memory.oom.group", "1");
  if (max_processes > 0 && fs::exists(fs::path(cg->dir_) / "pids.max") &&
      !write_file(fs::path(cg->dir_) / "pids.max", std::to_string(max_processes))) {
    why = "cannot set pids.max in " + cg->dir_;
    return nullptr;
  }
  return cg;
}

bool MemoryCgroup::oom_killed() const {
  std::istringstream events(read_text(fs::path(dir_) / "memory.events"));
  std::string key;
  int64_t n = 0;
  while (events >> key >> n)
    if (key == "oom_kill" && n > 0) return true;
  return false;
}

int64_t MemoryCgroup::peak_bytes() const {
  std::string peak = read_text(fs::path(dir_) / "memory.peak");
  return peak.empty() ? limit_ : std::stoll(peak);
}

void MemoryCgroup::kill_all() const {
  if (write_file(fs::path(dir_) / "cgroup.kill", "1")) return;  // Linux 5.14+
  std::istringstream procs(read_text(procs_));
  for (pid_t pid; procs >> pid;) kill(pid, SIGKILL);
}

MemoryCgroup::~MemoryCgroup() {
  if (dir_.empty()) return;
  kill_all();
  // rmdir succeeds once the killed processes are gone; they go within milliseconds.
  for (int i = 0; i < 200 && rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace kforge
