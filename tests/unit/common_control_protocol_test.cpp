// common/control_protocol: every request built and read back, the replies and messages, and
// the exact bytes of the lines another program reads by hand.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "common/control_protocol.h"

using namespace mcpd::control;
using nlohmann::json;

namespace {

bool speaks(const char* version) {
    return speaks_our_protocol(json::parse(std::string("{\"protocol\": ") + version + "}"));
}

// The request line a client writes: what the daemon parses.
json wire(const json& request) {
    return json::parse(request.dump());
}

}  // namespace

TEST_CASE("the control protocol version is compared as the exact integer it was written as") {
    CHECK(speaks("1"));
    CHECK(speaks_our_protocol(json{{"protocol", 1}}));  // built, not parsed: a signed integer
    CHECK_FALSE(speaks("4294967297"));                  // 2^32 + 1: an int cut would read 1
    CHECK_FALSE(speaks("-4294967295"));
    CHECK_FALSE(speaks("18446744073709551617"));  // past 64 bits: parsed as a float
    CHECK_FALSE(speaks("1.0"));
    CHECK_FALSE(speaks("\"1\""));
    CHECK_FALSE(speaks("true"));
    CHECK_FALSE(speaks("null"));
    CHECK_FALSE(speaks("2"));
    CHECK_FALSE(speaks("0"));
    CHECK_FALSE(speaks_our_protocol(json::object()));
}

TEST_CASE("a protocol mismatch names both versions", "[common][control]") {
    CHECK(protocol_mismatch(json{{"protocol", 2}}) ==
          "control protocol mismatch: mcpd speaks version 1, the client sent 2; use an mcpctl "
          "from the same release as mcpd");
    CHECK(protocol_mismatch(json::object()).find("the client sent none;") != std::string::npos);
}

TEST_CASE("every command has one word, read both ways", "[common][control]") {
    for (const auto& [name, command] : kCommandNames) {
        CHECK(to_string(command) == name);
        CHECK(command_named(name) == command);
    }
    CHECK(std::size(kCommandNames) == 14);
    CHECK_FALSE(command_named("frobnicate"));
    CHECK_FALSE(command_named("Status"));
    CHECK(request(Command::shutdown) ==
          json{{"protocol", kProtocolVersion}, {"command", "shutdown"}});
}

TEST_CASE("requests are built as docs/CONTROL.md spells them and read back", "[common][control]") {
    SECTION("clear_cache") {
        CHECK(to_json(ClearCacheRequest{}) ==
              json{{"protocol", kProtocolVersion}, {"command", "clear_cache"}});
        const json named = to_json(ClearCacheRequest{{"demo"}});
        CHECK(named["servers"] == json::array({"demo"}));
        CHECK(parse_clear_cache(named)->servers == std::vector<std::string>{"demo"});
        CHECK(parse_clear_cache(to_json(ClearCacheRequest{}))->servers.empty());
        json bad = named;
        bad["servers"] = "demo";
        CHECK_FALSE(parse_clear_cache(bad));
        CHECK(clear_cache_result(3, {}) == json{{"entries", 3}});
        CHECK(clear_cache_result(1, {{"demo", 1}})["servers"] ==
              json::array({{{"name", "demo"}, {"entries", 1}}}));
    }
    SECTION("status") {
        CHECK_FALSE(to_json(StatusRequest{}).contains("servers"));
        const json named = to_json(StatusRequest{{"a", "b"}});
        CHECK(named["command"] == "status");
        CHECK(named["servers"] == json::array({"a", "b"}));
        const auto parsed = parse_status(wire(named));
        REQUIRE(parsed.ok());
        CHECK(parsed->servers == std::vector<std::string>{"a", "b"});
        CHECK(parse_status(wire(to_json(StatusRequest{})))->servers.empty());
    }
    SECTION("start, stop, restart") {
        const json plain = to_json(ActionRequest{Command::stop, {"a"}, false, kDefaultWait});
        CHECK(plain ==
              json{{"protocol", 1}, {"command", "stop"}, {"servers", {"a"}}, {"wait", false}});
        const json waiting =
            to_json(ActionRequest{Command::restart, {"a", "b"}, true, std::chrono::seconds(90)});
        CHECK(waiting["timeout_ms"] == 90000);
        const auto parsed = parse_action(wire(waiting), Command::restart);
        REQUIRE(parsed.ok());
        CHECK(parsed->command == Command::restart);
        CHECK(parsed->servers == std::vector<std::string>{"a", "b"});
        CHECK(parsed->wait);
        CHECK(parsed->timeout == std::chrono::seconds(90));
        CHECK(parse_action(wire(plain), Command::stop)->timeout == kDefaultWait);
    }
    SECTION("reload") {
        CHECK_FALSE(to_json(ReloadRequest{}).contains("allow_remove_all"));
        CHECK(to_json(ReloadRequest{true})["allow_remove_all"] == true);
        CHECK(parse_reload(wire(to_json(ReloadRequest{true})))->allow_remove_all);
        CHECK_FALSE(parse_reload(wire(to_json(ReloadRequest{})))->allow_remove_all);
    }
    SECTION("upgrade") {
        CHECK(to_json(UpgradeRequest{}) == json{{"protocol", 1}, {"command", "upgrade"}});
        CHECK(parse_upgrade(wire(to_json(UpgradeRequest{"/usr/sbin/mcpd"})))->binary ==
              "/usr/sbin/mcpd");
        CHECK(parse_upgrade(wire(to_json(UpgradeRequest{})))->binary.empty());
    }
    SECTION("logs") {
        const json built = to_json(LogsRequest{"demo", 7, true});
        CHECK(built == json{{"protocol", 1},
                            {"command", "logs"},
                            {"server", "demo"},
                            {"lines", 7},
                            {"follow", true}});
        const auto parsed = parse_logs(wire(built));
        REQUIRE(parsed.ok());
        CHECK(parsed->server == "demo");
        CHECK(parsed->lines == 7);
        CHECK(parsed->follow);
        const auto defaults = parse_logs(json{{"server", "demo"}});
        REQUIRE(defaults.ok());
        CHECK(defaults->lines == kDefaultLogLines);
        CHECK_FALSE(defaults->follow);
    }
    SECTION("attach") {
        CHECK_FALSE(to_json(AttachRequest{"demo", {}, false, {}}).contains("pass_fds"));
        CHECK_FALSE(to_json(AttachRequest{"demo", {}, false, {}}).contains("cwd"));
        const auto parsed = parse_attach(wire(to_json(AttachRequest{"demo", {}, true, {}})));
        REQUIRE(parsed.ok());
        CHECK(parsed->server == "demo");
        CHECK(parsed->pass_fds);
        CHECK(parsed->cwd.empty());
        // The directory of mcpctl connect, for sharing = "project".
        const auto in_project = parse_attach(wire(to_json(AttachRequest{"demo", {}, true, "/w/one"})));
        REQUIRE(in_project.ok());
        CHECK(in_project->cwd == "/w/one");
        CHECK_FALSE(parse_attach(json{{"server", "demo"}, {"cwd", "relative/dir"}}).ok());
        CHECK_FALSE(parse_attach(json{{"server", "demo"}, {"cwd", 7}}).ok());
        CHECK_FALSE(parse_attach(json{{"server", "demo"}, {"cwd", ""}}).ok());
        // Several servers as one session (mcpctl connect a b).
        const auto group = parse_attach(wire(to_json(AttachRequest{{}, {"a", "b.c"}, true, {}})));
        REQUIRE(group.ok());
        CHECK(group->servers == std::vector<std::string>{"a", "b.c"});
        CHECK(group->server == "a+b.c");
        for (const json& bad : {json{"a"}, json{"a", "a"}, json{"a", 1}, json{"a", "b c"},
                                json{"a", ""}, json("a")}) {
            INFO(bad.dump());
            CHECK_FALSE(parse_attach(json{{"servers", bad}}).ok());
        }
    }
    SECTION("sessions") {
        CHECK_FALSE(to_json(SessionsRequest{}).contains("server"));
        CHECK(parse_sessions(wire(to_json(SessionsRequest{"demo"}))).server == "demo");
        CHECK_FALSE(parse_sessions(json{{"server", 5}}).server);  // ignored, as it always was
    }
}

TEST_CASE("a field of the wrong type is refused with the field and what it needs",
          "[common][control]") {
    const auto error = [](auto result) {
        return result.ok() ? std::string("(accepted)") : result.error();
    };
    CHECK(error(parse_action(json{{"wait", "yes"}, {"servers", {"a"}}}, Command::start)) ==
          "\"wait\" must be true or false, not a string");
    CHECK(error(parse_action(json{{"timeout_ms", -1}, {"servers", {"a"}}}, Command::start)) ==
          "\"timeout_ms\" must be a whole number from 0 to 604800000, not -1");
    CHECK(
        error(parse_action(json{{"timeout_ms", 1.5}, {"servers", {"a"}}}, Command::start)) ==
        "\"timeout_ms\" must be a whole number from 0 to 604800000, not a number with a fraction");
    CHECK(error(parse_action(json::object(), Command::start)) == "name at least one server");
    CHECK(error(parse_action(json{{"servers", "a"}}, Command::start)) ==
          "\"servers\" must be a list of names");
    CHECK(error(parse_status(json{{"servers", {"a", 1}}})) == "server names must be strings");
    CHECK(error(parse_logs(json::object())) == "name the server whose logs you want");
    CHECK(error(parse_logs(json{{"server", "a"}, {"lines", 1'000'001}})) ==
          "\"lines\" must be a whole number from 0 to 1000000, not 1000001");
    CHECK(error(parse_attach(json{{"server", 1}})) == "name the server to attach to");
    CHECK(error(parse_attach(json{{"server", "a"}, {"pass_fds", 1}})) ==
          "\"pass_fds\" must be true or false, not an integer");
    CHECK(error(parse_reload(json{{"allow_remove_all", nullptr}})) ==
          "\"allow_remove_all\" must be true or false, not null");
    for (const json& binary : {json(1), json(""), json(std::string(4097, 'a')),
                               json(std::string("/a\0b", 4)), json::array()})
        CHECK(error(parse_upgrade(json{{"binary", binary}})) ==
              "\"binary\" must be a path of 1 to 4096 bytes");
    // The wait flag is read before the servers: the first bad field is the one named.
    CHECK(error(parse_action(json{{"wait", 1}, {"servers", 1}}, Command::start)) ==
          "\"wait\" must be true or false, not an integer");
}

TEST_CASE("replies: built by the daemon, checked by the client", "[common][control]") {
    CHECK(ok_reply(json::object()).dump() == R"({"ok":true,"result":{}})");
    CHECK(error_reply(code::not_found, "no server named x").dump() ==
          R"({"error":{"code":"not_found","message":"no server named x"},"ok":false})");
    CHECK(error_reply(code::config, "2 errors", {"a:1:1: x", "a:2:1: y"})["error"]["details"] ==
          json::array({"a:1:1: x", "a:2:1: y"}));

    const auto ok = parse_reply(ok_reply({{"servers", json::array()}}));
    REQUIRE(ok.ok());
    CHECK(ok->ok);
    CHECK(ok->result == json{{"servers", json::array()}});
    CHECK(parse_reply(json{{"ok", true}})->result == json::object());

    const auto refused = parse_reply(error_reply(code::denied, "no"));
    REQUIRE(refused.ok());
    CHECK_FALSE(refused->ok);
    CHECK(refused->error["code"] == "denied");

    CHECK(parse_reply(json::array()).error() == "not a JSON object");
    CHECK(parse_reply(json{{"ok", 1}}).error() == "no boolean \"ok\"");
    CHECK(parse_reply(json{{"ok", false}, {"error", {{"code", "x"}}}}).error() ==
          "\"ok\" is false but there is no error message");
}

TEST_CASE("results, one per command", "[common][control]") {
    CHECK(version_result("0.1.0", 42) == json{{"version", "0.1.0"}, {"protocol", 1}, {"pid", 42}});
    CHECK(status_result({{"pid", 1}}, json::array()) ==
          json{{"daemon", {{"pid", 1}}}, {"servers", json::array()}});
    CHECK(servers_result(json::array()) == json{{"servers", json::array()}});
    CHECK(to_json(ReloadResult{{"a"}, {}, {"c"}, {"d"}}) == json{{"added", {"a"}},
                                                                 {"removed", json::array()},
                                                                 {"changed", {"c"}},
                                                                 {"unchanged", {"d"}}});
    CHECK(logs_result({"x", "y"}) == json{{"lines", {"x", "y"}}});
    CHECK(shutdown_result() == json::object());
    CHECK(sessions_result(json::array()) == json{{"sessions", json::array()}});

    const json socket_session = to_json(AttachResult{"demo", 7, false});
    CHECK(socket_session == json{{"server", "demo"}, {"session", 7}});
    CHECK_FALSE(asks_for_fds(socket_session));
    CHECK(asks_for_fds(to_json(AttachResult{"demo", 7, true})));
    CHECK_FALSE(asks_for_fds(json{{"send_fds", 1}}));
}

TEST_CASE("follow lines and the ended line", "[common][control]") {
    CHECK(log_message("started\x1b[0m") == json{{"log", "started\x1b[0m"}});
    CHECK(log_line(log_message("a line")) == "a line");
    CHECK_FALSE(log_line(json{{"log", 5}}));
    CHECK_FALSE(log_line(ok_reply(json::object())));

    const auto by_client = parse_ended(ended_message({"the client closed its input", true}));
    REQUIRE(by_client);
    CHECK(by_client->by_client);
    CHECK(by_client->reason == "the client closed its input");
    const auto by_mcpd = parse_ended(json::parse(R"({"ended": {"reason": "x", "status": 7}})"));
    REQUIRE(by_mcpd);
    CHECK_FALSE(by_mcpd->by_client);
    CHECK_FALSE(parse_ended(json::parse(R"({"ended": {"reason": "x"}})"))->by_client);
    CHECK_FALSE(parse_ended(json::parse(R"({"ended": {"status": 0.0}})"))->by_client);
    CHECK(parse_ended(json::parse(R"({"ended": {"status": 0}})"))->reason.empty());
    CHECK_FALSE(parse_ended(json{{"ended", "x"}}));
    CHECK_FALSE(parse_ended(log_message("x")));
}

TEST_CASE("the ended line keeps the bytes mcpctl-wait looks for", "[common][control]") {
    // ctl/wait/mcpctl_wait.c matches `{"ended":` at the start, `"status":0}` for a clean end
    // and `"reason":"` for the sentence: these bytes are part of the protocol.
    CHECK(ended_message({"the client closed its input", true}).dump() ==
          R"({"ended":{"reason":"the client closed its input","status":0}})");
    CHECK(ended_message({"the server was removed", false}).dump() ==
          R"({"ended":{"reason":"the server was removed","status":1}})");
    CHECK(ended_message({"a \"quoted\" word", false}).dump() ==
          R"({"ended":{"reason":"a \"quoted\" word","status":1}})");
}
