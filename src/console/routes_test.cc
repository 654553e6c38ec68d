#include "console/routes.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "console/assets.h"

namespace engram::console {
namespace {

std::string HeaderOf(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

Result<HttpResponse> Get(Router& router, const std::string& path) {
  HttpRequest req;
  req.method = "GET";
  req.path = path;
  Router::Match match = router.Find("GET", path);
  if (match.route == nullptr) return Status::NotFound("no route");
  RequestContext ctx;
  ctx.params = match.params;
  return match.route->handler(req, ctx);
}

TEST(ConsoleRoutesTest, ServesThePageAndItsFilesUnderAStrictPolicy) {
  Router router;
  RegisterRoutes(router);
  auto page = Get(router, "/console");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("/console/console.js"), std::string::npos);
  const std::string csp = HeaderOf(*page, "Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos);
  EXPECT_EQ(HeaderOf(*page, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(HeaderOf(*page, "X-Frame-Options"), "DENY");
  auto script = Get(router, "/console/console.js");
  ASSERT_TRUE(script.ok());
  EXPECT_EQ(script->content_type, "text/javascript; charset=utf-8");
  EXPECT_FALSE(HeaderOf(*script, "Content-Security-Policy").empty());
  auto missing = Get(router, "/console/nope.js");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// The policy forbids inline scripts and styles: the page must not need any.
TEST(ConsoleRoutesTest, ThePageHasNoInlineScriptOrStyle) {
  const Asset* page = FindAsset("index.html");
  ASSERT_NE(page, nullptr);
  const std::string html(page->body);
  size_t at = 0;
  while ((at = html.find("<script", at)) != std::string::npos) {
    const size_t end = html.find('>', at);
    EXPECT_NE(html.substr(at, end - at).find(" src="), std::string::npos) << "inline script";
    at = end;
  }
  EXPECT_EQ(html.find("<style"), std::string::npos);
  EXPECT_EQ(html.find(" style="), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(\son[a-z]+\s*=)"))) << "inline event handler";
  // Every file the page and the scripts name is served.
  for (const char* name :
       {"console.css", "console.js", "api.js", "dom.js", "overview.js", "memories.js"}) {
    EXPECT_NE(FindAsset(name), nullptr) << name;
  }
}

}  // namespace
}  // namespace engram::console
