// Leaderboard messages for store tests: one record of a user's text, added alone, and the texts
// of a scope in store order.
// Thread-safety: free functions over a store that is itself thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/ids.h"
#include "store/message_store.h"

namespace engram::testing {

// A message of workspace "w" with a fresh id, stamped at 1 µs.
inline MemoryRecord TestMemory(const std::string& user, const std::string& text) {
  MemoryRecord m;
  m.id = NewId("m");
  m.workspace = "w";
  m.user_id = user;
  m.text = text;
  m.created_at_us = m.updated_at_us = 1;
  return m;
}

// Adds TestMemory(user, text) in a batch of its own.
inline Status AddTestMemory(MessageStore& store, const std::string& user, const std::string& text) {
  AddBatch batch;
  batch.memories = {TestMemory(user, text)};
  auto out = store.Add(std::move(batch));
  return out.ok() ? Status::Ok() : out.status();
}

// The texts of workspace "w"'s scope of `user`, in store order; a failed load is a test failure.
inline std::vector<std::string> ScopeTexts(MessageStore& store, const std::string& user) {
  std::vector<std::string> out;
  auto scope = store.LoadScope("w", user);
  EXPECT_TRUE(scope.ok()) << scope.status().ToString();
  if (scope.ok()) {
    for (const auto& m : *scope) out.push_back(m.text);
  }
  return out;
}

}  // namespace engram::testing
