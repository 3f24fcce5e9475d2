// What each control request does: one handler per command of common/control_protocol.h,
// which reads the request's fields and builds the replies.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/control_protocol.h"
#include "common/result.h"
#include "daemon/control/control_connection.h"
#include "daemon/mux/project.h"
#include "daemon/mux/session_sink.h"

namespace mcpd {

class Daemon;
class ManagedServer;

class ControlCommands final : public RequestHandler {
public:
    explicit ControlCommands(Daemon& daemon) : daemon_(daemon) {}

    void handle_request(ControlConnection& connection, const nlohmann::json& request) override;

private:
    void dispatch(ControlConnection& c, control::Command command, const nlohmann::json& request);

    void version(ControlConnection& c);
    void status(ControlConnection& c, const nlohmann::json& request);
    // start, stop and restart.
    void act(ControlConnection& c, const nlohmann::json& request, control::Command command);
    void reload(ControlConnection& c, const nlohmann::json& request);
    void logs(ControlConnection& c, const nlohmann::json& request);
    void shutdown(ControlConnection& c);
    void attach(ControlConnection& c, const nlohmann::json& request);
    // attach with pass_fds, once the client's descriptors arrived.
    void attach_fds(ControlConnection& link, const std::string& server_name, std::uint64_t session,
                    const PeerCredentials& peer, const std::optional<Project>& project,
                    std::vector<UniqueFd> fds);
    // The instance session `id` of `server` talks to: its project's child (sharing =
    // "project"), a private one (sharing = "exclusive"), or the shared one.
    ManagedServer& instance_for(ManagedServer& server, SessionId id,
                                const std::optional<Project>& project);
    // A session's project from the directory its attach gave (sharing = "project").
    Result<Project> session_project(const ManagedServer& server, const std::string& cwd) const;
    void sessions(ControlConnection& c, const nlohmann::json& request);

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
};

}  // namespace mcpd
