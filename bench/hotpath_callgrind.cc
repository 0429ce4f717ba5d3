// bench_hotpath_callgrind: a deterministic driver for `valgrind --tool=callgrind` (issue 10).
// Instruction counts do not depend on machine load, so they show regressions of the agent's
// per-event hot path (SseParser framing + ChunkDecoder decode) where wall-clock timings are too
// noisy. The work runs inside llmcap_bench_hot_loop(), so collection can be limited to it:
//   valgrind --tool=callgrind --toggle-collect=llmcap_bench_hot_loop
//     ./bench_hotpath_callgrind --events=10000 [--api=chat|completions]
// Instructions per event = the reported Ir total / events. Without valgrind it just runs.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent/chunk_decoder.h"
#include "agent/sse_parser.h"

using llmcap::agent::ApiKind;
using llmcap::agent::ChunkDecoder;
using llmcap::agent::SseParser;

// Frames and decodes `events` copies of one event, one read per event (the usual case below
// saturation), the way StreamRecorder does: events handed over in place by an SseSink, the
// response id copied only until the first one is known. Returns the number of token events
// decoded (so the work cannot be elided).
namespace {
class CountingSink final : public llmcap::agent::SseSink {
 public:
  explicit CountingSink(ApiKind api) : api_(api) {}
  bool on_event(const llmcap::agent::SseEventView& e) override {
    const auto c = ChunkDecoder::decode(e.data, api_, true, id_.empty());
    if (id_.empty()) id_ = c.id;
    tokens += c.is_token ? 1 : 0;
    return true;
  }
  int tokens = 0;

 private:
  ApiKind api_;
  std::string id_;
};
}  // namespace

extern "C" __attribute__((noinline)) int llmcap_bench_hot_loop(const char* event, int events,
                                                               int chat) {
  SseParser p;
  CountingSink sink(chat != 0 ? ApiKind::kChat : ApiKind::kCompletions);
  for (int i = 0; i < events; ++i) p.feed(event, i, sink);
  return sink.tokens;
}

int main(int argc, char** argv) {
  int events = 10'000;
  bool chat = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--events=", 9) == 0) {
      events = std::atoi(argv[i] + 9);
    } else if (std::strcmp(argv[i], "--api=chat") == 0) {
      chat = true;
    } else if (std::strcmp(argv[i], "--api=completions") == 0) {
      chat = false;
    } else {
      std::fprintf(stderr, "usage: %s [--events=N] [--api=chat|completions]\n", argv[0]);
      return 2;
    }
  }
  const std::string completions =
      R"(data: {"id":"cmpl-7f3a0c","object":"text_completion","created":1733100000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" quick","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null})"
      "\n\n";
  const std::string chat_event =
      R"(data: {"id":"chatcmpl-11","object":"chat.completion.chunk","created":1733100000,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"content":" there"},"logprobs":null,"finish_reason":null}]})"
      "\n\n";
  const int tokens =
      llmcap_bench_hot_loop(chat ? chat_event.c_str() : completions.c_str(), events, chat ? 1 : 0);
  std::printf("%d events framed and decoded, %d tokens (%s)\n", events, tokens,
              chat ? "chat" : "completions");
  return tokens == events ? 0 : 1;
}
