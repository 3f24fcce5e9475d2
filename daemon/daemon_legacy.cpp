// Daemon: legacy clients of a dual-era server.
//
// With era = "auto" a server that answers server/discover is run in the stateless era, and
// its process may not be turned to the initialize handshake (a dual-era server picks its era
// from the first contact, for the life of the process). A legacy client of it is served on a
// second process of the same entry, started with era = "legacy": every legacy rule (the
// handshake, setLevel, subscriptions, list_changed, requests from the server) then holds by
// construction, through the same router as any legacy server. The process exists only while
// legacy clients use it, and follows the server's admin stops and restarts.
#include "common/log.h"
#include "daemon/daemon.h"

namespace mcpd {

namespace {

// The key of a legacy process: shared by the server's legacy clients, or private to one
// session of a sharing = "exclusive" server.
std::string legacy_key(const ManagedServer& server, SessionId session) {
    if (server.config().sharing != config::Sharing::exclusive) return server.name();
    std::string key = server.name();
    key += '#';
    key += std::to_string(session);
    return key;
}

}  // namespace

config::ServerConfig Daemon::legacy_config(const config::ServerConfig& server) {
    config::ServerConfig legacy = server;
    legacy.era = config::Era::legacy;
    legacy.autostart = false;  // started when a legacy client asks
    return legacy;
}

bool Daemon::pass_to_legacy(ManagedServer& server, SessionId session, std::string_view line) {
    if (shutting_down_ || !sessions_.contains(session)) return false;
    ManagedServer* target = nullptr;
    if (const auto route = legacy_routes_.find(session); route != legacy_routes_.end()) {
        target = route->second;
    } else {
        // era = "modern" in the registry says there is no legacy side to start.
        if (server.config().era != config::Era::auto_detect) return false;
        target = &legacy_process_for(server, session);
        legacy_routes_[session] = target;
        target->router().attach(session);
        target->sessions_changed();
        // The modern process forgets the session on the next turn (this runs inside its
        // router); a private one has nobody left.
        loop_.defer([this, session, name = server.name()] {
            const auto own = exclusive_.find(session);
            ManagedServer* modern = own != exclusive_.end() ? own->second.get() : find(name);
            if (modern == nullptr || !modern->router().has_session(session)) return;
            modern->router().detach(session);
            modern->sessions_changed();
            if (own != exclusive_.end()) modern->supervisor().request_stop(StopReason::idle);
        });
        log::info(server.name(), "session " + std::to_string(session) +
                                     " is a legacy client: served by the legacy process");
    }
    std::string copy(line);
    target->router().on_session_line(session, copy);
    return true;
}

ManagedServer& Daemon::legacy_process_for(ManagedServer& server, SessionId session) {
    std::unique_ptr<ManagedServer>& slot = legacy_[legacy_key(server, session)];
    if (!slot) {
        slot = std::make_unique<ManagedServer>(*this, legacy_config(server.config()));
        log::info(server.name(), "the server runs the stateless era: starting a second process, "
                                 "initialized for its legacy clients");
    }
    return *slot;  // started by the router when the initialize waits for it
}

const ManagedServer* Daemon::legacy_process(const std::string& name) const {
    const auto it = legacy_.find(name);
    return it == legacy_.end() ? nullptr : it->second.get();
}

void Daemon::legacy_session_left(SessionId session) {
    auto route = legacy_routes_.extract(session);
    if (route.empty()) return;
    ManagedServer* process = route.mapped();
    process->router().detach(session);
    process->sessions_changed();
    if (process->router().session_count() > 0) return;
    for (auto it = legacy_.begin(); it != legacy_.end(); ++it) {
        if (it->second.get() != process) continue;
        std::unique_ptr<ManagedServer> owned = std::move(it->second);
        legacy_.erase(it);
        log::info(owned->name(), "the last legacy client left: stopping the legacy process");
        retire(std::move(owned), StopReason::idle);
        return;
    }
}

void Daemon::legacy_follows(ManagedServer& server, StopReason reason) {
    if (find(server.name()) != &server) return;  // an exclusive or legacy process itself
    if (reason != StopReason::stopped && reason != StopReason::restart) return;
    const std::string name = server.name();
    loop_.defer([this, name, reason] {
        for (auto& [key, process] : legacy_) {
            if (process->name() != name) continue;
            if (reason == StopReason::restart) {
                if (process->supervisor().wanted_up()) process->supervisor().request_restart();
            } else {
                process->supervisor().request_stop(StopReason::stopped);
            }
        }
    });
}

void Daemon::retire(std::unique_ptr<ManagedServer> server, StopReason reason) {
    ManagedServer* raw = server.get();
    retired_.push_back(std::move(server));
    raw->supervisor().request_stop(reason);
    if (raw->drained()) server_drained(*raw);
}

}  // namespace mcpd
