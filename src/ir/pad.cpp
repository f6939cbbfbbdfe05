#include "ir/pad.h"

#include <algorithm>

#include "ir/error.h"

namespace kforge {

PadSpec pad_spec(const Node& n, const Shape& x, const std::string& where) {
  const std::string mode = n.attr_s("mode");
  PadSpec s;
  if (mode == "constant") s.mode = PadMode::constant;
  else if (mode == "reflect") s.mode = PadMode::reflect;
  else if (mode == "replicate") s.mode = PadMode::replicate;
  else if (mode == "circular") s.mode = PadMode::circular;
  else throw UserError(where + "unknown padding mode '" + mode + "'");
  s.value = n.attr_opt_f("value").value_or(0.0);
  const std::vector<int64_t> pads = n.attr_ints("pads");
  if (pads.size() != 2 * x.size())
    throw UserError(where + "pads has " + std::to_string(pads.size()) + " counts for " + std::to_string(x.size()) +
                    " dims (two a dim)");
  for (size_t d = 0; d < x.size(); ++d) {
    PadDim p{pads[2 * d], pads[2 * d + 1], x[d]};
    if (p.left < 0 || p.right < 0) throw UserError(where + "negative padding on dim " + std::to_string(d));
    const int64_t most = s.mode == PadMode::reflect ? p.in - 1 : s.mode == PadMode::circular ? p.in : INT64_MAX;
    if ((p.left || p.right) && (std::max(p.left, p.right) > most || (s.mode != PadMode::constant && p.in == 0))) {
      const std::string limit = most == INT64_MAX ? " (nothing to repeat)" : " (at most " + std::to_string(most) + ")";
      throw UserError(where + mode + " padding of " + std::to_string(std::max(p.left, p.right)) + " on a dim of " +
                      std::to_string(p.in) + limit);
    }
    s.dims.push_back(p);
  }
  return s;
}

int64_t pad_source(PadMode mode, const PadDim& d, int64_t c) {
  int64_t s = c - d.left;
  if (s >= 0 && s < d.in) return s;
  switch (mode) {
    case PadMode::constant: return -1;
    case PadMode::replicate: return std::clamp<int64_t>(s, 0, d.in - 1);
    case PadMode::circular: return s < 0 ? s + d.in : s - d.in;
    case PadMode::reflect: return s < 0 ? -s : 2 * (d.in - 1) - s;
  }
  return -1;
}

std::string pad_source_expr(PadMode mode, const PadDim& d, const std::string& c) {
  const std::string s = "(" + c + " - " + std::to_string(d.left) + "LL)", n = std::to_string(d.in) + "LL",
                    last = std::to_string(d.in - 1) + "LL";
  if (d.left == 0 && d.right == 0) return c;
  switch (mode) {
    case PadMode::constant:
    case PadMode::replicate: return "(" + s + " < 0 ? 0LL : " + s + " > " + last + " ? " + last + " : " + s + ")";
    case PadMode::circular:
      return "(" + s + " < 0 ? " + s + " + " + n + " : " + s + " >= " + n + " ? " + s + " - " + n + " : " + s + ")";
    case PadMode::reflect:
      return "(" + s + " < 0 ? -" + s + " : " + s + " > " + last + " ? " + std::to_string(2 * (d.in - 1)) + "LL - " +
             s + " : " + s + ")";
  }
  return c;
}

std::string pad_inside_expr(const PadDim& d, const std::string& c) {
  if (d.left == 0 && d.right == 0) return "";
  return "((unsigned long long)(" + c + " - " + std::to_string(d.left) + "LL) < " + std::to_string(d.in) + "ULL)";
}

}  // namespace kforge
