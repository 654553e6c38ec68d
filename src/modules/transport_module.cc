#include "modules/transport_module.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <thread>

#include "api/app.h"
#include "api/metrics.h"
#include "common/build_info.h"

namespace engram {

HttpServerOptions TransportOptions(const ServeOptions& options, App* app) {
  HttpServerOptions http;
  http.host = options.host;
  http.port = options.port;
  http.io_threads = options.io_threads > 0
                        ? options.io_threads
                        : std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  http.worker_threads = options.worker_threads;
  // Searches wait on nothing but the cores when the store, the embedding model and the ranking
  // are local: they run on the I/O threads, one per core at a time. A PostgreSQL store (each
  // search checks the scope's version), an embedding endpoint or an LLM reranker makes them wait
  // on the network, where so few at once would idle the cores; they then go to the worker pool.
  if (options.store_url.empty() && options.embedder != "openai" && options.rerank != "llm") {
    http.compute_slots = options.compute_slots;
    http.is_compute_bound = [app](const HttpRequest& r) { return app->IsComputeBound(r); };
  }
  // With SQLite an add only appends its event to the intake journal and is answered once that is
  // synced: the I/O thread that read it runs it. PostgreSQL's insert waits on the network.
  if (options.store_url.empty()) {
    http.runs_inline = [app](const HttpRequest& r) { return app->RunsInline(r); };
  }
  http.max_body_bytes = options.max_body_bytes;
  http.max_header_bytes = options.max_header_bytes;
  http.header_timeout = std::chrono::milliseconds(options.header_timeout_ms);
  http.body_timeout = std::chrono::milliseconds(options.body_timeout_ms);
  http.idle_timeout = std::chrono::milliseconds(options.idle_timeout_ms);
  http.max_connections = options.max_connections;
  http.max_connections_per_client = options.max_connections_per_client;
  http.idle_timeout_under_pressure = std::chrono::milliseconds(options.pressure_idle_timeout_ms);
  http.max_inflight_body_bytes = options.max_inflight_body_bytes;
  http.check_head = [app](const HttpRequest& head) { return app->CheckBeforeBody(head); };
  return http;
}

void AppendTransportMetrics(const HttpServer::Stats& s, std::string& out) {
  AppendMetric(out, "gauge", "engram_http_open_connections", "Open client connections.",
               s.open_connections);
  AppendMetric(out, "gauge", "engram_http_inflight_body_bytes",
               "Request body bytes being received or held by requests in flight.",
               s.inflight_body_bytes);
  AppendLabelledMetric(out, "counter", "engram_http_refused_connections_total",
                       "Connections answered 503 and closed at once.", "reason",
                       {{"max_connections", static_cast<double>(s.refused_connections)},
                        {"per_client", static_cast<double>(s.refused_connections_per_client)}});
  AppendMetric(out, "counter", "engram_http_idle_closed_total",
               "Idle connections closed to admit new ones at --max-connections.",
               s.closed_idle_for_new);
  AppendMetric(out, "counter", "engram_http_body_budget_refused_total",
               "Requests answered 503 because --max-inflight-body-bytes was in use.",
               s.refused_body_budget);
  AppendMetric(out, "counter", "engram_http_refused_before_body_total",
               "Requests answered from their head alone (no route, no valid key, unsupported "
               "encoding), their body never read.",
               s.refused_before_body);
}

void AppendBuildInfoMetric(std::string& out) {
  const BuildInfo info = GetBuildInfo();
  fmt::format_to(std::back_inserter(out),
                 "# HELP engram_build_info The running binary's version and source revision.\n"
                 "# TYPE engram_build_info gauge\n"
                 "engram_build_info{{version=\"{}\",revision=\"{}\"}} 1\n",
                 info.version, info.revision);
}

}  // namespace engram
