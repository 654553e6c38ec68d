// Metrics: Prometheus text exposition of request counts and latency histograms per route, plus
// gauges contributed by other components (shards, store, queues) at render time.
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace engram {

// Appends one unlabelled sample with its # HELP and # TYPE lines; `type` is "counter" or "gauge".
// For gauge sources.
void AppendMetric(std::string& out, std::string_view type, std::string_view name,
                  std::string_view help, uint64_t value);
// Appends one metric with a sample per value of one label, e.g. name{lane="request"} 1.5.
void AppendLabelledMetric(std::string& out, std::string_view type, std::string_view name,
                          std::string_view help, std::string_view label,
                          const std::vector<std::pair<std::string_view, double>>& samples);

class Metrics {
 public:
  static constexpr std::array<double, 14> kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

  void ObserveRequest(const std::string& route, const std::string& method, int status,
                      double seconds);

  // A gauge source appends complete exposition lines (with # HELP / # TYPE) to `out`.
  using GaugeSource = std::function<void(std::string& out)>;
  void AddGaugeSource(GaugeSource source);

  // Runs the gauge sources without the lock held.
  std::string Render() const EXCLUDES(mu_);

 private:
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> buckets{};
    uint64_t count = 0;
    double sum = 0;
  };
  mutable Mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> requests_ GUARDED_BY(mu_);
  std::map<std::string, Histogram> latency_ GUARDED_BY(mu_);
  std::vector<GaugeSource> gauges_ GUARDED_BY(mu_);
};

}  // namespace engram
