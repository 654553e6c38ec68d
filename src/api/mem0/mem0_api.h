// The mem0-compatible REST API (docs/mem0.md): the paths, bodies and answers of mem0's Platform
// API, so mem0's official clients (the mem0ai npm and Python packages) and the integrations built
// on them work against Engram by changing their host. An adapter over MemoryService, not a second
// memory system: memories, events, history and workspaces are the V4 API's own.
// Thread-safety: the registered handlers are safe to run concurrently.
#pragma once

#include <chrono>
#include <string>

#include "api/auth.h"
#include "api/memory_api.h"
#include "api/router.h"
#include "core/memory_service.h"
#include "extract/memory_extractor.h"

namespace engram {

struct Mem0ApiOptions {
  // The workspace of requests that name no project and whose key is not limited to exactly one.
  std::string default_workspace = "default";
  MemoryApiLimits limits;
  size_t max_batch = 1000;  // memories per batch update / delete
  // How long an add with async_mode: false waits for its extraction before answering PENDING.
  std::chrono::milliseconds sync_add_timeout{30000};
  size_t default_page_size = 100;
};

struct Mem0ApiDeps {
  MemoryService* memories = nullptr;           // not owned
  const ApiKeyAuth* auth = nullptr;            // not owned
  const MemoryExtractor* extractor = nullptr;  // not owned; asked whether it follows instructions
};

void RegisterMem0Routes(Router& router, Mem0ApiDeps deps, Mem0ApiOptions options);

}  // namespace engram
