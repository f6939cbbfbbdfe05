#include "server/http_api.h"

#include <httplib.h>

#include <charconv>
#include <chrono>
#include <thread>

#include "ir/error.h"
#include "server/reward_request.h"

namespace kforge {

namespace {

using nlohmann::json;

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(2) + "\n", "application/json");
}
void error(httplib::Response& res, int status, const std::string& message) { reply(res, status, {{"error", message}}); }

// The request body as a JSON object, or a 400 naming what is wrong.
std::optional<json> body_object(const httplib::Request& req, httplib::Response& res) {
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded()) {
    error(res, 400, "request body is not valid JSON");
    return std::nullopt;
  }
  if (!j.is_object()) {
    error(res, 400, "request body must be a JSON object");
    return std::nullopt;
  }
  return j;
}

// Who may call, and how often (server/access.h).
struct Access {
  const Tokens& tokens;
  RateLimiter& rate;
};

// The caller's name from its token ("" with authentication off), or a 401 (no valid token) or 429 (over its rate)
// and nullopt.
std::optional<std::string> caller(Access& access, const httplib::Request& req, httplib::Response& res) {
  std::optional<std::string> who = std::string();
  if (access.tokens.enabled()) who = access.tokens.who(req.get_header_value("Authorization"));
  if (!who) {
    error(res, 401, "give a valid token: Authorization: Bearer TOKEN");
  } else if (!access.rate.allow(*who)) {
    error(res, 429, "over this service's request rate for you; retry later");
    who.reset();
  }
  return who;
}

// A task or job of another caller reads as missing: its existence is not this caller's business.
bool visible(const std::string& owner, const std::string& caller) { return owner == caller; }

void post_task(Service& svc, Access& access, const httplib::Request& req, httplib::Response& res) {
  auto who = caller(access, req, res);
  if (!who) return;
  auto j = body_object(req, res);
  if (!j) return;
  try {
    TaskRecord t;
    if (j->contains("precision") && !(*j)["precision"].is_string())
      return error(res, 400, "\"precision\" must be a string: fp32, fp16 or bf16");
    std::string precision = j->value("precision", std::string());
    if (j->contains("bundle") && (*j)["bundle"].is_string()) t = svc.register_bundle((*j)["bundle"], *who);
    else if (j->contains("problem") && (*j)["problem"].is_string()) t = svc.import_problem((*j)["problem"], *who, precision);
    else if (j->contains("problem_source") && (*j)["problem_source"].is_string())
      t = svc.import_source(j->value("name", "problem"), (*j)["problem_source"], *who, precision);
    else
      return error(res, 400, "give \"problem_source\" (a KernelBench file's text, with \"name\"), \"bundle\" (a task bundle "
                             "folder) or \"problem\" (a KernelBench file) as a string");
    reply(res, 201, {{"task_id", t.id}, {"name", t.name}, {"bundle", t.bundle_dir}});
  } catch (const UserError& e) {
    error(res, 400, e.what());
  }
}

void post_job(Service& svc, Access& access, const httplib::Request& req, httplib::Response& res) {
  auto who = caller(access, req, res);
  if (!who) return;
  auto j = body_object(req, res);
  if (!j) return;
  if (!j->contains("task_id") || !(*j)["task_id"].is_number_integer()) return error(res, 400, "\"task_id\" (an integer) is required");
  int64_t task = (*j)["task_id"];
  auto record = svc.store().task(task);
  if (!record || !visible(record->owner, *who)) return error(res, 404, "no task " + std::to_string(task));
  std::string kind = j->value("kind", "");
  if (kind != "plan" && kind != "schedule" && kind != "cuda" && kind != "modelnew")
    return error(res, 400, "\"kind\" must be \"plan\", \"schedule\", \"cuda\" or \"modelnew\"");
  if (!j->contains(kind) || !(*j)[kind].is_object()) return error(res, 400, "\"" + kind + "\" (an object) is required");
  if (kind != "schedule" && !svc.options().untrusted_allowed)
    return error(res, 403, "this service takes no untrusted candidates (plan, cuda, modelnew): it has no delegated cgroup "
                           "(--memory-cgroup) to keep one job's processes and memory from another's; its operator may "
                           "start it with --unsafe-shared");
  if ((kind == "cuda" || kind == "modelnew") && !(*j)[kind].value("source", nlohmann::json()).is_string())
    return error(res, 400, "\"" + kind + "\" needs \"source\": the " +
                               (kind == "cuda" ? ".cu text exporting kforge_forward" : "Python text defining ModelNew"));
  try {
    int64_t id = svc.submit(task, kind, (*j)[kind].dump(), *who);
    reply(res, 202, {{"job_id", id}, {"status", "queued"}});
  } catch (const Service::QueueFull& e) {
    error(res, 429, e.what());
  }
}

// OpenRLHF's remote reward model contract (--remote_rm_url): {"query": [answer text, ...], "labels": [task, ...],
// "prompts": [...]} -> {"rewards": [...]}; a label names the task to judge its answer on (the task id, as a number or
// a string). Each answer's candidate (reward_request.h) becomes a job of this caller; the reply waits for all of
// them ("timeout_s", default 600). An answer without a candidate, on an unknown task, refused by the queue or not
// judged in time gets the environment's reward for a wrong kernel, -1, and `details` says why.
void post_reward(Service& svc, Access& access, const httplib::Request& req, httplib::Response& res) {
  auto who = caller(access, req, res);
  if (!who) return;
  auto j = body_object(req, res);
  if (!j) return;
  const json& queries = j->value("query", json()), &labels = j->value("labels", json());
  if (!queries.is_array() || !labels.is_array() || queries.size() != labels.size())
    return error(res, 400, "\"query\" (the answers) and \"labels\" (each answer's task id) must be arrays of one length");
  const json& wait = j->value("timeout_s", json(600.0));
  if (!wait.is_number()) return error(res, 400, "\"timeout_s\" must be a number of seconds");
  const double timeout_s = std::clamp(wait.get<double>(), 1.0, 3600.0);
  const size_t n = queries.size();
  std::vector<double> rewards(n, -1.0);
  std::vector<json> details(n, json::object());
  std::vector<int64_t> jobs(n, 0);
  for (size_t i = 0; i < n; ++i) {
    json& d = details[i];
    const json& label = labels[i];
    int64_t task = -1;
    if (label.is_number_integer()) {
      task = label.get<int64_t>();
    } else if (label.is_string()) {  // digits only, and in range: anything else names no task
      const std::string& s = label.get_ref<const std::string&>();
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), task);
      if (ec != std::errc() || end != s.data() + s.size()) task = -1;
    }
    auto record = task >= 0 ? svc.store().task(task) : std::nullopt;
    if (!record || !visible(record->owner, *who)) {
      d["error"] = "no task " + label.dump() + " (a label is the task id of POST /tasks)";
      continue;
    }
    AnsweredCandidate c = candidate_in_answer(queries[i].is_string() ? queries[i].get<std::string>() : std::string());
    if (c.kind.empty()) {
      d["error"] = c.why;
      continue;
    }
    if (!svc.options().untrusted_allowed) {
      d["error"] = "this service takes no untrusted candidates (start it with --memory-cgroup or --unsafe-shared)";
      continue;
    }
    try {
      jobs[i] = svc.submit(task, c.kind, json{{"source", c.source}}.dump(), *who);
      d["job_id"] = jobs[i];
      d["kind"] = c.kind;
    } catch (const Service::QueueFull& e) {
      d["error"] = e.what();
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (size_t i = 0; i < n; ++i) {
    if (!jobs[i]) continue;
    std::optional<Job> job;
    for (;;) {
      job = svc.store().job(jobs[i]);
      if (!job || job->status == "done" || job->status == "failed" || job->status == "cancelled") break;
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    json& d = details[i];
    d["status"] = job ? job->status : "missing";
    if (job && job->status == "done") {
      json r = json::parse(job->result, nullptr, false);
      if (!r.is_discarded()) {
        rewards[i] = r.value("reward", -1.0);
        d["tier"] = r.value("tier", "failed");
        // What a multi-turn agent acts on (a compiler error, the first mismatching elements), trimmed.
        if (std::string log = r.value("log", ""); !log.empty()) d["log"] = log.substr(0, 2000);
      }
    } else if (job && job->status == "failed") {
      d["error"] = job->error;
    } else {
      d["error"] = "not judged within " + std::to_string(int(timeout_s)) + " s (still " + d["status"].get<std::string>() + ")";
      if (job && svc.store().cancel(jobs[i])) d["status"] = "cancelled";  // one not yet running frees its place
    }
  }
  reply(res, 200, {{"rewards", rewards}, {"scores", rewards}, {"details", details}});
}

}  // namespace

void serve_http(Service& svc, const Tokens& tokens, double requests_per_second, const std::string& host, int port) {
  httplib::Server srv;
  RateLimiter rate(requests_per_second, 2 * requests_per_second);
  Access access{tokens, rate};
  srv.set_payload_max_length(svc.options().max_body);
  // POST /reward holds its connection until its jobs are judged (seconds to minutes): enough threads that RL
  // workers waiting on rewards leave room for /health, /jobs and the other callers.
  srv.new_task_queue = [] { return new httplib::ThreadPool(std::max(64u, 8 * std::thread::hardware_concurrency())); };
  srv.Get("/health", [&](const httplib::Request&, httplib::Response& res) { reply(res, 200, svc.health()); });
  srv.Post("/tasks", [&](const httplib::Request& req, httplib::Response& res) { post_task(svc, access, req, res); });
  srv.Post("/jobs", [&](const httplib::Request& req, httplib::Response& res) { post_job(svc, access, req, res); });
  srv.Post("/reward", [&](const httplib::Request& req, httplib::Response& res) { post_reward(svc, access, req, res); });
  srv.Get(R"(/jobs/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
    auto who = caller(access, req, res);
    if (!who) return;
    auto job = svc.store().job(std::stoll(req.matches[1]));
    if (!job || !visible(job->owner, *who)) return error(res, 404, "no job " + std::string(req.matches[1]));
    reply(res, 200, job->to_json());
  });
  srv.Delete(R"(/jobs/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
    auto who = caller(access, req, res);
    if (!who) return;
    int64_t id = std::stoll(req.matches[1]);
    auto job = svc.store().job(id);
    if (!job || !visible(job->owner, *who)) return error(res, 404, "no job " + std::string(req.matches[1]));
    if (!svc.store().cancel(id)) return error(res, 409, "job " + std::to_string(id) + " is " + job->status + ": only a job not yet running is cancelled");
    reply(res, 200, {{"job_id", id}, {"status", "cancelled"}});
  });
  srv.Get("/jobs", [&](const httplib::Request& req, httplib::Response& res) {
    auto who = caller(access, req, res);
    if (!who) return;
    int limit = 100;
    if (req.has_param("limit")) {
      try {
        limit = std::clamp(std::stoi(req.get_param_value("limit")), 1, 1000);
      } catch (const std::exception&) {
        return error(res, 400, "limit must be an integer");
      }
    }
    json out = json::array();
    auto mine = tokens.enabled() ? std::optional<std::string>(*who) : std::nullopt;
    for (auto& job : svc.store().list(req.get_param_value("status"), limit, mine)) out.push_back(job.to_json());
    reply(res, 200, {{"jobs", out}});
  });
  srv.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      error(res, 500, std::string("internal error (please report): ") + e.what());
    } catch (...) {
      error(res, 500, "internal error (please report)");
    }
  });
  srv.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    // cpp-httplib caps form-urlencoded bodies (a client's default type) at 8 KiB, whatever max_body says.
    if (res.body.empty())
      error(res, res.status, res.status == 413 ? "request body too large (send it as Content-Type: application/json)" : "no such endpoint");
  });
  if (!srv.listen(host, port)) throw UserError("cannot listen on " + host + ":" + std::to_string(port));
}

}  // namespace kforge
