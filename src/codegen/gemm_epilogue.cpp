#include "codegen/gemm_epilogue.h"

#include <algorithm>

#include "ir/matmul.h"

namespace kforge {

namespace {

struct Folder {
  Graph g;
  std::vector<int> uses;

  // A product node that a following op may take over: its only reader is that op.
  bool foldable_product(int id) const {
    const Node& n = g.at(id);
    bool output = std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end();
    return n.op == "matmul" && uses[id] == 1 && !output;
  }
  Epilogue epilogue(int id) const { return epilogue_from_string(g.at(id).attrs.value("epilogue", "none")); }

  // Replaces node `id` by the product `mm` with epilogue `e` (and a new bias argument), under `id`'s name
  // and type; `mm` is left without readers.
  void take_over(int id, int mm, Epilogue e, int new_bias) {
    Node n = g.at(mm);
    n.name = g.at(id).name;
    n.attrs["epilogue"] = to_string(e);
    if (new_bias >= 0) n.args.push_back(new_bias);
    n.type = g.at(id).type;
    g.nodes[id] = std::move(n);
  }

  // add(mm, bias) or add(bias, mm) with bias one value per column of mm: a bias epilogue.
  bool fold_bias(int id) {
    const Node& n = g.at(id);
    for (int side : {0, 1}) {
      int mm = n.args[side], bias = n.args[1 - side];
      if (!foldable_product(mm) || epilogue(mm) != Epilogue::none) continue;
      const TensorType &p = g.at(mm).type, &b = g.at(bias).type;
      bool per_column = b.dtype == DType::f32 && !b.shape.empty() && b.shape.back() == p.shape.back() &&
                        numel(b.shape) == p.shape.back() && b.shape.size() <= p.shape.size();
      if (!per_column || n.type != p) continue;
      take_over(id, mm, Epilogue::bias, bias);
      return true;
    }
    return false;
  }

  // triangle(mm): only the triangle of the product is read, so its steps need compute only the row blocks' parts
  // that reach it (emit_matmul.cpp); the triangle op still zeroes the rest. Marked, not folded.
  void mark_triangle(int id) {
    const Node& n = g.at(id);
    if (n.op != "triangle" || !foldable_product(n.args[0])) return;
    g.nodes[n.args[0]].attrs["triangle"] = {{"upper", n.attr_b("upper")}, {"diagonal", n.attr_i("diagonal")}};
  }

  // relu(mm) or gelu_tanh(mm), mm without an activation yet.
  bool fold_activation(int id) {
    const Node& n = g.at(id);
    bool relu = n.op == "relu";
    bool gelu = n.op == "gelu" && n.attrs.value("approximate", "none") == "tanh";
    int mm = n.args[0];
    if (!(relu || gelu) || !foldable_product(mm)) return false;
    Epilogue e = epilogue(mm);
    if (e != Epilogue::none && e != Epilogue::bias) return false;
    take_over(id, mm, with_activation(e, relu ? "relu" : "gelu"), -1);  // a bias is already mm's argument
    return true;
  }
};

}  // namespace

Graph fold_gemm_epilogues(const Graph& prim) {
  Folder f{prim, prim.use_counts()};
  // In order, so that relu(add(mm, bias)) first folds the add, then the relu into the result.
  for (size_t i = 0; i < f.g.nodes.size(); ++i) {
    const std::string& op = f.g.nodes[i].op;
    if (op == "add") f.fold_bias(int(i));
    else if (op == "relu" || op == "gelu") f.fold_activation(int(i));
    else if (op == "triangle") f.mark_triangle(int(i));
  }
  return f.g;
}

}  // namespace kforge
