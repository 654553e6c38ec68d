#include "contract_case.h"

#include <algorithm>
#include <sstream>

#include "common/ascii.h"

namespace engram::contract {
namespace {

using nlohmann::json;

// Splits shell words: backslash-newline joins lines, single quotes are literal, double quotes
// take backslash escapes of \ " $ `, a backslash outside quotes escapes the next character.
std::optional<std::vector<std::string>> ShellWords(std::string_view s, std::string* error) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const size_t end = s.find('\'', i + 1);
      if (end == std::string_view::npos) {
        *error = "unterminated single quote";
        return std::nullopt;
      }
      word.append(s.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size() &&
            std::string_view("\\\"$`\n").find(s[j + 1]) != std::string_view::npos) {
          ++j;
          if (s[j] == '\n') continue;
        }
        word.push_back(s[j]);
      }
      if (j >= s.size()) {
        *error = "unterminated double quote";
        return std::nullopt;
      }
      i = j;
    } else if (c == '\\' && i + 1 < s.size()) {
      word.push_back(s[++i]);
    } else {
      word.push_back(c);
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::optional<StepKind> StepKeyword(std::string_view line) {
  if (line == "example") return StepKind::kExample;
  if (line == "example-data") return StepKind::kExampleData;
  if (line == "step") return StepKind::kStep;
  return std::nullopt;
}

bool EndsBody(std::string_view line) {
  return StepKeyword(line).has_value() || StartsWith(line, "include ");
}

std::vector<std::string> Rest(std::string_view line, size_t skip) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line.substr(skip))};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

const char* TypeName(const json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "boolean";
  if (j.is_number()) return "number";
  if (j.is_string()) return "string";
  if (j.is_array()) return "array";
  return "object";
}

bool SameType(const json& a, const json& b) { return std::string_view(TypeName(a)) == TypeName(b); }

struct Matcher {
  const Expectation& expect;
  std::string* why;

  bool Has(const std::vector<std::string>& paths, const std::string& path) const {
    return std::find(paths.begin(), paths.end(), path) != paths.end();
  }

  static std::string Child(const std::string& path, const std::string& key) {
    return path == "." ? "." + key : path + "." + key;
  }

  bool Fail(const std::string& path, const json& want, const json& got) const {
    if (why != nullptr) {
      *why = path + ": expected " + want.dump() + ", got " + got.dump().substr(0, 400);
    }
    return false;
  }

  bool Match(const json& want, const json& got, const std::string& path, Bindings& b) const {
    if (Has(expect.any, path)) return SameType(want, got) || Fail(path, want, got);
    if (want.is_string()) {
      const std::string& w = want.get_ref<const std::string&>();
      if (auto it = b.find(w); it != b.end()) {
        return got == json(it->second) || Fail(path, json(it->second), got);
      }
      if (Has(expect.binds, w)) {
        if (!got.is_string()) return Fail(path, want, got);
        b[w] = got.get<std::string>();
        return true;
      }
      const std::string substituted = Substitute(w, b);
      return got == json(substituted) || Fail(path, json(substituted), got);
    }
    if (want.is_object()) {
      if (!got.is_object()) return Fail(path, want, got);
      for (const auto& [key, value] : want.items()) {
        const std::string child = Child(path, key);
        if (!got.contains(key)) return Fail(child, value, json("<absent>"));
        if (!Match(value, got.at(key), child, b)) return false;
      }
      if (Has(expect.exact, path) && got.size() != want.size()) {
        return Fail(path + " (exact keys)", want, got);
      }
      return true;
    }
    if (want.is_array()) {
      if (!got.is_array()) return Fail(path, want, got);
      const std::string items = path + "[*]";
      if (Has(expect.subset, path)) {
        std::vector<bool> used(got.size(), false);
        for (const json& w : want) {
          bool found = false;
          for (size_t i = 0; i < got.size() && !found; ++i) {
            if (used[i]) continue;
            Bindings trial = b;
            Matcher quiet{expect, nullptr};
            if (quiet.Match(w, got[i], items, trial)) {
              used[i] = found = true;
              b = std::move(trial);
            }
          }
          if (!found) return Fail(path + " (no item matches)", w, got);
        }
        return true;
      }
      if (got.size() != want.size()) return Fail(path + " (length)", want, got);
      for (size_t i = 0; i < want.size(); ++i) {
        if (!Match(want[i], got[i], items, b)) return false;
      }
      return true;
    }
    // Numbers compare by value whatever their JSON representation (1 and 1.0).
    if (want.is_number() && got.is_number()) {
      return want.get<double>() == got.get<double>() || Fail(path, want, got);
    }
    return want == got || Fail(path, want, got);
  }
};

}  // namespace

std::optional<CurlRequest> ParseCurl(std::string_view command, std::string* error) {
  auto words = ShellWords(command, error);
  if (!words) return std::nullopt;
  if (words->empty() || (*words)[0] != "curl") {
    *error = "a request must be a curl command";
    return std::nullopt;
  }
  CurlRequest r;
  std::optional<std::string> method;
  for (size_t i = 1; i < words->size(); ++i) {
    const std::string& w = (*words)[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= words->size()) return std::nullopt;
      return (*words)[++i];
    };
    if (w == "--location" || w == "-L") continue;
    if (w == "-X" || w == "--request" || w == "--header" || w == "-H" || w == "--data" ||
        w == "-d" || w == "--data-raw" || w == "--data-binary") {
      auto v = value();
      if (!v) {
        *error = w + " needs a value";
        return std::nullopt;
      }
      if (w == "-X" || w == "--request") {
        method = *v;
      } else if (w == "--header" || w == "-H") {
        const size_t colon = v->find(':');
        if (colon == std::string::npos) {
          *error = "header without a colon: " + *v;
          return std::nullopt;
        }
        const std::string_view header(*v);
        r.headers.emplace_back(TrimAsciiSpace(header.substr(0, colon)),
                               TrimAsciiSpace(header.substr(colon + 1)));
      } else {
        r.data = *v;
      }
    } else if (!w.empty() && w[0] == '-') {
      *error = "unknown curl option " + w;
      return std::nullopt;
    } else if (r.url.empty()) {
      r.url = w;
    } else {
      *error = "a second URL: " + w;
      return std::nullopt;
    }
  }
  const size_t scheme = r.url.find("://");
  if (r.url.empty() || scheme == std::string::npos) {
    *error = "no http(s) URL";
    return std::nullopt;
  }
  const size_t slash = r.url.find('/', scheme + 3);
  r.target = slash == std::string::npos ? "/" : r.url.substr(slash);
  r.method = method.value_or(r.data ? "POST" : "GET");
  return r;
}

std::optional<CaseFile> ParseCaseFile(std::string_view text, std::string* error) {
  std::vector<std::string> lines;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  auto fail = [&](size_t i, const std::string& what) {
    *error = "line " + std::to_string(i + 1) + ": " + what;
    return std::nullopt;
  };
  CaseFile file;
  size_t i = 0;
  auto skip_blank = [&]() {
    while (i < lines.size() && (TrimAsciiSpace(lines[i]).empty() || StartsWith(lines[i], "#"))) ++i;
  };
  while (true) {
    skip_blank();
    if (i >= lines.size()) break;
    const std::string line(TrimAsciiSpace(lines[i]));
    if (StartsWith(line, "include ")) {
      if (!file.steps.empty()) return fail(i, "includes come before the steps");
      file.includes.emplace_back(TrimAsciiSpace(std::string_view(line).substr(8)));
      ++i;
      continue;
    }
    auto kind = StepKeyword(line);
    if (!kind) return fail(i, "expected example, example-data, step or include: " + line);
    Step step;
    step.kind = *kind;
    step.line = static_cast<int>(i + 1);
    ++i;
    skip_blank();
    while (i < lines.size() && StartsWith(lines[i], "fill ")) {
      std::string err;
      auto words = ShellWords(lines[i].substr(5), &err);
      if (!words || words->size() != 3) return fail(i, "fill '<placeholder>' HOW SOURCE");
      step.fills.push_back({(*words)[0], (*words)[1], (*words)[2]});
      ++i;
    }
    std::string curl;
    for (; i < lines.size() && TrimAsciiSpace(lines[i]) != "----"; ++i) {
      if (StartsWith(lines[i], "#")) continue;
      curl += lines[i];
      curl += '\n';
    }
    if (i >= lines.size()) return fail(step.line - 1, "the request has no ---- line");
    while (!curl.empty() && curl.back() == '\n') curl.pop_back();
    step.curl = curl;
    std::string curl_error;
    if (!ParseCurl(curl, &curl_error)) return fail(step.line - 1, curl_error);
    ++i;
    skip_blank();
    if (i >= lines.size()) return fail(i - 1, "the step has no expected status");
    {
      std::istringstream status_line(lines[i]);
      std::string word;
      if (!(status_line >> step.expect.status) || step.expect.status < 100 ||
          step.expect.status > 599) {
        return fail(i, "expected an HTTP status");
      }
      if (status_line >> word) {
        if (word != "until") return fail(i, "after the status only `until PATH VALUE`");
        std::string path;
        status_line >> path;
        std::string value;
        std::getline(status_line, value);
        step.expect.until_path = path;
        step.expect.until_value = json::parse(TrimAsciiSpace(value), nullptr, false);
        if (path.empty() || step.expect.until_value.is_discarded()) {
          return fail(i, "until PATH JSON-VALUE");
        }
      }
      ++i;
    }
    for (; i < lines.size(); ++i) {
      const std::string l(TrimAsciiSpace(lines[i]));
      if (StartsWith(l, "#")) continue;
      std::vector<std::string>* list = StartsWith(l, "bind ")     ? &step.expect.binds
                                       : StartsWith(l, "any ")    ? &step.expect.any
                                       : StartsWith(l, "subset ") ? &step.expect.subset
                                       : StartsWith(l, "exact ")  ? &step.expect.exact
                                       : StartsWith(l, "header ") ? &step.expect.headers
                                                                  : nullptr;
      if (list == nullptr) break;
      for (std::string& w : Rest(l, l.find(' ') + 1)) list->push_back(std::move(w));
    }
    std::string body;
    for (; i < lines.size() && !EndsBody(TrimAsciiSpace(lines[i])); ++i) {
      if (StartsWith(lines[i], "#")) continue;
      body += lines[i];
      body += '\n';
    }
    if (!TrimAsciiSpace(body).empty()) {
      json parsed = json::parse(body, nullptr, false);
      if (parsed.is_discarded()) return fail(step.line - 1, "the expected body is not JSON");
      step.expect.body = std::move(parsed);
    }
    file.steps.push_back(std::move(step));
  }
  return file;
}

std::string Substitute(std::string_view text, const Bindings& bindings) {
  std::string out(text);
  for (const auto& [literal, value] : bindings) {
    if (literal.empty()) continue;
    for (size_t pos = out.find(literal); pos != std::string::npos;
         pos = out.find(literal, pos + value.size())) {
      out.replace(pos, literal.size(), value);
    }
  }
  return out;
}

bool MatchBody(const Expectation& expect, const json& actual, Bindings& bindings,
               std::string* why) {
  if (!expect.body) return true;
  Bindings trial = bindings;
  Matcher m{expect, why};
  if (!m.Match(*expect.body, actual, ".", trial)) return false;
  bindings = std::move(trial);
  return true;
}

json ValueAt(const json& doc, std::string_view path) {
  const json* at = &doc;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      size_t end = path.find_first_of(".[", i);
      if (end == std::string_view::npos) end = path.size();
      const std::string key(path.substr(i, end - i));
      if (key.empty()) continue;
      if (!at->is_object() || !at->contains(key)) return json();
      at = &(*at)[key];
      i = end;
    } else if (path[i] == '[') {
      const size_t end = path.find(']', i);
      if (end == std::string_view::npos) return json();
      size_t index = 0;
      for (size_t k = i + 1; k < end; ++k) {
        if (path[k] < '0' || path[k] > '9') return json();
        index = index * 10 + static_cast<size_t>(path[k] - '0');
      }
      if (!at->is_array() || index >= at->size()) return json();
      at = &(*at)[index];
      i = end + 1;
    } else {
      return json();
    }
  }
  return *at;
}

}  // namespace engram::contract
