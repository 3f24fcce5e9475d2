// When a server's stdin is backed up, its sessions stop being read (session.h): what waits
// for the child stays bounded, and a fast client cannot make mcpd buffer without end. This is
// the decision, with hysteresis; the Supervisor owns it and its environment acts on it.
#pragma once

#include <cstddef>

namespace mcpd {

class StdinBacklog {
public:
    // Sessions stop being read while more than kHighWater bytes wait for the server's stdin,
    // and resume once it has drained to kLowWater: the pipe itself holds only 64 KiB.
    static constexpr std::size_t kHighWater = 1024 * 1024;
    static constexpr std::size_t kLowWater = 64 * 1024;

    enum class Change { none, pause, resume };

    // `queued` bytes now wait for the child's stdin (after a write, or a drain).
    Change queued(std::size_t queued) {
        if (!paused_ && queued > kHighWater) {
            paused_ = true;
            return Change::pause;
        }
        if (paused_ && queued <= kLowWater) {
            paused_ = false;
            return Change::resume;
        }
        return Change::none;
    }

    // The process is gone, and what waited for it with it.
    Change gone() { return queued(0); }

    bool paused() const { return paused_; }

private:
    bool paused_ = false;
};

}  // namespace mcpd
