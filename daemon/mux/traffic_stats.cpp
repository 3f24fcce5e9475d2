#include "daemon/mux/traffic_stats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>

namespace mcpd {

namespace {

// Each bound is at least twice the one before, so the values of one bit width, [2^(w-1), 2^w),
// pass at most one bound: the first bucket such a value can be in, per width, and one
// comparison find its bucket at the same cost for any latency.
constexpr bool bounds_double() {
    const auto& b = LatencyHistogram::kBoundsUs;
    for (std::size_t i = 1; i < b.size(); ++i) {
        if (b[i] < 2 * b[i - 1]) return false;
    }
    return true;
}
static_assert(bounds_double());

constexpr std::array<std::uint8_t, 65> first_bucket_by_width() {
    std::array<std::uint8_t, 65> first{};
    for (std::size_t width = 1; width < first.size(); ++width) {
        const std::uint64_t smallest = std::uint64_t{1} << (width - 1);
        std::size_t i = 0;
        while (i < LatencyHistogram::kBoundsUs.size() && smallest > LatencyHistogram::kBoundsUs[i]) ++i;
        first[width] = static_cast<std::uint8_t>(i);
    }
    return first;
}
constexpr std::array<std::uint8_t, 65> kFirstBucketByWidth = first_bucket_by_width();

}  // namespace

std::size_t LatencyHistogram::bucket_of(std::uint64_t us) {
    const std::size_t i = kFirstBucketByWidth[static_cast<std::size_t>(std::bit_width(us))];
    return i < kBoundsUs.size() && us > kBoundsUs[i] ? i + 1 : i;
}

bool LatencyHistogram::restore(const std::vector<std::uint64_t>& buckets, std::uint64_t sum_us) {
    if (buckets.size() != kBuckets) return false;
    count_ = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
        buckets_[i] = buckets[i];
        count_ += buckets[i];
    }
    sum_us_ = sum_us;
    return true;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
    for (std::size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
    count_ += other.count_;
    sum_us_ += other.sum_us_;
}

std::uint64_t LatencyHistogram::percentile_us(double p) const {
    if (count_ == 0) return 0;
    // The rank of the p-th percentile, 1-based: the smallest bucket whose running count
    // reaches it holds it.
    const auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
        seen += buckets_[i];
        if (seen >= std::max<std::uint64_t>(rank, 1))
            return i < kBoundsUs.size() ? kBoundsUs[i] : kBoundsUs.back() * 2;
    }
    return kBoundsUs.back() * 2;
}

std::string_view to_string(Outcome outcome) {
    switch (outcome) {
        case Outcome::reply:
            return "reply";
        case Outcome::error:
            return "error";
        case Outcome::tool_error:
            return "tool_error";
        case Outcome::cancelled:
            return "cancelled";
        case Outcome::timeout:
            return "timeout";
        case Outcome::child_died:
            return "child_died";
        case Outcome::replayed:
            return "replayed";
    }
    return "reply";
}

void CallCounters::merge(const CallCounters& other) {
    requests += other.requests;
    replies += other.replies;
    errors += other.errors;
    tool_errors += other.tool_errors;
    cancelled += other.cancelled;
    timeouts += other.timeouts;
    child_died += other.child_died;
    replayed += other.replayed;
    in_flight += other.in_flight;
    bytes_in += other.bytes_in;
    bytes_out += other.bytes_out;
    latency.merge(other.latency);
}

std::uint64_t CallCounters::count(Outcome outcome) const {
    switch (outcome) {
        case Outcome::reply:
            return replies;
        case Outcome::error:
            return errors;
        case Outcome::tool_error:
            return tool_errors;
        case Outcome::cancelled:
            return cancelled;
        case Outcome::timeout:
            return timeouts;
        case Outcome::child_died:
            return child_died;
        case Outcome::replayed:
            return replayed;
    }
    return 0;
}

namespace {

void count_request(CallCounters& c, std::size_t bytes) {
    c.requests += 1;
    c.in_flight += 1;
    c.bytes_in += bytes;
}

// Each outcome's counter, in the order of Outcome: an answer is counted without a branch.
constexpr std::uint64_t CallCounters::* kOutcomeCounter[] = {
    &CallCounters::replies,   &CallCounters::errors,   &CallCounters::tool_errors,
    &CallCounters::cancelled, &CallCounters::timeouts, &CallCounters::child_died,
    &CallCounters::replayed};
static_assert(std::size(kOutcomeCounter) == static_cast<std::size_t>(Outcome::replayed) + 1);

void count_answer(CallCounters& c, Outcome outcome, std::size_t bytes, std::size_t bucket,
                  std::uint64_t us) {
    c.*kOutcomeCounter[static_cast<std::size_t>(outcome)] += 1;
    if (c.in_flight > 0) c.in_flight -= 1;
    c.bytes_out += bytes;
    c.latency.add_to(bucket, us);
}

}  // namespace

void RecentRate::add(TimePoint now) {
    const std::int64_t second =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    const auto slot = static_cast<std::size_t>(second % kSeconds);
    if (second_[slot] != second) {
        second_[slot] = second;
        count_[slot] = 0;
    }
    count_[slot] += 1;
}

double RecentRate::per_second(TimePoint now) const {
    const std::int64_t second =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < second_.size(); ++i) {
        const std::int64_t age = second - second_[i];
        if (count_[i] > 0 && age >= 0 && age < kSeconds) sum += count_[i];
    }
    return static_cast<double>(sum) / kSeconds;
}

CallCounters& TrafficStats::named(Names& names, std::string_view name) {
    if (const auto found = names.find(name); found != names.end()) return found->second;
    // A server cannot make the daemon keep any number of names either (a list that changes);
    // the unlisted entry is always there to be had.
    if (tools_.size() + methods_.size() >= kMaxNames && name != kUnlisted)
        return names[std::string(kOther)];
    return names[std::string(name)];
}

CallCounters& TrafficStats::named_cached(Names& names, std::string_view name, bool tool) {
    if (last_names_ == &names && last_name_ == name) return *last_counters_;
    // What a peer sends picks a name only among those the child listed (or MCP's methods):
    // anything else is one entry, so no client can fill the names or the metrics' series.
    std::string_view counted = kUnlisted;
    if (!tool) {
        counted = counted_method(name);
    } else if (const auto found = names.find(name); found != names.end()) {
        counted = name;
    } else if (listed_tools_.contains(name)) {
        counted = name;
    }
    CallCounters& counters = named(names, counted);
    // Only a name of bounded length is remembered: a long one would keep its bytes here.
    if (name.size() <= kMaxNameBytes) {
        last_names_ = &names;
        last_name_ = name;
        last_counters_ = &counters;
    }
    return counters;
}

void TrafficStats::tools_listed(std::span<const std::string> names, bool first_page) {
    if (first_page) listed_tools_.clear();
    for (const std::string& name : names) listed_tools_.add(name);
    last_names_ = nullptr;  // a name remembered as unlisted may be listed now
}

CallCounters* TrafficStats::request(CallCounters& session, std::string_view method,
                                    std::string_view tool, std::size_t bytes) {
    CallCounters& name =
        tool.empty() ? named_cached(methods_, method, false) : named_cached(tools_, tool, true);
    count_request(name, bytes);
    count_request(session, bytes);
    return &name;
}

void TrafficStats::answered(CallCounters* named, CallCounters* session, Outcome outcome,
                            std::size_t bytes, Clock::duration latency, TimePoint now) {
    const auto us = static_cast<std::uint64_t>(
        std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::microseconds>(latency).count()));
    const std::size_t bucket = LatencyHistogram::bucket_of(us);
    if (named != nullptr) count_answer(*named, outcome, bytes, bucket, us);
    if (session != nullptr) count_answer(*session, outcome, bytes, bucket, us);
    recent_.add(now);
}

void TrafficStats::absorb(const TrafficStats& other) {
    sessions_total_ += other.sessions_total_;
    for (const auto& [name, counters] : other.tools_) named(tools_, name).merge(counters);
    for (const auto& [name, counters] : other.methods_) named(methods_, name).merge(counters);
}

CallCounters TrafficStats::total() const {
    CallCounters sum;
    for (const auto& [name, counters] : tools_) sum.merge(counters);
    for (const auto& [name, counters] : methods_) sum.merge(counters);
    return sum;
}

std::optional<std::pair<bool, std::string>> TrafficStats::name_of(
    const CallCounters* counters) const {
    for (const auto& [name, c] : tools_)
        if (&c == counters) return std::make_pair(true, name);
    for (const auto& [name, c] : methods_)
        if (&c == counters) return std::make_pair(false, name);
    return std::nullopt;
}

CallCounters* TrafficStats::find_name(bool tool, std::string_view name) {
    Names& names = tool ? tools_ : methods_;
    const auto it = names.find(name);
    return it == names.end() ? nullptr : &it->second;
}

}  // namespace mcpd
