// What a hostile client can and cannot make the server hold, against a real `engram serve`:
// bodies of unauthenticated requests are never read (nor "100 Continue" sent), request bodies in
// flight stay within --max-inflight-body-bytes, and idle connections cannot lock normal clients
// out (--max-connections, --max-connections-per-client).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A TCP connection to the server from `source` (any 127.0.0.0/8 address), or -1.
int ConnectFrom(int port, const char* source = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Whatever the server sends within `timeout_ms` or until it closes, at most `max` bytes.
std::string ReadSome(int fd, int timeout_ms, size_t max = 65536) {
  std::string out;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (out.size() < max) {
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) break;
    char buf[8192];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.find("\r\n\r\n") != std::string::npos) break;  // a response head is all we look at
  }
  return out;
}

std::string AddHead(size_t content_length, const std::string& extra_headers = "") {
  return "POST /leaderboard/add HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(content_length) + "\r\n\r\n";
}

TEST(TransportLimitsTest, BodiesOfUnauthenticatedRequestsAreNeverBuffered) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server(
      {.extra_args = {"--api-key", "k1", "--embedder", "none", "--retrieval", "bm25", "--no-ocr"}});
  ASSERT_TRUE(server.Start());
  const long before = RssKib(server.pid());
  ASSERT_GT(before, 0);
  // 24 keyless clients each declare a 60 MiB body and send 8 MiB of it (with Expect: 100-continue
  // on half of them): each is answered 401 from its head, gets no "100 Continue", and is closed.
  constexpr size_t kDeclared = 60u << 20;
  const std::string chunk(1 << 20, 'x');
  std::vector<int> fds;
  for (int i = 0; i < 24; ++i) {
    const int fd = ConnectFrom(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, AddHead(kDeclared, i % 2 ? "Expect: 100-continue\r\n" : "")));
    fds.push_back(fd);
  }
  for (int fd : fds) {
    const std::string answer = ReadSome(fd, 5000);
    EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 401") << answer.substr(0, 40);
    EXPECT_EQ(answer.find("100 Continue"), std::string::npos);
    for (int k = 0; k < 8; ++k) {
      if (!SendAll(fd, chunk)) break;  // the server stops reading and closes
    }
  }
  const long after = RssKib(server.pid());
  for (int fd : fds) ::close(fd);
  // Buffering the bodies would take 24 × 8 MiB = 192 MiB at least.
  if (!kAddressSanitizer) {
    EXPECT_LT(after - before, 48 * 1024) << "RSS grew from " << before << " to " << after << " KiB";
  }
  HttpClient client(server.BaseUrl());
  EXPECT_EQ(client.Get("/healthz").status, 200);
}

TEST(TransportLimitsTest, BodiesInFlightStayWithinTheBudget) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server(
      {.extra_args = {"--api-key", "k1", "--embedder", "none", "--retrieval", "bm25", "--no-ocr",
                      "--max-body-bytes", "4194304", "--max-inflight-body-bytes", "8388608"}});
  ASSERT_TRUE(server.Start());
  // Two authenticated clients declare 4 MiB each and send half: the budget is taken.
  std::vector<int> holders;
  for (int i = 0; i < 2; ++i) {
    const int fd = ConnectFrom(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(
        fd, AddHead(4u << 20, "Authorization: Bearer k1\r\n") + std::string(2u << 20, ' ')));
    holders.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // A third is refused before its body is read, with a hint when to come back.
  const int third = ConnectFrom(server.port());
  ASSERT_TRUE(SendAll(third, AddHead(1u << 20, "Authorization: Bearer k1\r\n")));
  const std::string answer = ReadSome(third, 5000);
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 503") << answer.substr(0, 40);
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer;
  ::close(third);
  // Once the holders go away, the budget is free again.
  for (int fd : holders) ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  HttpClient client(server.BaseUrl());
  const json add = AddBody(UniqueId("r"), UniqueId("user"), "s",
                           json::array({Message("budget probe " + UniqueWord())}));
  EXPECT_EQ(client.Post(kAddPath, add, {{"Authorization", "Bearer k1"}}).status, 200);
  const HttpResponse metrics = client.Get("/metrics", {{"Authorization", "Bearer k1"}});
  EXPECT_NE(metrics.body.find("engram_http_body_budget_refused_total 1"), std::string::npos);
}

TEST(TransportLimitsTest, IdleConnectionsDoNotLockOutNormalClients) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server({.extra_args = {"--embedder", "none", "--retrieval", "bm25", "--no-ocr"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("user");
  const std::string word = UniqueWord();
  ASSERT_EQ(client
                .Post(kAddPath, AddBody(UniqueId("r"), user, "s",
                                        json::array({Message("idle probe " + word)})))
                .status,
            200);
  // 1,100 connections that never send a byte: from one address they hit the per-client limit
  // (256), and from many they fill --max-connections (1,024) and are closed to admit others.
  std::vector<int> idle;
  for (int i = 0; i < 1100; ++i) {
    const std::string source = "127.0.0." + std::to_string(2 + i % 8);
    const int fd = ConnectFrom(server.port(), source.c_str());
    if (fd >= 0) idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int ok = 0;
  for (int i = 0; i < 20; ++i) {
    ok += client.Post(kSearchPath, SearchBody(user, "idle probe")).status == 200;
  }
  EXPECT_EQ(ok, 20);
  for (int fd : idle) ::close(fd);
  // More than 1,024 were opened: some idle ones were closed to admit the others.
  const HttpResponse metrics = client.Get("/metrics");
  const std::string name = "\nengram_http_idle_closed_total ";
  const size_t at = metrics.body.find(name);
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stol(metrics.body.substr(at + name.size())), 0);
}

}  // namespace
}  // namespace engram::testing
