#include "common/json_reader.h"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/json_writer.h"

namespace engram {

namespace {

using json = nlohmann::json;

// A pointer into the text that records how far the parser has read. SAX callbacks carry no
// position, so this is how a duplicate key or a depth refusal learns its byte offset. nlohmann's
// lexer reads strictly forward one byte at a time, so the furthest position is where it is.
class CountingIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator() = default;
  CountingIterator(const char* p, const char** furthest) : p_(p), furthest_(furthest) {}

  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    ++p_;
    *furthest_ = p_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }

 private:
  const char* p_ = nullptr;
  const char** furthest_ = nullptr;
};

// "request body is not valid JSON: ..." or, when the input has no name, "not valid JSON: ..." (for
// callers that put their own words in front).
std::string Lead(std::string_view what, std::string_view phrase) {
  if (what.empty()) return std::string(phrase.substr(0, 3) == "is " ? phrase.substr(3) : phrase);
  return fmt::format("{} {}", what, phrase);
}

// Keys are shown in messages only when short and plain, so a message never carries much input.
bool ShowableKey(const std::string& key) {
  if (key.empty() || key.size() > 64) return false;
  for (unsigned char c : key) {
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

// The "; expected X" tail of nlohmann's message when X is one of its token names (these are fixed
// strings: nothing from the input can pass this check).
std::string ExpectedTail(std::string_view what) {
  static constexpr std::string_view kNames[] = {"true literal",
                                                "false literal",
                                                "null literal",
                                                "string literal",
                                                "number literal",
                                                "'['",
                                                "'{'",
                                                "']'",
                                                "'}'",
                                                "':'",
                                                "','",
                                                "end of input",
                                                "'[', '{', or a literal"};
  for (std::string_view name : kNames) {
    const std::string tail = fmt::format("; expected {}", name);
    if (what.size() >= tail.size() && what.substr(what.size() - tail.size()) == tail) return tail;
  }
  return "";
}

// nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1, column 9:
// syntax error while parsing value - <problem>; last read: '<token>'; expected <token name>". The
// problem comes from a fixed set of lexer and parser strings; the token is input and is dropped.
std::string Problem(std::string_view what) {
  const size_t dash = what.find(" - ");
  if (dash == std::string_view::npos) return "syntax error";
  std::string_view rest = what.substr(dash + 3);
  const size_t token = rest.find("; last read: '");
  if (token == std::string_view::npos) {
    // "unexpected <token name>[; expected <token name>]": fixed strings only.
    return std::string(rest);
  }
  return std::string(rest.substr(0, token));
}

class DomBuilder final : public nlohmann::json_sax<json> {
 public:
  DomBuilder(std::string_view text, const JsonReadLimits& limits, const char** furthest)
      : text_(text), limits_(limits), furthest_(furthest) {}

  bool null() override { return Put(json(nullptr)); }
  bool boolean(bool v) override { return Put(json(v)); }
  bool number_integer(number_integer_t v) override { return Put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Put(json(v)); }
  bool number_float(number_float_t v, const string_t& /*raw*/) override { return Put(json(v)); }
  bool string(string_t& v) override {
    if (limits_.refuse_nul && v.find('\0') != std::string::npos) {
      return Fail(fmt::format("{} must not contain NUL characters", PathOfNext()));
    }
    return Put(json(std::move(v)));
  }
  bool binary(binary_t& /*v*/) override { return Fail("binary values are not JSON"); }

  bool start_object(std::size_t /*elements*/) override { return Open(json::object()); }
  bool start_array(std::size_t /*elements*/) override { return Open(json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& k) override {
    Level& level = stack_.back();
    if (limits_.refuse_nul && k.find('\0') != std::string::npos) {
      return Fail(fmt::format("{} key must not contain NUL characters", PathOfContainer()));
    }
    auto& members = level.value->get_ref<json::object_t&>();
    auto [it, fresh] = members.emplace(std::move(k), nullptr);
    if (!fresh && limits_.refuse_duplicate_keys) {
      const std::string shown = ShowableKey(it->first) ? fmt::format(" \"{}\"", it->first) : "";
      return Fail(Lead(limits_.what, fmt::format("is not valid JSON: duplicate key{} in {} at byte "
                                                 "offset {}",
                                                 shown, PathOfContainer(), Offset())));
    }
    // A repeated key (when allowed) replaces the earlier value, as nlohmann's parser does.
    it->second = nullptr;
    level.key = &it->first;
    level.slot = &it->second;
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    if (!error_.empty()) return false;  // our own refusal, already described
    // nlohmann counts bytes read, so the byte it stopped at is position - 1 (the end of the text
    // for a truncated input).
    size_t at = position == 0 ? 0 : std::min(position - 1, text_.size());
    std::string problem;
    if (ex.id == 406) {
      // "number overflow parsing '<token>'": the token is the number just read; point at its start.
      problem = "number out of range";
      at = position >= last_token.size() ? position - last_token.size() : 0;
    } else {
      const std::string_view what = ex.what();
      problem = Problem(what);
      if (problem.find("ill-formed UTF-8 byte") != std::string::npos && at < text_.size()) {
        problem += fmt::format(" 0x{:02X}", static_cast<unsigned char>(text_[at]));
      }
      if (problem.find("; expected ") == std::string::npos) problem += ExpectedTail(what);
    }
    // The expectation reads best after the offset: "unexpected end of input at byte offset 5;
    // expected string literal".
    std::string tail;
    if (const size_t semi = problem.find("; expected "); semi != std::string::npos) {
      tail = problem.substr(semi);
      problem.resize(semi);
    }
    error_ = Lead(limits_.what,
                  fmt::format("is not valid JSON: {} at byte offset {}{}", problem, at, tail));
    return false;
  }

  const std::string& error() const { return error_; }
  json& root() { return root_; }

 private:
  struct Level {
    json* value;                       // the open array or object
    const std::string* key = nullptr;  // objects: the member being read
    json* slot = nullptr;              // objects: where that member's value goes
  };

  // Where the next value goes: the root, the end of the open array, or the slot of the last key.
  json* Place(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Level& level = stack_.back();
    if (level.value->is_array()) {
      auto& elements = level.value->get_ref<json::array_t&>();
      elements.push_back(std::move(v));
      return &elements.back();
    }
    *level.slot = std::move(v);
    return level.slot;
  }

  bool Put(json v) {
    Place(std::move(v));
    return true;
  }

  bool Open(json v) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      return Fail(Lead(limits_.what, fmt::format("nests deeper than {} levels at byte offset {}",
                                                 limits_.max_depth, Offset())));
    }
    // Element pointers stay valid: a container only grows after its open child has closed, and
    // object members live in map nodes.
    stack_.push_back(Level{Place(std::move(v))});
    return true;
  }

  bool Close() {
    stack_.pop_back();
    return true;
  }

  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  // Byte offset of the last byte read (the end of the token just seen).
  size_t Offset() const {
    const size_t read = static_cast<size_t>(*furthest_ - text_.data());
    return read == 0 ? 0 : read - 1;
  }

  // Path such as "messages[0].content", the input's name standing for the root. Walks the open
  // containers stack_[0, depth); with `next`, the last one's locator is that of the value about to
  // be added (the index it will get, or the key just read) rather than that of its open child.
  // Keys too long or odd to show make way for the byte offset.
  std::string PathOf(size_t depth, bool next) const {
    std::string path;
    for (size_t i = 0; i < depth; ++i) {
      const Level& level = stack_[i];
      const bool child_is_next = next && i + 1 == depth;
      if (level.value->is_array()) {
        const size_t n = level.value->size();
        path += fmt::format("[{}]", child_is_next ? n : n - 1);
      } else {
        if (level.key == nullptr || !ShowableKey(*level.key)) {
          return fmt::format("the value at byte offset {}", Offset());
        }
        if (!path.empty()) path += '.';
        path += *level.key;
      }
    }
    if (path.empty() || path.front() == '[') {
      path.insert(0, limits_.what.empty() ? std::string_view("the value") : limits_.what);
    }
    return path;
  }

  // The value about to be added, and the innermost open container.
  std::string PathOfNext() const { return PathOf(stack_.size(), /*next=*/true); }
  std::string PathOfContainer() const { return PathOf(stack_.size() - 1, /*next=*/false); }

  std::string_view text_;
  const JsonReadLimits& limits_;
  const char** furthest_;
  json root_;
  std::vector<Level> stack_;
  std::string error_;
};

}  // namespace

Result<json> ReadJson(std::string_view text, const JsonReadLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Status::PayloadTooLarge(Lead(
        limits.what,
        fmt::format("is too large: {} bytes, at most {} allowed", text.size(), limits.max_bytes)));
  }
  const char* furthest = text.data();
  DomBuilder builder(text, limits, &furthest);
  const CountingIterator first(text.data(), &furthest);
  const CountingIterator last(text.data() + text.size(), &furthest);
  bool ok = false;
  try {
    ok = json::sax_parse(first, last, &builder, json::input_format_t::json, /*strict=*/true,
                         /*ignore_comments=*/false);
  } catch (const std::exception&) {
    // The SAX parser reports errors through parse_error() and the builder never throws on
    // purpose; only allocation failure can land here.
    return Status::InvalidParameter(Lead(limits.what, "could not be read"));
  }
  if (!ok) {
    if (builder.error().empty()) {
      return Status::InvalidParameter(Lead(limits.what, "is not valid JSON"));
    }
    return Status::InvalidParameter(builder.error());
  }
  return std::move(builder.root());
}

json ReadJsonOrDiscarded(std::string_view text, const JsonReadLimits& limits) {
  auto r = ReadJson(text, limits);
  if (!r.ok()) return json(json::value_t::discarded);
  return std::move(*r);
}

std::string DumpJson(const json& value) {
  std::string out;
  AppendJson(value, out);
  return out;
}

}  // namespace engram
