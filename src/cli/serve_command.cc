#include "cli/serve_command.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "api/app.h"
#include "api/auth.h"
#include "api/metrics.h"
#include "api/router.h"
#include "common/kernel_family.h"
#include "modules/server_modules.h"
#include "modules/startup.h"
#include "modules/transport_module.h"
#include "server/http_server.h"

namespace engram {

namespace {

// Every connection is a file descriptor, and so are the store's files: the soft limit (often
// 1,024) is raised to the hard one, and a limit below --max-connections is said at start.
void RaiseOpenFileLimit(uint64_t max_connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr uint64_t kSpare = 64;  // store files, journal, listeners, subprocess pipes
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < max_connections + kSpare) {
    spdlog::warn(
        "open file limit {} is below --max-connections {} plus {} for the server's own files; "
        "connections beyond it fail to be accepted (raise LimitNOFILE / ulimit -n)",
        static_cast<uint64_t>(limit.rlim_cur), max_connections, kSpare);
  }
}

// Blocks the shutdown signals in every thread; RunServe waits for them with sigwait.
sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

}  // namespace

int RunServe(ServeOptions options) {
  Status valid = options.Validate();
  if (!valid.ok()) {
    spdlog::error("{}", valid.message());
    return 2;
  }
  // The kernel family before anything runs a kernel: fixed for the process from here on.
  Result<KernelFamily> family = ParseKernelFamily(options.kernels);
  Status chosen = family.ok() ? ChooseKernelFamily(*family) : family.status();
  if (!chosen.ok()) {
    spdlog::error("--kernels {}: {}", options.kernels, chosen.message());
    return 2;
  }
  sigset_t signals = BlockShutdownSignals();
  RaiseOpenFileLimit(options.max_connections);
  auto auth = ApiKeyAuth::FromSpecs(options.api_keys);
  if (!auth.ok()) {
    spdlog::error("{}", auth.status().message());
    return 2;
  }
  if (auth->dev_mode()) {
    spdlog::warn("no API key configured: development mode, no authentication, loopback only");
  }

  Modules modules;
  Metrics metrics;
  Router router;
  Status ready = BuildModules(options, *family, *auth, modules);
  if (ready.ok()) ready = StartModules(modules);
  if (!ready.ok()) {
    spdlog::error("{}", ready.message());
    return StartExitCode(ready);
  }
  RegisterRoutes(router, modules, metrics, *auth);
  AddModuleMetrics(metrics, modules);
  RequestGuard guard({.dev_mode = auth->dev_mode(),
                      .allowed_origins = options.allowed_origins,
                      .allowed_hosts = options.allowed_hosts});
  App app(std::move(router), &*auth, &metrics, &guard);
  HttpServer server(
      TransportOptions(options, &app), [&app](const HttpRequest& r) { return app.Handle(r); },
      [&app](StatusCode code, const std::string& msg) {
        return app.RenderTransportError(code, msg);
      });
  // Before Start: no request renders metrics yet.
  metrics.AddGaugeSource(
      [&server](std::string& out) { AppendTransportMetrics(server.stats(), out); });
  metrics.AddGaugeSource(AppendBuildInfoMetric);
  Status started = server.Start();
  if (!started.ok()) {
    spdlog::error("cannot listen on {}: {}", options.listen, started.message());
    return 1;
  }
  std::string where =
      (options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host) +
      ":" + std::to_string(server.port());
  // Tooling waits for this exact line on stdout.
  std::cout << "engram listening on " << where << std::endl;
  spdlog::info("listening on {}", where);

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {} received: shutting down", sig);
  server.Stop(std::chrono::milliseconds(options.shutdown_grace_ms));
  const bool workers_done = ShutdownModules(modules);
  spdlog::info("shutdown complete");
  if (!workers_done) {
    // A worker is still inside the model; it will never touch the (closed) store. Exit without
    // waiting for it.
    spdlog::default_logger()->flush();
    std::cout.flush();
    std::_Exit(0);
  }
  return 0;
}

}  // namespace engram
