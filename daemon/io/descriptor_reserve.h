// Descriptors held back for the moment mcpd's descriptor table is full.
//
// A full table makes accept() fail, and a connection that is never accepted waits in the
// listen backlog until its client gives up: root's or mcpd's own user's `mcpctl status` too.
// The reserve is a few descriptors open on /dev/null that can be given back at that moment,
// so that one more connection is accepted and mcpd can decide what to close for it.
#pragma once

#include <cstddef>
#include <vector>

#include "common/unique_fd.h"

namespace mcpd {

class DescriptorReserve {
public:
    // Takes `size` descriptors now (fewer when the table has no room for them all).
    explicit DescriptorReserve(std::size_t size);

    // Give every held descriptor back to the table. Returns how many there were.
    std::size_t release();
    // Take back what is missing, as far as the table has room. Returns whether it is full.
    bool refill();

    std::size_t held() const { return held_.size(); }
    std::size_t size() const { return size_; }
    bool full() const { return held_.size() == size_; }

private:
    std::size_t size_;
    std::vector<UniqueFd> held_;
};

}  // namespace mcpd
