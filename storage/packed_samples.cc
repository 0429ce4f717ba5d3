#include "storage/packed_samples.h"

#include <stdexcept>

namespace llmcap::storage {

namespace {

// Wrapping arithmetic on int64 (deltas of arbitrary values must not overflow, only wrap).
std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

// The flag byte: three flags, then one "present" bit per time stamp (send … end).
constexpr std::uint8_t kEstimated = 1;
constexpr std::uint8_t kHasMessage = 2;
constexpr std::uint8_t kHasTokenTimes = 4;
constexpr int kFirstStampBit = 3;

}  // namespace

void PackedSamples::varint(std::uint64_t v) {
  while (v >= 0x80) {
    bytes_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  bytes_.push_back(static_cast<char>(v));
}

void PackedSamples::signed_varint(std::int64_t v) { varint(zigzag(v)); }

void PackedSamples::append(const SampleRow& r) {
  signed_varint(r.step_id);
  signed_varint(r.id);
  signed_varint(wrap_sub(r.index, prev_index_));
  signed_varint(wrap_sub(r.t_intended_ns, prev_intended_ns_));
  prev_index_ = r.index;
  prev_intended_ns_ = r.t_intended_ns;
  const std::int64_t stamps[] = {r.t_send_ns, r.t_headers_ns, r.t_first_token_ns, r.t_last_token_ns,
                                 r.t_end_ns};
  std::uint8_t flags = (r.output_tokens_estimated ? kEstimated : 0) |
                       (r.error_message.empty() ? 0 : kHasMessage) |
                       (r.token_times_ns.empty() ? 0 : kHasTokenTimes);
  for (int i = 0; i < 5; ++i) {
    if (stamps[i] != -1) flags |= static_cast<std::uint8_t>(1u << (kFirstStampBit + i));
  }
  bytes_.push_back(static_cast<char>(flags));
  // Present stamps (-1 is "did not happen" by the RequestSample contract) in the order they
  // happen, each as the delta from the previous present one.
  std::int64_t base = r.t_intended_ns;
  for (const std::int64_t t : stamps) {
    if (t == -1) continue;
    signed_varint(wrap_sub(t, base));
    base = t;
  }
  // Durations and counts whose "none" is -1: offset by one so that -1 is the one-byte 0.
  for (const std::int64_t v : {r.connect_ns, r.tls_ns, r.max_itl_ns}) signed_varint(wrap_add(v, 1));
  varint(r.token_events);
  for (const std::int32_t v :
       {r.input_tokens, r.output_tokens, r.planned_input_tokens, r.planned_output_tokens})
    signed_varint(static_cast<std::int64_t>(v) + 1);
  signed_varint(r.http_status);
  bytes_.push_back(static_cast<char>(r.error_class));
  bytes_.push_back(static_cast<char>(r.finish_reason));
  if (flags & kHasMessage) {
    varint(r.error_message.size());
    bytes_.append(r.error_message);
  }
  if (flags & kHasTokenTimes) {
    varint(r.token_times_ns.size());
    std::int64_t prev = r.t_intended_ns;
    for (const std::int64_t t : r.token_times_ns) {
      signed_varint(wrap_sub(t, prev));
      prev = t;
    }
  }
  ++rows_;
}

std::uint64_t PackedSamples::Reader::varint() {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= packed_.bytes_.size()) throw std::logic_error("PackedSamples: truncated row");
    const auto b = static_cast<std::uint8_t>(packed_.bytes_[pos_++]);
    v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return v;
  }
  throw std::logic_error("PackedSamples: varint longer than 64 bits");
}

std::int64_t PackedSamples::Reader::signed_varint() { return unzigzag(varint()); }

bool PackedSamples::Reader::next(SampleRow& r) {
  if (row_ >= packed_.rows_) return false;
  r.step_id = signed_varint();
  r.id = signed_varint();
  r.index = wrap_add(prev_index_, signed_varint());
  r.t_intended_ns = wrap_add(prev_intended_ns_, signed_varint());
  prev_index_ = r.index;
  prev_intended_ns_ = r.t_intended_ns;
  if (pos_ >= packed_.bytes_.size()) throw std::logic_error("PackedSamples: truncated row");
  const auto flags = static_cast<std::uint8_t>(packed_.bytes_[pos_++]);
  std::int64_t base = r.t_intended_ns;
  int bit = kFirstStampBit;
  for (std::int64_t* t :
       {&r.t_send_ns, &r.t_headers_ns, &r.t_first_token_ns, &r.t_last_token_ns, &r.t_end_ns}) {
    if (flags & (1u << bit++)) {
      *t = wrap_add(base, signed_varint());
      base = *t;
    } else {
      *t = -1;
    }
  }
  for (std::int64_t* v : {&r.connect_ns, &r.tls_ns, &r.max_itl_ns})
    *v = wrap_sub(signed_varint(), 1);
  r.token_events = static_cast<std::uint32_t>(varint());
  for (std::int32_t* v :
       {&r.input_tokens, &r.output_tokens, &r.planned_input_tokens, &r.planned_output_tokens})
    *v = static_cast<std::int32_t>(signed_varint() - 1);
  r.http_status = static_cast<std::int16_t>(signed_varint());
  if (pos_ + 2 > packed_.bytes_.size()) throw std::logic_error("PackedSamples: truncated row");
  r.error_class = static_cast<std::uint8_t>(packed_.bytes_[pos_++]);
  r.finish_reason = static_cast<std::uint8_t>(packed_.bytes_[pos_++]);
  r.output_tokens_estimated = (flags & kEstimated) != 0;
  r.error_message.clear();
  if (flags & kHasMessage) {
    const std::uint64_t n = varint();
    if (n > packed_.bytes_.size() - pos_) throw std::logic_error("PackedSamples: truncated row");
    r.error_message.assign(packed_.bytes_, pos_, n);
    pos_ += n;
  }
  r.token_times_ns.clear();
  if (flags & kHasTokenTimes) {
    const std::uint64_t n = varint();
    if (n > packed_.bytes_.size() - pos_) throw std::logic_error("PackedSamples: truncated row");
    r.token_times_ns.reserve(n);
    std::int64_t prev = r.t_intended_ns;
    for (std::uint64_t i = 0; i < n; ++i) {
      prev = wrap_add(prev, signed_varint());
      r.token_times_ns.push_back(prev);
    }
  }
  ++row_;
  return true;
}

}  // namespace llmcap::storage
