// What a server's sessions ask of it, counted: per method (tools/call by tool name), per
// session and in all, requests, their outcomes, bytes and a latency histogram.
//
// Pure and cheap: the router calls request() when it forwards a request and answered() when
// the answer (or its failure) goes back, with sizes it already knows and one clock reading
// each. Memory is bounded: a tool is counted apart only once the child listed it, a method only
// when MCP has it (daemon/mux/peer_names.h), anything else under "unlisted"; and at most
// kMaxNames names apart per child (later ones count as "other").
// A session's counters are kept in the router's state of that session, so they go with it and
// cost no lookup here; the totals are the sum of the names, added up when asked.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "daemon/mux/peer_names.h"

namespace mcpd {

// Request latencies in fixed log-scale buckets, so that percentiles and a merge of several
// histograms (a server's children) are exact to a bucket.
class LatencyHistogram {
public:
    // Upper bounds of the buckets in microseconds; the last bucket has none (+Inf).
    static constexpr std::array<std::uint64_t, 19> kBoundsUs = {
        50,      100,     250,     500,      1000,     2500,     5000,     10000,    25000, 50000,
        100000,  250000,  500000,  1000000,  2500000,  5000000,  10000000, 30000000, 60000000};
    static constexpr std::size_t kBuckets = kBoundsUs.size() + 1;

    void add(std::uint64_t us) { add_to(bucket_of(us), us); }
    // The bucket `us` falls in, and adding it there: an answer counted in several histograms
    // (the server's, its name's, its session's) finds its bucket once.
    static std::size_t bucket_of(std::uint64_t us);
    void add_to(std::size_t bucket, std::uint64_t us) {
        buckets_[bucket] += 1;
        count_ += 1;
        sum_us_ += us;
    }
    void merge(const LatencyHistogram& other);
    // A histogram carried across an upgrade in place: its kBuckets counts and their sum. False
    // (and nothing changed) when `buckets` is not kBuckets long.
    bool restore(const std::vector<std::uint64_t>& buckets, std::uint64_t sum_us);
    std::uint64_t count() const { return count_; }
    std::uint64_t sum_us() const { return sum_us_; }
    const std::array<std::uint64_t, kBuckets>& buckets() const { return buckets_; }
    // The upper bound (µs) of the bucket holding the p-th percentile (0 < p <= 100); 0 when
    // empty; the last finite bound doubled for the +Inf bucket.
    std::uint64_t percentile_us(double p) const;

private:
    std::array<std::uint64_t, kBuckets> buckets_{};
    std::uint64_t count_ = 0;
    std::uint64_t sum_us_ = 0;
};

// How a request ended.
enum class Outcome {
    reply,       // a result
    error,       // a JSON-RPC error from the server
    tool_error,  // a tools/call result with isError: true
    cancelled,   // the client cancelled it, or left
    timeout,     // request_timeout ran out
    child_died,  // the server went away before answering
    replayed,    // the same, and it was sent to the next process (router_replay.cpp)
};
std::string_view to_string(Outcome outcome);

struct CallCounters {
    std::uint64_t requests = 0;
    std::uint64_t replies = 0;
    std::uint64_t errors = 0;
    std::uint64_t tool_errors = 0;
    std::uint64_t cancelled = 0;
    std::uint64_t timeouts = 0;
    std::uint64_t child_died = 0;
    std::uint64_t replayed = 0;
    std::uint64_t in_flight = 0;
    std::uint64_t bytes_in = 0;   // from sessions to the server
    std::uint64_t bytes_out = 0;  // from the server to sessions
    LatencyHistogram latency;

    void merge(const CallCounters& other);
    std::uint64_t count(Outcome outcome) const;
};

// Requests settled per second over the last kSeconds seconds, in one slot per second.
class RecentRate {
public:
    static constexpr int kSeconds = 10;
    void add(TimePoint now);
    double per_second(TimePoint now) const;

private:
    std::array<std::int64_t, kSeconds> second_{};  // which second each slot counts
    std::array<std::uint64_t, kSeconds> count_{};
};

class TrafficStats {
public:
    // Names counted apart per child (tools and methods together); past it, "other". Only a
    // child's own list can bring it there: names nobody listed are one "unlisted" entry.
    static constexpr std::size_t kMaxNames = 256;
    static constexpr std::string_view kOther = "other";
    using Names = std::map<std::string, CallCounters, std::less<>>;

    TrafficStats() = default;
    // The cache of the last name points into this object's own maps.
    TrafficStats(const TrafficStats&) = delete;
    TrafficStats& operator=(const TrafficStats&) = delete;

    // A request forwarded, by the session whose counters are `session`: `tool` is the tool
    // of a tools/call (empty otherwise: the method names it). A tool the child did not list
    // (listed_tools) and a method MCP does not have are counted as kUnlisted. Returns its
    // name's counters,
    // which live as long as this object: the caller keeps them with the request and hands
    // them to answered().
    CallCounters* request(CallCounters& session, std::string_view method, std::string_view tool,
                          std::size_t bytes);
    // It was settled `latency` after it was sent, at `now`. `session`: its session's
    // counters, null when the session has gone.
    void answered(CallCounters* named, CallCounters* session, Outcome outcome, std::size_t bytes,
                  Clock::duration latency, TimePoint now);
    // A session attached (counted in all, not kept).
    void attached() { sessions_total_ += 1; }
    std::uint64_t sessions_total() const { return sessions_total_; }
    // Add what `other` counted (a child that is gone) to these names.
    void absorb(const TrafficStats& other);

    // Every name's counters added up.
    CallCounters total() const;
    // tools/call by tool name, and every other method by its name.
    const Names& tools() const { return tools_; }
    const Names& methods() const { return methods_; }
    const RecentRate& recent() const { return recent_; }
    // The child listed these tools (a tools/list answer): a first page, asked without a
    // cursor, replaces what it listed before, a later page adds to it.
    void tools_listed(std::span<const std::string> names, bool first_page);
    const ListedNames& listed_tools() const { return listed_tools_; }

    // An upgrade in place (router_carry.cpp): where a request's counters are (a tool's or a
    // method's, and the name), and the same found again; a name's counters and the sessions'
    // total as they were.
    std::optional<std::pair<bool, std::string>> name_of(const CallCounters* counters) const;
    CallCounters* find_name(bool tool, std::string_view name);
    void restore_name(bool tool, const std::string& name, const CallCounters& counters) {
        (tool ? tools_ : methods_)[name] = counters;
        last_names_ = nullptr;
    }
    void restore_sessions_total(std::uint64_t total) { sessions_total_ = total; }

private:
    // The counters of `name`, made when it is new and there is room (else "other").
    CallCounters& named(Names& names, std::string_view name);
    CallCounters& named_cached(Names& names, std::string_view name, bool tool);

    Names tools_;
    Names methods_;
    RecentRate recent_;
    std::uint64_t sessions_total_ = 0;
    ListedNames listed_tools_;
    // The last name looked up: calls come in runs of the same tool, and this spares the map.
    const Names* last_names_ = nullptr;
    std::string last_name_;
    CallCounters* last_counters_ = nullptr;
};

}  // namespace mcpd
