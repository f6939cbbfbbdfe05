#include "search/cost_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "ir/error.h"

namespace kforge {

std::vector<size_t> search_order(const std::vector<double>& scores, uint64_t seed) {
  // Two orders and a cursor in each: the model's slots take the best-scored not yet taken; the others the next
  // not yet taken of a random permutation, which is a uniform draw among those left.
  const size_t n = scores.size();
  std::vector<size_t> by_score(n), shuffled(n);
  std::iota(by_score.begin(), by_score.end(), 0);
  std::stable_sort(by_score.begin(), by_score.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  std::iota(shuffled.begin(), shuffled.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::vector<bool> taken(n, false);
  std::vector<size_t> order;
  size_t cursor[2] = {0, 0};
  const std::vector<size_t>* from[2] = {&by_score, &shuffled};
  while (order.size() < n) {
    const size_t slot = order.size() % 2;
    const std::vector<size_t>& list = *from[slot];
    while (taken[list[cursor[slot]]]) ++cursor[slot];
    order.push_back(list[cursor[slot]]);
    taken[order.back()] = true;
  }
  return order;
}

double rank_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  KF_ASSERT(a.size() == b.size(), "rank_correlation of series of different lengths");
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
    std::vector<double> r(v.size());
    for (size_t k = 0; k < idx.size();) {  // ties share their mean rank
      size_t e = k;
      while (e + 1 < idx.size() && v[idx[e + 1]] == v[idx[k]]) ++e;
      for (size_t m = k; m <= e; ++m) r[idx[m]] = 0.5 * double(k + e);
      k = e + 1;
    }
    return r;
  };
  auto ra = ranks(a), rb = ranks(b);
  double n = double(a.size());
  if (n < 2) return 0;
  double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0;
}

}  // namespace kforge
