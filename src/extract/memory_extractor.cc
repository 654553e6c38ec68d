#include "extract/memory_extractor.h"

namespace engram {

std::string_view MemoryActionName(MemoryAction action) {
  switch (action) {
    case MemoryAction::kAdd:
      return "ADD";
    case MemoryAction::kUpdate:
      return "UPDATE";
    case MemoryAction::kDelete:
      return "DELETE";
    case MemoryAction::kNone:
      return "NONE";
  }
  return "NONE";
}

}  // namespace engram
