// A session's request ids that mcpd keeps while their answers are due (its requests at the
// child, or waiting on another session's identical request), each with the child id it maps
// to, and the bytes kept for them. The bytes let the router bound what one session holds
// (Router::kMaxInFlightBytes): a session that pipelines requests a server never answers, or
// sends ids and tokens of megabytes, is refused more instead of growing mcpd without limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/flat_string_map.h"

namespace mcpd {

// The key of RequestIds::Hash: random, drawn once when the process starts.
extern const std::uint64_t kRequestIdHashKey;

class RequestIds {
public:
    // What an entry costs besides the texts it keeps: its map nodes and the router's Pending.
    static constexpr std::size_t kEntryBytes = 512;

    struct Entry {
        std::uint64_t child_id = 0;
        std::size_t bytes = 0;  // kEntryBytes, its raw id and the texts kept beside it
    };
    // Looked up by the id where it lies in the line (string_view), without a copy. Ids are
    // short (a counter's digits, a UUID at most): a word at a time, mixed with a key drawn
    // when mcpd starts, so that a client cannot choose ids that all fall in one bucket.
    struct Hash {
        std::size_t operator()(std::string_view id) const {
            // The length mixed in first: a tail's bits never stand in for it.
            std::uint64_t h = mix(kRequestIdHashKey ^ id.size());
            const char* p = id.data();
            std::size_t left = id.size();
            for (; left >= 8; p += 8, left -= 8) {
                std::uint64_t word = 0;
                std::memcpy(&word, p, 8);
                h = mix(h ^ word);
            }
            // The last bytes without a loop: two loads that overlap from four bytes up, and the
            // first, middle and last below (which for three bytes or fewer are all of them).
            // The length, mixed in above, tells apart tails that read the same.
            std::uint64_t tail = 0;
            if (left >= 4) {
                std::uint32_t first = 0;
                std::uint32_t last = 0;
                std::memcpy(&first, p, 4);
                std::memcpy(&last, p + left - 4, 4);
                tail = std::uint64_t{first} << 32 | last;
            } else if (left > 0) {
                tail = std::uint64_t{static_cast<unsigned char>(p[0])} << 16 |
                       std::uint64_t{static_cast<unsigned char>(p[left / 2])} << 8 |
                       static_cast<unsigned char>(p[left - 1]);
            }
            return mix(h ^ tail);
        }
        static std::uint64_t mix(std::uint64_t h) {
            h ^= h >> 32;
            h *= 0xd6e8feb86659fd93ULL;
            h ^= h >> 32;
            return h;
        }
    };
    // One flat array: an entry comes and goes with every request.
    using Map = FlatStringMap<Entry, Hash>;

    // What a new entry with this id and `texts` bytes kept beside it (a progress token, a
    // URI) would add to bytes().
    static std::size_t cost(std::size_t id_bytes, std::size_t texts) {
        return kEntryBytes + id_bytes + texts;
    }

    // Adds `raw_id` (or points it at another child id, keeping its cost).
    void set(std::string_view raw_id, std::uint64_t child_id, std::size_t texts = 0) {
        const auto [it, added] = ids_.try_emplace(raw_id);
        if (added) {
            it->second.bytes = cost(raw_id.size(), texts);
            bytes_ += it->second.bytes;
        }
        it->second.child_id = child_id;
    }
    void erase(Map::const_iterator it) {
        bytes_ -= it->second.bytes;
        ids_.erase(it);
    }
    void erase(std::string_view raw_id) {
        if (const auto it = ids_.find(raw_id); it != ids_.end()) erase(it);
    }

    // An entry carried across an upgrade in place, counted as it was (`bytes`).
    void restore(const std::string& raw_id, std::uint64_t child_id, std::size_t bytes) {
        erase(raw_id);
        ids_[raw_id] = Entry{child_id, bytes};
        bytes_ += bytes;
    }

    Map::const_iterator find(std::string_view raw_id) const { return ids_.find(raw_id); }
    bool contains(std::string_view raw_id) const {
        return !ids_.empty() && ids_.find(raw_id) != ids_.end();  // most are empty: no hashing
    }
    Map::const_iterator begin() const { return ids_.begin(); }
    Map::const_iterator end() const { return ids_.end(); }
    std::size_t size() const { return ids_.size(); }
    bool empty() const { return ids_.empty(); }
    std::size_t bytes() const { return bytes_; }

private:
    Map ids_;
    std::size_t bytes_ = 0;
};

}  // namespace mcpd
