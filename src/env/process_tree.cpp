#include "env/process_tree.h"

#include <dirent.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace kforge {

namespace {

// The parent of `pid` from /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold spaces and
// parentheses, so parse after the last ')'); -1 when it is gone.
pid_t parent_of(pid_t pid) {
  char path[64], buf[512];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return -1;
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* close_paren = std::strrchr(buf, ')');
  int ppid = -1;
  if (!close_paren || std::sscanf(close_paren + 1, " %*c %d", &ppid) != 1) return -1;
  return ppid;
}

int64_t resident_bytes(pid_t pid) {
  char path[64], line[256];
  std::snprintf(path, sizeof path, "/proc/%d/status", int(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  int64_t kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmRSS:", 6) == 0) {
      kib = std::atoll(line + 6);
      break;
    }
  std::fclose(f);
  return kib * 1024;
}

}  // namespace

std::vector<pid_t> process_tree(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      pid_t pid = std::atoi(e->d_name);
      if (pid > 0) children.emplace(parent_of(pid), pid);
    }
    closedir(d);
  }
  std::vector<pid_t> tree = {root};
  for (size_t i = 0; i < tree.size(); ++i) {
    auto [lo, hi] = children.equal_range(tree[i]);
    for (auto it = lo; it != hi; ++it) tree.push_back(it->second);
  }
  return tree;
}

int64_t tree_resident_bytes(pid_t root) {
  int64_t total = 0;
  for (pid_t p : process_tree(root)) total += resident_bytes(p);
  return total;
}

void kill_tree(pid_t root) {
  std::vector<pid_t> tree = process_tree(root);  // first: once the root dies its children move to another parent
  kill(-root, SIGKILL);
  for (pid_t p : tree) kill(p, SIGKILL);
}

}  // namespace kforge
