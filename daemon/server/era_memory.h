// What mcpd knows of a server's era (legacy initialize, or modern server/discover) across its
// processes: pinned by the registry, learnt from a process that became ready, or guessed from
// an exit on the probe. Kept until the registry entry changes, or until a start on a learnt
// verdict fails its handshake (then the next start probes again: the server may have been
// upgraded, or the exit was a crash after all). The Supervisor owns it.
#pragma once

#include <optional>

#include "config/registry.h"

namespace mcpd {

class EraMemory {
public:
    enum class Start { legacy, modern, probe };

    explicit EraMemory(config::Era pinned = config::Era::auto_detect) : pinned_(pinned) {}

    // How the next process starts its handshake.
    Start next_start() const;
    // A process became ready in this era.
    void ready(bool modern);
    // A process exited on the probe: a legacy server, at least for the next start.
    void exited_on_probe() { verdict_ = false; }
    // A process never finished its handshake (refused it, or said nothing in start_timeout).
    void start_failed() { verdict_.reset(); }
    // The registry entry changed: forget everything.
    void reset(config::Era pinned) {
        pinned_ = pinned;
        verdict_.reset();
    }

    std::optional<bool> modern() const { return verdict_; }
    // What an upgraded mcpd's predecessor had learned (docs/UPGRADE.md).
    void restore(std::optional<bool> verdict) { verdict_ = verdict; }

private:
    config::Era pinned_;
    std::optional<bool> verdict_;
};

}  // namespace mcpd
