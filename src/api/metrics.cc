#include "api/metrics.h"

#include <fmt/format.h>

namespace engram {

void AppendMetric(std::string& out, std::string_view type, std::string_view name,
                  std::string_view help, uint64_t value) {
  fmt::format_to(std::back_inserter(out), "# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help,
                 type, value);
}

void AppendLabelledMetric(std::string& out, std::string_view type, std::string_view name,
                          std::string_view help, std::string_view label,
                          const std::vector<std::pair<std::string_view, double>>& samples) {
  fmt::format_to(std::back_inserter(out), "# HELP {0} {1}\n# TYPE {0} {2}\n", name, help, type);
  for (const auto& [value_of_label, value] : samples) {
    fmt::format_to(std::back_inserter(out), "{}{{{}=\"{}\"}} {}\n", name, label, value_of_label,
                   value);
  }
}

void Metrics::ObserveRequest(const std::string& route, const std::string& method, int status,
                             double seconds) {
  MutexLock lock(&mu_);
  ++requests_[{route, method, status}];
  Histogram& h = latency_[route];
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++h.buckets[i];
  }
  ++h.count;
  h.sum += seconds;
}

void Metrics::AddGaugeSource(GaugeSource source) {
  MutexLock lock(&mu_);
  gauges_.push_back(std::move(source));
}

std::string Metrics::Render() const {
  std::string out;
  std::vector<GaugeSource> gauges;
  {
    MutexLock lock(&mu_);
    out += "# HELP engram_http_requests_total HTTP requests by route, method and status.\n";
    out += "# TYPE engram_http_requests_total counter\n";
    for (const auto& [key, n] : requests_) {
      const auto& [route, method, status] = key;
      out +=
          fmt::format("engram_http_requests_total{{route=\"{}\",method=\"{}\",status=\"{}\"}} {}\n",
                      route, method, status, n);
    }
    out += "# HELP engram_http_request_duration_seconds Request latency by route.\n";
    out += "# TYPE engram_http_request_duration_seconds histogram\n";
    for (const auto& [route, h] : latency_) {
      for (size_t i = 0; i < kBuckets.size(); ++i) {
        out += fmt::format(
            "engram_http_request_duration_seconds_bucket{{route=\"{}\",le=\"{}\"}} {}\n", route,
            kBuckets[i], h.buckets[i]);
      }
      out += fmt::format(
          "engram_http_request_duration_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {}\n", route,
          h.count);
      out += fmt::format("engram_http_request_duration_seconds_sum{{route=\"{}\"}} {}\n", route,
                         h.sum);
      out += fmt::format("engram_http_request_duration_seconds_count{{route=\"{}\"}} {}\n", route,
                         h.count);
    }
    gauges = gauges_;
  }
  // Gauge sources may take their own locks: call them without ours.
  for (const auto& g : gauges) g(out);
  return out;
}

}  // namespace engram
