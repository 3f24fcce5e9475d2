// The last lines a server wrote to stderr, bounded in lines and bytes, with live followers
// for `mcpctl logs -f`.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mcpd {

class LogRing {
public:
    using Follower = std::function<void(std::string_view line)>;

    LogRing(std::size_t max_lines, std::size_t max_bytes);

    void append(std::string_view line);
    // The last `count` lines, oldest first.
    std::vector<std::string> tail(std::size_t count) const;

    // Ids are unique across every ring, so a stale id never removes another ring's follower.
    std::uint64_t follow(Follower follower);
    void unfollow(std::uint64_t id);

    std::size_t lines() const { return lines_.size(); }
    std::size_t bytes() const { return bytes_; }

private:
    std::size_t max_lines_;
    std::size_t max_bytes_;
    std::deque<std::string> lines_;
    std::size_t bytes_ = 0;
    std::map<std::uint64_t, Follower> followers_;
};

}  // namespace mcpd
