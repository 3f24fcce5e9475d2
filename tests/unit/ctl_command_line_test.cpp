// Parsing the command line: global options anywhere, command options, arguments, builds.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/control_protocol.h"
#include "ctl/command.h"

using mcpctl::Invocation;
using mcpctl::UsageError;

namespace {

// Parse and expect success.
Invocation parse_ok(const std::vector<std::string>& args) {
    Invocation invocation;
    UsageError error;
    const bool ok = mcpctl::parse_invocation(args, invocation, error);
    INFO("usage error: " << error.message);
    REQUIRE(ok);
    return invocation;
}

// Parse and expect a usage error.
UsageError parse_error(const std::vector<std::string>& args) {
    Invocation invocation;
    UsageError error;
    REQUIRE_FALSE(mcpctl::parse_invocation(args, invocation, error));
    return error;
}

}  // namespace

TEST_CASE("global options may come before or after the command", "[ctl][args]") {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"--socket", "/tmp/s.sock", "--json", "status", "demo"},
             {"status", "demo", "--json", "--socket", "/tmp/s.sock"},
             {"--json", "status", "--socket=/tmp/s.sock", "demo"},
         }) {
        const Invocation inv = parse_ok(args);
        REQUIRE(inv.line.command != nullptr);
        CHECK(inv.line.command->name == "status");
        CHECK(inv.line.socket == "/tmp/s.sock");
        CHECK(inv.line.json);
        CHECK(inv.line.args == std::vector<std::string>{"demo"});
        CHECK(inv.request["servers"] == nlohmann::json::array({"demo"}));
    }
}

TEST_CASE("every request carries the protocol version", "[ctl][args]") {
    for (const auto& args : std::vector<std::vector<std::string>>{{"status"},
                                                                  {"start", "a"},
                                                                  {"stop", "a"},
                                                                  {"restart", "a"},
                                                                  {"reload"},
                                                                  {"logs", "a"},
                                                                  {"version"},
                                                                  {"shutdown"}}) {
        const Invocation inv = parse_ok(args);
        CHECK(inv.request["protocol"] == mcpd::control::kProtocolVersion);
        CHECK(inv.request["command"] == args[0]);
    }
}

TEST_CASE("command options are not global: before the command they are unknown", "[ctl][args]") {
    const UsageError error = parse_error({"--wait", "start", "demo"});
    CHECK(error.message == "unknown option '--wait'");
    CHECK(error.command == nullptr);
}

TEST_CASE("an unknown option after the command names the command", "[ctl][args]") {
    const UsageError error = parse_error({"status", "--frob"});
    CHECK(error.message == "unknown option '--frob' for 'status'");
    REQUIRE(error.command != nullptr);
    CHECK(error.command->name == "status");
}

TEST_CASE("unknown and ambiguous commands are usage errors", "[ctl][args]") {
    CHECK(parse_error({"frob"}).message == "unknown command 'frob'");
    CHECK(parse_error({"st", "demo"}).message ==
          "ambiguous command 'st', could be: start, stats, status, stop");
    CHECK(parse_ok({"star", "demo"}).request["command"] == "start");
}

TEST_CASE("logs: -n/--lines in every spelling, -f/--follow, default 50", "[ctl][args]") {
    CHECK(parse_ok({"logs", "demo"}).request["lines"] == 50);
    CHECK(parse_ok({"logs", "demo"}).request["follow"] == false);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"logs", "-n", "7", "demo"},
             {"logs", "-n7", "demo"},
             {"logs", "demo", "--lines", "7"},
             {"logs", "--lines=7", "demo"},
             {"logs", "-fn", "7", "demo"},
         }) {
        const Invocation inv = parse_ok(args);
        CHECK(inv.request["lines"] == 7);
        CHECK(inv.request["server"] == "demo");
    }
    CHECK(parse_ok({"logs", "-f", "demo"}).request["follow"] == true);
    CHECK(parse_ok({"logs", "demo", "--follow"}).request["follow"] == true);
    CHECK(parse_ok({"logs", "-fn", "7", "demo"}).request["follow"] == true);
}

TEST_CASE("logs: a bad line count, a missing value, a missing NAME", "[ctl][args]") {
    CHECK(parse_error({"logs", "-n", "many", "demo"}).message ==
          "--lines wants a number of lines (0 or more), not 'many'");
    CHECK(parse_error({"logs", "-n", "-3", "demo"}).message.find("'-3'") != std::string::npos);
    CHECK(parse_error({"logs", "-n", "5x", "demo"}).message.find("'5x'") != std::string::npos);
    CHECK(parse_error({"logs", "demo", "-n"}).message == "option '--lines' needs a value (N)");
    const UsageError missing = parse_error({"logs"});
    CHECK(missing.message == "'logs' needs a server NAME");
    REQUIRE(missing.command != nullptr);
    CHECK(missing.command->name == "logs");
    CHECK(parse_error({"logs", "a", "b"}).message == "too many arguments for 'logs': 'b'");
}

TEST_CASE("start/stop/restart: NAMEs, --wait and --timeout", "[ctl][args]") {
    const Invocation plain = parse_ok({"start", "a", "b"});
    CHECK(plain.request["servers"] == nlohmann::json::array({"a", "b"}));
    CHECK(plain.request["wait"] == false);
    CHECK_FALSE(plain.request.contains("timeout_ms"));

    const Invocation waiting = parse_ok({"restart", "--wait", "a", "--timeout", "1m30s"});
    CHECK(waiting.request["command"] == "restart");
    CHECK(waiting.request["wait"] == true);
    CHECK(waiting.request["timeout_ms"] == 90000);

    CHECK(parse_ok({"stop", "-w", "a"}).request["timeout_ms"] == 60000);
    CHECK(parse_ok({"stop", "a", "-wt", "500ms"}).request["timeout_ms"] == 500);
}

TEST_CASE("start/stop/restart: bad duration, --timeout alone, no NAME", "[ctl][args]") {
    const UsageError bad = parse_error({"start", "a", "--wait", "--timeout", "soon"});
    CHECK(bad.message.find("'soon'") != std::string::npos);
    REQUIRE(bad.command != nullptr);
    CHECK(bad.command->name == "start");
    CHECK(parse_error({"stop", "a", "--wait", "--timeout", "30"}).message.find("'30'") !=
          std::string::npos);
    CHECK(parse_error({"stop", "a", "--timeout", "30s"}).message ==
          "--timeout only applies with --wait");
    CHECK(parse_error({"restart", "--wait"}).message == "'restart' needs a server NAME");
    CHECK(parse_error({"start", "a", "--wait=yes"}).message == "option '--wait' takes no value");
}

TEST_CASE("shutdown: --wait with a checked --timeout, no arguments", "[ctl][args]") {
    CHECK(parse_ok({"shutdown", "--wait", "--timeout", "5s"}).request["command"] == "shutdown");
    CHECK(parse_error({"shutdown", "--wait", "--timeout", "5"}).message.find("'5'") !=
          std::string::npos);
    CHECK(parse_error({"shutdown", "now"}).message == "too many arguments for 'shutdown': 'now'");
}

TEST_CASE("mcpctl --help skips the argument checks, and -- ends the options", "[ctl][args]") {
    const Invocation help = parse_ok({"logs", "--help"});
    CHECK(help.line.help);
    CHECK(help.line.command->name == "logs");
    CHECK(parse_ok({"--help"}).line.command == nullptr);

    const Invocation dashed = parse_ok({"logs", "--", "-odd-name"});
    CHECK(dashed.request["server"] == "-odd-name");
}

TEST_CASE("start, stop and restart are three entries over one request", "[ctl][args]") {
    std::vector<const mcpctl::Command*> entries;
    for (const std::string name : {"start", "stop", "restart"}) {
        const Invocation inv = parse_ok({name, "a", "--wait", "-t", "2s"});
        CHECK(inv.request == nlohmann::json{{"protocol", mcpd::control::kProtocolVersion},
                                            {"command", name},
                                            {"servers", {"a"}},
                                            {"wait", true},
                                            {"timeout_ms", 2000}});
        entries.push_back(inv.line.command);
    }
    CHECK(entries[0]->build == entries[1]->build);
    CHECK(entries[1]->build == entries[2]->build);
    CHECK(entries[0]->render == entries[2]->render);
    CHECK(entries[0]->exec == entries[2]->exec);  // a failed server is an error for both
    CHECK(entries[0]->exec != entries[1]->exec);  // and not for stop
}
