// The ids of the requests mcpd sends one child process: one counter per process, shared by
// mcpd's own requests (daemon/handshake) and the ones the router forwards for sessions
// (RouterEnvironment::child_next_id), so the child never sees an id twice.
#pragma once

#include <cstdint>

namespace mcpd {

class ChildIds {
public:
    ChildIds() = default;
    // Carrying on from an earlier counter of the same child (an upgrade in place).
    explicit ChildIds(std::uint64_t next) : next_(next) {}
    // Never reused for the life of the child.
    std::uint64_t next() { return next_++; }
    // The id next() will give.
    std::uint64_t peek() const { return next_; }

private:
    std::uint64_t next_ = 1;
};

}  // namespace mcpd
