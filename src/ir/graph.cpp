#include "ir/graph.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "ir/error.h"
#include "ir/shape_rules.h"

namespace kforge {

namespace {
[[noreturn]] void bad_attr(const Node& n, const std::string& key, const std::string& want) {
  throw UserError("node '" + n.name + "' (op " + n.op + "): attribute '" + key + "' must be " + want +
                  (n.attrs.contains(key) ? ", got " + n.attrs[key].dump() : ", but it is missing"));
}
}  // namespace

bool Node::has_attr(const std::string& key) const { return attrs.contains(key) && !attrs[key].is_null(); }

double Node::attr_f(const std::string& key) const {
  // JSON has no inf or nan: the bridge writes them as these strings.
  if (attrs.contains(key) && attrs[key].is_string()) {
    const std::string& s = attrs[key].get_ref<const std::string&>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  if (!attrs.contains(key) || !attrs[key].is_number()) bad_attr(*this, key, "a number (or \"inf\", \"-inf\", \"nan\")");
  return attrs[key].get<double>();
}
std::optional<double> Node::attr_opt_f(const std::string& key) const {
  if (!has_attr(key)) return std::nullopt;
  return attr_f(key);
}
int64_t Node::attr_i(const std::string& key) const {
  if (!attrs.contains(key) || !attrs[key].is_number_integer()) bad_attr(*this, key, "an integer");
  return attrs[key].get<int64_t>();
}
bool Node::attr_b(const std::string& key) const {
  if (!attrs.contains(key) || !attrs[key].is_boolean()) bad_attr(*this, key, "true or false");
  return attrs[key].get<bool>();
}
std::string Node::attr_s(const std::string& key) const {
  if (!attrs.contains(key) || !attrs[key].is_string()) bad_attr(*this, key, "a string");
  return attrs[key].get<std::string>();
}
std::vector<int64_t> Node::attr_ints(const std::string& key) const {
  if (!attrs.contains(key) || !attrs[key].is_array()) bad_attr(*this, key, "a list of integers");
  std::vector<int64_t> out;
  for (auto& v : attrs[key]) {
    if (!v.is_number_integer()) bad_attr(*this, key, "a list of integers");
    out.push_back(v.get<int64_t>());
  }
  return out;
}

int Graph::find(const std::string& name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name) return int(i);
  return -1;
}

void copy_roles(const Graph& from, const std::vector<int>& at, Graph& to) {
  for (int id : from.inputs) to.inputs.push_back(at[size_t(id)]);
  for (int id : from.params) to.params.push_back(at[size_t(id)]);
  for (int id : from.outputs) to.outputs.push_back(at[size_t(id)]);
}

std::string fresh_name(const std::string& base, std::initializer_list<const Graph*> graphs) {
  auto used = [&](const std::string& name) {
    for (const Graph* g : graphs)
      if (g->find(name) >= 0) return true;
    return false;
  };
  std::string name = base;
  for (int i = 1; used(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

int Graph::add(Node n) {
  nodes.push_back(std::move(n));
  return int(nodes.size()) - 1;
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(nodes.size(), 0);
  for (auto& n : nodes)
    for (int a : n.args)
      if (a >= 0) uses[a]++;
  for (int o : outputs) uses[o]++;
  return uses;
}

std::vector<std::vector<int>> Graph::readers() const {
  std::vector<std::vector<int>> r(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int a : nodes[i].args)
      if (a >= 0) r[size_t(a)].push_back(int(i));
  return r;
}

TensorType type_from_json(const json& j, const std::string& what) {
  if (!j.contains("shape") || !j["shape"].is_array())
    throw UserError(what + ": needs a 'shape' list");
  TensorType t;
  t.dtype = dtype_from_string(j.value("dtype", "f32"));
  for (auto& d : j["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      throw UserError(what + ": shape entries must be non-negative integers, got " + j["shape"].dump());
    t.shape.push_back(d.get<int64_t>());
  }
  return t;
}
namespace {
json type_to_json(const TensorType& t) { return {{"dtype", to_string(t.dtype)}, {"shape", t.shape}}; }
}  // namespace

Graph graph_from_json(const json& j) {
  if (!j.is_object()) throw UserError("graph JSON must be an object");
  Graph g;
  auto define = [&](Node n) {
    if (n.name.empty()) throw UserError("a value in the graph has an empty name");
    if (g.find(n.name) >= 0) throw UserError("value name '" + n.name + "' is defined twice");
    return g.add(std::move(n));
  };
  for (const char* kind : {"inputs", "params"}) {
    for (auto& v : j.value(kind, json::array())) {
      Node n;
      n.name = v.value("name", "");
      n.op = std::string(kind) == "inputs" ? "input" : "param";
      n.type = type_from_json(v, std::string(kind) + " '" + n.name + "'");
      int id = define(std::move(n));
      (std::string(kind) == "inputs" ? g.inputs : g.params).push_back(id);
    }
  }
  for (auto& v : j.value("nodes", json::array())) {
    Node n;
    n.name = v.value("name", "");
    n.op = v.value("op", "");
    if (n.op.empty()) throw UserError("node '" + n.name + "' has no 'op'");
    n.attrs = v.value("attrs", json::object());
    for (auto& a : v.value("args", json::array())) {
      std::string an = a.get<std::string>();
      if (an.empty()) {
        n.args.push_back(-1);
        continue;
      }
      int id = g.find(an);
      if (id < 0)
        throw UserError("node '" + n.name + "' (op " + n.op + ") uses '" + an +
                        "', which is not defined before it");
      n.args.push_back(id);
    }
    n.type = infer_type(g, n);
    define(std::move(n));
  }
  for (auto& o : j.value("outputs", json::array())) {
    int id = g.find(o.get<std::string>());
    if (id < 0) throw UserError("graph output '" + o.get<std::string>() + "' is not defined");
    g.outputs.push_back(id);
  }
  if (g.outputs.empty()) throw UserError("graph has no outputs");
  return g;
}

json graph_to_json(const Graph& g) {
  json j = {{"version", 1}, {"inputs", json::array()}, {"params", json::array()},
            {"nodes", json::array()}, {"outputs", json::array()}};
  for (auto& n : g.nodes) {
    if (n.op == "input" || n.op == "param") {
      json v = type_to_json(n.type);
      v["name"] = n.name;
      j[n.op == "input" ? "inputs" : "params"].push_back(v);
      continue;
    }
    json args = json::array();
    for (int a : n.args) args.push_back(a < 0 ? "" : g.nodes[a].name);
    j["nodes"].push_back({{"name", n.name}, {"op", n.op}, {"args", args}, {"attrs", n.attrs},
                          {"type", type_to_json(n.type)}});
  }
  for (int o : g.outputs) j["outputs"].push_back(g.nodes[o].name);
  return j;
}

int64_t min_bytes(const Graph& g) {
  // An input or param read only through slices need not be read whole: what its slices take (at most all of it).
  auto read_bytes = [&](int id) {
    int64_t sliced = 0;
    for (const Node& n : g.nodes)
      if (std::find(n.args.begin(), n.args.end(), id) != n.args.end()) {
        if (n.op != "slice") return nbytes(g.at(id).type);
        sliced += nbytes(n.type);
      }
    return std::min(sliced, nbytes(g.at(id).type));
  };
  int64_t b = 0;
  for (auto* ids : {&g.inputs, &g.params})
    for (int id : *ids) b += read_bytes(id);
  for (int id : g.outputs) b += nbytes(g.at(id).type);
  return b;
}

}  // namespace kforge
