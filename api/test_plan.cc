#include "api/test_plan.h"

#include <algorithm>
#include <array>

namespace llmcap::api {

namespace {

template <typename E, std::size_t N>
std::optional<E> parse_name(std::string_view s, const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

constexpr std::array<std::string_view, 7> kPhaseKinds = {
    "concurrency_sweep", "rate_sweep", "capacity_search", "burst", "soak",
    "trace_replay",      "at_demand"};
constexpr std::array<std::string_view, 2> kDrains = {"finish", "cancel"};
constexpr std::array<std::string_view, 3> kArrivals = {"poisson", "constant", "gamma"};

}  // namespace

std::string_view to_string(PhaseKind k) { return kPhaseKinds.at(static_cast<std::size_t>(k)); }
std::string_view to_string(Drain d) { return kDrains.at(static_cast<std::size_t>(d)); }
std::string_view to_string(Arrival a) { return kArrivals.at(static_cast<std::size_t>(a)); }

std::optional<PhaseKind> parse_phase_kind(std::string_view s) {
  return parse_name<PhaseKind>(s, kPhaseKinds);
}
std::optional<Drain> parse_drain(std::string_view s) { return parse_name<Drain>(s, kDrains); }
std::optional<Arrival> parse_arrival(std::string_view s) {
  return parse_name<Arrival>(s, kArrivals);
}

double planned_window_s(const PlanPhase& p, double rate_rps, std::int32_t concurrency,
                        double mean_output_tokens) {
  if (p.requests <= 0) return p.duration_s;
  const auto n = static_cast<double>(p.requests);
  double window_s = 0;
  if (rate_rps > 0) {
    window_s = n / rate_rps;
  } else {
    window_s = n / std::max(1, concurrency) * guessed_request_s(mean_output_tokens);
  }
  return std::min(window_s, p.max_duration_s);
}

double guessed_request_s(double mean_output_tokens) {
  return std::max(0.0, mean_output_tokens) * 0.05 + 0.5;
}

double PlanWorkload::planned_input_mean() const {
  if (mix.empty()) return input_tokens.nominal_mean();
  double sum = 0;
  for (const auto& c : mix) sum += c.weight * c.input_tokens.nominal_mean();
  return sum;
}

double PlanWorkload::planned_output_mean() const {
  if (mix.empty()) return output_tokens.nominal_mean();
  double sum = 0;
  for (const auto& c : mix) sum += c.weight * c.output_tokens.nominal_mean();
  return sum;
}

}  // namespace llmcap::api
