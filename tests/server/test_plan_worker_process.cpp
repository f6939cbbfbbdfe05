// The service's persistent worker client against a stand-in worker (a Python script speaking the same
// line protocol as `kforge worker`), so every way a worker can fail is tested without a GPU: each job is
// answered with the cause, and the next job gets a fresh worker.
#include <gtest/gtest.h>

#include "server/plan_worker_process.h"

namespace kforge {
namespace {

// Answers {"schedule": {"do": WHAT}}: ok, fail, hang, crash, garbage, hog (touch 1 GiB), spoil (ask for a
// restart). "process" names the process that answered.
const char* kStandIn = R"PY(
import json, os, sys, time
ME = os.urandom(8).hex()  # PIDs repeat: each sandbox has a PID namespace of its own
print(json.dumps({"ready": True, "copy_gbs": 123.0, "process": ME}), flush=True)
for line in sys.stdin:
    what = json.loads(line)["schedule"]["do"]
    if what == "ok": print(json.dumps({"ok": True, "result": {"tier": "strict", "process": ME}}), flush=True)
    elif what == "fail": print(json.dumps({"ok": False, "error": "lowering failed: no such strategy"}), flush=True)
    elif what == "hang": time.sleep(100)
    elif what == "crash": os.abort()
    elif what == "garbage": print("not json", flush=True)
    elif what == "hog": x = b"x" * (1 << 30); time.sleep(100)
    elif what == "spoil":
        print(json.dumps({"ok": True, "result": {"tier": "failed"}, "worker_restart": "the CUDA context is broken"}), flush=True)
        sys.exit(3)
)PY";

PlanWorkerProcess stand_in() {
  SandboxOptions o;
  o.timeout_s = 2;
  o.memory_bytes = 256LL << 20;
  return PlanWorkerProcess({"python3", "-c", kStandIn}, o, 30);
}

nlohmann::json job(const std::string& what) { return {{"schedule", {{"do", what}}}}; }

TEST(PlanWorkerProcess, KeepsOneProcessForManyJobs) {
  auto w = stand_in();
  auto a = w.evaluate(job("ok"));
  ASSERT_TRUE(a.ok) << a.error;
  auto b = w.evaluate(job("ok"));
  EXPECT_EQ(a.result["process"], b.result["process"]);
  EXPECT_EQ(w.starts(), 1);
  EXPECT_EQ(w.copy_gbs(), 123.0);
  auto c = w.evaluate(job("fail"));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.error, "lowering failed: no such strategy");
  EXPECT_TRUE(w.evaluate(job("ok")).ok);
  EXPECT_EQ(w.starts(), 1) << "a job the worker answers as failed needs no restart";
}

TEST(PlanWorkerProcess, EachFailureIsNamedAndTheNextJobGetsAFreshWorker) {
  struct Case {
    std::string what, cause;
  };
  for (const Case& c : std::vector<Case>{{"hang", "timed out after 2"},
                                         {"crash", "killed by signal 6 (Aborted)"},
                                         {"garbage", "not JSON: 'not json'"},
                                         {"hog", "memory limit exceeded ("}}) {
    auto w = stand_in();
    auto first = w.evaluate(job("ok"));
    auto bad = w.evaluate(job(c.what));
    EXPECT_FALSE(bad.ok) << c.what;
    EXPECT_NE(bad.error.find(c.cause), std::string::npos) << c.what << ": " << bad.error;
    auto next = w.evaluate(job("ok"));
    ASSERT_TRUE(next.ok) << c.what << ": " << next.error;
    EXPECT_NE(next.result["process"], first.result["process"]) << c.what;
    EXPECT_EQ(w.starts(), 2) << c.what;
  }
}

TEST(PlanWorkerProcess, ARestartRequestIsHonoured) {
  auto w = stand_in();
  auto spoiled = w.evaluate(job("spoil"));
  EXPECT_TRUE(spoiled.ok);
  EXPECT_EQ(spoiled.result["worker_restart"], "the CUDA context is broken");
  EXPECT_TRUE(w.evaluate(job("ok")).ok);
  EXPECT_EQ(w.starts(), 2);
}

TEST(PlanWorkerProcess, AWorkerThatCannotStartIsAnAnswer) {
  SandboxOptions o;
  o.timeout_s = 5;
  PlanWorkerProcess w({"python3", "-c", "import sys; print('no CUDA driver here', file=sys.stderr); sys.exit(2)"}, o, 10);
  auto a = w.evaluate(job("ok"));
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.error.find("the worker did not start"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("exited with code 2"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("no CUDA driver here"), std::string::npos) << a.error;
}

}  // namespace
}  // namespace kforge
