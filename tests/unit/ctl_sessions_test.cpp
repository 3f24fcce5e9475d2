// mcpctl sessions: the request it builds and the table it prints.
#include <catch2/catch.hpp>
#include <string>

#include "common/control_protocol.h"
#include "ctl/command.h"

using nlohmann::json;

namespace {

const mcpctl::Command& sessions_command() {
    const mcpd::Result<const mcpctl::Command*> found = mcpctl::find_command("sessions");
    REQUIRE(found.ok());
    const mcpctl::Command* command = found.value();
    REQUIRE(command->render != nullptr);
    return *command;
}

json request_for(const std::vector<std::string>& args) {
    mcpctl::Invocation invocation;
    mcpctl::UsageError error;
    INFO(error.message);
    REQUIRE(mcpctl::parse_invocation(args, invocation, error));
    return invocation.request;
}

}  // namespace

TEST_CASE("sessions asks for every session, or for one server's", "[ctl][sessions]") {
    CHECK(request_for({"sessions"}) ==
          json{{"protocol", mcpd::control::kProtocolVersion}, {"command", "sessions"}});
    CHECK(request_for({"se", "demo"}) == json{{"protocol", mcpd::control::kProtocolVersion},
                                              {"command", "sessions"},
                                              {"server", "demo"}});
    mcpctl::Invocation invocation;
    mcpctl::UsageError error;
    CHECK_FALSE(mcpctl::parse_invocation({"sessions", "a", "b"}, invocation, error));
}

TEST_CASE("sessions renders one row per session with the documented columns", "[ctl][sessions]") {
    const json result = json::parse(R"({"sessions": [
        {"id": 7, "server": "demo", "pid": 4242, "uid": 1000,
         "client": {"name": "claude-code", "version": "1.0"}, "protocol": "2025-11-25",
         "in_flight": 2, "age_ms": 51200, "transport": "fds"},
        {"id": 12, "server": "github", "pid": 99, "uid": 0, "client": null, "protocol": null,
         "in_flight": 0, "age_ms": 850, "transport": "socket"}
      ]})");
    CHECK(sessions_command().render(result) ==
          "ID  SERVER  PID   UID   CLIENT           PROTOCOL    IN-FLIGHT  AGE    TRANSPORT\n"
          "7   demo    4242  1000  claude-code 1.0  2025-11-25  2          51s    fds\n"
          "12  github  99    0     -                -           0          850ms  socket\n");
}

TEST_CASE("sessions with none says so", "[ctl][sessions]") {
    CHECK(sessions_command().render(json::parse(R"({"sessions": []})")) == "no sessions\n");
    CHECK(sessions_command().render(json::object()) == "no sessions\n");
}
