// Prints the hack catalogue's plans (common/hack_plans.h) as JSON, [{"name", "expect", "plan"}], so that
// scripts/fault_injection.sh can submit them to the service as `plan` jobs.
#include <iostream>

#include "common/hack_plans.h"

int main() {
  nlohmann::json out = nlohmann::json::array();
  for (auto& h : kforge::testing::hack_plans()) out.push_back({{"name", h.name}, {"expect", h.expect}, {"plan", h.plan.to_json()}});
  std::cout << out.dump() << "\n";
}
