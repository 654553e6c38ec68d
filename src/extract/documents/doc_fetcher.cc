#include "extract/documents/doc_fetcher.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/ascii.h"

namespace engram {

namespace {

bool StartsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

Result<std::string> PercentDecode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size() || HexDigitValue(in[i + 1]) < 0 || HexDigitValue(in[i + 2]) < 0) {
      return Status::InvalidParameter("doc.file_url has a malformed %-escape");
    }
    out += static_cast<char>(HexDigitValue(in[i + 1]) * 16 + HexDigitValue(in[i + 2]));
    i += 2;
  }
  return out;
}

// Percent-encodes everything but unreserved characters and '/', for an S3 object key in a path.
std::string EncodeKey(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

bool IsHttpUrl(std::string_view url) {
  return StartsWith(url, "http://") || StartsWith(url, "https://");
}

// The scheme of "scheme://…", or "" for a plain path.
std::string_view SchemeOf(std::string_view url) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) return {};
  for (char c : url.substr(0, sep)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return {};
  }
  return url.substr(0, sep);
}

struct OssLocation {
  std::string bucket;
  std::string key;
};

Result<OssLocation> ParseOssUrl(std::string_view url) {
  if (!StartsWith(url, "oss://")) {
    return Status::InvalidParameter("doc.file_url must be oss://bucket/key for type OSS");
  }
  std::string_view rest = url.substr(6);
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
    return Status::InvalidParameter("doc.file_url must be oss://bucket/key for type OSS");
  }
  OssLocation loc{std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))};
  for (char c : loc.bucket) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') {
      return Status::InvalidParameter("doc.file_url has an invalid OSS bucket name");
    }
  }
  return loc;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<std::pair<std::string*, size_t>*>(user);
  const size_t bytes = size * n;
  if (t->first->size() + bytes > t->second) return 0;  // over the limit: abort the transfer
  t->first->append(data, bytes);
  return bytes;
}

curl_socket_t OpenPublicSocket(void* user, curlsocktype, struct curl_sockaddr* address) {
  const bool check = *static_cast<bool*>(user);
  if (check && IsNonPublicAddress(&address->addr)) return CURL_SOCKET_BAD;
  return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

}  // namespace

bool IsNonPublicAddress(const ::sockaddr* addr) {
  auto v4_private = [](uint32_t a) {  // host byte order
    const uint8_t b0 = a >> 24, b1 = (a >> 16) & 0xFF;
    return b0 == 0 || b0 == 10 || b0 == 127 || (b0 == 169 && b1 == 254) ||
           (b0 == 172 && (b1 & 0xF0) == 16) || (b0 == 192 && b1 == 168) ||
           (b0 == 100 && (b1 & 0xC0) == 64) || b0 >= 224;
  };
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    return v4_private(ntohl(in->sin_addr.s_addr));
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    const uint8_t* b = in6->sin6_addr.s6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) || IN6_IS_ADDR_V4COMPAT(&in6->sin6_addr)) {
      return v4_private((uint32_t{b[12]} << 24) | (uint32_t{b[13]} << 16) | (uint32_t{b[14]} << 8) |
                        b[15]);
    }
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr) ||
           IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr) || IN6_IS_ADDR_SITELOCAL(&in6->sin6_addr) ||
           IN6_IS_ADDR_MULTICAST(&in6->sin6_addr) || (b[0] & 0xFE) == 0xFC;
  }
  return true;  // unknown families are not fetched from
}

namespace {

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

}  // namespace

DocFetcher::DocFetcher(DocFetcherOptions options) : options_(std::move(options)) {
  if (!options_.import_dir.empty() && !options_.import_per_workspace) {
    shared_real_ = RealPath(options_.import_dir);
  }
}

Result<DocFetcher::ImportRoot> DocFetcher::RootFor(std::string_view workspace) const {
  if (options_.import_dir.empty()) {
    return Status::InvalidParameter(
        "LOCAL documents are read from the import directory, and none is configured (start the "
        "server with --import-dir DIR)");
  }
  if (!options_.import_per_workspace) return ImportRoot{options_.import_dir, shared_real_};
  // A workspace name is letters, digits, '-', '_' and '.'; "." and ".." would name the shared
  // directory or its parent.
  if (workspace.empty() || workspace == "." || workspace == ".." ||
      workspace.find('/') != std::string_view::npos) {
    return Status::InvalidParameter("this workspace has no import directory");
  }
  std::string configured = options_.import_dir;
  if (configured.back() != '/') configured += '/';
  configured += workspace;
  ImportRoot root{configured, RealPath(configured)};
  return root;
}

Result<std::string> DocFetcher::LocalRelativePath(std::string_view file_url,
                                                  const ImportRoot& import) const {
  std::string path;
  if (StartsWith(file_url, "file://")) {
    std::string_view rest = file_url.substr(7);
    if (StartsWith(rest, "localhost/")) rest.remove_prefix(9);
    if (!StartsWith(rest, "/")) {
      return Status::InvalidParameter("doc.file_url file:// URLs must name a local absolute path");
    }
    auto decoded = PercentDecode(rest);
    if (!decoded.ok()) return decoded.status();
    path = std::move(*decoded);
  } else {
    path = std::string(file_url);
  }
  if (path.empty()) return Status::InvalidParameter("doc.file_url is empty");
  if (path.find('\0') != std::string::npos) {
    return Status::InvalidParameter("doc.file_url must not contain NUL characters");
  }
  // Components: no "..", whatever the rest says.
  for (size_t pos = 0; pos <= path.size();) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    if (path.compare(pos, slash - pos, "..") == 0 && slash - pos == 2) {
      return Status::InvalidParameter("doc.file_url must not contain '..' path components");
    }
    pos = slash + 1;
  }
  if (path[0] == '/') {
    // An absolute path must lie inside the import directory (as configured or resolved).
    for (const std::string& root : {import.configured, import.real}) {
      if (root.empty()) continue;
      std::string prefix = root.back() == '/' ? root : root + "/";
      if (StartsWith(path, prefix)) return path.substr(prefix.size());
    }
    return Status::InvalidParameter(
        "doc.file_url is outside the import directory: only files below it can be read");
  }
  return path;
}

Status DocFetcher::Validate(DocSourceType type, std::string_view file_url,
                            std::string_view workspace) const {
  if (type == DocSourceType::kOss) {
    if (!options_.oss.configured()) {
      return Status::InvalidParameter(
          "OSS documents need an S3-compatible endpoint, and none is configured (start the server "
          "with --oss-endpoint, --oss-access-key and --oss-secret-key)");
    }
    auto loc = ParseOssUrl(file_url);
    return loc.ok() ? Status::Ok() : loc.status();
  }
  if (IsHttpUrl(file_url)) {
    if (!options_.remote_fetch) {
      return Status::InvalidParameter(
          "doc.file_url is an http(s) URL, and remote fetch is disabled (start the server with "
          "--remote-fetch to allow it)");
    }
    return Status::Ok();
  }
  const std::string_view scheme = SchemeOf(file_url);
  if (!scheme.empty() && scheme != "file") {
    return Status::InvalidParameter(fmt::format(
        "doc.file_url scheme {}:// is not supported for LOCAL (use a path, file://, http:// or "
        "https://)",
        scheme));
  }
  auto root = RootFor(workspace);
  if (!root.ok()) return root.status();
  auto rel = LocalRelativePath(file_url, *root);
  return rel.ok() ? Status::Ok() : rel.status();
}

Result<FetchedDocument> DocFetcher::Fetch(DocSourceType type, std::string_view file_url,
                                          std::string_view workspace) const {
  ENGRAM_RETURN_IF_ERROR(Validate(type, file_url, workspace));
  if (type == DocSourceType::kOss) {
    auto loc = ParseOssUrl(file_url);
    std::string endpoint = options_.oss.endpoint;
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    // Path-style addressing works with every S3-compatible server.
    const std::string url = endpoint + "/" + loc->bucket + "/" + EncodeKey(loc->key);
    auto fetched =
        FetchHttp(url, /*check_address=*/false, "aws:amz:" + options_.oss.region + ":s3");
    if (fetched.ok()) fetched->name = loc->key;
    return fetched;
  }
  if (IsHttpUrl(file_url)) {
    return FetchHttp(std::string(file_url), !options_.allow_private_addresses, "");
  }
  auto root = RootFor(workspace);
  if (!root.ok()) return root.status();
  auto rel = LocalRelativePath(file_url, *root);
  if (!rel.ok()) return rel.status();
  return ReadLocal(*rel, root->real);
}

Result<FetchedDocument> DocFetcher::ReadLocal(const std::string& relative,
                                              const std::string& root) const {
  if (root.empty()) {
    return Status::InvalidParameter(options_.import_per_workspace
                                        ? "the workspace's import directory does not exist"
                                        : "the import directory does not exist");
  }
  const std::string full = root + "/" + relative;
  // O_NONBLOCK: opening a FIFO must not wait for a writer. The real path is checked on the open
  // descriptor, so swapping a symlink in after a check cannot redirect the read.
  const int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    return Status::InvalidParameter(fmt::format("file cannot be read: {}", std::strerror(errno)));
  }
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  char link[64];
  char real[PATH_MAX + 1];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, real, PATH_MAX);
  if (n <= 0) return Status::Internal("cannot resolve the opened file's path");
  const std::string_view real_path(real, static_cast<size_t>(n));
  struct stat st;
  if (fstat(fd, &st) != 0) return Status::Internal("cannot stat the file");
  if (!S_ISREG(st.st_mode)) return Status::InvalidParameter("doc.file_url is not a regular file");
  if (!StartsWith(real_path, root + "/")) {
    return Status::InvalidParameter(
        "doc.file_url resolves (through a symlink) outside the import directory");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > options_.max_bytes) {
    return Status::InvalidParameter(
        fmt::format("file is too large: {} bytes (limit {} bytes)", size, options_.max_bytes));
  }
  FetchedDocument doc;
  doc.name = relative;
  doc.bytes.resize(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t r = pread(fd, doc.bytes.data() + done, size - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return Status::InvalidParameter(fmt::format("file cannot be read: {}", std::strerror(errno)));
    if (r == 0) break;  // shrank meanwhile
    done += static_cast<size_t>(r);
  }
  doc.bytes.resize(done);
  return doc;
}

Result<FetchedDocument> DocFetcher::FetchHttp(const std::string& url, bool check_address,
                                              const std::string& sigv4) const {
  static const CURLcode kInit = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (kInit != CURLE_OK) return Status::Internal("curl_global_init failed");
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) return Status::Internal("curl_easy_init failed");
  CURL* c = curl.get();
  std::string body;
  std::pair<std::string*, size_t> sink{&body, options_.max_bytes};
  bool check = check_address;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  // A proxy would connect on our behalf and bypass the address check.
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout.count()));
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options_.max_bytes));
  curl_easy_setopt(c, CURLOPT_USERAGENT, "engram");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, OpenPublicSocket);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &check);
  std::string userpwd;
  if (!sigv4.empty()) {
    userpwd = options_.oss.access_key + ":" + options_.oss.secret_key;
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(c, CURLOPT_USERPWD, userpwd.c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  long http = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
  if (rc == CURLE_WRITE_ERROR || rc == CURLE_FILESIZE_EXCEEDED) {
    return Status::InvalidParameter(
        fmt::format("remote document is too large (limit {} bytes)", options_.max_bytes));
  }
  if (rc == CURLE_COULDNT_CONNECT && check) {
    return Status::InvalidParameter(
        "remote document cannot be fetched: connection refused, or the host resolves to a "
        "loopback/private address, which remote fetch never reaches");
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return Status::InvalidParameter(
        fmt::format("remote document fetch timed out after {} ms", options_.timeout.count()));
  }
  if (rc != CURLE_OK) {
    // libcurl's fixed phrase: its error buffer can quote what the server sent.
    return Status::InvalidParameter(
        fmt::format("remote document cannot be fetched: {}", curl_easy_strerror(rc)));
  }
  if (http >= 300 && http < 400) {
    return Status::InvalidParameter(fmt::format(
        "remote document answered a redirect (HTTP {}); redirects are not followed", http));
  }
  if (http < 200 || http >= 300) {
    return Status::InvalidParameter(
        fmt::format("remote document cannot be fetched: HTTP {}", http));
  }
  FetchedDocument doc;
  doc.bytes = std::move(body);
  const size_t scheme_end = url.find("://");
  const size_t path = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  doc.name = path == std::string::npos ? "" : url.substr(path);
  return doc;
}

}  // namespace engram
