#include "codegen/partition.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/access.h"
#include "ir/error.h"
#include "ir/half_operands.h"
#include "ir/ops.h"
#include "ir/shape_rules.h"

namespace kforge {

std::string to_string(GroupKind k) {
  switch (k) {
    case GroupKind::pointwise: return "pointwise";
    case GroupKind::row: return "row";
    case GroupKind::scan: return "scan";
    case GroupKind::pool: return "pool";
    case GroupKind::matmul: return "matmul";
    case GroupKind::conv: return "conv";
    case GroupKind::recurrence: return "recurrence";
    case GroupKind::attention: return "attention";
  }
  return "?";
}

namespace {

bool is_source(const Node& n) { return n.op == "input" || n.op == "param"; }

struct Partitioner {
  const Graph& g;
  bool fuse_rows;
  Partition p;
  std::vector<bool> reachable;
  std::vector<std::vector<bool>> depends;  // depends[a][b]: a reads b, directly or not
  std::vector<int> group_of;               // root node -> index into p.groups, -1 otherwise

  Partitioner(const Graph& graph, bool fuse) : g(graph), fuse_rows(fuse) {}

  void mark_reachable() {
    reachable.assign(g.nodes.size(), false);
    std::vector<int> stack(g.outputs.begin(), g.outputs.end());
    while (!stack.empty()) {
      int id = stack.back();
      stack.pop_back();
      if (id < 0 || reachable[id]) continue;
      reachable[id] = true;
      for (int a : g.at(id).args) stack.push_back(a);
    }
  }

  void compute_dependencies() {
    size_t n = g.nodes.size();
    depends.assign(n, std::vector<bool>(n, false));
    for (size_t i = 0; i < n; ++i)
      for (int a : g.nodes[i].args) {
        if (a < 0) continue;
        depends[i][a] = true;
        for (size_t k = 0; k < n; ++k)
          if (depends[a][k]) depends[i][k] = true;
      }
  }

  // An elementwise value that more than one reader recomputes is stored where its expression reads more than
  // kMaxRecomputedReads stored values. Why: every kernel reading it recomputes its whole expression, and a
  // recurrence unrolled in time reaches back through every step: an LSTM's cell state c_t = f_t c_(t-1) + i_t g_t
  // (read by h_t and by c_(t+1)) made step t's kernel read the gates of all t steps before it, quadratic in the
  // steps (a 3-layer, 128-step LSTM: 60 ms where PyTorch takes 4). Below the bound a few extra reads cost less
  // than storing the value, which takes a kernel of its own where no pointwise kernel of its shape reads it.
  static constexpr size_t kMaxRecomputedReads = 8;
  void store_deep_recomputations() {
    const std::vector<int> uses = g.use_counts();
    std::vector<std::set<int>> reads(g.nodes.size());  // of each computed value: the stored values it reads
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!reachable[i] || p.stored[i]) continue;
      for (int a : g.nodes[i].args) {
        if (a < 0) continue;
        if (p.stored[a]) reads[i].insert(a);
        else reads[i].insert(reads[a].begin(), reads[a].end());
      }
      if (is_elementwise_op(g.nodes[i].op) && uses[i] > 1 && reads[i].size() > kMaxRecomputedReads) {
        p.stored[i] = true;
        reads[i].clear();
      }
    }
  }

  // Whether every reader of `id` takes it as values (elementwise, not a gather's positions), so that a view of a
  // constant needs no memory: the reader writes the constant where it reads it, a concatenation too (one value a
  // part: a literal tensor of forward is a concatenation of its elements, KernelWriter::cat).
  bool read_as_values(int id, const std::vector<std::vector<int>>& readers) const {
    for (int r : readers[size_t(id)]) {
      const Node& n = g.at(r);
      if (reachable[size_t(r)] && (!is_elementwise_op(n.op) || n.op == "gather")) return false;
    }
    return true;
  }

  // A materialized permute of elementwise arithmetic that nothing else reads computes it in its own kernel, at the
  // tile's source coordinates (emit_pointwise.cpp): the channels-last form's last ops (a norm's apply, a residual add,
  // an activation) and the transpose back to the graph's layout are one kernel reading the operands once, where the
  // arithmetic's result was written, read back and written again transposed.
  bool transposes_its_arithmetic(int id, const std::vector<std::vector<int>>& readers) const {
    if (!materialized_permute(g.at(id)) || !block_transpose(g.at(id).attr_ints("dims"))) return false;
    const int src = g.at(id).args[0];
    const Node& a = g.at(src);
    return is_elementwise_op(a.op) && a.op != "const" && is_float(a.type.dtype) && readers[size_t(src)].size() == 1;
  }

  void mark_stored() {
    size_t n = g.nodes.size();
    p.stored.assign(n, false);
    p.storage.resize(n);
    for (size_t i = 0; i < n; ++i) p.storage[i] = int(i);
    for (int o : g.outputs) p.stored[o] = true;
    const std::vector<std::vector<int>> readers = g.readers();
    for (size_t i = 0; i < n; ++i) {
      const Node& nd = g.nodes[i];
      if (!reachable[i]) continue;
      if (stored_by_nature(nd) || materialized_permute(nd)) p.stored[i] = true;
      // A library call reads its operands (and bias) from memory; a product's transposed operand from its
      // source's, a half-precision task's own input and weight as stored (ir/half_operands.h).
      if (nd.op == "matmul" || is_conv_op(nd.op)) {
        const auto h = half_operands(g, int(i));
        for (size_t j = 0; j < nd.args.size(); ++j) {
          int a = nd.args[j];
          if (h && j < 2) a = j == 0 ? h->a : h->b;
          else if (nd.op == "matmul") a = stored_operand(g, a, false).id;
          p.stored[a] = true;
        }
      }
      // A recurrence's persistent kernel reads each operand whole, contiguous.
      if (nd.op == "recurrence")
        for (int a : nd.args)
          if (a >= 0) p.stored[a] = true;
      // A gather reads its table and a pool its window at computed positions: both need memory.
      // A pool of a half-precision task's input reads it as stored, converting each element (emit_pool.cpp).
      if ((nd.op == "gather" || nd.op == "pool") && !is_view_op(g.at(nd.args[0]).op)) {
        const int half = nd.op == "pool" ? half_cast_source(g, nd.args[0]) : -1;
        p.stored[half >= 0 ? half : nd.args[0]] = true;
      }
      // A concatenation reads each part at its own positions: every part needs memory, but a constant's. A padding
      // reads its input at mirrored or wrapped positions: memory, but for elementwise arithmetic, which its kernel
      // computes at those positions (KernelWriter::pad), so that a norm's apply and activation before a padded
      // convolution are not written and read back.
      if (nd.op == "cat")
        for (int a : nd.args)
          if (!is_view_op(g.at(a).op) && g.at(a).op != "const") p.stored[a] = true;
      if (nd.op == "pad" && !is_view_op(g.at(nd.args[0]).op) && !is_elementwise_op(g.at(nd.args[0]).op))
        p.stored[nd.args[0]] = true;
      // Views are folded into strided reads of stored values only; a view of a computed value stores it.
      if (is_view_op(nd.op) && !(const_through_views(g, int(i)) >= 0 && read_as_values(int(i), readers) && !p.stored[i]) &&
          !transposes_its_arithmetic(int(i), readers)) {
        const Node& src = g.at(nd.args[0]);
        if (!is_view_op(src.op) || (nd.op == "reshape" && src.op != "reshape" && !squeezes_only(g, nd)))
          p.stored[nd.args[0]] = true;
      }
    }
    store_deep_recomputations();
    for (size_t i = 0; i < n; ++i)
      if (reachable[i] && p.stored[i] && g.nodes[i].op == "attention_scores")
        throw UserError("node '" + g.nodes[i].name + "' (attention_scores) is read by something other than an "
                        "attention's elementwise scores: it exists only inside the attention's kernel");
    // A reshape of a stored value is an alias of its memory; stored reshapes own nothing.
    for (size_t i = 0; i < n; ++i) {
      const Node& nd = g.nodes[i];
      if (!reachable[i] || nd.op != "reshape") continue;
      int src = nd.args[0];
      if (p.stored[src]) {
        p.storage[i] = p.storage[src];
        p.stored[i] = true;
      }
    }
    for (int o : g.outputs) {
      const Node& src = g.at(p.storage[o]);
      if (is_source(src))
        throw UserError("graph output '" + g.at(o).name + "' is an unchanged input or parameter ('" +
                        src.name + "'); kforge needs every output to be computed");
      if (g.at(o).op == "const") throw UserError("graph output '" + g.at(o).name + "' is a constant");
    }
  }

  bool is_root(int id) const {
    return reachable[id] && p.stored[id] && p.storage[id] == id && !is_source(g.at(id));
  }

  // Stored values an expression rooted at `id` reads (stopping at stored values).
  void refs(int id, std::set<int>& out, bool top = true) const {
    if (!top && p.stored[id]) {
      out.insert(id);
      return;
    }
    for (int a : g.at(id).args)
      if (a >= 0) refs(a, out, false);
  }

  KernelGroup new_group(int root) {
    const Node& n = g.at(root);
    KernelGroup k;
    k.key = n.name;
    if (n.op == "reduce") {
      k.kind = GroupKind::row;
      k.shape = g.at(n.args[0]).type.shape;
      k.axes = n.attr_ints("dims");
      k.stats = {root};
    } else if (n.op == "scan") {
      k.kind = GroupKind::scan;
      k.shape = n.type.shape;
      k.axes = {n.attr_i("dim")};
      k.anchor = root;
      k.elem_outputs = {root};
    } else if (n.op == "matmul" || is_conv_op(n.op)) {
      k.kind = is_conv_op(n.op) ? GroupKind::conv : GroupKind::matmul;
      k.shape = n.type.shape;
      k.anchor = root;
      k.elem_outputs = {root};
      k.conv_epilogue = is_conv_op(n.op) && (n.args.size() > 2 || n.has_attr("activation"));
      k.channels_last = is_conv_op(n.op) && is_channels_last(n.attrs);
      if (auto h = half_operands(g, root)) k.half_operands = h->dtype;
      if (n.op == "conv") {
        ConvDims d = conv_dims(g.at(n.args[0]).type.shape, g.at(n.args[1]).type.shape, n.attrs, "node '" + n.name + "': ");
        if (depthwise_2d(d)) k.depthwise = d;
      }
    } else if (n.op == "recurrence" || n.op == "attention") {
      k.kind = n.op == "recurrence" ? GroupKind::recurrence : GroupKind::attention;
      k.shape = n.type.shape;
      k.anchor = root;
      k.elem_outputs = {root};
      if (n.op == "recurrence") k.recurrence = recurrence_dims(g, n);
      else k.attention = attention_geometry(g, n), k.half_operands = half_attention(g, n);
    } else if (n.op == "pool") {
      k.kind = GroupKind::pool;
      k.shape = n.type.shape;
      k.anchor = root;
      k.elem_outputs = {root};
    } else {
      k.kind = GroupKind::pointwise;
      k.shape = n.type.shape;
      k.elem_outputs = {root};
    }
    return k;
  }

  // The dtype of a half-precision task's q, k and v where the attention reads all three as casts of 16-bit values of
  // one dtype: exactly representable in it, so its tensor-core kernel can take them in 16 bits.
  static std::optional<DType> half_attention(const Graph& g, const Node& attention) {
    const Node& qk = g.at(scores_product_of(g, attention));
    std::optional<DType> dtype;
    for (int x : {qk.args[0], qk.args[1], attention.args[1]}) {
      const Node& c = g.at(x);
      if (c.op != "cast" || !is_half(g.at(c.args[0]).type.dtype)) return std::nullopt;
      if (dtype && *dtype != g.at(c.args[0]).type.dtype) return std::nullopt;
      dtype = g.at(c.args[0]).type.dtype;
    }
    return dtype;
  }

  std::vector<int> members(const KernelGroup& k) const {
    std::vector<int> m = k.stats;
    m.insert(m.end(), k.elem_outputs.begin(), k.elem_outputs.end());
    m.insert(m.end(), k.row_outputs.begin(), k.row_outputs.end());
    if (k.anchor >= 0 && std::find(m.begin(), m.end(), k.anchor) == m.end()) m.push_back(k.anchor);
    return m;
  }

  // Whether the expression of `id` reads a member of `mem` through a view (expand, permute, flip, slice), a
  // concatenation or a padding (its parts at shifted or mirrored positions) or a gather (its table at computed
  // positions): the kernel would read the member's memory, which it writes itself (or never, for a statistic).
  bool reads_through_view(int id, const std::vector<int>& mem, bool under_view = false) const {
    const bool shifted = under_view || g.at(id).op == "pad";  // what a padding computes, it computes elsewhere
    for (int a : g.at(id).args) {
      if (a < 0) continue;
      bool member = std::find(mem.begin(), mem.end(), p.storage[a]) != mem.end();
      if (member && (shifted || p.storage[a] != a || g.at(id).op == "cat" ||
                     (g.at(id).op == "gather" && a == g.at(id).args[0])))
        return true;
      if (!p.stored[a] && reads_through_view(a, mem, shifted || is_view_op(g.at(a).op))) return true;
    }
    return false;
  }

  // Whether group `from` reads, directly or through other groups, what group `to` writes.
  bool group_reaches(int from, int to, std::set<int>& seen) const {
    if (from == to) return true;
    if (!seen.insert(from).second) return false;
    for (int m : members(p.groups[from])) {
      std::set<int> r;
      refs(m, r);
      for (int x : r) {
        int owner = group_of[p.storage[x]];
        if (owner >= 0 && owner != from && group_reaches(owner, to, seen)) return true;
      }
    }
    return false;
  }

  // Whether root `id` may join group `gi`: no value it reads from outside the group may depend on a
  // member, directly or through other groups (a cycle), and no read may go through an alias or a view
  // of a member (a race).
  bool can_join(int id, int gi) const {
    auto mem = members(p.groups[gi]);
    if (reads_through_view(id, mem)) return false;
    std::set<int> r;
    refs(id, r);
    for (int x : r) {
      bool member = std::find(mem.begin(), mem.end(), x) != mem.end();
      if (member) continue;
      for (int m : mem)
        if (x == m || p.storage[x] == m || depends[x][m]) return false;
      std::set<int> seen;
      int owner = group_of[p.storage[x]];
      if (owner >= 0 && group_reaches(owner, gi, seen)) return false;
    }
    return true;
  }

  // Row shape of a row group (S with the reduced axes set to 1).
  static Shape row_shape(const KernelGroup& k) { return reduced_shape(k.shape, k.axes, true); }

  void try_fuse(int id) {
    const Node& n = g.at(id);
    std::set<int> r;
    refs(id, r);
    for (int x : r) {
      int gi = group_of[x];
      if (gi < 0) continue;
      KernelGroup& k = p.groups[gi];
      bool ok = false;
      if (k.kind == GroupKind::row && fuse_rows) {
        if (n.op == "reduce") ok = g.at(n.args[0]).type.shape == k.shape && n.attr_ints("dims") == k.axes;
        else if (is_elementwise_op(n.op)) ok = n.type.shape == k.shape || n.type.shape == row_shape(k);
      } else if (k.kind == GroupKind::scan || k.kind == GroupKind::pool || k.kind == GroupKind::attention) {
        ok = is_elementwise_op(n.op) && n.type.shape == k.shape && x == k.anchor;
      } else if (k.kind == GroupKind::pointwise) {
        // A stored value of the same shape computed from a pointwise kernel's output is written by that kernel
        // too: one launch where there were two, the shared reads once (an unrolled LSTM's state c_t and output
        // h_t = o_t tanh(c_t); a residual sum and its activation). Only where both move in vectors (f32 or
        // 16-bit: emit_pointwise.cpp) or neither does, so a bool or i64 output does not narrow an f32 one's.
        // A materialized permute's tiled transpose writes them from its tile, at the result's coordinates (a
        // channels-last input's fp16 rounding beside the f32 value a residual reads): floats only, as it moves.
        const bool transpose = materialized_permute(g.at(k.elem_outputs.at(0)));
        const bool floats = is_float(n.type.dtype), first_floats = is_float(g.at(k.elem_outputs.at(0)).type.dtype);
        ok = is_elementwise_op(n.op) && n.type.shape == k.shape &&
             (transpose ? floats && first_floats : floats == first_floats);
      }
      if (!ok || !can_join(id, gi)) continue;
      if (n.op == "reduce") k.stats.push_back(id);
      else if (n.type.shape == k.shape) k.elem_outputs.push_back(id);
      else k.row_outputs.push_back(id);
      group_of[id] = gi;
      return;
    }
    if (n.op == "reduce" && join_sibling(id)) return;
    group_of[id] = int(p.groups.size());
    p.groups.push_back(new_group(id));
  }

  // A reduction over the same rows as a row group's, reading none of its members, joins it as a sibling.
  bool join_sibling(int id) {
    const Node& n = g.at(id);
    for (size_t gi = 0; gi < p.groups.size(); ++gi) {
      KernelGroup& k = p.groups[gi];
      if (k.kind != GroupKind::row || g.at(n.args[0]).type.shape != k.shape || n.attr_ints("dims") != k.axes) continue;
      auto mem = members(k);
      if (std::any_of(mem.begin(), mem.end(), [&](int m) { return depends[id][m]; }) || !can_join(id, int(gi)))
        continue;
      k.stats.push_back(id);
      group_of[id] = int(gi);
      return true;
    }
    return false;
  }

  // The max m that statistic `s` can be computed together with: s = sum(exp(x - m)) over the dims of
  // m = max(x) (decompose's softmax, log-softmax and cross-entropy); -1 otherwise.
  int online_partner(int s) const {
    const Node& sum = g.at(s);
    if (sum.attr_s("kind") != "sum") return -1;
    const Node& e = g.at(sum.args[0]);
    if (e.op != "exp") return -1;
    const Node& shifted = g.at(e.args[0]);
    if (shifted.op != "sub") return -1;
    const Node& m = g.at(shifted.args[1]);
    // The max broadcast along the reduced dims only: it keeps x's rank (decompose's reduce keeps its dims).
    if (m.op != "reduce" || m.attr_s("kind") != "max" || m.args[0] != shifted.args[0] ||
        m.attr_ints("dims") != sum.attr_ints("dims") || m.type.shape.size() != g.at(m.args[0]).type.shape.size())
      return -1;
    return shifted.args[1];
  }

  // A statistic's walk comes after the walks of the statistics it reads (through elementwise work), except
  // a sum of exp(x - max) that runs online with its max (online_partner) in the max's walk.
  void assign_stat_passes() {
    for (auto& k : p.groups) {
      k.stat_pass.assign(k.stats.size(), 0);
      k.online_max.assign(k.stats.size(), -1);
      for (size_t i = 0; i < k.stats.size(); ++i) {
        int partner = online_partner(k.stats[i]);
        for (size_t j = 0; j < i; ++j) {
          if (k.stats[j] == partner) {
            k.online_max[i] = partner;
            k.stat_pass[i] = std::max(k.stat_pass[i], k.stat_pass[j]);
          } else if (depends[k.stats[i]][k.stats[j]]) {
            k.stat_pass[i] = std::max(k.stat_pass[i], k.stat_pass[j] + 1);
          }
        }
      }
    }
  }

  // A statistic is written to memory when a graph output is it or another group's expressions read it.
  void add_stat_outputs() {
    std::vector<std::set<int>> read_by(p.groups.size());
    for (size_t gi = 0; gi < p.groups.size(); ++gi)
      for (int m : members(p.groups[gi])) refs(m, read_by[gi]);
    for (size_t gi = 0; gi < p.groups.size(); ++gi) {
      auto& k = p.groups[gi];
      for (int s : k.stats) {
        bool external = is_external(s, gi, read_by);  // graph outputs count, also through a reshape alias
        if (external && std::find(k.row_outputs.begin(), k.row_outputs.end(), s) == k.row_outputs.end())
          k.row_outputs.insert(k.row_outputs.begin(), s);
      }
      // A scan or pool whose only reader is its own fused epilogue need not be written.
      if (k.anchor >= 0 && k.elem_outputs.size() > 1 && !is_external(k.anchor, gi, read_by))
        k.elem_outputs.erase(std::find(k.elem_outputs.begin(), k.elem_outputs.end(), k.anchor));
    }
  }

  bool is_external(int s, size_t gi, const std::vector<std::set<int>>& read_by) const {
    for (int o : g.outputs)
      if (p.storage[o] == s) return true;
    for (size_t other = 0; other < p.groups.size(); ++other)
      if (other != gi)
        for (int x : read_by[other])
          if (p.storage[x] == s) return true;
    return false;
  }

  void order_groups() {
    size_t ng = p.groups.size();
    std::vector<std::set<size_t>> deps(ng);
    for (size_t gi = 0; gi < ng; ++gi)
      for (int m : members(p.groups[gi])) {
        std::set<int> r;
        refs(m, r);
        for (int x : r) {
          int owner = group_of[p.storage[x]];
          if (owner >= 0 && size_t(owner) != gi) deps[gi].insert(size_t(owner));
        }
      }
    std::vector<KernelGroup> ordered;
    std::vector<bool> done(ng, false);
    while (ordered.size() < ng) {
      bool progress = false;
      for (size_t gi = 0; gi < ng; ++gi) {
        if (done[gi]) continue;
        if (std::all_of(deps[gi].begin(), deps[gi].end(), [&](size_t d) { return done[d]; })) {
          done[gi] = true;
          ordered.push_back(p.groups[gi]);
          progress = true;
        }
      }
      KF_ASSERT(progress, "kernel groups form a cycle");
    }
    p.groups = std::move(ordered);
  }

  Partition run() {
    p.graph = &g;
    mark_reachable();
    compute_dependencies();
    mark_stored();
    group_of.assign(g.nodes.size(), -1);
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (is_root(int(i))) try_fuse(int(i));
    add_stat_outputs();
    assign_stat_passes();
    order_groups();
    return std::move(p);
  }
};

}  // namespace

Partition partition(const Graph& g, bool fuse_rows) { return Partitioner(g, fuse_rows).run(); }

bool materialized_permute(const Node& n) { return n.op == "permute" && n.attrs.value("materialize", false); }

std::optional<BlockTranspose> block_transpose(const std::vector<int64_t>& dims) {
  const size_t r = dims.size();
  size_t k = 0;
  while (k < r && dims[k] == int64_t(k)) ++k;
  if (k == r || dims[k] <= int64_t(k) || dims[k] >= int64_t(r)) return std::nullopt;
  const size_t j = size_t(dims[k]);  // dims[k..] must be j, j + 1, .., r - 1, then k, .., j - 1
  for (size_t i = k; i < r; ++i)
    if (dims[i] != int64_t(i - k < r - j ? j + (i - k) : k + (i - k) - (r - j))) return std::nullopt;
  return BlockTranspose{k, j};
}

bool stored_by_nature(const Node& n) {
  return is_source(n) || n.op == "reduce" || n.op == "scan" || n.op == "pool" || n.op == "matmul" || is_conv_op(n.op) ||
         n.op == "recurrence" || n.op == "attention";
}

int const_through_views(const Graph& g, int id) {
  while (is_view_op(g.at(id).op)) id = g.at(id).args[0];
  return g.at(id).op == "const" ? id : -1;
}

int stat_walks(const KernelGroup& g) {
  return g.stat_pass.empty() ? 0 : *std::max_element(g.stat_pass.begin(), g.stat_pass.end()) + 1;
}

int row_walks(const KernelGroup& g) { return stat_walks(g) + (g.elem_outputs.empty() ? 0 : 1); }

bool has_online_stat(const KernelGroup& g) {
  return std::any_of(g.online_max.begin(), g.online_max.end(), [](int m) { return m >= 0; });
}

KernelGroup without_online_stats(const KernelGroup& g) {
  KernelGroup out = g;
  for (size_t i = 0; i < out.stats.size() && i < out.online_max.size(); ++i) {
    if (out.online_max[i] < 0) continue;
    // The walks after this one may read the statistic: each moves one later, as it does.
    const int pass = out.stat_pass[i];
    for (size_t j = 0; j < out.stats.size(); ++j)
      if (out.stat_pass[j] > pass) ++out.stat_pass[j];
    out.stat_pass[i] = pass + 1;
    out.online_max[i] = -1;
  }
  return out;
}

std::vector<int> stats_in_pass(const KernelGroup& g, int pass) {
  std::vector<int> out;
  for (size_t i = 0; i < g.stats.size(); ++i)
    if (g.stat_pass[i] == pass) out.push_back(g.stats[i]);
  return out;
}

}  // namespace kforge
