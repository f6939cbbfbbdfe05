#include "server/serve_command.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "env/python_runtime.h"
#include "ir/error.h"
#include "runtime/driver.h"
#include "server/http_api.h"

namespace kforge {

CLI::App* add_serve_command(CLI::App& app, ServeArgs& a) {
  auto* s = app.add_subcommand("serve", "run the environment as an HTTP service (jobs in SQLite, sandboxed workers)");
  s->add_option("--host", a.host, "address to listen on");
  s->add_option("--port", a.port, "port");
  s->add_option("--dir", a.work_dir, "service folder: jobs.db, jobs/, imports/");
  s->add_option("--workers", a.workers, "workers (one per GPU; 0 = queue only)");
  s->add_option("--max-queue", a.max_queue, "queued jobs before new ones are refused (429)");
  s->add_option("--job-timeout", a.job_timeout_s, "seconds a job may run");
  s->add_option("--slots-per-gpu", a.slots_per_gpu, "evaluation processes per GPU (one is checked and timed while the others load)");
  s->add_option("--compile-workers", a.compile_workers, "parallel nvcc builds of raw CUDA candidates (on the CPU cores)");
  s->add_option("--fresh-every", a.drawn_every, "evaluations of a task checked on one draw of fresh sets (and sets beyond "
                "get_inputs' distribution) before the next is drawn; 0: the stored sets only, which a policy can learn");
  s->add_option("--memory-limit", a.memory_mib, "resident memory (MiB) a job's processes may hold together");
  s->add_option("--memory-cgroup", a.memory_cgroup, "a delegated cgroup v2 folder (memory controller enabled for its children): "
                "the kernel enforces --memory-limit; default: a watchdog polls the processes' resident memory");
  s->add_option("--gpu-memory-gib", a.gpu_memory_gib, "device memory one GPU's evaluations may hold together (default: 90% of the GPU's)");
  s->add_option("--max-body", a.max_body, "largest request body in bytes (413 beyond)");
  s->add_option("--sandbox-user", a.sandbox_user, "user the sandboxed jobs run as (needs read access to python and torch)");
  s->add_option("--tokens", a.tokens, "file of 'NAME TOKEN' lines: every request needs Authorization: Bearer TOKEN, and a "
                "caller sees only its own tasks and jobs (required with a --host beyond loopback)");
  s->add_option("--data-root", a.data_root, "the folder bundle and problem paths must lie in (otherwise: any path without "
                "--tokens, none with them; problems can always be uploaded as text)");
  s->add_option("--max-queue-per-token", a.max_queue_per_token, "jobs one caller may have waiting (0: only --max-queue)");
  s->add_option("--rate-per-token", a.rate_per_token, "requests per second one caller may make (bursts of twice that; 0: no limit)");
  s->add_option("--sandbox-uid-base", a.sandbox_uid_base, "untrusted jobs of evaluation slot i run as user id N + i (ids "
                "no one else uses; files they write are theirs): one job's processes never count against another's limit");
  s->add_flag("--unsafe-shared", a.unsafe_shared, "take untrusted candidates without --memory-cgroup: their jobs then share "
              "the sandbox user's process limit and the memory watchdog's polling gaps");
  return s;
}

// 90% of the smallest GPU's memory (the rest: other processes' contexts, fragmentation); 0 without a driver.
static int64_t default_gpu_memory(int workers) {
  if (workers == 0 || !driver_available()) return 0;
  int64_t smallest = 0;
  for (int gpu = 0; gpu < workers; ++gpu) {
    CUdevice dev;
    size_t bytes = 0;
    if (driver().cuDeviceGet(&dev, gpu) != CUDA_SUCCESS || driver().cuDeviceTotalMem(&bytes, dev) != CUDA_SUCCESS) return 0;
    smallest = smallest == 0 ? int64_t(bytes) : std::min(smallest, int64_t(bytes));
  }
  return smallest / 10 * 9;
}

int run_serve(const ServeArgs& a, const char* argv0) {
  ServiceOptions o;
  o.work_dir = a.work_dir;
  o.workers = a.workers;
  o.max_queue = a.max_queue;
  o.max_body = a.max_body;
  o.kforge_exe = std::filesystem::canonical("/proc/self/exe").string();
  o.python_dir = kforge_python_dir(KFORGE_PYTHON_DIR);
  o.sandbox.timeout_s = a.job_timeout_s;
  o.sandbox.gpu = true;
  o.sandbox.memory_bytes = a.memory_mib << 20;
  o.sandbox.cgroup_parent = a.memory_cgroup;
  o.compile_workers = a.compile_workers;
  o.slots_per_gpu = a.slots_per_gpu;
  o.drawn_every = a.drawn_every;
  Tokens tokens = a.tokens.empty() ? Tokens() : Tokens::load(a.tokens);
  if (!tokens.enabled() && !is_loopback(a.host))
    throw UserError("--host " + a.host + " listens beyond this machine: give --tokens FILE (the API would be open to anyone)");
  o.data_root = a.data_root;
  o.paths_anywhere = !tokens.enabled();
  o.max_queue_per_owner = a.max_queue_per_token;
  o.untrusted_allowed = !a.memory_cgroup.empty() || a.unsafe_shared;
  o.sandbox_uid_base = a.sandbox_uid_base;
  if (a.sandbox_uid_base > 0 && getuid() != 0) throw UserError("--sandbox-uid-base needs the service to run as root (it switches users)");
  if (a.memory_cgroup.empty())
    std::cerr << "kforge serve: no delegated cgroup (--memory-cgroup): "
              << (a.unsafe_shared ? "untrusted jobs share the sandbox user's limits (--unsafe-shared)"
                                  : "untrusted kinds (plan, cuda, modelnew) are refused; --unsafe-shared takes them")
              << std::endl;
  o.gpu_memory_bytes = a.gpu_memory_gib > 0 ? int64_t(a.gpu_memory_gib * double(1 << 30)) : default_gpu_memory(a.workers);
  run_as(o.sandbox, a.sandbox_user);
  Service service(o);
  std::cerr << "kforge serve: http://" << a.host << ":" << a.port << " (" << a.workers << " worker(s), "
            << service.health()["queued"] << " queued job(s))" << std::endl;
  serve_http(service, tokens, a.rate_per_token, a.host, a.port);
  return 0;
}

}  // namespace kforge
