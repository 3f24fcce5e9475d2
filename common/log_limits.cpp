#include "common/log_limits.h"

#include <algorithm>

namespace mcpd::log {

namespace {

constexpr std::chrono::seconds kCountEvery{1};

void lower_to(std::optional<TimePoint>& earliest, TimePoint due) {
    if (!earliest || due < *earliest) earliest = due;
}

}  // namespace

bool SourceRates::admit(std::string_view source, TimePoint now) {
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
        if (b.held_back++ == 0) lower_to(earliest_, b.said + kCountEvery);
        return false;
    }
    b.tokens -= 1;
    return true;
}

std::vector<SourceRates::HeldBack> SourceRates::take_due(TimePoint now) {
    std::vector<HeldBack> out;
    if (!earliest_ || now < *earliest_) return out;
    for (auto& [source, b] : buckets_) {
        if (b.held_back == 0 || now - b.said < kCountEvery) continue;
        out.push_back({source, b.held_back});
        b.held_back = 0;
        b.said = now;
    }
    earliest_.reset();
    for (const auto& [source, b] : buckets_) {
        if (b.held_back > 0) lower_to(earliest_, b.said + kCountEvery);
    }
    return out;
}

std::optional<TimePoint> SourceRates::next_due() const { return earliest_; }

bool RepeatFolder::first(std::string_view source, std::string_view kind, TimePoint now) {
    const auto key = std::make_pair(std::string(source), std::string(kind));
    auto it = entries_.find(key);
    if (it == entries_.end() || (it->second.count == 0 && now - it->second.opened >= window_)) {
        entries_[key] = Entry{now, 0};
        lower_to(earliest_, now + window_);  // to be forgotten if nothing follows
        return true;
    }
    if (it->second.count++ == 0) lower_to(earliest_, it->second.opened + window_);
    return false;
}

std::vector<RepeatFolder::Folded> RepeatFolder::take_due(TimePoint now) {
    std::vector<Folded> out;
    if (!earliest_ || now < *earliest_) return out;
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
    earliest_.reset();
    for (const auto& [key, e] : entries_) lower_to(earliest_, e.opened + window_);
    return out;
}

std::optional<TimePoint> RepeatFolder::next_due() const {
    std::optional<TimePoint> next;
    for (const auto& [key, e] : entries_) {
        if (e.count == 0) continue;
        const TimePoint due = e.opened + window_;
        if (!next || due < *next) next = due;
    }
    return next;
}

}  // namespace mcpd::log
