// For tests of graphs that must be refused: graph_from_json must throw a UserError whose message contains
// `fragment` (the node, the op and the cause), and the test fails naming what it got instead.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"
#include "ir/graph.h"

namespace kforge::testing {

inline void expect_graph_error(const nlohmann::json& graph, const std::string& fragment) {
  try {
    graph_from_json(graph);
    FAIL() << "expected an error containing '" << fragment << "'";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace kforge::testing
