// `engram embed`: embeds texts with the built-in model and prints the result. The CLI (cli/) wires
// this into its CLI11 subcommand; the logic lives here so it can be tested without a process.
//
// Thread-safety: loads its own model per call; safe to call concurrently.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace engram {

// Loads the built-in model from `model_dir` (".../package/dist") and then
//   - without `similarity`: prints each text's vector as a JSON array of 512 floats, one line per
//     text (so one text prints exactly one JSON array);
//   - with `similarity`: needs exactly two texts and prints their cosine similarity.
// Errors go to `err`. Returns the process exit code: 0 success, 1 model or embedding failure,
// 2 bad usage (wrong number of texts).
int RunEmbedCommand(const std::string& model_dir, const std::vector<std::string>& texts,
                    bool similarity, std::ostream& out, std::ostream& err);

}  // namespace engram
