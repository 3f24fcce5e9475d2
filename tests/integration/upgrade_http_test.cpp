// An upgrade in place carries the HTTP front door's sessions and connections (docs/UPGRADE.md):
// a POST whose SSE stream relays a long call's progress, a POST waiting for its JSON answer, a
// GET stream delivering a subscription's updates, a request half written at the exec and a
// kept-alive connection all go on with the new process, each answer given once.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "curl_client.h"
#include "harness.h"
#include "http_stream_client.h"
#include "mcp_session.h"
#include "other_user.h"

using namespace integration;
using nlohmann::json;

namespace {

// The next event of `stream` that is a resources/updated notification.
bool next_update(HttpStreamClient& stream) {
    for (int i = 0; i < 50; ++i) {
        const std::optional<std::string> event = stream.next_event(5s);
        if (!event) return false;
        if (event->find("notifications/resources/updated") != std::string::npos) return true;
    }
    return false;
}

// POST `body` on `client` and read the whole answer's body; "" when it did not come.
std::string exchange(HttpStreamClient& client, const std::string& body, const std::string& session) {
    if (!client.send(mcp_request("live", body, session, false))) return {};
    const std::optional<HttpHead> head = client.read_head();
    if (!head || head->status / 100 != 2) return {};
    return client.read_body().value_or("");
}

}  // namespace

TEST_CASE("HTTP sessions and connections are carried across upgrades: streams, waiting POSTs, half-sent requests",
          "[upgrade][http]") {
    TestEnv env("upgrade-http");
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" +
                       server_toml("live", {"--tick-ms=100"}));
    env.start_daemon();
    env.wait_state("live", "running");
    const pid_t live = *env.server_pid("live");
    const pid_t daemon = env.daemon_pid();

    // A session opened on a connection kept alive throughout.
    HttpStreamClient kept(http);
    REQUIRE(kept.send(mcp_request("live", initialize_body("carried-http"), "", false)));
    const std::optional<HttpHead> opened = kept.read_head();
    REQUIRE(opened);
    REQUIRE(opened->status == 200);
    const std::string session = opened->headers.at("mcp-session-id");
    REQUIRE(kept.read_body());
    REQUIRE(kept.send(mcp_request("live", R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                                  session, false)));
    REQUIRE(kept.read_head()->status == 202);
    REQUIRE(kept.read_body());

    // Its GET stream, and a subscription whose updates go there.
    HttpStreamClient listen(http);
    REQUIRE(listen.send(mcp_request("live", "", session, false)));
    REQUIRE(listen.read_head()->status == 200);
    const std::string subscribed = exchange(
        kept, R"({"jsonrpc":"2.0","id":"sub","method":"resources/subscribe","params":{"uri":"demo://counter"}})",
        session);
    REQUIRE(subscribed.find("\"result\"") != std::string::npos);
    REQUIRE(next_update(listen));

    // A long call streaming its progress, and one waiting for its JSON answer.
    HttpStreamClient streaming(http);
    REQUIRE(streaming.send(mcp_request(
        "live", mcp_call("long", "slow", {{"steps", 10}, {"interval_ms", 150}}, "long-token"), session, true)));
    const std::optional<HttpHead> stream_head = streaming.read_head();
    REQUIRE(stream_head);
    REQUIRE(stream_head->headers.at("content-type") == "text/event-stream");
    const std::optional<std::string> first = streaming.next_event();
    REQUIRE(first);
    REQUIRE(first->find("notifications/progress") != std::string::npos);
    HttpStreamClient waiting(http);
    REQUIRE(waiting.send(
        mcp_request("live", mcp_call("wait", "slow", {{"steps", 5}, {"interval_ms", 150}}), session, false)));

    for (int round = 1; round <= 3; ++round) {
        const std::string r = std::to_string(round);
        // A request whose head and half its body are sent before the exec, the rest after.
        HttpStreamClient half(http);
        const std::string request = mcp_request("live", mcp_call("half-" + r, "echo", {{"text", "half " + r}}),
                                                session, false);
        REQUIRE(half.send(request.substr(0, request.size() - 20)));
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO("round " << round << ": " << upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        CHECK(env.daemon_pid() == daemon);
        CHECK(env.server_pid("live") == live);
        REQUIRE(half.send(request.substr(request.size() - 20)));
        const std::optional<HttpHead> head = half.read_head();
        REQUIRE(head);
        CHECK(head->status == 200);
        CHECK(call_answer_text(half.read_body().value_or("")) == "half " + r);
        // The connection kept alive since before the first upgrade still serves the session.
        CHECK(call_answer_text(exchange(kept, mcp_call("kept-" + r, "echo", {{"text", "kept " + r}}), session)) ==
              "kept " + r);
        // The subscription still delivers on the GET stream.
        CHECK(next_update(listen));
    }

    // Every step's progress in order, then the answer, once, and the stream's end.
    int last = 1;
    std::string answer;
    while (const std::optional<std::string> event = streaming.next_event(10s)) {
        const json message = json::parse(*event, nullptr, false);
        REQUIRE_FALSE(message.is_discarded());
        if (message.value("method", "") == "notifications/progress") {
            CHECK(message["params"]["progressToken"] == "long-token");
            CHECK(message["params"]["progress"] == last + 1);
            last = message["params"]["progress"].get<int>();
        } else {
            CHECK(answer.empty());
            answer = *event;
        }
    }
    CHECK(streaming.ended());
    CHECK(last == 10);
    CHECK(call_answer_text(answer) == "done after 10 steps");
    // The JSON POST's answer, whole.
    const std::optional<HttpHead> waited = waiting.read_head(10s);
    REQUIRE(waited);
    CHECK(waited->status == 200);
    CHECK(call_answer_text(waiting.read_body().value_or("")) == "done after 5 steps");

    CHECK(env.status_json()["daemon"]["upgrades"] == 3);
    const std::string log = env.daemon_log();
    CHECK(count_of(log, "[live] ready: protocol") == 1);  // the handshake was never repeated
    CHECK(count_of(log, "rebuilt from its HTTP session id") == 0);  // carried, not rebuilt
    // The session ends as any does: DELETE on the kept connection, and its GET stream ends.
    REQUIRE(kept.send("DELETE /mcp/live HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: " + session + "\r\n\r\n"));
    const std::optional<HttpHead> deleted = kept.read_head();
    REQUIRE(deleted);
    CHECK(deleted->status == 200);
    while (listen.next_event(5s)) {
    }
    CHECK(listen.ended());
    CHECK(poll_until(5s, [&] { return env.server("live")["sessions"] == 0; }));
}

TEST_CASE("another user's HTTP session is carried as that user: its own child, never reachable by another",
          "[upgrade][http][access]") {
    const OtherUser other;
    TestEnv env("upgrade-http-users");
    open_directory(env.dir());
    const std::string http = env.path("http.sock");
    env.write_registry(kOpenSocket + "http_listen = [\"unix:" + http + "\"]\n\n" +
                       server_toml("per-user", {}, {{"sharing", "\"user\""}, {"allow_users", "[\"" + other.id() + "\"]"}}));
    env.start_daemon();
    const std::string url = "http://localhost/mcp/per-user";
    const auto post = [&](const std::string& body, const std::string& session, const std::vector<std::string>& as) {
        std::vector<std::string> args = {"--unix-socket", http, "-X", "POST", "-H", "Content-Type: application/json",
                                         "-H", "Accept: application/json", "--data-binary", body};
        if (!session.empty()) args.insert(args.end(), {"-H", "Mcp-Session-Id: " + session});
        args.push_back(url);
        return curl(args, as);
    };
    const std::vector<std::string> as_other = other.command({});
    const HttpAnswer theirs = post(initialize_body("their-agent"), "", as_other);
    INFO(theirs.raw);
    REQUIRE(theirs.status == 200);
    const std::string their_session = theirs.headers.at("mcp-session-id");
    const HttpAnswer mine = post(initialize_body("my-agent"), "", {});
    REQUIRE(mine.status == 200);
    const std::string my_session = mine.headers.at("mcp-session-id");
    const auto children = [&] {
        std::vector<std::pair<pid_t, int>> out;  // each child's pid and its sessions
        const json server = env.server("per-user");
        for (const json& child : server["children"])
            out.emplace_back(child["pid"].get<pid_t>(), child["sessions"].get<int>());
        std::sort(out.begin(), out.end());
        return out;
    };
    const auto before = children();
    REQUIRE(before.size() == 2);

    const RunResult upgraded = env.ctl({"upgrade", "--wait"});
    INFO(upgraded.describe());
    REQUIRE(upgraded.exit_code == 0);

    // Each session acts as the user its signed id names, on that user's own child as before.
    std::vector<std::uint64_t> uids;
    const json listed = json::parse(env.ctl({"--json", "sessions"}).out, nullptr, false);
    REQUIRE_FALSE(listed.is_discarded());
    for (const json& s : listed["sessions"]) {
        CHECK(s["transport"] == "http");
        uids.push_back(s["uid"].get<std::uint64_t>());
    }
    std::sort(uids.begin(), uids.end());
    CHECK(uids == std::vector<std::uint64_t>{0, other.uid()});
    CHECK(children() == before);
    const auto echo = [](int id, const std::string& text) {
        return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
                    {"params", {{"name", "echo"}, {"arguments", {{"text", text}}}}}}.dump();
    };
    const HttpAnswer still = post(echo(2, "still theirs"), their_session, as_other);
    INFO(still.raw);
    CHECK(call_answer_text(still.body) == "still theirs");
    // Neither user can use the other's carried session.
    CHECK(post(echo(3, "x"), their_session, {}).status == 404);
    CHECK(post(echo(4, "x"), my_session, as_other).status == 404);
    CHECK(call_answer_text(post(echo(5, "mine"), my_session, {}).body) == "mine");
    CHECK(count_of(env.daemon_log(), "rebuilt from its HTTP session id") == 0);
}

TEST_CASE("a 2026-07-28 request in flight over HTTP is carried: its stream relays every step and the answer once",
          "[upgrade][http]") {
    TestEnv env("upgrade-http-modern");
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" + server_toml("dual", {"--era=dual"}));
    env.start_daemon();
    env.wait_state("dual", "running");
    const pid_t dual = *env.server_pid("dual");
    json meta = modern_meta("modern-agent");
    meta["progressToken"] = "modern-token";
    const std::string body = json{{"jsonrpc", "2.0"},
                                  {"id", 7},
                                  {"method", "tools/call"},
                                  {"params",
                                   {{"name", "slow"},
                                    {"arguments", {{"steps", 8}, {"interval_ms", 150}}},
                                    {"_meta", meta}}}}
                                 .dump();
    HttpStreamClient request(http);
    REQUIRE(request.send("POST /mcp/dual HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                         "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                         "Mcp-Method: tools/call\r\nMcp-Name: slow\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body));
    const std::optional<HttpHead> head = request.read_head();
    REQUIRE(head);
    REQUIRE(head->status == 200);
    const std::optional<std::string> first = request.next_event();
    REQUIRE(first);
    REQUIRE(first->find("notifications/progress") != std::string::npos);
    for (int round = 0; round < 2; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
    }
    CHECK(env.server_pid("dual") == dual);
    int last = 1;
    std::string answer;
    while (const std::optional<std::string> event = request.next_event(10s)) {
        const json message = json::parse(*event, nullptr, false);
        REQUIRE_FALSE(message.is_discarded());
        if (message.value("method", "") == "notifications/progress") {
            CHECK(message["params"]["progress"] == last + 1);
            last = message["params"]["progress"].get<int>();
        } else {
            CHECK(answer.empty());
            answer = *event;
        }
    }
    CHECK(request.ended());
    CHECK(last == 8);
    CHECK(call_answer_text(answer) == "done after 8 steps");
    // Its session ended with its answer, in the new process.
    CHECK(poll_until(5s, [&] { return env.server("dual")["sessions"] == 0; }));
}

TEST_CASE("an HTTP session of a group is carried with its members: a call in flight through it answered once",
          "[upgrade][http][group]") {
    TestEnv env("upgrade-http-group");
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" + server_toml("alpha") +
                       server_toml("beta") + "\n[groups.dev]\nservers = [\"alpha\", \"beta\"]\n");
    env.start_daemon();
    env.wait_state("alpha", "running");
    env.wait_state("beta", "running");
    const std::vector<pid_t> processes = env.marked_processes();
    const std::string session = open_mcp_session(http, "dev", "group-over-http");
    REQUIRE_FALSE(session.empty());
    const auto post = [&](HttpStreamClient& c, const std::string& body) {
        REQUIRE(c.send(mcp_request("dev", body, session, false)));
        const std::optional<HttpHead> head = c.read_head(10s);
        REQUIRE(head);
        CHECK(head->status == 200);
        return c.read_body(10s).value_or("");
    };
    HttpStreamClient kept(http);
    const std::string tools = post(kept, R"({"jsonrpc":"2.0","id":"t1","method":"tools/list"})");
    REQUIRE(tools.find("alpha__echo") != std::string::npos);
    // A call through the group in flight across the upgrades, on a connection of its own.
    HttpStreamClient waiting(http);
    REQUIRE(waiting.send(mcp_request("dev", mcp_call("slow", "beta__slow", {{"steps", 6}, {"interval_ms", 150}}),
                                     session, false)));
    std::this_thread::sleep_for(200ms);
    for (int round = 0; round < 2; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        CHECK(env.marked_processes() == processes);
        CHECK(call_answer_text(post(kept, mcp_call("e" + std::to_string(round), "alpha__echo",
                                                   {{"text", "through dev"}}))) == "through dev");
    }
    const std::optional<HttpHead> head = waiting.read_head(10s);
    REQUIRE(head);
    CHECK(head->status == 200);
    CHECK(call_answer_text(waiting.read_body().value_or("")) == "done after 6 steps");
    CHECK(post(kept, R"({"jsonrpc":"2.0","id":"t2","method":"tools/list"})").find("alpha__echo") != std::string::npos);
}
