// PackedSamples: request samples in a compact byte encoding, for the queue between the agent
// and SQLite (SampleWriter) where accepted rows wait — up to millions of them when the disk falls
// behind — before they are written (issue 10: ≤ 64 bytes per stored sample in memory before it
// is written; a SampleRow is 184 bytes plus its heap).
//
// Encoding, per row (LEB128 varints; signed values zigzag-coded): step_id, id, index as the
// delta from the previous row's, t_intended_ns as the delta from the previous row's, a flag
// byte (which stamps are present, estimated, message, token times), each present time stamp
// (send, headers, first token, last token, end) as the delta from the previous present one,
// durations and counts offset so that -1 costs one byte, the two enum bytes, and only when
// present the error message and the token times (delta-coded). Lossless: every SampleRow value,
// including odd ones (negative deltas, INT64 extremes), decodes to itself. A typical streamed
// sample is 35–45 B.
//
// A plain value: append on one thread, then move it (e.g. into SampleWriter::enqueue); read
// with a Reader. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "storage/records.h"

namespace llmcap::storage {

class PackedSamples {
 public:
  void append(const SampleRow& row);
  std::size_t rows() const { return rows_; }
  std::size_t bytes() const { return bytes_.size(); }
  bool empty() const { return rows_ == 0; }
  // Releases spare capacity (a growing buffer may hold up to twice what it uses).
  void shrink_to_fit() { bytes_.shrink_to_fit(); }
  std::size_t capacity_bytes() const { return bytes_.capacity(); }

  // Decodes the rows in append order.
  class Reader {
   public:
    explicit Reader(const PackedSamples& packed) : packed_(packed) {}
    // Fills `row` (every field) with the next row; false after the last one.
    bool next(SampleRow& row);

   private:
    std::uint64_t varint();
    std::int64_t signed_varint();
    const PackedSamples& packed_;
    std::size_t pos_ = 0;
    std::size_t row_ = 0;
    std::int64_t prev_index_ = 0;
    std::int64_t prev_intended_ns_ = 0;
  };

 private:
  void varint(std::uint64_t v);
  void signed_varint(std::int64_t v);

  std::string bytes_;
  std::size_t rows_ = 0;
  std::int64_t prev_index_ = 0;        // of the last appended row
  std::int64_t prev_intended_ns_ = 0;  // of the last appended row
};

}  // namespace llmcap::storage
