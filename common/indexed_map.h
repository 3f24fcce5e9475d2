// A std::map that is also found by hash: its entries in key order, for the walks that need an
// order (a broadcast to every session, a status listing, an upgrade's state), and each entry
// found in one hash lookup for the message in hand (lookup()). With hundreds of sessions a
// tree walk is a cache miss a level, twice a round trip (PERFORMANCE.md).
//
// Entries stay where they are (std::map's nodes never move), so the index points at them.
// Only the map's operations that keep the two in step are offered.
#pragma once

#include <cstddef>
#include <map>
#include <unordered_map>
#include <utility>

namespace mcpd {

template <typename Key, typename Value>
class IndexedMap {
public:
    using Map = std::map<Key, Value>;
    using iterator = typename Map::iterator;
    using const_iterator = typename Map::const_iterator;

    IndexedMap() = default;
    IndexedMap(const IndexedMap&) = delete;  // the index points into this map's own nodes
    IndexedMap& operator=(const IndexedMap&) = delete;

    // The entry of `key`, made (default) when there is none.
    Value& operator[](const Key& key) {
        const auto [it, added] = map_.try_emplace(key);
        if (added) index_.emplace(key, &it->second);
        return it->second;
    }
    // The entry of `key`, or null: by hash.
    Value* lookup(const Key& key) {
        const auto it = index_.find(key);
        return it == index_.end() ? nullptr : it->second;
    }
    const Value* lookup(const Key& key) const {
        const auto it = index_.find(key);
        return it == index_.end() ? nullptr : it->second;
    }
    Value& at(const Key& key) { return map_.at(key); }
    const Value& at(const Key& key) const { return map_.at(key); }
    bool contains(const Key& key) const { return index_.contains(key); }

    iterator find(const Key& key) { return map_.find(key); }
    const_iterator find(const Key& key) const { return map_.find(key); }
    iterator erase(iterator it) {
        index_.erase(it->first);
        return map_.erase(it);
    }
    std::size_t erase(const Key& key) {
        index_.erase(key);
        return map_.erase(key);
    }
    void clear() {
        index_.clear();
        map_.clear();
    }

    iterator begin() { return map_.begin(); }
    iterator end() { return map_.end(); }
    const_iterator begin() const { return map_.begin(); }
    const_iterator end() const { return map_.end(); }
    std::size_t size() const { return map_.size(); }
    bool empty() const { return map_.empty(); }

private:
    Map map_;
    std::unordered_map<Key, Value*> index_;
};

}  // namespace mcpd
