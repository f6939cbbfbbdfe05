#include "codegen/channels_last.h"

#include <algorithm>
#include <map>

#include "ir/builder.h"
#include "ir/conv.h"
#include "ir/half_operands.h"
#include "ir/ops.h"
#include "ir/shape_rules.h"

namespace kforge {

namespace {

// Whether node `id` is a convolution the form makes channels-last: of f32 tensors, or of a half-precision task's
// own 16-bit ones (ir/half_operands.h: their stored values change layout, and the library reads them as stored).
bool becomes_channels_last(const Graph& g, int id) {
  const Node& n = g.at(id);
  if (n.op != "conv" || is_channels_last(n.attrs)) return false;
  const TensorType& x = g.at(n.args[0]).type;
  if (x.shape.size() < 3 || (!half_operands(g, id) && (x.dtype != DType::f32 || n.type.dtype != DType::f32))) return false;
  return !depthwise_2d(conv_dims(x.shape, g.at(n.args[1]).type.shape, n.attrs, "node '" + n.name + "': "));
}

bool elementwise(const Node& n) {
  return (is_unary_op(n.op) || is_binary_op(n.op) || n.op == "where") && n.type.shape.size() >= 3;
}

class Rewrite {
 public:
  explicit Rewrite(const Graph& prim)
      : p_(prim), plain_(prim.nodes.size(), -1), last_(prim.nodes.size(), -1), wanted_(prim.nodes.size(), false) {}

  Graph run() {
    mark_wanted();
    for (size_t i = 0; i < p_.nodes.size(); ++i) {
      const int id = int(i);
      const Node& n = p_.nodes[i];
      if (becomes_channels_last(p_, id)) last_[i] = conv(n);
      else if (elementwise(n) && wanted_[i] && computable_last(n)) last_[i] = elementwise_last(n);
      else if (n.op == "cat" && wanted_[i] && all_last(n)) last_[i] = cat_last(n);
      else if (n.op == "pad" && wanted_[i] && all_last(n)) last_[i] = pad_last(n);
      else if (n.op == "pool" && last_[size_t(n.args[0])] >= 0) last_[i] = pool_last(n);
      else if (n.op == "reduce" && last_[size_t(n.args[0])] >= 0 && plain_[size_t(n.args[0])] < 0 && shape(n.args[0]).size() >= 3)
        reduce_last(id, n);
      else {
        Node copy = n;
        for (int& a : copy.args)
          if (a >= 0) a = plain(a);
        plain_[i] = g_.add(std::move(copy));
      }
    }
    for (int o : p_.outputs) plain(o);
    copy_roles(p_, plain_, g_);
    return std::move(g_);
  }

 private:
  const Shape& shape(int id) const { return p_.at(id).type.shape; }

  // A value is wanted channels-last where a convolution the form changes reads it as its input, a reduction reads it
  // (a reduction runs on either layout: a global average pool after the last block needs no transpose), or an
  // elementwise op that is wanted reads it at the same rank (a BatchNorm's per-channel statistics [1, C, 1, 1]).
  // So is elementwise arithmetic the graph outputs: its kernel is the transpose back (partition.cpp computes a
  // materialized permute's elementwise source in the transpose), reading its channels-last operands once, where
  // computing it channels-first transposed each of them (a network's last norm's input and its residual) first.
  void mark_wanted() {
    const std::vector<std::vector<int>> readers = p_.readers();
    for (int o : p_.outputs)
      if (elementwise(p_.at(o))) wanted_[size_t(o)] = true;
    for (int i = int(p_.nodes.size()) - 1; i >= 0; --i)
      for (int r : readers[size_t(i)]) {
        const Node& n = p_.at(r);
        if ((becomes_channels_last(p_, r) && n.args[0] == i) || (n.op == "reduce" && shape(i).size() >= 3) ||
            (elementwise(n) && wanted_[size_t(r)] && shape(i).size() == n.type.shape.size() && numel(shape(i)) > 1) ||
            ((n.op == "cat" || n.op == "pad" || n.op == "pool") && wanted_[size_t(r)] && n.type.shape.size() >= 3))
          wanted_[size_t(i)] = true;
      }
  }

  // Worth computing channels-last: some operand is channels-last already, and every other whole one (not
  // broadcast) is channels-last too or a graph input or parameter, read once through a permute.
  bool computable_last(const Node& n) const {
    bool any = false;
    for (int a : n.args) {
      if (numel(shape(a)) == 1) continue;
      const bool last = last_[size_t(a)] >= 0, source = p_.at(a).op == "input" || p_.at(a).op == "param";
      if (shape(a) == n.type.shape && !last && !source) return false;
      any |= last;
    }
    return any;
  }

  std::string name_for(const std::string& base) const { return fresh_name(base, {&p_, &g_}); }

  int add(Node n) {
    n.type = infer_type(g_, n);
    return g_.add(std::move(n));
  }

  // A whole tensor's layout change is materialized (a tiled transpose: codegen/partition.h); a broadcast
  // operand's or a reduced value's permute stays a view its readers read strided.
  int permute(int new_id, const std::vector<int64_t>& dims, const std::string& name, bool materialize = false) {
    // Where only dims of extent 1 move ([N, 1, 1, C] and [N, C, 1, 1]), the memory is the same: a reshape.
    const Shape from = g_.at(new_id).type.shape;
    int64_t last_moved = -1;
    bool same_memory = true;
    for (int64_t d : dims)
      if (from[size_t(d)] != 1) same_memory = same_memory && d > last_moved, last_moved = d;
    if (same_memory)
      return add(Node{.name = name_for(name), .op = "reshape", .args = {new_id}, .attrs = {{"shape", permuted(from, dims)}}});
    json attrs = {{"dims", dims}};
    if (materialize) attrs["materialize"] = true;
    return add(Node{.name = name_for(name), .op = "permute", .args = {new_id}, .attrs = attrs});
  }

  // Node `id`'s value as the graph had it: a permute back of its channels-last value where that is all there is.
  int plain(int id) {
    if (plain_[size_t(id)] < 0)
      plain_[size_t(id)] = permute(last_[size_t(id)], from_channels_last(shape(id).size()), p_.at(id).name + "_channels_first",
                                numel(shape(id)) > shape(id)[1]);
    return plain_[size_t(id)];
  }

  // Node `id`'s value channels-last: its own, or a permute of it (a weight's, an input's).
  int last(int id) {
    if (last_[size_t(id)] < 0)
      last_[size_t(id)] = permute(plain(id), to_channels_last(shape(id).size()), p_.at(id).name + "_channels_last",
                                numel(shape(id)) > shape(id)[1]);
    return last_[size_t(id)];
  }

  // Node `id`, a cast to f32 of a stored 16-bit value s (a half-precision task's input or weight), channels-last:
  // the cast of s's channels-last value, so that the 16-bit values change layout (a 16-bit tiled transpose) and the
  // library reads them as stored.
  int widened_last(int id) {
    const int source = last(half_cast_source(p_, id));
    return last_[size_t(id)] = add(Node{.name = name_for(p_.at(id).name + "_channels_last"), .op = "cast", .args = {source},
                                        .attrs = {{"dtype", "f32"}}});
  }

  // An operand of lower rank broadcast against a channels-last value of rank `rank`: given the leading dims of 1
  // it broadcasts with, then permuted alike.
  int broadcast_last(int id, size_t rank) {
    const Shape& s = shape(id);
    auto known = broadcast_.find({id, rank});
    if (known != broadcast_.end()) return known->second;
    int v = plain(id);
    if (s.size() < rank) {
      Shape grown(rank - s.size(), 1);
      grown.insert(grown.end(), s.begin(), s.end());
      v = add(Node{.name = name_for(p_.at(id).name + "_ranked"), .op = "reshape", .args = {v}, .attrs = {{"shape", grown}}});
    }
    return broadcast_[{id, rank}] = permute(v, to_channels_last(rank), p_.at(id).name + "_channels_last");
  }

  int conv(const Node& n) {
    Node c = n;
    for (size_t j : {0, 1}) c.args[j] = last_[size_t(n.args[j])] < 0 && half_cast_source(p_, n.args[j]) >= 0 ? widened_last(n.args[j]) : last(n.args[j]);
    if (c.args.size() > 2 && c.args[2] >= 0) c.args[2] = plain(n.args[2]);  // a bias of one value per channel
    c.attrs["channels_last"] = true;
    const int id = add(std::move(c));
    g_.nodes[size_t(id)].type.dtype = n.type.dtype;  // a 16-bit result stays one (codegen/half_results.h)
    return id;
  }

  int elementwise_last(const Node& n) {
    Node e = n;
    const size_t rank = n.type.shape.size();
    // A single value broadcasts the same either way; one of the same rank is permuted as the result is.
    for (int& a : e.args) a = numel(shape(a)) == 1 ? plain(a) : shape(a).size() == rank ? last(a) : broadcast_last(a, rank);
    return add(std::move(e));
  }

  // A concatenation of channels-last parts (an Inception module's branches, a DenseNet block's features) is one of
  // channels-last values along the same dim's new place.
  bool all_last(const Node& n) const {
    if (n.type.shape.size() < 3) return false;
    for (int a : n.args)
      if (last_[size_t(a)] < 0) return false;
    return true;
  }
  int cat_last(const Node& n) {
    const std::vector<int64_t> to = to_channels_last(n.type.shape.size());
    Node c = n;
    for (int& a : c.args) a = last_[size_t(a)];
    c.attrs["dim"] = int64_t(std::find(to.begin(), to.end(), n.attr_i("dim")) - to.begin());
    return add(std::move(c));
  }

  // A padding of a channels-last value (a reflect-padded convolution's input) pads it as it is, each dim's counts
  // moved to the dim's new place: the padded input is written once, channels-last, where the form otherwise
  // transposed the value back to pad it and the padded result forth again.
  int pad_last(const Node& n) {
    const std::vector<int64_t> to = to_channels_last(n.type.shape.size()), pads = n.attr_ints("pads");
    Node c = n;
    c.args[0] = last_[size_t(n.args[0])];
    std::vector<int64_t> moved(pads.size());
    for (size_t j = 0; j < to.size(); ++j)
      moved[2 * j] = pads[2 * size_t(to[j])], moved[2 * j + 1] = pads[2 * size_t(to[j]) + 1];
    c.attrs["pads"] = moved;
    return add(std::move(c));
  }

  // A pooling of a channels-last value pools it as it is (ir/pool.h): its output, smaller, is what changes layout
  // where a reader needs it channels-first.
  int pool_last(const Node& n) {
    Node p = n;
    p.args[0] = last_[size_t(n.args[0])];
    p.attrs["channels_last"] = true;
    return add(std::move(p));
  }

  // A reduction over every dim but the channels' of a channels-last value (a BatchNorm's statistics): as one
  // reduction its kernel has a lane per channel, a few hundred threads walking thousands of rows each (a ResNet's
  // later BatchNorms ran on 4-16 blocks). So it runs in two that keep the channels innermost: rows in runs of M
  // ([G, M, C] over M: G x C lanes, about kStageLanes of them), then the G partials; a variance from the sums of
  // squares about a shift (the one-walk moments do not split into stages in the IR), its arithmetic in the second
  // stage's kernel. Sums, maxima and minima; others stay one reduction.
  static constexpr int64_t kStageLanes = 32768, kMinStage = 16, kMaxStage = 512;
  static int64_t stage_rows(int64_t rows, int64_t c) {
    const int64_t want = std::clamp<int64_t>(rows * c / kStageLanes, kMinStage, kMaxStage);
    for (int64_t step = 0; step <= kMaxStage; ++step)  // the divisor of rows nearest to `want`, within the bounds
      for (int64_t m : {want - step, want + step})
        if (m >= kMinStage && m <= kMaxStage && rows % m == 0 && rows / m >= 2) return m;
    return 0;
  }
  bool columns(int id, const Node& n, const std::vector<int64_t>& dims) {
    const Shape x = g_.at(last_[size_t(n.args[0])]).type.shape;  // a copy: the nodes added below move g_'s
    const std::string kind = n.attr_s("kind");
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < x.size(); ++d) rows *= x[d];
    const int64_t c = x.back(), m = stage_rows(rows, c);
    if (dims.empty() || dims.size() + 1 != x.size() || dims.back() != int64_t(x.size()) - 2 || m == 0 ||
        (kind != "sum" && kind != "var" && kind != "max" && kind != "min"))
      return false;
    GraphBuilder b(g_);
    b.set_prefix(name_for(n.name + "_columns"));
    // The stages read [G, M, C] views of the value (a reshape of stored memory is an alias), and the squares about
    // the mean are computed in that view, inside the first stage's kernel.
    const int v = grouped_view(last_[size_t(n.args[0])], {rows / m, m, c}, 0);
    auto column = [&](int of, const std::string& k) {  // [1, 1, C]
      auto known = columns_.find({of, k});
      if (known != columns_.end()) return known->second;
      return columns_[{of, k}] = b.reduce(k, b.reduce(k, of, {1}), {0});
    };
    int result = column(v, kind == "var" ? "sum" : kind);
    if (kind == "var") {
      // The squares about a shift s (each channel's first row), not about the mean: their first stage then reads
      // nothing the sum's stages compute, and the two sums share each stage's kernel (partition.cpp's siblings):
      // two kernels and one read of the value, where the squares about the mean took two more kernels and a
      // second read. var = E[(x - s)^2] - (mean - s)^2, whose cancellation grows with (mean - s)^2 / var only
      // (s is one of the channel's own values), and a constant channel's is exactly 0.
      const int shift = first_row(v);
      const int d = b.sub(v, shift), off = b.sub(b.scale(result, 1.0 / double(rows)), shift);
      result = b.sub(b.scale(column(b.mul(d, d), "sum"), 1.0 / double(rows)), b.mul(off, off));
    }
    Shape kept(x.size(), 1);
    kept.back() = c;
    if (n.attrs.value("keepdim", false)) last_[size_t(id)] = b.reshape(result, kept);
    else plain_[size_t(id)] = b.reshape(result, {c});  // [C]: the same either way
    return true;
  }

  // The [G, M, C] view of channels-last value `id`, taken of the values it is computed from where it is a little
  // elementwise arithmetic (a convolution's bias add): a view of a computed value stores it (partition.cpp), so the
  // sum would be a kernel of its own writing the whole result and the statistics' stages and the norm reading it
  // back, where each of their kernels can add the bias as it reads the convolution's result. Operands of the
  // value's shape are viewed alike, a per-channel one ([1, .., 1, C]) as [1, 1, C], a single value as it is.
  static constexpr int kViewDepth = 3;  // ops recomputed by each reader of the view, at most
  int grouped_view(int id, const Shape& view, int depth) {
    if (auto known = views_.find(id); known != views_.end()) return known->second;
    const Node& n = g_.at(id);
    const Shape full = n.type.shape;
    auto per_channel = [&](const Shape& s) {
      return s.size() == full.size() && s.back() == full.back() && numel(s) == s.back();
    };
    bool through = depth < kViewDepth && (is_unary_op(n.op) || is_binary_op(n.op)) && n.type.dtype == DType::f32;
    for (int a : n.args)
      through = through && (numel(g_.at(a).type.shape) == 1 || g_.at(a).type.shape == full || per_channel(g_.at(a).type.shape));
    if (!through) {
      GraphBuilder b(g_);
      b.set_prefix(name_for(n.name + "_grouped"));
      return views_[id] = b.reshape(id, view);
    }
    Node e = n;
    e.name = name_for(n.name + "_grouped");
    for (int& a : e.args) {
      const Shape s = g_.at(a).type.shape;  // a copy: the nodes added below move g_'s
      if (s == full) a = grouped_view(a, view, depth + 1);
      else if (numel(s) > 1)
        a = add(Node{.name = name_for(g_.at(a).name + "_grouped"), .op = "reshape", .args = {a}, .attrs = {{"shape", Shape{1, 1, s.back()}}}});
    }
    return views_[id] = add(std::move(e));
  }

  // The first row of a [G, M, C] view (grouped_view's) as [1, 1, C]: its arithmetic with each viewed value sliced to
  // its first row (a view of the same memory), per-channel operands and single values as they are.
  int first_row(int id) {
    const Node& n = g_.at(id);
    const Shape shape = n.type.shape;  // a copy: the nodes added below move g_'s
    if (shape.empty() || numel(shape) == shape.back()) return id;  // a single value, or one per channel
    if (is_unary_op(n.op) || is_binary_op(n.op)) {
      Node e = n;
      e.name = name_for(n.name + "_first");
      for (int& a : e.args) a = first_row(a);
      return add(std::move(e));
    }
    int row = id;
    for (int64_t dim : {0, 1})
      row = add(Node{.name = name_for(n.name + "_first"), .op = "slice", .args = {row},
                     .attrs = {{"dim", dim}, {"start", 0}, {"end", 1}, {"step", 1}}});
    return row;
  }

  // A reduction of a value that exists channels-last only runs on it: its dims renamed to where they are. With
  // keepdim the result is channels-last too; without, the kept dims are in channels-last order, permuted back
  // where that differs from the graph's.
  void reduce_last(int id, const Node& n) {
    const size_t rank = shape(n.args[0]).size();
    const std::vector<int64_t> to = to_channels_last(rank);
    auto where = [&](int64_t d) { return int64_t(std::find(to.begin(), to.end(), d) - to.begin()); };
    std::vector<int64_t> dims;
    for (int64_t d : n.attr_ints("dims")) dims.push_back(where(d));
    std::sort(dims.begin(), dims.end());
    if (columns(id, n, dims)) return;
    Node r = n;
    r.args[0] = last_[size_t(n.args[0])];
    r.attrs["dims"] = dims;
    const int reduced = add(std::move(r));
    if (n.attrs.value("keepdim", false)) {
      last_[size_t(id)] = reduced;
      return;
    }
    std::vector<int64_t> kept;  // the graph's dims in the order the reduced value holds them
    for (size_t j = 0; j < rank; ++j)
      if (!std::binary_search(dims.begin(), dims.end(), int64_t(j))) kept.push_back(to[j]);
    std::vector<int64_t> order(kept.size());
    for (size_t k = 0; k < kept.size(); ++k) order[k] = int64_t(k);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return kept[size_t(a)] < kept[size_t(b)]; });
    bool same = true;
    for (size_t k = 0; k < order.size(); ++k) same = same && order[k] == int64_t(k);
    plain_[size_t(id)] = same ? reduced : permute(reduced, order, n.name + "_channels_first");
  }

  const Graph& p_;
  Graph g_;
  std::vector<int> plain_, last_;  // per node of p_: its value in g_ as the graph had it, and channels-last (-1: none)
  std::vector<bool> wanted_;
  std::map<std::pair<int, size_t>, int> broadcast_;
  std::map<std::pair<int, std::string>, int> columns_;  // column reductions of a [G, M, C] view, by kind
  std::map<int, int> views_;                             // a channels-last value's [G, M, C] view (grouped_view)
};

}  // namespace

bool has_channels_last_form(const Graph& primitive) {
  for (size_t i = 0; i < primitive.nodes.size(); ++i)
    if (becomes_channels_last(primitive, int(i))) return true;
  return false;
}

Graph channels_last_form(const Graph& primitive) {
  if (!has_channels_last_form(primitive)) return primitive;
  return Rewrite(primitive).run();
}

}  // namespace kforge
