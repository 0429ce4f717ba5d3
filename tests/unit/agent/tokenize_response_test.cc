#include "agent/tokenize_response.h"

#include <gtest/gtest.h>

namespace llmcap::agent {
namespace {

TEST(TokenizeResponse, VllmCountWins) {
  EXPECT_EQ(TokenizeResponse::count(R"({"count": 7, "max_model_len": 4096, "tokens": [1,2]})", 20),
            7);
}

TEST(TokenizeResponse, LlamaCppTokenList) {
  EXPECT_EQ(TokenizeResponse::count(R"({"tokens": [22172, 727, 3186]})", 17), 3);
  // with_pieces form: a list of objects still counts one per token
  EXPECT_EQ(TokenizeResponse::count(R"({"tokens": [{"id": 1, "piece": "a"}]})", 1), 1);
}

TEST(TokenizeResponse, EmptyListForNonEmptyTextIsNotUnderstood) {
  // What llama-server answers to the vLLM-shaped request {"model", "prompt"}.
  EXPECT_EQ(TokenizeResponse::count(R"({"tokens": []})", 17), -1);
  EXPECT_EQ(TokenizeResponse::count(R"({"count": 0})", 17), -1);
  EXPECT_EQ(TokenizeResponse::count(R"({"tokens": []})", 0), 0);
}

TEST(TokenizeResponse, MalformedBodies) {
  EXPECT_EQ(TokenizeResponse::count("", 5), -1);
  EXPECT_EQ(TokenizeResponse::count("{not json", 5), -1);
  EXPECT_EQ(TokenizeResponse::count("[1,2,3]", 5), -1);
  EXPECT_EQ(TokenizeResponse::count(R"({"tokens": 3})", 5), -1);
  EXPECT_EQ(TokenizeResponse::count(R"({"count": "3"})", 5), -1);
  EXPECT_EQ(TokenizeResponse::count(R"({"count": -2})", 5), -1);
  EXPECT_EQ(TokenizeResponse::count(R"({"count": 1e12})", 5), -1);
  EXPECT_EQ(TokenizeResponse::count(R"({"count": 99999999999})", 5), -1);
}

}  // namespace
}  // namespace llmcap::agent
