// libFuzzer target: the agent's SSE framing (agent/sse_parser.h) and OpenAI chunk decoding
// (agent/chunk_decoder.h) on arbitrary bytes. The input is the response body; how it is split
// into reads and the parser's event size limit are derived from a hash of the input, so the
// corpus stays plain SSE files and every mutation also changes the splits.
//
// Checks beyond "no crash, no sanitizer report": an event never exceeds the size limit, a
// failed parser stays failed, and the same bytes split differently give the same events
// (unless the size limit tripped in either run, which may happen at different bytes).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "agent/chunk_decoder.h"
#include "agent/sse_parser.h"
#include "analysis/fnv1a.h"

namespace {

using llmcap::agent::ApiKind;
using llmcap::agent::ChunkDecoder;
using llmcap::agent::SseEvent;
using llmcap::agent::SseParser;

// splitmix64: the split positions.
std::uint64_t next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "sse_parser_fuzz: invariant violated: %s\n", what);
    std::abort();
  }
}

struct Run {
  std::vector<SseEvent> events;
  bool failed = false;
};

Run parse(std::string_view body, std::size_t limit, std::uint64_t seed, bool split) {
  SseParser parser(limit);
  Run run;
  std::size_t pos = 0;
  std::int64_t t = 0;
  while (pos < body.size()) {
    std::size_t n = body.size() - pos;
    if (split) {
      // Mostly small reads (1-8 bytes, like a trickling server), sometimes large ones.
      const std::uint64_t r = next(seed);
      n = std::min<std::size_t>(n, (r & 3) == 0 ? 1 + r % 4096 : 1 + (r >> 8) % 8);
    }
    const bool fed = parser.feed(body.substr(pos, n), ++t, run.events);
    if (!fed) {
      check(!parser.error().empty(), "feed() failed without an error message");
      check(!parser.feed("data: x\n\n", ++t, run.events), "a failed parser accepted more bytes");
      run.failed = true;
      return run;
    }
    pos += n;
  }
  parser.finish(++t, run.events);
  check(parser.bytes_seen() == body.size(), "bytes_seen() differs from the bytes fed");
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const std::uint64_t h = llmcap::analysis::fnv1a_64(body);
  const std::size_t limits[] = {16, 256, 4096, 4 * 1024 * 1024};
  const std::size_t limit = limits[h % 4];

  const Run whole = parse(body, limit, h, false);
  const Run split = parse(body, limit, h, true);
  for (const Run* run : {&whole, &split}) {
    for (const auto& e : run->events) check(e.data.size() <= limit, "event exceeds the limit");
  }
  if (!whole.failed && !split.failed) {
    check(whole.events.size() == split.events.size(), "split changed the number of events");
    for (std::size_t i = 0; i < whole.events.size(); ++i) {
      check(whole.events[i].data == split.events[i].data, "split changed an event's data");
      check(whole.events[i].event == split.events[i].event, "split changed an event's type");
      check(whole.events[i].unterminated == split.events[i].unterminated,
            "split changed unterminated");
    }
  }
  for (const auto& e : split.events) {
    for (ApiKind api : {ApiKind::kCompletions, ApiKind::kChat}) {
      const auto c = ChunkDecoder::decode(e.data, api, true);
      check(c.text_bytes <= e.data.size(), "more text bytes than data");
      check(!(c.malformed && c.is_token), "a malformed chunk counted as a token");
    }
  }
  // The whole input as a non-streamed JSON body.
  for (ApiKind api : {ApiKind::kCompletions, ApiKind::kChat}) {
    const auto c = ChunkDecoder::decode(body, api, false);
    check(c.text_bytes <= body.size(), "more text bytes than body");
  }
  return 0;
}
