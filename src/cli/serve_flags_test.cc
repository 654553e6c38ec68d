// Every setting of the option table is reachable the three ways (flag, environment variable,
// config-file key) and validated the same way whichever way it came.
#include "cli/serve_flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <type_traits>

#include "config/option_table.h"

namespace engram {
namespace {

// A value each setting accepts that differs from its default: as command-line text, as TOML, and
// a check that it arrived.
struct Probe {
  std::string text;
  std::string toml;
  std::function<bool(const ServeOptions&)> arrived;
};

Probe ProbeFor(const OptionSpec& spec) {
  const ServeOptions defaults;
  return std::visit(
      [&](auto member) -> Probe {
        using T = std::decay_t<decltype(defaults.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          std::string v = "probe-value";
          for (std::string_view c : spec.choices) {
            if (c != defaults.*member) v = std::string(c);
          }
          return {v, "\"" + v + "\"",
                  [member, v](const ServeOptions& o) { return o.*member == v; }};
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return {"k-probe", "[\"k-probe\"]", [member](const ServeOptions& o) {
                    return o.*member == std::vector<std::string>{"k-probe"};
                  }};
        } else if constexpr (std::is_same_v<T, bool>) {
          const bool v = !(defaults.*member);
          return {v ? "true" : "false", v ? "true" : "false",
                  [member, v](const ServeOptions& o) { return o.*member == v; }};
        } else {
          double v = std::isfinite(spec.max)   ? spec.max
                     : std::isfinite(spec.min) ? std::max(spec.min, 0.0) + 7
                                               : 7;
          if (static_cast<T>(v) == defaults.*member) v = std::isfinite(spec.min) ? spec.min : v + 1;
          const T typed = static_cast<T>(v);
          std::string text =
              std::is_floating_point_v<T> ? std::to_string(typed) : std::to_string(typed);
          return {text, text,
                  [member, typed](const ServeOptions& o) { return o.*member == typed; }};
        }
      },
      spec.field);
}

bool IsFlag(const OptionSpec& spec) {
  return std::holds_alternative<bool ServeOptions::*>(spec.field);
}

// Parses `args` (without the program name) the way main does: --config at the top level.
ServeOptions Parse(std::vector<std::string> args) {
  CLI::App app;
  app.set_config("--config");
  ServeOptions options;
  auto* serve = app.add_subcommand("serve");
  AddServeOptions(*serve, options);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  ApplyListsFromEnvironment(options);
  return options;
}

TEST(ServeFlagsTest, EverySettingIsReachableByFlag) {
  for (const OptionSpec& spec : ServeOptionTable()) {
    SCOPED_TRACE(std::string(spec.name));
    const Probe probe = ProbeFor(spec);
    std::vector<std::string> args = {"serve"};
    if (IsFlag(spec)) {
      const bool on = probe.text == "true";
      args.push_back(on ? "--" + std::string(spec.name) : "--no-" + std::string(spec.name));
    } else {
      args.push_back("--" + std::string(spec.name));
      args.push_back(probe.text);
    }
    EXPECT_TRUE(probe.arrived(Parse(args)));
  }
}

TEST(ServeFlagsTest, EverySettingIsReachableByEnvironment) {
  for (const OptionSpec& spec : ServeOptionTable()) {
    SCOPED_TRACE(std::string(spec.name));
    const Probe probe = ProbeFor(spec);
    const std::string env = OptionEnvName(spec);
    ::setenv(env.c_str(), probe.text.c_str(), 1);
    const ServeOptions parsed = Parse({"serve"});
    ::unsetenv(env.c_str());
    EXPECT_TRUE(probe.arrived(parsed)) << env << "=" << probe.text;
  }
}

TEST(ServeFlagsTest, EverySettingIsReachableByConfigFile) {
  char path[] = "/tmp/engram-config-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  for (const OptionSpec& spec : ServeOptionTable()) {
    SCOPED_TRACE(std::string(spec.name));
    const Probe probe = ProbeFor(spec);
    std::ofstream(path) << "[serve]\n" << spec.name << " = " << probe.toml << "\n";
    EXPECT_TRUE(probe.arrived(Parse({"--config", path, "serve"})));
  }
  ::unlink(path);
}

TEST(ServeFlagsTest, ABadEnumIsRefusedNamingTheValidValuesWhicheverWayItCame) {
  const std::string want = "--fusion must be one of zscore, score, rrf; got \"fastest\"";
  EXPECT_EQ(Parse({"serve", "--fusion", "fastest"}).Validate().message(), want);
  ::setenv("ENGRAM_FUSION", "fastest", 1);
  EXPECT_EQ(Parse({"serve"}).Validate().message(), want);
  ::unsetenv("ENGRAM_FUSION");
  char path[] = "/tmp/engram-config-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "[serve]\nfusion = \"fastest\"\n";
  EXPECT_EQ(Parse({"--config", path, "serve"}).Validate().message(), want);
  ::unlink(path);
}

TEST(ServeFlagsTest, ApiKeysFromTheEnvironmentAreCommaSeparated) {
  ::setenv("ENGRAM_API_KEYS", "k1,k2:ws", 1);
  EXPECT_EQ(Parse({"serve"}).api_keys, (std::vector<std::string>{"k1", "k2:ws"}));
  ::setenv("ENGRAM_API_KEYS", "", 1);
  EXPECT_EQ(Parse({"serve"}).api_keys, std::vector<std::string>{""});  // refused by Validate
  ::unsetenv("ENGRAM_API_KEYS");
  EXPECT_TRUE(Parse({"serve"}).api_keys.empty());
}

}  // namespace
}  // namespace engram
