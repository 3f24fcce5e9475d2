#include "common/log_limits.h"

#include <algorithm>

namespace mcpd::log {

namespace {

constexpr std::chrono::seconds kCountEvery{1};

}  // namespace

bool SourceRates::admit(std::string_view source, SteadyTime now) {
    auto it = buckets_.find(source);
    if (it == buckets_.end()) {
        Bucket fresh;
        fresh.tokens = burst_;
        fresh.refilled = now;
        it = buckets_.emplace(std::string(source), fresh).first;
    }
    Bucket& b = it->second;
    b.tokens = std::min(burst_, b.tokens + rate_ * std::chrono::duration<double>(now - b.refilled).count());
    b.refilled = now;
    if (b.tokens < 1) {
        ++b.held_back;
        return false;
    }
    b.tokens -= 1;
    return true;
}

std::vector<SourceRates::HeldBack> SourceRates::take_due(SteadyTime now) {
    std::vector<HeldBack> out;
    for (auto& [source, b] : buckets_) {
        if (b.held_back == 0 || now - b.said < kCountEvery) continue;
        out.push_back({source, b.held_back});
        b.held_back = 0;
        b.said = now;
    }
    return out;
}

std::optional<SteadyTime> SourceRates::next_due() const {
    std::optional<SteadyTime> next;
    for (const auto& [source, b] : buckets_) {
        if (b.held_back == 0) continue;
        const SteadyTime due = b.said + kCountEvery;
        if (!next || due < *next) next = due;
    }
    return next;
}

bool RepeatFolder::first(std::string_view source, std::string_view kind, SteadyTime now) {
    const auto key = std::make_pair(std::string(source), std::string(kind));
    auto it = entries_.find(key);
    if (it == entries_.end() || (it->second.count == 0 && now - it->second.opened >= window_)) {
        entries_[key] = Entry{now, 0};
        return true;
    }
    ++it->second.count;
    return false;
}

std::vector<RepeatFolder::Folded> RepeatFolder::take_due(SteadyTime now) {
    std::vector<Folded> out;
    for (auto it = entries_.begin(); it != entries_.end();) {
        Entry& e = it->second;
        if (now - e.opened < window_) {
            ++it;
        } else if (e.count > 0) {
            out.push_back({it->first.first, it->first.second, e.count});
            e = Entry{now, 0};
            ++it;
        } else {
            it = entries_.erase(it);  // quiet for a whole window: forgotten
        }
    }
    return out;
}

std::optional<SteadyTime> RepeatFolder::next_due() const {
    std::optional<SteadyTime> next;
    for (const auto& [key, e] : entries_) {
        if (e.count == 0) continue;
        const SteadyTime due = e.opened + window_;
        if (!next || due < *next) next = due;
    }
    return next;
}

}  // namespace mcpd::log
