// The op graph. Every value (graph input, parameter, operation) is a Node in one topologically ordered
// vector; an argument is the index of an earlier node (-1 for an absent optional argument). Ops carry
// their attributes as JSON so that new ops need no new struct; shape_rules.cpp gives each op its meaning.
#pragma once
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/types.h"

namespace kforge {

using json = nlohmann::json;

struct Node {
  std::string name;
  std::string op;  // "input", "param", or an op of docs/interfaces.md / primitives.h
  std::vector<int> args;
  json attrs = json::object();
  TensorType type;

  // Typed attribute access; a missing or mistyped attribute is a UserError naming node and key.
  double attr_f(const std::string& key) const;
  int64_t attr_i(const std::string& key) const;
  bool attr_b(const std::string& key) const;
  std::string attr_s(const std::string& key) const;
  std::vector<int64_t> attr_ints(const std::string& key) const;
  bool has_attr(const std::string& key) const;
  // An optional numeric attribute: nullopt when absent or null.
  std::optional<double> attr_opt_f(const std::string& key) const;
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<int> inputs, params, outputs;

  int find(const std::string& name) const;  // -1 when absent
  const Node& at(int id) const { return nodes.at(id); }
  // Appends a node whose type the caller has set; returns its id.
  int add(Node n);
  // Number of uses of each node by other nodes and by the outputs.
  std::vector<int> use_counts() const;
  // The nodes reading each node, in order (a node reading one twice listed twice); the outputs not among them.
  std::vector<std::vector<int>> readers() const;
};

// `base`, or `base`_1, _2, ...: the first that names no node of any graph in `graphs` (a pass building a graph
// from another names its new nodes so).
std::string fresh_name(const std::string& base, std::initializer_list<const Graph*> graphs);
// A pass rewriting `from` node by node into `to` (node i became at[i]): `from`'s inputs, params and outputs in `to`.
void copy_roles(const Graph& from, const std::vector<int>& at, Graph& to);

Graph graph_from_json(const json& j);  // checks names and argument order, then infers types
// Bytes a task must move at least: its inputs and params read once (what its slices take, where it is read only
// through slices), its outputs written once. The roofline floor of the reward and of the search's features.
int64_t min_bytes(const Graph& g);
// {"dtype", "shape"} of a value; throws UserError naming `what` where it is malformed.
TensorType type_from_json(const json& j, const std::string& what);
json graph_to_json(const Graph& g);

}  // namespace kforge
