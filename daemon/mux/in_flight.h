// The requests a Router has at its child, in one table: a record per child id, the progress
// tokens mcpd gave them, the ids it cancelled lately (whose late answers are dropped) and the
// names the request log needs. What is done with a request (answered, failed, replayed after a
// crash by replay_policy.h) is the Router's; this is where the records live, so that a child's
// end, an upgrade's snapshot and the status all read one place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/recycling_allocator.h"
#include "daemon/mux/router_records.h"

namespace mcpd {

class InFlight {
public:
    using Pending = routing::Pending;
    using ProgressRoute = routing::ProgressRoute;
    // Its nodes recycled: one comes and goes with every request.
    using Map = std::unordered_map<std::uint64_t, Pending, std::hash<std::uint64_t>,
                                   std::equal_to<std::uint64_t>,
                                   RecyclingAllocator<std::pair<const std::uint64_t, Pending>>>;
    // Cancelled ids remembered, so that an answer arriving after the cancel is dropped quietly.
    static constexpr std::size_t kMaxTombstones = 4096;

    // The request sent to the child as `child_id`.
    Pending& add(std::uint64_t child_id, Pending p) { return requests_[child_id] = std::move(p); }
    // A new, empty record for `child_id`, to be filled where it lies.
    Pending& emplace(std::uint64_t child_id) {
        const auto [it, added] = requests_.try_emplace(child_id);
        if (!added) it->second = Pending{};  // (child ids are never reused)
        return it->second;
    }
    Pending* find(std::uint64_t child_id) {
        const auto it = requests_.find(child_id);
        return it == requests_.end() ? nullptr : &it->second;
    }
    const Pending* find(std::uint64_t child_id) const {
        const auto it = requests_.find(child_id);
        return it == requests_.end() ? nullptr : &it->second;
    }
    Pending& at(std::uint64_t child_id) { return requests_.at(child_id); }
    bool contains(std::uint64_t child_id) const { return requests_.contains(child_id); }
    // The request leaves the table (answered, cancelled, failed); nothing when it is not here.
    // Its progress route stays: a task's progress outlives the request that created it.
    std::optional<Pending> take(std::uint64_t child_id);
    // The same without moving the record: it lives in the node until the node goes.
    Map::node_type extract(std::uint64_t child_id) { return requests_.extract(child_id); }
    bool empty() const { return requests_.empty(); }
    std::size_t size() const { return requests_.size(); }
    Map::iterator begin() { return requests_.begin(); }
    Map::iterator end() { return requests_.end(); }
    Map::const_iterator begin() const { return requests_.begin(); }
    Map::const_iterator end() const { return requests_.end(); }

    // Progress: the token mcpd gives the child for a session's `original_token` on request
    // `child_id` (a string no session could have chosen, "mcpd-pN").
    std::string route_progress(SessionId session, std::string_view original_token,
                               std::uint64_t child_id);
    const ProgressRoute* progress_route(std::string_view own_token) const;
    void drop_progress(const std::string& own_token) { progress_.erase(own_token); }
    void drop_progress_of(SessionId session);

    // A request cancelled at the child: its answer, if one still comes, is dropped.
    void tombstone(std::uint64_t child_id);
    bool tombstoned(std::uint64_t child_id) const { return tombstones_.contains(child_id); }

    // The request log's names of a request (kept apart so that Pending stays small while the
    // log is off); taken once, when it settles.
    void log_names(std::uint64_t child_id, std::string method, std::string tool) {
        names_[child_id] = {std::move(method), std::move(tool)};
    }
    std::optional<std::pair<std::string, std::string>> take_names(std::uint64_t child_id);
    const std::pair<std::string, std::string>* names_of(std::uint64_t child_id) const {
        const auto it = names_.find(child_id);
        return it == names_.end() ? nullptr : &it->second;
    }

    // The child is gone: nothing of it is due any more (the caller has settled each request).
    void child_gone();

    // An upgrade in place (router_carry.cpp): the tombstones oldest first, the progress routes
    // and the next token; and the same taken back by the new process's table.
    const std::deque<std::uint64_t>& tombstones() const { return tombstone_order_; }
    const std::unordered_map<std::string, ProgressRoute>& progress_routes() const {
        return progress_;
    }
    std::uint64_t next_token() const { return next_token_; }
    void restore(const std::vector<std::uint64_t>& tombstones,
                 const std::map<std::string, ProgressRoute>& progress, std::uint64_t next_token);

private:
    Map requests_;
    std::unordered_map<std::string, ProgressRoute> progress_;  // own raw token → owner
    std::uint64_t next_token_ = 1;
    std::deque<std::uint64_t> tombstone_order_;
    std::unordered_set<std::uint64_t> tombstones_;
    std::unordered_map<std::uint64_t, std::pair<std::string, std::string>> names_;
};

}  // namespace mcpd
