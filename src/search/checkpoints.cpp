// Where policy checkpoints live: DIR/policy-<step>.pt, zero-padded so that names sort by step.
#include <cstdio>
#include <filesystem>

#include "ir/error.h"
#include "search/learned_policy.h"

namespace kforge {

std::string checkpoint_path(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "policy-%06lld.pt", static_cast<long long>(step));
  return (std::filesystem::path(dir) / name).string();
}

std::string newest_checkpoint(const std::string& dir) {
  std::string best;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return best;
  for (auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("policy-", 0) == 0 && entry.path().extension() == ".pt" && entry.path().string() > best)
      best = entry.path().string();
  }
  return best;
}

std::unique_ptr<LearnedPolicy> resume_or_start(const std::string& dir, const PolicyOptions& opts) {
  std::string newest = newest_checkpoint(dir);
  return newest.empty() ? std::make_unique<LearnedPolicy>(opts) : LearnedPolicy::load(newest, opts);
}

nlohmann::json checkpoint_schema() {
  return {{"action_space", action_space_version()}, {"features", decision_feature_names()}};
}

void check_checkpoint_schema(const nlohmann::json& meta, const std::string& path) {
  nlohmann::json want = checkpoint_schema();
  if (meta.value("action_space", std::string()) != want["action_space"].get<std::string>() ||
      meta.value("features", nlohmann::json()) != want["features"])
    throw UserError("policy checkpoint " + path + " was trained on action space " + meta.value("action_space", "?") +
                    ", this kforge has " + want["action_space"].get<std::string>() +
                    "; train a new policy (kforge train) or use the kforge that wrote it");
}

}  // namespace kforge
