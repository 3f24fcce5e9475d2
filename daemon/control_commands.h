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
    // failure the error has been sent and the result is empty.
    bool resolve(ControlConnection& c, const nlohmann::json& names,
                 std::vector<ManagedServer*>& out, bool allow_empty);
    bool allowed(const ControlConnection& c, const ManagedServer& server) const;
    bool privileged(ControlConnection& c);
    nlohmann::json statuses(const std::vector<std::string>& names);

    Daemon& daemon_;
};

}  // namespace mcpd
