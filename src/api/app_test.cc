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

TEST_F(AppTest, RequestHeadsWithoutAValidKeyAreRefusedBeforeTheirBody) {
  ApiKeyAuth keyed = *ApiKeyAuth::FromSpecs({"k-all", "k-one:ws1"});
  Router router;
  router.Add({.method = "POST",
              .pattern = "/w/{workspace}/add",
              .name = "add",
              .handler = [](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
                return JsonResponse(200, nlohmann::json::object());
              }});
  App app(std::move(router), &keyed, &metrics_);
  HttpRequest head = Post("/w/ws1/add", 0);
  auto refused = app.CheckBeforeBody(head);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 401);
  head.headers.emplace_back("authorization", "Bearer k-one");
  EXPECT_FALSE(app.CheckBeforeBody(head).has_value());
  head.path = "/w/ws2/add";
  refused = app.CheckBeforeBody(head);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 403);
  head.path = "/nowhere";
  refused = app.CheckBeforeBody(head);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 404);
  EXPECT_FALSE(RequestId(*refused).empty());
}

TEST_F(AppTest, EncodedBodiesAre415NamingTheEncoding) {
  HttpReply saved;
  App app = MakeApp(&saved);
  HttpRequest r = Post("/later/ws");
  r.headers.emplace_back("content-encoding", "gzip");
  auto refused = app.CheckBeforeBody(r);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 415);
  const auto body = nlohmann::json::parse(refused->body);
  EXPECT_EQ(body["code"], "UnsupportedMediaType");
  EXPECT_NE(body["message"].get<std::string>().find("gzip"), std::string::npos);
  EXPECT_EQ(app.Handle(r).status, 415);
  r.headers.back().second = " Identity ";
  EXPECT_FALSE(app.CheckBeforeBody(r).has_value());
}

// A transfer coding the transport does not read would make the body read as empty: 501 naming it.
TEST_F(AppTest, UnknownTransferCodingsAre501) {
  HttpReply saved;
  App app = MakeApp(&saved);
  HttpRequest r = Post("/later/ws");
  r.headers.emplace_back("transfer-encoding", "gzip");
  auto refused = app.CheckBeforeBody(r);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 501);
  EXPECT_NE(nlohmann::json::parse(refused->body)["message"].get<std::string>().find("gzip"),
            std::string::npos);
  r.headers.back().second = "Chunked";
  EXPECT_FALSE(app.CheckBeforeBody(r).has_value());
}

// Error messages never carry a control byte of the request back (a NUL in a path).
TEST_F(AppTest, NotFoundMessagesShowNoControlBytes) {
  HttpReply saved;
  App app = MakeApp(&saved);
  HttpRequest r = Post(std::string("/no\0where\x01", 10));
  HttpResponse answer = app.Handle(r);
  EXPECT_EQ(answer.status, 404);
  EXPECT_EQ(answer.body.find('\0'), std::string::npos);
  EXPECT_EQ(answer.body.find("\\u0000"), std::string::npos) << answer.body;
  EXPECT_NE(answer.body.find("/no?where?"), std::string::npos) << answer.body;
}

TEST_F(AppTest, HeadIsServedByTheGetRoute) {
  HttpReply saved;
  App app = MakeApp(&saved);
  HttpRequest head = Post("/now", 0);
  head.method = "HEAD";
  EXPECT_FALSE(app.CheckBeforeBody(head).has_value());
  EXPECT_EQ(app.Handle(head).status, 200);
  head.path = "/later/ws";  // a POST-only route: HEAD is not allowed there either
  EXPECT_EQ(app.Handle(head).status, 405);
}

TEST_F(AppTest, ARouteNotReadyOnAnIoThreadRunsOnAWorkerWithoutItsHandler) {
  Router router;
  int calls = 0;
  bool loaded = false;
  router.Add({.method = "POST",
              .pattern = "/search/{workspace}",
              .name = "search",
              .handler = [&calls](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
                ++calls;
                return JsonResponse(200, nlohmann::json::object());
              },
              .compute_bound = true,
              .ready =
                  [&loaded](const HttpRequest&, const RequestContext& ctx) {
                    return loaded && ctx.params.at("workspace") == "ws";
                  }});
  App app(std::move(router), &auth_, &metrics_);
  HttpRequest req = Post("/search/ws");
  req.on_io_thread = true;
  HttpResponse cold = app.Handle(req);
  EXPECT_TRUE(cold.run_on_worker);
  EXPECT_EQ(calls, 0);
  req.on_io_thread = false;  // the worker's run: not asked again
  EXPECT_EQ(app.Handle(req).status, 200);
  EXPECT_EQ(calls, 1);
  loaded = true;
  req.on_io_thread = true;
  HttpResponse warm = app.Handle(req);
  EXPECT_FALSE(warm.run_on_worker);
  EXPECT_EQ(warm.status, 200);
  EXPECT_EQ(calls, 2);
  // Refused requests are refused before the probe, on the I/O thread.
  req.path = "/search/ws/extra";
  EXPECT_FALSE(app.Handle(req).run_on_worker);
}

TEST_F(AppTest, RoutesRenderErrorsInTheirOwnEnvelope) {
  Router router;
  ErrorRenderer detail = [](const Status& status, const std::string& request_id, double) {
    return JsonResponse(HttpStatusOf(status.code()),
                        nlohmann::json{{"detail", status.message()}, {"request_id", request_id}});
  };
  router.Add({.method = "GET",
              .pattern = "/own",
              .name = "own",
              .handler = [](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
                return Status(StatusCode::kNotImplemented, "webhooks are not supported");
              },
              .render_error = detail});
  router.Add({.method = "POST",
              .pattern = "/own/later",
              .name = "own_later",
              .handler = [detail](const HttpRequest&, RequestContext& ctx) -> Result<HttpResponse> {
                return DeferredResponse(
                    ctx, [](DeferredFinish finish) { finish(Status::Unavailable("busy")); },
                    detail);
              },
              .render_error = detail});
  auto keyed = ApiKeyAuth::FromSpecs({"k"});
  ASSERT_TRUE(keyed.ok());
  App app(std::move(router), &*keyed, &metrics_);
  HttpRequest get;
  get.method = "GET";
  get.path = "/own";
  get.headers.emplace_back("x-api-key", "k");
  HttpResponse r = app.Handle(get);
  EXPECT_EQ(r.status, 501);
  EXPECT_EQ(nlohmann::json::parse(r.body)["detail"], "webhooks are not supported");
  // Refused from the head alone: the same envelope.
  HttpRequest keyless = get;
  keyless.headers.clear();
  auto refused = app.CheckBeforeBody(keyless);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 401);
  EXPECT_TRUE(nlohmann::json::parse(refused->body).contains("detail"));
  // A deferred error: the route's envelope and a Retry-After on the 503.
  HttpRequest post = Post("/own/later");
  post.headers.emplace_back("x-api-key", "k");
  HttpResponse later = app.Handle(post);
  ASSERT_TRUE(later.deferred);
  HttpResponse answer;
  later.deferred([&answer](HttpResponse a) { answer = std::move(a); });
  EXPECT_EQ(answer.status, 503);
  EXPECT_TRUE(nlohmann::json::parse(answer.body).contains("detail"));
  bool retry_after = false;
  for (const auto& [name, value] : answer.headers) retry_after |= name == "Retry-After";
  EXPECT_TRUE(retry_after);
}

}  // namespace
}  // namespace engram
