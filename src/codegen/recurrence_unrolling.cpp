#include "codegen/recurrence_unrolling.h"

#include <algorithm>
#include <functional>

#include "codegen/plan.h"
#include "codegen/schedule.h"
#include "ir/builder.h"

namespace kforge {

bool recurrence_fits(const RecurrenceDims& d, const TargetFacts& target) {
  KernelGroup g;
  g.kind = GroupKind::recurrence;
  g.recurrence = d;
  g.target = target;
  return !schedule_space(g).empty();
}

namespace {

// One direction's steps in PyTorch's equations: [T, N, S*H], every step's h and/or an LSTM's c. `a` are the
// direction's five operands in the new graph (-1 where absent). The cell works on [1, N, .] values: the step's
// input share is then a slice of x the cell kernel reads in place (a reshape of it to [N, G*H] would be stored by a
// kernel of its own every step); the product reads the state as [N, H].
int unrolled_direction(GraphBuilder& b, const RecurrenceDims& d, int dir, const int* a) {
  const int64_t T = d.steps, N = d.batch, H = d.hidden, GH = d.gates * d.hidden;
  auto zeros = [&] { return b.op("expand", {b.cst(0.0)}, {{"shape", Shape{1, N, H}}}); };
  auto slice = [&](int v, int64_t dim, int64_t start, int64_t end) {
    return b.op("slice", {v}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", 1}});
  };
  auto gate = [&](int v, int q) { return slice(v, 2, q * H, (q + 1) * H); };
  auto given = [&](int v) { return b.reshape(v, {1, N, H}); };
  const int wt = b.op("permute", {a[kRecW]}, {{"dims", {1, 0}}});
  int h = a[kRecH0] >= 0 ? given(a[kRecH0]) : zeros();
  int c = d.cell == Cell::lstm ? (a[kRecC0] >= 0 ? given(a[kRecC0]) : zeros()) : -1;
  std::vector<int> steps(size_t(T), -1);
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = d.backward(dir) ? T - 1 - s : s;
    const int xt = slice(a[kRecX], 0, t, t + 1);
    int rec = -1;
    if (s == 0 && a[kRecH0] < 0) {  // a zero state's product is zero: the bias alone (no product, no stored zeros)
      rec = b.op("expand", {a[kRecBias] >= 0 ? a[kRecBias] : b.cst(0.0)}, {{"shape", Shape{1, N, GH}}});
    } else {
      rec = b.op("matmul", {b.reshape(h, {N, H}), wt});
      if (a[kRecBias] >= 0) rec = b.add(rec, a[kRecBias]);
      rec = b.reshape(rec, {1, N, GH});
    }
    auto both = [&](int q) { return b.add(gate(xt, q), gate(rec, q)); };
    int kept = -1;
    switch (d.cell) {
      case Cell::lstm: {
        const int i = b.un("sigmoid", both(0)), f = b.un("sigmoid", both(1)), g = b.un("tanh", both(2)),
                  o = b.un("sigmoid", both(3));
        c = b.add(b.mul(f, c), b.mul(i, g));
        h = b.mul(o, b.un("tanh", c));
        kept = !d.keeps_c ? h : !d.keeps_h ? c : b.op("cat", {h, c}, {{"dim", 2}});
        break;
      }
      case Cell::gru: {
        const int r = b.un("sigmoid", both(0)), z = b.un("sigmoid", both(1));
        const int n = b.un("tanh", b.add(gate(xt, 2), b.mul(r, gate(rec, 2))));
        h = kept = b.add(n, b.mul(z, b.sub(h, n)));  // (1 - z) n + z h
        break;
      }
      case Cell::rnn_tanh: h = kept = b.un("tanh", b.add(xt, rec)); break;
      case Cell::rnn_relu: h = kept = b.un("relu", b.add(xt, rec)); break;
    }
    steps[size_t(t)] = kept;
  }
  return T == 1 ? steps[0] : b.op("cat", steps, {{"dim", 0}});
}

// `prim` with the recurrences `unroll` picks unrolled.
Graph unrolled(const Graph& prim, const std::function<bool(const RecurrenceDims&)>& unroll) {
  Graph g;
  GraphBuilder b(g);
  std::vector<int> at(prim.nodes.size(), -1);  // prim's node -> g's
  for (size_t i = 0; i < prim.nodes.size(); ++i) {
    Node n = prim.nodes[i];
    for (int& a : n.args)
      if (a >= 0) a = at[size_t(a)];
    if (n.op == "recurrence") {
      const RecurrenceDims d = recurrence_dims(prim, prim.nodes[i]);
      if (unroll(d)) {
        b.set_prefix(n.name);
        std::vector<int> outs;
        for (int dir = 0; dir < d.directions; ++dir)
          outs.push_back(unrolled_direction(b, d, dir, n.args.data() + kRecArgs * size_t(dir)));
        // The last node keeps the recurrence's name (its group's key, a graph output's name).
        const int last = outs.size() == 1 ? b.op("reshape", {outs[0]}, {{"shape", n.type.shape}}, n.name)
                                          : b.op("cat", outs, {{"dim", 2}}, n.name);
        at[i] = last;
        continue;
      }
    }
    at[i] = g.add(std::move(n));
  }
  copy_roles(prim, at, g);
  return g;
}

}  // namespace

Graph unroll_recurrences_that_do_not_fit(const Graph& prim, const TargetFacts& target) {
  return unrolled(prim, [&](const RecurrenceDims& d) { return !recurrence_fits(d, target); });
}

Graph unroll_every_recurrence(const Graph& prim) {
  return unrolled(prim, [](const RecurrenceDims&) { return true; });
}

bool unrolled_form_worth_measuring(const std::vector<KernelGroup>& groups) {
  return std::any_of(groups.begin(), groups.end(), [](const KernelGroup& g) {
    if (g.kind != GroupKind::recurrence) return false;
    const std::vector<KernelSchedule> space = schedule_space(g);  // legal schedules only
    return std::none_of(space.begin(), space.end(), [](const KernelSchedule& ks) {
      return ks.strategy == Strategy::tile && ks.chunks <= kPortableCluster;
    });
  });
}

}  // namespace kforge
