#include "daemon/server/log_ring.h"

namespace mcpd {

LogRing::LogRing(std::size_t max_lines, std::size_t max_bytes)
    : max_lines_(max_lines), max_bytes_(max_bytes) {}

void LogRing::append(std::string_view line) {
    lines_.emplace_back(line);
    bytes_ += line.size();
    while (!lines_.empty() && (lines_.size() > max_lines_ || bytes_ > max_bytes_)) {
        bytes_ -= lines_.front().size();
        lines_.pop_front();
    }
    // A follower may unfollow itself while being called: iterate over a snapshot of ids.
    std::vector<std::uint64_t> ids;
    ids.reserve(followers_.size());
    for (const auto& [id, f] : followers_) ids.push_back(id);
    for (std::uint64_t id : ids) {
        const auto it = followers_.find(id);
        if (it != followers_.end()) it->second(line);
    }
}

std::vector<std::string> LogRing::tail(std::size_t count) const {
    const std::size_t n = count < lines_.size() ? count : lines_.size();
    return {lines_.end() - static_cast<std::ptrdiff_t>(n), lines_.end()};
}

std::uint64_t LogRing::follow(Follower follower) {
    static std::uint64_t next_id = 1;
    const std::uint64_t id = next_id++;
    followers_[id] = std::move(follower);
    return id;
}

void LogRing::unfollow(std::uint64_t id) { followers_.erase(id); }

}  // namespace mcpd
