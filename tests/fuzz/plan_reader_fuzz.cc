// libFuzzer target: the plan reader (api/plan_reader.h, parse_plan) on arbitrary bytes — the
// text a client POSTs to /v1/jobs. Checks beyond "no crash, no sanitizer report, no uncaught
// exception": a result is either a plan or errors (never both, never neither), malformed input
// carries errors, and an accepted plan's normalised JSON is itself accepted (round trip).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "api/plan_reader.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "plan_reader_fuzz: invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = llmcap::api::parse_plan(text);
  check(r.plan.has_value() == r.errors.empty(), "plan and errors disagree");
  if (r.malformed) check(!r.errors.empty(), "malformed without an error");
  (void)llmcap::api::json_nesting_depth(text);
  if (r.plan) {
    // Secrets come back redacted ("***"), which is still a valid value.
    const auto again = llmcap::api::parse_plan(llmcap::api::plan_to_json(*r.plan, false).dump());
    if (!again.plan) {
      for (const auto& e : again.errors)
        std::fprintf(stderr, "round trip error: %s: %s\n", e.path.c_str(), e.message.c_str());
    }
    check(again.plan.has_value(), "the normalised plan is refused on a second read");
  }
  return 0;
}
