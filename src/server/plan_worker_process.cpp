#include "server/plan_worker_process.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>

namespace kforge {

namespace {
std::string tail(const std::string& s, size_t n = 2000) { return s.size() > n ? s.substr(s.size() - n) : s; }
}  // namespace

PlanWorkerProcess::PlanWorkerProcess(std::vector<std::string> argv, SandboxOptions sandbox, double startup_s)
    : argv_(std::move(argv)), o_(std::move(sandbox)), startup_s_(startup_s) {}

PlanWorkerProcess::~PlanWorkerProcess() { stop(); }

void PlanWorkerProcess::stop() {
  if (p_.pid > 0) end_sandboxed(p_, o_, io_);
}

std::string PlanWorkerProcess::died(const std::string& what) {
  stop();
  std::string err = tail(io_.err);
  return what + " (" + io_.cause() + ")" + (err.empty() ? "" : ":\n" + err);
}

std::string PlanWorkerProcess::read_line(double timeout_s, std::string& why) {
  auto t0 = std::chrono::steady_clock::now();
  PumpStop stop = pump_output(p_, o_, timeout_s, io_, [](const std::string& out) { return out.find('\n') != std::string::npos; });
  io_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stop != PumpStop::enough) {
    why = died("the worker stopped");
    return "";
  }
  size_t nl = io_.out.find('\n');
  std::string line = io_.out.substr(0, nl);
  io_.out.erase(0, nl + 1);
  io_.err = tail(io_.err, 8192);  // keep the recent log only: the worker lives for many jobs
  return line;
}

bool PlanWorkerProcess::start(std::string& why) {
  io_ = SandboxResult{};
  p_ = spawn_sandboxed(argv_, o_);
  ++starts_;
  std::string line = read_line(startup_s_, why);
  if (line.empty()) {
    why = "the worker did not start: " + why;
    return false;
  }
  auto ready = nlohmann::json::parse(line, nullptr, false);
  if (ready.is_discarded() || !ready.value("ready", false)) {
    why = died("the worker did not start: it said '" + tail(line, 300) + "'");
    return false;
  }
  copy_gbs_ = ready.value("copy_gbs", 0.0);
  return true;
}

PlanWorkerProcess::Answer PlanWorkerProcess::evaluate(const nlohmann::json& job) {
  Answer a;
  if (p_.pid <= 0 && !start(a.error)) return a;
  std::string line = job.dump() + "\n";
  // A worker that died between jobs: the write fails (EPIPE; the service ignores SIGPIPE).
  if (write(p_.in, line.data(), line.size()) != ssize_t(line.size())) {
    a.error = died("the worker was gone before the job");
    return a;
  }
  std::string reply = read_line(o_.timeout_s, a.error);
  if (reply.empty()) return a;
  auto j = nlohmann::json::parse(reply, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    a.error = died("the worker answered something that is not JSON: '" + tail(reply, 300) + "'");
    return a;
  }
  a.ok = j.value("ok", false);
  if (a.ok) a.result = j["result"];
  else a.error = j.value("error", "the worker gave no reason");
  if (j.contains("worker_restart")) {
    a.result["worker_restart"] = j["worker_restart"];
    stop();  // it exits by itself; the next job starts a fresh one
  }
  return a;
}

}  // namespace kforge
