// A hash map from short strings (request ids where they lie in a line) to small values, in one
// flat array: open addressing with linear probing, deletion by shifting the entries after the
// erased one back, no node per entry. A request's id comes and goes with every request, so the
// map is written twice a round trip: std::unordered_map allocated (or recycled) a node, built
// a std::string key in it and linked it into a bucket list each time.
//
// Differences from std::unordered_map that its users rely on not needing: an insertion or an
// erasure moves entries, so iterators and references are valid only until the next change;
// iteration order is the array's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace mcpd {

// A map's key: up to kInline bytes kept in place (a counter's digits, a short quoted string),
// a longer one (a UUID) on the heap. Assigning a short key is one copy, with none of
// std::string's checks, and the key takes 32 bytes, so that a slot of a table of ids is 64.
class ShortKey {
public:
    static constexpr std::size_t kInline = 20;

    ShortKey() = default;
    ShortKey(const ShortKey& other) { assign(other.view()); }
    ShortKey& operator=(const ShortKey& other) {
        if (this != &other) assign(other.view());
        return *this;
    }
    ShortKey(ShortKey&& other) noexcept { take(other); }
    ShortKey& operator=(ShortKey&& other) noexcept {
        if (this != &other) take(other);
        return *this;
    }
    ~ShortKey() = default;

    void assign(std::string_view text) {
        if (text.size() <= kInline) {
            long_.reset();
            std::memcpy(inline_, text.data(), text.size());
        } else {
            auto copy = std::make_unique_for_overwrite<char[]>(text.size());
            std::memcpy(copy.get(), text.data(), text.size());
            long_ = std::move(copy);
        }
        size_ = static_cast<std::uint32_t>(text.size());
    }
    void clear() {
        long_.reset();
        size_ = 0;
    }
    std::string_view view() const {
        return std::string_view(long_ != nullptr ? long_.get() : inline_, size_);
    }
    operator std::string_view() const { return view(); }  // NOLINT: a key reads as its text
    bool operator==(std::string_view text) const { return view() == text; }

private:
    void take(ShortKey& other) {
        long_ = std::move(other.long_);
        size_ = std::exchange(other.size_, 0);
        std::memcpy(inline_, other.inline_, kInline);
    }

    std::unique_ptr<char[]> long_;  // when longer than kInline
    std::uint32_t size_ = 0;
    char inline_[kInline] = {};
};

template <typename Value, typename Hash>
class FlatStringMap {
public:
    using value_type = std::pair<ShortKey, Value>;

private:
    struct Slot {
        value_type entry;
        std::size_t hash = 0;
        bool used = false;
    };

    template <typename SlotT, typename EntryT>
    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = std::remove_const_t<EntryT>;
        using difference_type = std::ptrdiff_t;
        using pointer = EntryT*;
        using reference = EntryT&;

        Iterator(SlotT* at, SlotT* end) : at_(at), end_(end) { skip(); }
        // A mutable iterator converts to a constant one.
        template <typename OtherSlot, typename OtherEntry>
            requires(std::is_const_v<SlotT> && !std::is_const_v<OtherSlot>)
        Iterator(const Iterator<OtherSlot, OtherEntry>& other)  // NOLINT: as the standard's
            : at_(other.at_), end_(other.end_) {}

        EntryT& operator*() const { return at_->entry; }
        EntryT* operator->() const { return &at_->entry; }
        Iterator& operator++() {
            ++at_;
            skip();
            return *this;
        }
        Iterator operator++(int) {
            Iterator before = *this;
            ++*this;
            return before;
        }
        bool operator==(const Iterator& other) const { return at_ == other.at_; }

    private:
        friend class FlatStringMap;
        template <typename, typename>
        friend class Iterator;
        void skip() {
            while (at_ != end_ && !at_->used) ++at_;
        }
        SlotT* at_;
        SlotT* end_;
    };

public:
    using iterator = Iterator<Slot, value_type>;
    using const_iterator = Iterator<const Slot, const value_type>;

    iterator begin() { return {slots_.data(), slots_.data() + slots_.size()}; }
    iterator end() { return {slots_.data() + slots_.size(), slots_.data() + slots_.size()}; }
    const_iterator begin() const { return {slots_.data(), slots_.data() + slots_.size()}; }
    const_iterator end() const {
        return {slots_.data() + slots_.size(), slots_.data() + slots_.size()};
    }

    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    void clear() {
        slots_.clear();
        size_ = 0;
    }

    iterator find(std::string_view key) { return at(locate(key)); }
    const_iterator find(std::string_view key) const { return at(locate(key)); }
    bool contains(std::string_view key) const { return size_ != 0 && locate(key) != kNone; }

    // The entry of `key`, made with a default value when there is none; `second` says whether
    // it was made.
    std::pair<iterator, bool> try_emplace(std::string_view key) {
        const std::size_t hash = hash_(key);
        if (size_ != 0) {
            if (const std::size_t i = locate(key, hash); i != kNone) return {at(i), false};
        }
        if ((size_ + 1) * 4 > slots_.size() * 3) grow();
        const std::size_t mask = slots_.size() - 1;
        std::size_t i = hash & mask;
        while (slots_[i].used) i = (i + 1) & mask;
        Slot& slot = slots_[i];
        slot.entry.first.assign(key);
        slot.entry.second = Value{};
        slot.hash = hash;
        slot.used = true;
        ++size_;
        return {at(i), true};
    }
    std::pair<iterator, bool> emplace(std::string_view key, Value value) {
        auto result = try_emplace(key);
        if (result.second) result.first->second = std::move(value);
        return result;
    }
    Value& operator[](std::string_view key) { return try_emplace(key).first->second; }

    std::size_t erase(std::string_view key) {
        const std::size_t i = size_ != 0 ? locate(key) : kNone;
        if (i == kNone) return 0;
        erase_at(i);
        return 1;
    }
    void erase(const_iterator it) { erase_at(static_cast<std::size_t>(it.at_ - slots_.data())); }

private:
    static constexpr std::size_t kNone = ~std::size_t{0};
    static constexpr std::size_t kFirstSlots = 2;

    // The iterator at slot `i`, or end() for kNone.
    iterator at(std::size_t i) {
        return i == kNone ? end() : iterator(&slots_[i], slots_.data() + slots_.size());
    }
    const_iterator at(std::size_t i) const {
        return i == kNone ? end() : const_iterator(&slots_[i], slots_.data() + slots_.size());
    }

    std::size_t locate(std::string_view key) const { return locate(key, hash_(key)); }
    std::size_t locate(std::string_view key, std::size_t hash) const {
        if (slots_.empty()) return kNone;
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
            const Slot& slot = slots_[i];
            if (!slot.used) return kNone;
            if (slot.hash == hash && slot.entry.first == key) return i;
        }
    }

    // The load stays at most three quarters, so a probe always ends at an unused slot.
    void grow() {
        std::vector<Slot> old = std::move(slots_);
        slots_ = std::vector<Slot>(old.empty() ? kFirstSlots : old.size() * 2);
        const std::size_t mask = slots_.size() - 1;
        for (Slot& slot : old) {
            if (!slot.used) continue;
            std::size_t i = slot.hash & mask;
            while (slots_[i].used) i = (i + 1) & mask;
            slots_[i] = std::move(slot);
        }
    }

    // Empties slot `i`, then moves back each entry after it that its probe would no longer
    // reach across the gap, so that no search stops early.
    void erase_at(std::size_t i) {
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
            const std::size_t home = slots_[j].hash & mask;
            // Entry j may fill the gap at i when i lies on its probe path, from home to j.
            if (((j - home) & mask) >= ((j - i) & mask)) {
                std::swap(slots_[i], slots_[j]);
                i = j;
            }
        }
        slots_[i].used = false;
        slots_[i].entry.first.clear();
        --size_;
    }

    std::vector<Slot> slots_;  // empty, or a power of two of them
    std::size_t size_ = 0;
    [[no_unique_address]] Hash hash_;
};

}  // namespace mcpd
