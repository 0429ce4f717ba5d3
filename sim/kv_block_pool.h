// KvBlockPool: the paged KV cache's blocks as vLLM V1's KVCacheManager keeps them with automatic
// prefix caching. A block is free (no content), private (held by one request, not shareable:
// a partial block, a duplicate, or any block when caching is off) or cached (a full prompt block
// registered under its chained hash; held by `refs` requests, or by none and then evictable).
// Evictable blocks sit in an LRU queue and still count as available: an allocation takes free
// blocks first, then evicts the least recently released cached ones (vLLM's free-block queue
// order). Requests free their blocks tail first, so a prompt's last blocks are evicted before
// its shared prefix. The pool counts blocks; it does not track which physical block is which.
//
// prefix_block_hashes(): one hash per full block of `block_tokens` token ids, each chaining the
// previous block's hash (vLLM's hash_block_tokens), so equal hashes mean equal whole prefixes.
//
// Pure; not thread-safe (one owner, the BatchEngine).
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace llmcap::sim {

std::vector<std::uint64_t> prefix_block_hashes(const std::vector<std::int64_t>& token_ids,
                                               std::int64_t block_tokens);
// Continues the chain: appends to `hashes` (the hashes of the full blocks before them) one hash
// per full block of `following_ids`, the token ids that come right after those blocks.
// prefix_block_hashes(ids) == append_block_hashes({}, ids). Ids of a trailing partial block are
// ignored.
void append_block_hashes(std::vector<std::uint64_t>& hashes,
                         const std::vector<std::int64_t>& following_ids, std::int64_t block_tokens);

class KvBlockPool {
 public:
  explicit KvBlockPool(std::int64_t total_blocks);

  std::int64_t total() const { return total_; }
  // Free plus evictable blocks: what an allocation may take.
  std::int64_t available() const { return free_ + static_cast<std::int64_t>(lru_.size()); }
  std::int64_t cached() const { return static_cast<std::int64_t>(cache_.size()); }
  std::int64_t evictions_total() const { return evictions_total_; }

  // The number of leading hashes (at most max_blocks) that are cached.
  std::int64_t match(const std::vector<std::uint64_t>& hashes, std::int64_t max_blocks) const;
  // Of the first n hashes (all cached), those no request holds (taking them uses availability).
  std::int64_t evictable_among(const std::vector<std::uint64_t>& hashes, std::int64_t n) const;
  // Takes a reference on each of the first n hashes (all cached).
  void acquire(const std::vector<std::uint64_t>& hashes, std::int64_t n);
  // Takes n fresh private blocks, evicting LRU cached blocks when the free ones run out.
  // Returns false (and takes nothing) when fewer than n are available.
  bool allocate(std::int64_t n);
  // Turns one of the caller's private blocks, now holding a full computed block, into the cached
  // block `hash` with one reference (the caller's). Returns false when `hash` is already cached
  // (the block stays private, as in vLLM a duplicate is not shared).
  bool publish(std::uint64_t hash);
  // Drops the caller's references (in reverse order, tail first into the LRU queue) and returns
  // `private_blocks` private blocks to the free list.
  void release(const std::vector<std::uint64_t>& held, std::int64_t private_blocks);

 private:
  struct Entry {
    std::int64_t refs = 0;
    std::list<std::uint64_t>::iterator lru;  // valid when refs == 0
  };
  std::int64_t total_;
  std::int64_t free_;
  std::unordered_map<std::uint64_t, Entry> cache_;
  std::list<std::uint64_t> lru_;  // evictable hashes, least recently released first
  std::int64_t evictions_total_ = 0;
};

}  // namespace llmcap::sim
