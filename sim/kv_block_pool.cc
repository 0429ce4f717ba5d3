#include "sim/kv_block_pool.h"

namespace llmcap::sim {

namespace {

// splitmix64 finaliser: a well-mixed 64-bit step for the chain.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<std::uint64_t> prefix_block_hashes(const std::vector<std::int64_t>& token_ids,
                                               std::int64_t block_tokens) {
  std::vector<std::uint64_t> hashes;
  append_block_hashes(hashes, token_ids, block_tokens);
  return hashes;
}

void append_block_hashes(std::vector<std::uint64_t>& hashes,
                         const std::vector<std::int64_t>& token_ids, std::int64_t block_tokens) {
  if (block_tokens < 1) return;
  const std::size_t block = static_cast<std::size_t>(block_tokens);
  const std::size_t full = token_ids.size() / block;
  hashes.reserve(hashes.size() + full);
  // The chain's root ("llmcap"), or the last block already hashed.
  std::uint64_t parent = hashes.empty() ? 0x6c6c6d636170ULL : hashes.back();
  for (std::size_t b = 0; b < full; ++b) {
    std::uint64_t h = mix(parent);
    for (std::size_t i = b * block; i < (b + 1) * block; ++i)
      h = mix(h ^ static_cast<std::uint64_t>(token_ids[i]));
    hashes.push_back(h);
    parent = h;
  }
}

KvBlockPool::KvBlockPool(std::int64_t total_blocks)
    : total_(total_blocks > 0 ? total_blocks : 0), free_(total_) {}

std::int64_t KvBlockPool::match(const std::vector<std::uint64_t>& hashes,
                                std::int64_t max_blocks) const {
  std::int64_t n = 0;
  for (std::uint64_t h : hashes) {
    if (n >= max_blocks || !cache_.count(h)) break;
    ++n;
  }
  return n;
}

std::int64_t KvBlockPool::evictable_among(const std::vector<std::uint64_t>& hashes,
                                          std::int64_t n) const {
  std::int64_t evictable = 0;
  for (std::int64_t i = 0; i < n; ++i)
    if (cache_.at(hashes[static_cast<std::size_t>(i)]).refs == 0) ++evictable;
  return evictable;
}

void KvBlockPool::acquire(const std::vector<std::uint64_t>& hashes, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    Entry& e = cache_.at(hashes[static_cast<std::size_t>(i)]);
    if (e.refs++ == 0) lru_.erase(e.lru);
  }
}

bool KvBlockPool::allocate(std::int64_t n) {
  if (n <= 0) return true;
  if (n > available()) return false;
  while (free_ < n) {
    cache_.erase(lru_.front());
    lru_.pop_front();
    ++free_;
    ++evictions_total_;
  }
  free_ -= n;
  return true;
}

bool KvBlockPool::publish(std::uint64_t hash) {
  auto [it, inserted] = cache_.try_emplace(hash);
  if (!inserted) return false;
  it->second.refs = 1;
  return true;
}

void KvBlockPool::release(const std::vector<std::uint64_t>& held, std::int64_t private_blocks) {
  for (auto h = held.rbegin(); h != held.rend(); ++h) {
    Entry& e = cache_.at(*h);
    if (--e.refs == 0) e.lru = lru_.insert(lru_.end(), *h);
  }
  free_ += private_blocks;
}

}  // namespace llmcap::sim
