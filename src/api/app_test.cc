// App: which requests run inline, and deferred answers get the request id and are counted when
// they come, like any other.
#include "api/app.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/envelope.h"

namespace engram {
namespace {

class AppTest : public ::testing::Test {
 protected:
  AppTest() : auth_(*ApiKeyAuth::FromSpecs({})) {}

  App MakeApp(HttpReply* saved) {
    Router router;
    router.Add(
        {.method = "POST",
         .pattern = "/later/{workspace}",
         .name = "later",
         .handler = [saved](const HttpRequest&, RequestContext& ctx) -> Result<HttpResponse> {
           return DeferredResponse(ctx, [saved](DeferredFinish finish) {
             *saved = [finish](HttpResponse r) { finish(std::move(r)); };
           });
         },
         .runs_inline = true});
    router.Add({.method = "POST",
                .pattern = "/fails/{workspace}",
                .name = "fails",
                .handler = [](const HttpRequest&, RequestContext& ctx) -> Result<HttpResponse> {
                  return DeferredResponse(ctx, [](DeferredFinish finish) {
                    finish(Status(StatusCode::kThrottled, "too many"));
                  });
                },
                .runs_inline = true});
    router.Add({.method = "GET",
                .pattern = "/now",
                .name = "now",
                .handler = [](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
                  return JsonResponse(200, nlohmann::json::object());
                }});
    return App(std::move(router), &auth_, &metrics_);
  }

  static HttpRequest Post(const std::string& path, size_t body_bytes = 2) {
    HttpRequest r;
    r.method = "POST";
    r.path = path;
    r.body = std::string(body_bytes, ' ');
    r.remote_is_loopback = true;
    return r;
  }

  static std::string RequestId(const HttpResponse& r) {
    for (const auto& [name, value] : r.headers) {
      if (name == "X-Request-Id") return value;
    }
    return "";
  }

  ApiKeyAuth auth_;
  Metrics metrics_;
};

TEST_F(AppTest, InlineOnlyForMarkedRoutesWithSmallBodies) {
  HttpReply saved;
  App app = MakeApp(&saved);
  EXPECT_TRUE(app.RunsInline(Post("/later/ws")));
  EXPECT_TRUE(app.RunsInline(Post("/later/ws", App::kMaxInlineBodyBytes)));
  EXPECT_FALSE(app.RunsInline(Post("/later/ws", App::kMaxInlineBodyBytes + 1)));
  HttpRequest get = Post("/now");
  get.method = "GET";
  EXPECT_FALSE(app.RunsInline(get));
  EXPECT_FALSE(app.RunsInline(Post("/nowhere")));
}

TEST_F(AppTest, DeferredAnswersGetTheRequestIdAndAreCountedWhenTheyCome) {
  HttpReply saved;
  App app = MakeApp(&saved);
  HttpResponse first = app.Handle(Post("/later/ws"));
  ASSERT_TRUE(first.deferred);
  EXPECT_TRUE(RequestId(first).empty());  // not answered yet
  HttpResponse answer;
  first.deferred([&](HttpResponse r) { answer = std::move(r); });
  ASSERT_TRUE(saved);
  EXPECT_EQ(metrics_.Render().find("route=\"later\""), std::string::npos);  // nothing counted yet
  HttpResponse body;
  body.status = 200;
  body.body = "{}";
  saved(body);
  EXPECT_EQ(answer.status, 200);
  EXPECT_FALSE(RequestId(answer).empty());
  EXPECT_NE(metrics_.Render().find("route=\"later\",method=\"POST\",status=\"200\""),
            std::string::npos);

  // An error found later is rendered in the envelope with the same request id.
  HttpResponse failing = app.Handle(Post("/fails/ws"));
  ASSERT_TRUE(failing.deferred);
  HttpResponse error;
  failing.deferred([&](HttpResponse r) { error = std::move(r); });
  EXPECT_EQ(error.status, 429);
  const auto j = nlohmann::json::parse(error.body);
  EXPECT_EQ(j["code"], "Throttling.RateQuota");
  EXPECT_EQ(j["request_id"], RequestId(error));
}

}  // namespace
}  // namespace engram
