// `kforge worker BUNDLE`: the service's persistent evaluator for the built-in generator's candidates
// (schedules). The task's data goes to the device once, the verifier and the copy bandwidth are set up
// once, and each job then costs little more than its own compile, checks and timing.
//
// Only trusted code runs here: a schedule's kernels come from kforge's own generator. Untrusted candidates
// (plans with their own CUDA source, raw CUDA, ModelNew) could tamper with the device state the next job
// is checked against, so the service runs each of them in a fresh process instead.
//
// Protocol, one JSON object per line:
//   out, once the task is on the device: {"ready": true, "gpu": NAME, "copy_gbs": GB/s}
//   in:  {"schedule": {...}}
//   out: {"ok": true, "result": EvalResult JSON} | {"ok": false, "error": "what went wrong"}
// A job that leaves the CUDA context broken (a sticky error such as an illegal address) or changes the
// task's inputs, references or params on the device is answered, and then the worker exits with code 3:
// the service starts a fresh one for the next job.
#pragma once
#include <iosfwd>
#include <string>

namespace kforge {

// Returns the exit code: 0 at end of input, 3 after a job that spoiled the process.
// `gpu_lock` (env/gpu_lock.h; "" = none) is held during each job.
// `drawn`: a folder of `kforge draw-sets` whose sets are checked beside the stored ones ("": none).
int serve_plan_jobs(const std::string& bundle_dir, const std::string& drawn, const std::string& gpu_lock, std::istream& in,
                    std::ostream& out);

}  // namespace kforge
