// The HTTP API (JSON over cpp-httplib) in front of a Service:
//   GET  /health                    liveness and queue counts
//   POST /tasks   {"bundle": DIR} | {"problem": FILE}          -> 201 {"task_id", "name"}
//   POST /jobs    {"task_id", "kind": "plan"|"schedule"|"cuda"|"modelnew", KIND: {...}} -> 202 {"job_id"}
//                 ("cuda": {"source": ".cu text exporting kforge_forward"}, see `kforge abi`;
//                  "modelnew": {"source": "Python defining ModelNew", "rules": "none"|"cuda-agent"})
//   GET  /jobs/ID                   status, result (tiers, times, reward, logs) or error
//   GET  /jobs?status=S&limit=N     recent jobs
// Bad requests get 4xx with {"error": "..."} naming the field; a full queue gets 429; bodies over the
// limit get 413.
#pragma once
#include <string>

#include "server/service.h"

namespace kforge {

// Serves until the process is stopped. Throws UserError when the port cannot be bound.
void serve_http(Service& service, const std::string& host, int port);

}  // namespace kforge
