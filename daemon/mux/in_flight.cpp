// InFlight: the records of a Router's requests at its child (in_flight.h).
#include "daemon/mux/in_flight.h"

#include <algorithm>
#include <iterator>

namespace mcpd {

std::optional<InFlight::Pending> InFlight::take(std::uint64_t child_id) {
    auto node = requests_.extract(child_id);
    if (node.empty()) return std::nullopt;
    return std::move(node.mapped());
}

std::string InFlight::route_progress(SessionId session, std::string_view original_token,
                                     std::uint64_t child_id) {
    std::string own = "\"mcpd-p" + std::to_string(next_token_++) + "\"";
    progress_[own] = ProgressRoute{session, std::string(original_token), child_id};
    return own;
}

const InFlight::ProgressRoute* InFlight::progress_route(std::string_view own_token) const {
    const auto it = progress_.find(std::string(own_token));
    return it == progress_.end() ? nullptr : &it->second;
}

void InFlight::drop_progress_of(SessionId session) {
    std::erase_if(progress_, [session](const auto& p) { return p.second.session == session; });
}

void InFlight::tombstone(std::uint64_t child_id) {
    tombstones_.insert(child_id);
    tombstone_order_.push_back(child_id);
    if (tombstone_order_.size() > kMaxTombstones) {
        tombstones_.erase(tombstone_order_.front());
        tombstone_order_.pop_front();
    }
}

std::optional<std::pair<std::string, std::string>> InFlight::take_names(std::uint64_t child_id) {
    if (names_.empty()) return std::nullopt;
    auto node = names_.extract(child_id);
    if (node.empty()) return std::nullopt;  // sent before the log was turned on
    return std::move(node.mapped());
}

void InFlight::child_gone() {
    requests_.clear();
    progress_.clear();
    tombstones_.clear();
    tombstone_order_.clear();
    names_.clear();
}

void InFlight::restore(const std::vector<std::uint64_t>& tombstones,
                       const std::map<std::string, ProgressRoute>& progress,
                       std::uint64_t next_token) {
    for (const std::uint64_t child_id : tombstones) tombstone(child_id);
    for (const auto& [own, route] : progress) progress_[own] = route;
    next_token_ = std::max(next_token_, next_token);
}

}  // namespace mcpd
