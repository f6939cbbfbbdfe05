// The recurrence op's rules (ir/recurrence.h): its result's shape, and the error each malformed node gets.
#include <gtest/gtest.h>

#include "common/graph_errors.h"
#include "common/recurrence_graphs.h"
#include "ir/graph.h"

namespace kforge {
namespace {

nlohmann::json with(nlohmann::json graph, const std::function<void(nlohmann::json&)>& change) {
  change(graph["nodes"].back());
  return graph;
}

TEST(Recurrence, ResultIsEveryStepsState) {
  Graph g = graph_from_json(testing::recurrence_graph({"lstm", "lstm", 7, 3, 40}));
  EXPECT_EQ(g.at(g.outputs[0]).type.shape, (Shape{7, 3, 40}));
  Graph gru = graph_from_json(testing::recurrence_graph({"gru", "gru", 2, 5, 8, true, false, false}));
  EXPECT_EQ(gru.at(gru.outputs[0]).type.shape, (Shape{2, 5, 8}));
  Graph both = graph_from_json(testing::recurrence_graph({"gru", "gru", 2, 5, 8, false, false, true, true, 2}));
  EXPECT_EQ(both.at(both.outputs[0]).type.shape, (Shape{2, 5, 16}));  // the directions side by side
  Graph hc = graph_from_json(testing::recurrence_graph({"lstm", "lstm", 2, 5, 8, false, false, true, true, 2, true}));
  EXPECT_EQ(hc.at(hc.outputs[0]).type.shape, (Shape{2, 5, 32}));  // h and c of each direction
}

TEST(Recurrence, MalformedNodesAreNamed) {
  const nlohmann::json lstm = testing::recurrence_graph({"lstm", "lstm", 7, 3, 40});
  testing::expect_graph_error(with(lstm, [](auto& n) { n["attrs"]["cell"] = "lstmish"; }), "unknown cell 'lstmish'");
  testing::expect_graph_error(with(lstm, [](auto& n) { n["args"][3] = "h0"; n["args"][2] = "x"; }), "h0 must be [3, 40]");
  testing::expect_graph_error(with(lstm, [](auto& n) { n["args"][2] = "c0"; n["args"][0] = "h0"; }), "x must be [T, N, G*H]");
  testing::expect_graph_error(with(lstm, [](auto& n) { n["attrs"]["state"] = "z"; }), "state must be 'h', 'c' or 'hc'");
  const nlohmann::json gru = testing::recurrence_graph({"gru", "gru", 2, 5, 8});
  testing::expect_graph_error(with(gru, [](auto& n) { n["attrs"]["state"] = "c"; }), "an LSTM's");
  testing::expect_graph_error(with(gru, [](auto& n) { n["args"][3] = "h0"; }), "c0 is an LSTM's only");
  // a GRU's x has 3 gates' columns; an LSTM's weights 4 gates' rows
  testing::expect_graph_error(with(gru, [](auto& n) { n["attrs"]["cell"] = "lstm"; n["args"][3] = "h0"; }), "needs x [2, 5, 32] and w_hh [32, 8]");
  testing::expect_graph_error(with(gru, [](auto& n) { n["args"].erase(4); }), "takes 5 arguments a direction");
  // two directions: ten arguments, the backward one's as the forward one's
  const nlohmann::json both = testing::recurrence_graph({"gru", "gru", 2, 5, 8, false, false, true, true, 2});
  EXPECT_NO_THROW(graph_from_json(both));
  testing::expect_graph_error(with(both, [](auto& n) { n["attrs"]["reverse"] = true; }), "reverse is for one direction");
  testing::expect_graph_error(with(both, [](auto& n) { n["args"][9] = ""; }), "both have, or both lack");
  testing::expect_graph_error(with(both, [](auto& n) { n["args"][5] = "x_0"; n["args"][6] = "h0_1"; }), "(backward)");
  testing::expect_graph_error(with(both, [](auto& n) { n["attrs"]["directions"] = 3; }), "directions must be 1 or 2");
}

}  // namespace
}  // namespace kforge
