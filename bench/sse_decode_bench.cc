// Micro-benchmark of the agent's per-event hot path: SseParser (framing) and ChunkDecoder
// (nlohmann DOM per chunk), on vLLM-shaped completions and chat chunks. Results:
// bench/RESULTS.md, "Agent SSE decode".
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "agent/chunk_decoder.h"
#include "agent/sse_parser.h"

namespace {

using llmcap::agent::ApiKind;
using llmcap::agent::ChunkDecoder;
using llmcap::agent::SseEvent;
using llmcap::agent::SseParser;

const std::string kCompletionsChunk =
    R"({"id":"cmpl-7f3a0c","object":"text_completion","created":1733100000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" quick","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null})";
const std::string kChatChunk =
    R"({"id":"chatcmpl-11","object":"chat.completion.chunk","created":1733100000,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"content":" there"},"logprobs":null,"finish_reason":null}]})";

std::string stream_of(const std::string& chunk, int events) {
  std::string s;
  for (int i = 0; i < events; ++i) s += "data: " + chunk + "\n\n";
  return s;
}

// SSE framing only, one read holding 64 events (as under a burst).
void BM_SseParse64EventsPerRead(benchmark::State& state) {
  const std::string bytes = stream_of(kCompletionsChunk, 64);
  std::vector<SseEvent> out;
  for (auto _ : state) {
    SseParser p;
    out.clear();
    p.feed(bytes, 1, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 64);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
}
BENCHMARK(BM_SseParse64EventsPerRead);

// One event per read (the usual case at low load).
void BM_SseParseOneEventPerRead(benchmark::State& state) {
  const std::string bytes = stream_of(kCompletionsChunk, 1);
  SseParser p;
  std::vector<SseEvent> out;
  for (auto _ : state) {
    out.clear();
    p.feed(bytes, 1, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SseParseOneEventPerRead);

void BM_DecodeCompletionsChunk(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(ChunkDecoder::decode(kCompletionsChunk, ApiKind::kCompletions));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeCompletionsChunk);

void BM_DecodeChatChunk(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ChunkDecoder::decode(kChatChunk, ApiKind::kChat));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeChatChunk);

// Framing + decoding of one event per read: the agent's whole per-token-event CPU cost
// outside the socket read itself.
void BM_ParseAndDecodeOneEvent(benchmark::State& state) {
  const std::string bytes = stream_of(kChatChunk, 1);
  SseParser p;
  std::vector<SseEvent> out;
  for (auto _ : state) {
    out.clear();
    p.feed(bytes, 1, out);
    for (const auto& e : out)
      benchmark::DoNotOptimize(ChunkDecoder::decode(e.data, ApiKind::kChat));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseAndDecodeOneEvent);

}  // namespace

BENCHMARK_MAIN();
