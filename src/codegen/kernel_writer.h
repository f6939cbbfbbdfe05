// KernelWriter turns the elementwise expressions of one kernel group into CUDA statements.
//
// A kernel template (emit_*.cpp) sets the coordinate of every dim of the group's iteration shape S as a
// C expression, then asks for values: stored values become strided loads, statistics become the
// variables the template bound, and elementwise nodes become local variables computed once per site.
#pragma once
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/access.h"
#include "codegen/partition.h"

namespace kforge {

struct PadSpec;

class KernelWriter {
 public:
  KernelWriter(const Partition& p, const KernelGroup& k, const std::map<int, int>& buffer_of_owner);

  // Starts a new evaluation site (a loop body): forgets computed locals, sets coordinates of S.
  // `linear`, when not empty, is the row-major index into S (used for contiguous reads and writes).
  void begin_site(std::vector<std::string> coords, std::string linear, std::string indent);
  // The site's index within the iteration shape's last `rank` dims (a row kernel's r, its reduced dims being the
  // innermost): a read of a value spanning exactly those dims, contiguous (a norm's weight), indexes by it with no
  // division into coordinates. Until the next begin_site.
  void set_suffix_index(size_t rank, std::string index) { suffix_rank_ = rank, suffix_index_ = std::move(index); }
  void bind(int node, const std::string& var) { bound_[node] = var; }
  void unbind(int node) { bound_.erase(node); }
  // A contiguous f32 read of buffer b at the site's linear index is served by `expr` (vector loads).
  void set_vector_source(int buffer, const std::string& expr) { vector_src_[buffer] = expr; }
  void clear_vector_sources() { vector_src_.clear(); }
  const std::map<int, std::string>& vector_sources() const { return vector_src_; }
  void set_vector_sources(std::map<int, std::string> sources) { vector_src_ = std::move(sources); }
  // The same for reads at the suffix index (set_suffix_index): buffers read there, and their sources.
  const std::set<int>& suffix_reads() const { return suffix_reads_; }
  void set_suffix_source(int buffer, const std::string& expr) { suffix_src_[buffer] = expr; }
  void clear_suffix_sources() { suffix_src_.clear(); }
  // f32 buffers whose contiguous reads the last sites made (candidates for vector loads and row caches).
  const std::set<int>& contiguous_reads() const { return contiguous_reads_; }
  // The same for f16 / bf16 buffers (their vector loads hold bit patterns: pointwise kernels only).
  const std::set<int>& contiguous_half_reads() const { return contiguous_half_reads_; }
  void clear_contiguous_reads() { contiguous_reads_.clear(), contiguous_half_reads_.clear(), suffix_reads_.clear(); }

  std::string value(int node);      // emits what is needed; returns an expression
  std::string out_index(int node);  // index at which stored value `node` is written at this site
  std::string buf(int node);        // parameter name of the buffer owning `node`
  int buffer_id(int node) const;
  std::string take();               // statements emitted so far (and clears them)
  std::string ctype(int node) const;
  DType buffer_dtype(int buffer_id) const;  // its owner node's (a declared buffer: f32)

  std::string params() const;       // parameter list of every buffer used (used_ order)
  std::vector<int> used_buffers() const { return used_; }
  void use_buffer(int buffer_id, bool writable);
  // A buffer that belongs to no node (split partials), with its element type.
  void declare_buffer(int buffer_id, const std::string& ctype, bool writable);

 private:
  std::string load(int node, bool through_self = false);
  std::string gather(const Node& n);
  std::string cat(const Node& n);
  std::string pad(const Node& n);
  std::string at_source_coordinates(const Node& n, const PadSpec& spec);
  std::string offset_expr(const Access& a, const Shape& s);
  std::string coord_of(size_t dim_in_value, size_t value_rank) const;

  const Partition& p_;
  const Graph& g_;
  const KernelGroup& k_;
  const std::map<int, int>& buffer_of_owner_;
  std::set<int> members_;
  std::map<int, std::string> bound_, memo_;
  std::map<int, std::string> vector_src_;
  std::set<int> contiguous_reads_, contiguous_half_reads_, suffix_reads_;
  std::map<int, std::string> suffix_src_;
  std::vector<std::string> coords_;
  std::string linear_, indent_;
  size_t suffix_rank_ = 0;
  std::string suffix_index_;
  std::ostringstream body_;
  int counter_ = 0;
  std::vector<int> used_;
  std::map<int, bool> writable_;
  std::map<int, std::string> declared_type_;
};

std::string float_literal(double v);
// `x`, of dtype `from`, converted to `to` where either is f16 or bf16 (stored as unsigned short bit patterns).
std::string half_cast(DType from, DType to, const std::string& x);
// The CUDA expression of unary op node `n` applied to `x`, which it may name more than once (a variable).
std::string unary_expression(const Node& n, const std::string& x);

}  // namespace kforge
