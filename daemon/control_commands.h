// What each control request does. One handler per command, behind one table.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "daemon/control_connection.h"

namespace mcpd {

class Daemon;
class ManagedServer;

class ControlCommands final : public RequestHandler {
public:
    explicit ControlCommands(Daemon& daemon) : daemon_(daemon) {}

    void handle_request(ControlConnection& connection, const nlohmann::json& request) override;

private:
    using Handler = void (ControlCommands::*)(ControlConnection&, const nlohmann::json&);
    static const std::map<std::string, Handler>& table();

    void version(ControlConnection& c, const nlohmann::json& request);
    void status(ControlConnection& c, const nlohmann::json& request);
    void start(ControlConnection& c, const nlohmann::json& request);
    void stop(ControlConnection& c, const nlohmann::json& request);
    void restart(ControlConnection& c, const nlohmann::json& request);
    void reload(ControlConnection& c, const nlohmann::json& request);
    void logs(ControlConnection& c, const nlohmann::json& request);
    void shutdown(ControlConnection& c, const nlohmann::json& request);
    void attach(ControlConnection& c, const nlohmann::json& request);
    void sessions(ControlConnection& c, const nlohmann::json& request);

    enum class Action { start, stop, restart };
    void act(ControlConnection& c, const nlohmann::json& request, Action action);

    // The servers a request names, checked to exist and to be allowed for the peer. On
    // failure the error has been sent and the result is empty. A restricted peer gets the same
    // not_found for a server it may not use as for one that does not exist.
    bool resolve(ControlConnection& c, const nlohmann::json& names,
                 std::vector<ManagedServer*>& out, bool allow_empty);
    // For root and mcpd's own user: the registry's path and every server's name.
    std::string unknown_servers_message(const std::vector<std::string>& names);
    // For anyone else: only the servers it may use.
    std::string hidden_servers_message(const ControlConnection& c,
                                       const std::vector<std::string>& names);
    // Root or mcpd's own user.
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
