// DocFetcher: reads the bytes of a knowledge-base document from where its file_url points.
//
// LOCAL: a path (relative to, or absolute inside, the import directory) or a file:// URL. With
//   import_per_workspace, each workspace's import directory is import_dir/<workspace>, so that a
//   key limited to one workspace cannot read files put there for another. Nothing outside the
//   import directory is readable: ".." components and other absolute paths are refused up front,
//   and the opened file's real path (via /proc/self/fd, so no race with a symlink swapped in after
//   the check) must lie inside the directory's real path, which catches symlinks escaping it. Only
//   regular files; their size is checked with fstat before reading, so a huge (or sparse) file
//   fails at once. http(s):// URLs only when remote fetch is enabled: no proxies, no redirects,
//   connect and total timeouts, a size limit, and connections to loopback, private, link-local and
//   other non-public addresses refused after DNS resolution (checked on the socket address libcurl
//   actually connects to, so DNS rebinding cannot slip through).
// OSS: oss://bucket/key from a configured S3-compatible endpoint, signed with AWS SigV4 (libcurl).
//
// Errors: Validate() gives kInvalidParameter for what an upload can be refused for at once (the
// API answers 400). Fetch() errors become the document's error_message.
// Thread-safety: const methods are safe to call concurrently.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

struct sockaddr;

namespace engram {

enum class DocSourceType { kLocal, kOss };

struct OssOptions {
  std::string endpoint;  // e.g. https://oss-cn-hangzhou.aliyuncs.com or http://127.0.0.1:9000
  std::string region = "us-east-1";
  std::string access_key;
  std::string secret_key;
  bool configured() const { return !endpoint.empty(); }
};

struct DocFetcherOptions {
  std::string import_dir;                // empty: LOCAL files cannot be read
  bool import_per_workspace = false;     // each workspace reads only import_dir/<workspace>
  bool remote_fetch = false;             // allow http(s):// URLs
  bool allow_private_addresses = false;  // tests only: remote fetches may reach loopback etc.
  size_t max_bytes = 64u << 20;          // largest document accepted
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds timeout{60000};
  OssOptions oss;
};

struct FetchedDocument {
  std::string bytes;
  std::string name;  // the file name or URL path, for type detection
};

class DocFetcher {
 public:
  explicit DocFetcher(DocFetcherOptions options);

  // `workspace`: the one the document belongs to (its LOCAL import directory).
  Status Validate(DocSourceType type, std::string_view file_url, std::string_view workspace) const;
  Result<FetchedDocument> Fetch(DocSourceType type, std::string_view file_url,
                                std::string_view workspace) const;

  const DocFetcherOptions& options() const { return options_; }

 private:
  struct ImportRoot {
    std::string configured;  // as configured (absolute file_urls may name it)
    std::string real;        // its real path; "" when it does not exist
  };
  Result<ImportRoot> RootFor(std::string_view workspace) const;
  // The path relative to the import directory, checked for shape only.
  Result<std::string> LocalRelativePath(std::string_view file_url, const ImportRoot& import) const;
  // Reads `relative` below `root` (a real path).
  Result<FetchedDocument> ReadLocal(const std::string& relative, const std::string& root) const;
  Result<FetchedDocument> FetchHttp(const std::string& url, bool check_address,
                                    const std::string& sigv4_user) const;

  DocFetcherOptions options_;
  // realpath of import_dir when it is shared by every workspace ("" when unset or missing).
  std::string shared_real_;
};

// True for addresses a remote fetch must not reach: loopback, private (RFC 1918, fc00::/7),
// link-local, unspecified, multicast, CGNAT, IPv4-mapped forms of those.
bool IsNonPublicAddress(const ::sockaddr* addr);

}  // namespace engram
