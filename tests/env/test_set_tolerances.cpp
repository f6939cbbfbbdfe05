// The strict tier per hidden set and output (task.json "strict_tolerance"): read from a bundle, the global one for
// bundles written before it, and refused naming the set and output where it is malformed or outside the tiers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/scratch_path.h"
#include "env/bundle.h"
#include "env/verify.h"
#include "ir/error.h"

namespace kforge {
namespace {

// A bundle folder with task.json only (load_bundle maps the data files later, on demand): two sets, and a graph of
// two outputs.
std::string write_bundle(const std::string& name, const nlohmann::json& extra) {
  nlohmann::json graph = {{"version", 1},
                          {"inputs", {{{"name", "x"}, {"dtype", "f32"}, {"shape", {4}}}}},
                          {"params", nlohmann::json::array()},
                          {"nodes", {{{"name", "relu_1"}, {"op", "relu"}, {"args", {"x"}}, {"attrs", nlohmann::json::object()}},
                                     {{"name", "exp_1"}, {"op", "exp"}, {"args", {"x"}}, {"attrs", nlohmann::json::object()}}}},
                          {"outputs", {"relu_1", "exp_1"}}};
  nlohmann::json task = {{"name", name}, {"graph", graph}, {"num_sets", 2},
                         {"tolerance", {{"strict", 1e-4}, {"relaxed", 1e-2}}}};
  task.update(extra);
  std::string dir = testing::scratch_path(name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/task.json") << task.dump();
  return dir;
}

std::string load_error(const std::string& dir) {
  try {
    load_bundle(dir);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(SetTolerances, EachSetAndOutputGetsItsOwnStrictTierAndTheRelaxedOneStays) {
  Bundle b = load_bundle(write_bundle("widened", {{"strict_tolerance", {{1e-4, 1e-4}, {1e-4, 3.5e-4}}}}));
  const Tolerance global;
  Tolerance t = b.tolerances.at(global, 1, 1);
  EXPECT_EQ(t.strict, 3.5e-4);
  EXPECT_EQ(t.relaxed, 1e-2);
  EXPECT_EQ(b.tolerances.at(global, 1, 0).strict, 1e-4);
  EXPECT_EQ(b.tolerances.at(global, 0, 1).strict, 1e-4);
}

TEST(SetTolerances, ABundleWrittenBeforeThemUsesTheGlobalTolerance) {
  Bundle b = load_bundle(write_bundle("old", nlohmann::json::object()));
  EXPECT_TRUE(b.tolerances.empty());
  Tolerance global{2e-4, 1e-2};
  EXPECT_EQ(b.tolerances.at(global, 1, 1).strict, 2e-4);
}

TEST(SetTolerances, MalformedOnesAreRefusedNamingTheSetAndOutput) {
  std::string e = load_error(write_bundle("short", {{"strict_tolerance", {{1e-4, 1e-4}}}}));
  EXPECT_NE(e.find("'strict_tolerance': strict tolerances for 1 input sets; the task has 2"), std::string::npos) << e;
  e = load_error(write_bundle("outputs", {{"strict_tolerance", {{1e-4, 1e-4}, {1e-4}}}}));
  EXPECT_NE(e.find("set 1: strict tolerances for 1 outputs; the graph returns 2"), std::string::npos) << e;
  // Looser than the relaxed tier, or tighter than the strict one: not a tolerance the bridge writes.
  e = load_error(write_bundle("loose", {{"strict_tolerance", {{1e-4, 1e-4}, {1e-4, 0.5}}}}));
  EXPECT_NE(e.find("set 1, output 1: strict tolerance 0.5 outside [1e-4, 0.01]"), std::string::npos) << e;
  e = load_error(write_bundle("tight", {{"strict_tolerance", {{1e-5, 1e-4}, {1e-4, 1e-4}}}}));
  EXPECT_NE(e.find("set 0, output 0"), std::string::npos) << e;
  e = load_error(write_bundle("text", {{"strict_tolerance", {{"1e-4", 1e-4}, {1e-4, 1e-4}}}}));
  EXPECT_NE(e.find("'strict_tolerance' must be a list"), std::string::npos) << e;
}

TEST(SetTolerances, AFailureNamesTheToleranceItWasJudgedWith) {
  CompareResult c;
  c.count = 10;
  c.bad_strict = c.bad_relaxed = 1;
  c.tol = {3.5e-4, 1e-2};
  std::string d = c.describe("y");
  EXPECT_NE(d.find("1 of 10 elements outside 3.5e-4, 1 outside 0.01"), std::string::npos) << d;
}

}  // namespace
}  // namespace kforge
