// A recurrence unrolled into its steps: where no persistent kernel can hold it on the target, and, as a form the
// search measures, wherever it is. The persistent kernel
// (emit_recurrence.cpp) keeps a block's share of every step's work on one SM, so its shared memory grows with the
// batch: past a few thousand batch rows, or on a GPU with too few SMs for the hidden units, no schedule fits. Such a
// layer is then a product and the cell's elementwise work a step (the partition fuses the step's arithmetic into
// one kernel and stores the cell state: partition.h), as slow as a launch-bound loop is but computed.
#pragma once
#include "codegen/partition.h"
#include "ir/graph.h"

namespace kforge {

// Whether some schedule of the persistent kernel holds a recurrence of these dims on `target`.
bool recurrence_fits(const RecurrenceDims& d, const TargetFacts& target);
// `prim` (after decompose) with every recurrence that does not fit on `target` unrolled.
Graph unroll_recurrences_that_do_not_fit(const Graph& prim, const TargetFacts& target);
// `prim` with every recurrence unrolled, whether a kernel holds it or not: the search's other form of a recurrent
// graph (Schedule::unroll_recurrences). Per step a product of the state with the recurrent weights, which
// cuBLASLt runs at the library's speed, and the cell's arithmetic in one kernel: for layers whose weights no
// cluster holds (cuDNN runs large GRUs so), it may beat the persistent kernels' every step through L2.
Graph unroll_every_recurrence(const Graph& prim);
// Whether the unrolled form is worth a measurement: some recurrence's weights fit no portable cluster (8 blocks'
// shared memory), the layers cuDNN too runs as a product and a cell kernel a step. Smaller layers' persistent
// kernels launch once where the form launches twice a step, and a long sequence's form has thousands of kernels
// to lower and compile: the search leaves it out there.
bool unrolled_form_worth_measuring(const std::vector<KernelGroup>& groups);

}  // namespace kforge
