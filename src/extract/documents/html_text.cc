// HTML → text with libxml2's HTML parser. HTML_PARSE_NONET: nothing is ever fetched; the HTML
// parser loads no DTD and expands no external entities. Scripts, styles and other non-content
// elements are skipped; headings become "# " lines and block elements paragraph breaks.
#include <fmt/format.h>
#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "extract/documents/document_text.h"

namespace engram {

namespace {

struct DocFree {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};

bool NameIs(const xmlNode* n, const char* name) {
  return n->name != nullptr && xmlStrcasecmp(n->name, reinterpret_cast<const xmlChar*>(name)) == 0;
}

bool IsSkipped(const xmlNode* n) {
  for (const char* name : {"script", "style", "noscript", "template", "head", "svg", "iframe",
                           "object", "embed", "canvas"}) {
    if (NameIs(n, name)) return true;
  }
  return false;
}

bool IsBlock(const xmlNode* n) {
  for (const char* name :
       {"p",     "div", "section", "article", "header",     "footer", "main", "nav",
        "aside", "ul",  "ol",      "li",      "table",      "tr",     "pre",  "blockquote",
        "dl",    "dt",  "dd",      "figure",  "figcaption", "form",   "hr",   "address"}) {
    if (NameIs(n, name)) return true;
  }
  return false;
}

int HeadingLevel(const xmlNode* n) {
  if (n->name == nullptr) return 0;
  const char* name = reinterpret_cast<const char*>(n->name);
  if ((name[0] == 'h' || name[0] == 'H') && name[1] >= '1' && name[1] <= '6' && name[2] == '\0') {
    return name[1] - '0';
  }
  return 0;
}

class TextWriter {
 public:
  explicit TextWriter(size_t limit) : limit_(limit) {}

  void Text(const char* s) {
    for (; *s != '\0'; ++s) {
      const char c = *s;
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        pending_space_ = true;
        continue;
      }
      if (pending_space_ && !out_.empty() && out_.back() != '\n') out_ += ' ';
      pending_space_ = false;
      out_ += c;
    }
  }
  void LineBreak() {
    pending_space_ = false;
    if (!out_.empty() && out_.back() != '\n') out_ += '\n';
  }
  void ParagraphBreak() {
    LineBreak();
    if (!out_.empty() && !EndsWith("\n\n")) out_ += '\n';
  }
  void Raw(const std::string& s) { out_ += s; }
  bool full() const { return out_.size() > limit_; }
  std::string Take() { return std::move(out_); }

 private:
  bool EndsWith(const char* suffix) const {
    const size_t n = std::strlen(suffix);
    return out_.size() >= n && out_.compare(out_.size() - n, n, suffix) == 0;
  }
  size_t limit_;
  std::string out_;
  bool pending_space_ = false;
};

// Iterative walk: deeply nested hostile HTML cannot overflow the stack.
void Walk(xmlNode* root, TextWriter* w) {
  struct Frame {
    xmlNode* node;
    bool leaving;
  };
  std::vector<Frame> stack{{root, false}};
  while (!stack.empty() && !w->full()) {
    Frame f = stack.back();
    stack.pop_back();
    xmlNode* n = f.node;
    const int level = n->type == XML_ELEMENT_NODE ? HeadingLevel(n) : 0;
    if (f.leaving) {
      if (level > 0 || IsBlock(n)) w->ParagraphBreak();
      continue;
    }
    if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) {
      if (n->content != nullptr) w->Text(reinterpret_cast<const char*>(n->content));
      continue;
    }
    if (n->type != XML_ELEMENT_NODE && n->type != XML_DOCUMENT_NODE &&
        n->type != XML_HTML_DOCUMENT_NODE) {
      continue;
    }
    if (n->type == XML_ELEMENT_NODE) {
      if (IsSkipped(n)) continue;
      if (NameIs(n, "br")) {
        w->LineBreak();
        continue;
      }
      if (level > 0) {
        w->ParagraphBreak();
        w->Raw(std::string(static_cast<size_t>(level), '#') + " ");
      } else if (IsBlock(n) || NameIs(n, "td") || NameIs(n, "th")) {
        if (NameIs(n, "td") || NameIs(n, "th")) {
          w->Text(" ");
        } else {
          w->LineBreak();
        }
      }
      stack.push_back({n, true});
    }
    // Children in document order: push them reversed.
    std::vector<xmlNode*> children;
    for (xmlNode* c = n->children; c != nullptr; c = c->next) children.push_back(c);
    for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back({*it, false});
  }
}

}  // namespace

Result<std::string> HtmlToText(std::string_view html, const DocumentLimits& limits) {
  static std::once_flag init;
  std::call_once(init, [] { xmlInitParser(); });
  if (html.size() > static_cast<size_t>(INT32_MAX)) {
    return Status::InvalidParameter("HTML document is too large");
  }
  const int options = HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                      HTML_PARSE_RECOVER | HTML_PARSE_NOIMPLIED;
  std::unique_ptr<xmlDoc, DocFree> doc(
      htmlReadMemory(html.data(), static_cast<int>(html.size()), nullptr, "UTF-8", options));
  if (!doc) return Status::InvalidParameter("HTML document could not be parsed");
  TextWriter writer(limits.max_text_bytes);
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (root == nullptr) return Status::InvalidParameter("HTML document has no content");
  Walk(reinterpret_cast<xmlNode*>(doc.get()), &writer);
  if (writer.full()) {
    return Status::InvalidParameter(
        fmt::format("extracted text is too large: more than {} bytes", limits.max_text_bytes));
  }
  return writer.Take();
}

}  // namespace engram
