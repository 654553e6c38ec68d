// The transport module: the HTTP server's settings from the serve options (address, threads,
// limits, timeouts) and where each kind of request runs, plus the transport's and the build's
// /metrics figures.
// Thread-safety: pure functions; the hooks they install call App, which is safe for concurrent use.
#pragma once

#include <string>

#include "config/serve_options.h"
#include "server/http_server.h"

namespace engram {

class App;

// `app` must outlive the server built from these options.
HttpServerOptions TransportOptions(const ServeOptions& options, App* app);

// Open connections, body bytes in flight, refused and closed connections.
void AppendTransportMetrics(const HttpServer::Stats& stats, std::string& out);
// engram_build_info{version, revision} 1.
void AppendBuildInfoMetric(std::string& out);

}  // namespace engram
