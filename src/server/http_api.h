// The HTTP API (JSON over cpp-httplib) in front of a Service:
//   GET  /health                    liveness and queue counts (no token needed)
//   POST /tasks   {"problem_source": TEXT, "name": NAME} | {"bundle": DIR} | {"problem": FILE} -> 201 {"task_id", "name"}
//                 (paths only inside the service's data root, server/access.h)
//   POST /jobs    {"task_id", "kind": "plan"|"schedule"|"cuda"|"modelnew", KIND: {...}} -> 202 {"job_id"}
//                 ("cuda": {"source": ".cu text exporting kforge_forward"}, see `kforge abi`;
//                  "modelnew": {"source": "Python defining ModelNew", "rules": "none"|"cuda-agent"})
//   GET  /jobs/ID                   status, result (tiers, times, reward, logs) or error
//   DELETE /jobs/ID                 cancels a job not yet running (409 otherwise)
//   GET  /jobs?status=S&limit=N     recent jobs
// With tokens (server/access.h) every request but /health needs `Authorization: Bearer TOKEN` (401), and a caller
// sees only its own tasks and jobs (others' read as 404); a caller over its request rate gets 429. Bad requests get 4xx with {"error": "..."} naming the
// field; a full queue, or a caller's full share of it, gets 429; bodies over the limit get 413.
#pragma once
#include <string>

#include "server/access.h"
#include "server/service.h"

namespace kforge {

// Serves until the process is stopped. Throws UserError when the port cannot be bound.
// `requests_per_second`: each caller's rate (0: none).
void serve_http(Service& service, const Tokens& tokens, double requests_per_second, const std::string& host, int port);

}  // namespace kforge
