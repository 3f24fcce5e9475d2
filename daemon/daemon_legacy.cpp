// Daemon: legacy clients of a dual-era server.
//
// With era = "auto" a server that answers server/discover is run in the stateless era, and
// its process may not be turned to the initialize handshake (a dual-era server picks its era
// from the first contact, for the life of the process). A legacy client of it is served on a
// second process of the same entry, started with era = "legacy": every legacy rule (the
// handshake, setLevel, subscriptions, list_changed, requests from the server) then holds by
// construction, through the same router as any legacy server. The process exists only while
// legacy clients use it, and follows the server's admin stops and restarts. The processes
// themselves are kept in the ServerPool (its legacy instances) and sessions' routes to them by
// Placement.
#include "common/log.h"
#include "daemon/daemon.h"

namespace mcpd {

bool Daemon::pass_to_legacy(ManagedServer& server, SessionId session, std::string_view line) {
    if (shutting_down_ || !sessions_.contains(session)) return false;
    ManagedServer* target = placement_.on_legacy(session)
                                ? placement_.server_of(session, server.name())
                                : nullptr;
    if (target == nullptr) {
        // era = "modern" in the registry says there is no legacy side to start.
        if (server.config().era != config::Era::auto_detect) return false;
        const InstanceKey* from = placement_.route_of(session);
        const bool own = from != nullptr && from->kind == InstanceKind::exclusive;
        target = &placement_.route_to_legacy(server, session);
        target->router().attach(session);
        target->sessions_changed();
        // The modern process forgets the session on the next turn (this runs inside its
        // router); a private one has nobody left.
        loop_.defer([this, session, own, name = server.name()] {
            ManagedServer* modern =
                own ? pool_.find(InstanceKey::exclusive_of(name, session)) : pool_.find(name);
            if (modern == nullptr || !modern->router().has_session(session)) return;
            modern->router().detach(session);
            modern->sessions_changed();
            if (own) modern->supervisor().request_stop(StopReason::idle);
        });
        log::info(server.name(), "session " + std::to_string(session) +
                                     " is a legacy client: served by the legacy process");
    }
    std::string copy(line);
    target->router().on_session_line(session, copy);
    return true;
}

void Daemon::legacy_follows(ManagedServer& server, StopReason reason) {
    if (pool_.find(server.name()) != &server) return;  // an exclusive or legacy process itself
    if (reason != StopReason::stopped && reason != StopReason::restart) return;
    const std::string name = server.name();
    loop_.defer([this, name, reason] {
        for (ManagedServer* process : pool_.instances_of(name, InstanceKind::legacy)) {
            if (reason == StopReason::restart) {
                if (process->supervisor().wanted_up()) process->supervisor().request_restart();
            } else {
                process->supervisor().request_stop(StopReason::stopped);
            }
        }
    });
}

}  // namespace mcpd
