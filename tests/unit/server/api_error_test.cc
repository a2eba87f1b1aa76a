// ApiError: the OpenAI error body and the status mapping.
#include "server/api_error.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pagoda::server {
namespace {

TEST(ApiErrorTest, BodyHasTheFourFields) {
  const nlohmann::json j = nlohmann::json::parse(invalid_request("bad n", "n").to_json());
  EXPECT_EQ(j["error"]["message"], "bad n");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "n");
  EXPECT_TRUE(j["error"]["code"].is_null());
}

TEST(ApiErrorTest, StatusCodesMapToHttp) {
  EXPECT_EQ(api_error_from_status(make_error("x", StatusCode::kInvalidArgument)).http_status, 400);
  EXPECT_EQ(api_error_from_status(make_error("x", StatusCode::kNotFound)).http_status, 404);
  const ApiError too_long = api_error_from_status(make_error("x", StatusCode::kContextLengthExceeded));
  EXPECT_EQ(too_long.http_status, 400);
  EXPECT_EQ(too_long.code, "context_length_exceeded");
  EXPECT_FALSE(api_error_from_status(make_error("x", StatusCode::kInvalidArgument)).code);
  EXPECT_EQ(api_error_from_status(make_error("x", StatusCode::kResourceExhausted)).http_status, 429);
  EXPECT_EQ(api_error_from_status(make_error("x", StatusCode::kUnavailable)).http_status, 503);
  EXPECT_EQ(api_error_from_status(make_error("x")).http_status, 500);
  EXPECT_EQ(invalid_request("x").to_response().status, 400);
}

}  // namespace
}  // namespace pagoda::server
