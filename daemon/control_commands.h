// What each control request does: one handler per command of common/control_protocol.h,
// which reads the request's fields and builds the replies.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/control_protocol.h"
#include "common/result.h"
#include "config/registry.h"
#include "daemon/control/control_connection.h"
#include "daemon/group_session.h"
#include "daemon/io/buffer_event.h"
#include "daemon/mux/project.h"
#include "daemon/mux/session_sink.h"

namespace mcpd {

class Daemon;
class ManagedServer;

class ControlCommands final : public RequestHandler {
public:
    explicit ControlCommands(Daemon& daemon) : daemon_(daemon) {}

    void handle_request(ControlConnection& connection, const nlohmann::json& request) override;
    // After a reload: end the `logs -f` of every peer no longer allowed to use the server it
    // follows.
    void revoke_followers();
    // An upgrade in place: the `logs -f` connections and the server each follows; and, in the
    // new process, a carried one following again (nothing of the log is sent twice).
    std::vector<std::pair<ControlConnection*, std::string>> followers() const;
    void follow_carried(ControlConnection& c, ManagedServer& server);

private:
    void dispatch(ControlConnection& c, control::Command command, const nlohmann::json& request);

    void version(ControlConnection& c);
    void status(ControlConnection& c, const nlohmann::json& request);
    // start, stop and restart.
    void act(ControlConnection& c, const nlohmann::json& request, control::Command command);
    void reload(ControlConnection& c, const nlohmann::json& request);
    void logs(ControlConnection& c, const nlohmann::json& request);
    void shutdown(ControlConnection& c);
    // upgrade: replace mcpd in place (the owner and root only; docs/UPGRADE.md).
    void upgrade(ControlConnection& c, const nlohmann::json& request);
    void attach(ControlConnection& c, const nlohmann::json& request);
    // attach with pass_fds, once the client's descriptors arrived.
    void attach_fds(ControlConnection& link, const std::string& server_name, std::uint64_t session,
                    const PeerCredentials& peer, const std::optional<Project>& project,
                    std::vector<UniqueFd> fds);
    // What the descriptors `mcpctl connect` passed become: false (and the link told why) when
    // they are not pipes or sockets.
    bool passed_ends(ControlConnection& link, std::vector<UniqueFd>& fds, BufferEvent& input,
                     BufferEvent& output);
    // Whether `server` takes one more session (Placement::admit); its project for a
    // sharing = "project" or "user" server. False when an error has been replied.
    bool admit(ControlConnection& c, ManagedServer& server, const std::string& cwd,
               std::optional<Project>& project);
    // Group sessions (control_commands_group.cpp, over group_attach): a [groups.NAME],
    // `connect a b c`, or a server with filters served alone.
    void attach_group(ControlConnection& c, const control::AttachRequest& request, GroupSpec spec);
    void sessions(ControlConnection& c, const nlohmann::json& request);
    // The traffic figures of docs/STATS.md.
    void stats(ControlConnection& c, const nlohmann::json& request);
    // control_commands_cache.cpp
    void clear_cache(ControlConnection& c, const nlohmann::json& request);
    // http_token: the asker's own token for the HTTP front door's TCP addresses.
    void http_token(ControlConnection& c, const nlohmann::json& request);

    // The servers named, checked to exist and to be allowed for the peer; the failure is the
    // sentence of a not_found reply. A restricted peer gets the same answer for a server it
    // may not use as for one that does not exist.
    Result<std::vector<ManagedServer*>> resolve(const ControlConnection& c,
                                                const std::vector<std::string>& names);
    // For root and mcpd's own user: the registry's path and every server's name.
    std::string unknown_servers_message(const std::vector<std::string>& names);
    // For anyone else: only the servers it may use.
    std::string hidden_servers_message(const ControlConnection& c,
                                       const std::vector<std::string>& names);
    // The daemon's Authority, asked about the peer of `c`.
    bool trusted(const ControlConnection& c) const;
    bool allowed(const ControlConnection& c, const ManagedServer& server) const;
    // Whether the peer is trusted; if not, a denied error has been sent.
    bool privileged(ControlConnection& c);
    nlohmann::json statuses(const std::vector<std::string>& names);
    // The "daemon" object of a status reply: all of it for a trusted peer; for anyone else
    // counts of the servers it may use and no paths.
    nlohmann::json daemon_json(const ControlConnection& c);

    Daemon& daemon_;
    // The live `logs -f`, by the id their server's ring gave them.
    struct Follower {
        ControlConnection* connection = nullptr;
        std::string server;
    };
    std::map<std::uint64_t, Follower> followers_;
};

}  // namespace mcpd
