// A group session in the daemon: the GroupRouter of one client session, wired to the client's
// transport (through the SessionTable) and to a member session on each server's router.
//
// A member session is an ordinary session of its server's Router (with the server's sharing
// mode: shared, serialized, exclusive or project), with an id of its own but no transport:
// what the router writes to it comes to this group (SessionTable routes it here), and what
// the group sends it is handed to the router as that session's line.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/registry.h"
#include "daemon/mux/group_router.h"
#include "daemon/mux/session_sink.h"

namespace mcpd {

class Router;

class Placement;

class GroupSession final : public GroupEnvironment {
public:
    struct Member {
        SessionId id = 0;
        std::string server;
    };

    // Writes the pieces of one line, in order, to the client's session.
    using ClientWriter = std::function<void(std::span<const std::string_view>)>;
    GroupSession(SessionId client, GroupSpec spec, std::vector<Member> members, Placement& placement,
                 ClientWriter to_client);

    SessionId client() const { return client_; }
    GroupRouter& router() { return router_; }
    const GroupRouter& router() const { return router_; }
    const std::vector<Member>& members() const { return members_; }
    // After a reload: the filters of `registry` (the servers', and a registry group's own and
    // its members') apply from now on. A server or group entry that is gone keeps its last.
    void refilter(const config::Registry& registry);

    // GroupEnvironment
    void to_client(std::string_view line) override;
    void to_client_pieces(std::span<const std::string_view> pieces) override;
    void to_member(std::size_t member, std::string_view line) override;
    void to_member_scanned(std::size_t member, std::string_view line,
                           const wire::Envelope& envelope) override;
    void note(std::string_view message) override;

private:
    // The router of `member`'s server and its session there, or null when it has none now.
    Router* member_router(std::size_t member, SessionId& session);

    SessionId client_;
    std::vector<Member> members_;
    Placement& placement_;
    ClientWriter send_client_;
    GroupRouter router_;  // last: it may write through the members as soon as it exists
};

// A random number for a session's cursors, so that one session's cursor means nothing to
// another's.
std::uint64_t cursor_nonce();

}  // namespace mcpd
