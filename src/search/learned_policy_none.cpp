// Builds without libtorch: the learned policy says what is missing.
#include "ir/error.h"
#include "search/learned_policy.h"

namespace kforge {

namespace {
[[noreturn]] void missing() {
  throw UserError("this kforge was built without libtorch, so it has no learned policy (pip install torch, "
                  "then rebuild: CMake finds it through torch.utils.cmake_prefix_path)");
}
}  // namespace

nlohmann::json UpdateStats::to_json() const { return nlohmann::json::object(); }
struct LearnedPolicy::Impl {};
LearnedPolicy::LearnedPolicy(const PolicyOptions&) { missing(); }
LearnedPolicy::~LearnedPolicy() = default;
Episode LearnedPolicy::sample(const GraphAnalysis&, const GpuInfo&, bool, double) { missing(); }
std::vector<Schedule> LearnedPolicy::propose(const GraphAnalysis&, const GpuInfo&, int) { missing(); }
Episode LearnedPolicy::replay(const GraphAnalysis&, const GpuInfo&, const Schedule&) { missing(); }
std::vector<double> LearnedPolicy::probabilities(const Decision&) const { missing(); }
double LearnedPolicy::value(const FeatureRow&) const { missing(); }
UpdateStats LearnedPolicy::update(const std::vector<Episode>&) { missing(); }
UpdateStats LearnedPolicy::imitate(const std::vector<Episode>&, int) { missing(); }
int64_t LearnedPolicy::step() const { missing(); }
nlohmann::json& LearnedPolicy::progress() { missing(); }
void LearnedPolicy::save(const std::string&) const { missing(); }
std::unique_ptr<LearnedPolicy> LearnedPolicy::load(const std::string&, const PolicyOptions&) { missing(); }
bool learned_policy_available() { return false; }

}  // namespace kforge
