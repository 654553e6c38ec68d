// Knowledge bases: where documents may come from, how they are chunked, ingestion threads.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> KnowledgeSettings() {
  // clang-format off
  return {
      {.name = "import-dir", .field = &ServeOptions::import_dir, .help = "directory LOCAL knowledge-base documents are read from (nothing outside it; empty: none)"},
      {.name = "import-dir-layout", .field = &ServeOptions::import_dir_layout, .help = "per-workspace: a workspace reads only --import-dir/<workspace>; shared: every workspace reads all of --import-dir; auto: per-workspace once an API key is limited to some workspaces, else shared", .choices = {"auto", "per-workspace", "shared"}},
      {.name = "remote-fetch", .field = &ServeOptions::remote_fetch, .help = "allow http(s):// knowledge-base document URLs (public addresses only)"},
      {.name = "remote-fetch-allow-private", .field = &ServeOptions::remote_fetch_allow_private, .help = "let remote fetches reach loopback and private addresses (for tests only)", .tier = OptionTier::kAdvanced},
      {.name = "oss-endpoint", .field = &ServeOptions::oss_endpoint, .help = "S3-compatible endpoint for oss://bucket/key documents"},
      {.name = "oss-region", .field = &ServeOptions::oss_region, .help = "region for AWS SigV4 signing", .tier = OptionTier::kAdvanced},
      {.name = "oss-access-key", .field = &ServeOptions::oss_access_key, .help = "OSS access key id"},
      {.name = "oss-secret-key", .field = &ServeOptions::oss_secret_key, .help = "OSS secret access key"},
      {.name = "kb-max-doc-bytes", .field = &ServeOptions::kb_max_doc_bytes, .help = "largest knowledge-base document", .tier = OptionTier::kAdvanced, .min = 1024},
      {.name = "kb-chunk-size", .field = &ServeOptions::kb_chunk_size, .help = "bytes of text per chunk at most", .tier = OptionTier::kAdvanced, .min = 100, .max = 100000},
      {.name = "kb-chunk-overlap", .field = &ServeOptions::kb_chunk_overlap, .help = "bytes repeated between consecutive chunks (at most half of --kb-chunk-size)", .tier = OptionTier::kAdvanced, .min = 0, .max = 50000},
      {.name = "kb-workers", .field = &ServeOptions::kb_workers, .help = "document ingestion threads", .tier = OptionTier::kAdvanced, .min = 1, .max = 64},
      {.name = "kb-pdf-timeout-ms", .field = &ServeOptions::kb_pdf_timeout_ms, .help = "time pdftotext gets per PDF", .tier = OptionTier::kAdvanced, .min = 100, .max = 600000},
  };
  // clang-format on
}

}  // namespace engram
