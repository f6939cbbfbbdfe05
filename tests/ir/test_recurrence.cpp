// The recurrence op's rules (ir/recurrence.h): its result's shape, and the error each malformed node gets.
#include <gtest/gtest.h>

#include "common/recurrence_graphs.h"
#include "ir/error.h"
#include "ir/graph.h"

namespace kforge {
namespace {

nlohmann::json with(nlohmann::json graph, const std::function<void(nlohmann::json&)>& change) {
  change(graph["nodes"].back());
  return graph;
}

std::string error_of(const nlohmann::json& graph) {
  try {
    graph_from_json(graph);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Recurrence, ResultIsEveryStepsState) {
  Graph g = graph_from_json(testing::recurrence_graph({"lstm", "lstm", 7, 3, 40}));
  EXPECT_EQ(g.at(g.outputs[0]).type.shape, (Shape{7, 3, 40}));
  Graph gru = graph_from_json(testing::recurrence_graph({"gru", "gru", 2, 5, 8, true, false, false}));
  EXPECT_EQ(gru.at(gru.outputs[0]).type.shape, (Shape{2, 5, 8}));
}

TEST(Recurrence, MalformedNodesAreNamed) {
  const nlohmann::json lstm = testing::recurrence_graph({"lstm", "lstm", 7, 3, 40});
  EXPECT_NE(error_of(with(lstm, [](auto& n) { n["attrs"]["cell"] = "lstmish"; })).find("unknown cell 'lstmish'"), std::string::npos);
  EXPECT_NE(error_of(with(lstm, [](auto& n) { n["args"][3] = "h0"; n["args"][2] = "x"; })).find("h0 must be [3, 40]"),
            std::string::npos);
  EXPECT_NE(error_of(with(lstm, [](auto& n) { n["args"][2] = "c0"; n["args"][0] = "h0"; })).find("x must be [T, N, G*H]"),
            std::string::npos);
  EXPECT_NE(error_of(with(lstm, [](auto& n) { n["attrs"]["state"] = "z"; })).find("state must be 'h' or 'c'"), std::string::npos);
  const nlohmann::json gru = testing::recurrence_graph({"gru", "gru", 2, 5, 8});
  EXPECT_NE(error_of(with(gru, [](auto& n) { n["attrs"]["state"] = "c"; })).find("an LSTM's"), std::string::npos);
  EXPECT_NE(error_of(with(gru, [](auto& n) { n["args"][3] = "h0"; })).find("c0 is an LSTM's only"), std::string::npos);
  // a GRU's x has 3 gates' columns; an LSTM's weights 4 gates' rows
  EXPECT_NE(error_of(with(gru, [](auto& n) { n["attrs"]["cell"] = "lstm"; n["args"][3] = "h0"; })).find("needs x's last dim"),
            std::string::npos);
  EXPECT_NE(error_of(with(gru, [](auto& n) { n["args"].erase(4); })).find("takes 5 arguments"), std::string::npos);
}

}  // namespace
}  // namespace kforge
