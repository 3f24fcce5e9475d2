// The Streamable HTTP front door, driven with curl as a user would: over the unix socket
// beside the control socket and over loopback TCP with a bearer token; sessions that survive
// mcpd being killed; the checks that keep other users, other sites and oversized bodies out.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <thread>

#include "connection_flood.h"
#include "curl_client.h"
#include "harness.h"
#include "http_stream_client.h"
#include "other_user.h"

using namespace integration;
using nlohmann::json;

namespace {

const std::string kInitialize = initialize_body("curl-test");

std::string echo_call(int id, const std::string& text) {
    return json{{"jsonrpc", "2.0"},
                {"id", id},
                {"method", "tools/call"},
                {"params", {{"name", "echo"}, {"arguments", {{"text", text}}}}}}
        .dump();
}

// The headers of a POST of MCP messages.
std::vector<std::string> post_args(const std::string& body, const std::string& session = {},
                                   const std::string& accept = "application/json, text/event-stream") {
    std::vector<std::string> args = {"-X", "POST", "-H", "Content-Type: application/json",
                                     "-H", "Accept: " + accept, "--data-binary", body};
    if (!session.empty()) {
        args.insert(args.end(), {"-H", "Mcp-Session-Id: " + session, "-H", "MCP-Protocol-Version: 2025-06-18"});
    }
    return args;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// mcpd serving the demo server over HTTP on a unix socket in `env`'s directory: that socket.
std::string start_http_demo(TestEnv& env) {
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" + server_toml("demo"));
    env.start_daemon();
    return http;
}

std::string echoed(const json& answer) {
    if (!answer.is_object() || !answer.contains("result")) return "(no result: " + answer.dump() + ")";
    return answer["result"]["content"][0]["text"].get<std::string>();
}

}  // namespace

TEST_CASE("MCP over HTTP on the unix socket: initialize, JSON and SSE answers, DELETE", "[http]") {
    TestEnv env("http-unix");
    const std::string http = start_http_demo(env);
    const std::vector<std::string> on = {"--unix-socket", http};
    const std::string url = "http://localhost/mcp/demo";

    HttpAnswer init = curl(with(with(on, post_args(kInitialize)), {url}));
    INFO(init.raw);
    REQUIRE(init.status == 200);
    CHECK(init.headers["content-type"] == "application/json");
    const std::string session = init.headers["mcp-session-id"];
    REQUIRE(session.size() > 20);
    const json result = json::parse(init.body);
    CHECK(result["result"]["protocolVersion"] == "2025-06-18");
    CHECK(result["result"]["serverInfo"]["name"] == "mcpd-demo-server");

    HttpAnswer initialized =
        curl(with(with(on, post_args(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", session)), {url}));
    CHECK(initialized.status == 202);

    // JSON when the client accepts only JSON; an SSE stream when it accepts one.
    HttpAnswer plain = curl(with(with(on, post_args(echo_call(2, "as json"), session, "application/json")), {url}));
    INFO(plain.raw);
    CHECK(plain.status == 200);
    CHECK(echoed(json::parse(plain.body, nullptr, false)) == "as json");
    HttpAnswer streamed = curl(with(with(on, post_args(echo_call(3, "as sse"), session)), {url}));
    INFO(streamed.raw);
    CHECK(streamed.status == 200);
    CHECK(streamed.headers["content-type"] == "text/event-stream");
    CHECK(streamed.headers["x-accel-buffering"] == "no");
    const std::vector<json> events = sse_messages(streamed.body);
    REQUIRE(events.size() == 1);
    CHECK(events[0]["id"] == 3);
    CHECK(echoed(events[0]) == "as sse");

    // It is a session like any other: status counts it, sessions shows it as http.
    CHECK(env.server("demo")["sessions"] == 1);
    const RunResult sessions = env.ctl({"sessions", "--json"});
    CHECK(sessions.out.find("\"http\"") != std::string::npos);

    // No session id, another era's header, a wrong method: clear refusals.
    CHECK(curl(with(with(on, post_args(echo_call(4, "x"))), {url})).status == 400);
    CHECK(curl(with(on, {"-X", "PUT", url})).status == 405);
    CHECK(curl(with(on, {"-H", "Accept: application/json", "http://localhost/elsewhere"})).status == 404);
    CHECK(curl(with(with(on, post_args(kInitialize)), {"http://localhost/mcp/nosuch"})).status == 404);

    // A body nested deeper than a message may be is refused before it is parsed; mcpd goes on.
    const HttpAnswer deep = curl(with(with(on, post_args(std::string(60000, '[') + std::string(60000, ']'), session)), {url}));
    CHECK(deep.status == 400);
    CHECK(echoed(json::parse(curl(with(with(on, post_args(echo_call(6, "still here"), session, "application/json")), {url})).body,
                             nullptr, false)) == "still here");

    // DELETE ends it: the id is then unknown.
    HttpAnswer deleted = curl(with(on, {"-X", "DELETE", "-H", "Mcp-Session-Id: " + session, url}));
    CHECK(deleted.status == 200);
    wait_until("the session is gone", 10s, [&] { return env.server("demo")["sessions"] == 0; });
    CHECK(curl(with(with(on, post_args(echo_call(5, "late"), session)), {url})).status == 404);
}

TEST_CASE("an HTTP session survives mcpd being killed, a forged id does not", "[http]") {
    TestEnv env("http-restart");
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" + server_toml("demo"));
    DaemonProcess& daemon = env.start_daemon();
    const std::vector<std::string> on = {"--unix-socket", http};
    const std::string url = "http://localhost/mcp/demo";
    HttpAnswer init = curl(with(with(on, post_args(kInitialize)), {url}));
    REQUIRE(init.status == 200);
    const std::string session = init.headers["mcp-session-id"];
    CHECK(echoed(json::parse(curl(with(with(on, post_args(echo_call(2, "before"), session, "application/json")), {url})).body,
                             nullptr, false)) == "before");

    CHECK(daemon.kill_hard() == -SIGKILL);
    env.drop_daemon();
    env.start_daemon();

    // The same id goes on: the session is rebuilt from it, never answered 404.
    HttpAnswer after = curl(with(with(on, post_args(echo_call(3, "after"), session, "application/json")), {url}));
    INFO(after.raw);
    CHECK(after.status == 200);
    CHECK(echoed(json::parse(after.body, nullptr, false)) == "after");
    CHECK(env.daemon_log().find("rebuilt from its HTTP session id") != std::string::npos);

    // One byte changed anywhere in the id, or another server's path: refused as unknown.
    std::string forged = session;
    forged[forged.size() / 2] = forged[forged.size() / 2] == 'A' ? 'B' : 'A';
    CHECK(curl(with(with(on, post_args(echo_call(4, "x"), forged, "application/json")), {url})).status == 404);
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" + server_toml("demo") + server_toml("other"));
    REQUIRE(env.ctl({"reload"}).exit_code == 0);
    CHECK(curl(with(with(on, post_args(echo_call(5, "x"), session, "application/json")),
                    {"http://localhost/mcp/other"})).status == 404);
}

TEST_CASE("MCP over TCP needs the user's token, Host, Origin and body size are checked", "[http]") {
    TestEnv env("http-tcp");
    env.write_registry("[daemon]\nhttp_listen = [\"127.0.0.1:0\"]\nmax_message_bytes = 4096\n\n" + server_toml("demo"));
    env.start_daemon();
    const RunResult token_run = env.ctl({"http-token", "--json"});
    REQUIRE(token_run.exit_code == 0);
    const json token_json = json::parse(token_run.out);
    const std::string token = token_json["token"];
    REQUIRE(token.size() >= 32);
    REQUIRE(token_json["addresses"].size() == 1);
    const std::string address = token_json["addresses"][0];
    const std::string url = "http://" + address + "/mcp/demo";
    const std::vector<std::string> bearer = {"-H", "Authorization: Bearer " + token};

    HttpAnswer none = curl(with(post_args(kInitialize), {url}));
    CHECK(none.status == 401);
    CHECK(none.headers.contains("www-authenticate"));
    CHECK(curl(with(with({"-H", "Authorization: Bearer " + token + "x"}, post_args(kInitialize)), {url})).status == 401);
    // The scheme's name is case-insensitive (RFC 9110), as for the metrics endpoint.
    CHECK(curl(with(with({"-H", "Authorization: bearer  " + token}, post_args(kInitialize)), {url})).status == 200);
    CHECK(curl(with(with({"-H", "Authorization: Basic " + token}, post_args(kInitialize)), {url})).status == 401);
    HttpAnswer init = curl(with(with(bearer, post_args(kInitialize)), {url}));
    INFO(init.raw);
    REQUIRE(init.status == 200);
    const std::string session = init.headers["mcp-session-id"];
    CHECK(echoed(json::parse(curl(with(with(bearer, post_args(echo_call(2, "tcp"), session, "application/json")), {url})).body,
                             nullptr, false)) == "tcp");

    // DNS rebinding: a page of another site cannot talk to it.
    CHECK(curl(with(with(with(bearer, {"-H", "Host: evil.example"}), post_args(kInitialize)), {url})).status == 421);
    CHECK(curl(with(with(with(bearer, {"-H", "Origin: http://evil.example"}), post_args(kInitialize)), {url})).status == 403);
    CHECK(curl(with(with(with(bearer, {"-H", "Origin: http://localhost:3000"}), post_args(kInitialize)), {url})).status == 200);
    // A body over max_message_bytes is refused before it is read whole.
    HttpAnswer big = curl(with(with(bearer, post_args(echo_call(3, std::string(8192, 'x')), session)), {url}));
    CHECK(big.status == 413);

    // A new token: the old one stops working at once.
    const RunResult rotated = env.ctl({"http-token", "--rotate"});
    REQUIRE(rotated.exit_code == 0);
    CHECK(rotated.out.find(token) == std::string::npos);
    CHECK(curl(with(with(bearer, post_args(kInitialize)), {url})).status == 401);
}

TEST_CASE("over HTTP another user acts as itself: its own token, never another's session", "[http][users]") {
    OtherUser other;
    TestEnv env("http-users");
    open_directory(env.dir());
    env.write_registry(kOpenSocket + "http_listen = [\"unix:" + env.path("http.sock") +
                       "\", \"127.0.0.1:0\"]\n\n" +
                       server_toml("demo", {}, {{"allow_users", "[\"" + other.id() + "\"]"}}) +
                       server_toml("mine") +
                       server_toml("per-user", {}, {{"sharing", "\"user\""}, {"allow_users", "[\"" + other.id() + "\"]"}}));
    env.start_daemon();
    const std::string http = env.path("http.sock");
    const std::vector<std::string> on = {"--unix-socket", http};

    // Root's session on demo.
    HttpAnswer init = curl(with(with(on, post_args(kInitialize)), {"http://localhost/mcp/demo"}));
    REQUIRE(init.status == 200);
    const std::string root_session = init.headers["mcp-session-id"];

    // The other user, on the unix socket: its peer credentials say who it is.
    const std::vector<std::string> as_other = other.command({});
    HttpAnswer stolen = curl(with(with(on, post_args(echo_call(2, "x"), root_session, "application/json")),
                                        {"http://localhost/mcp/demo"}),
                                   as_other);
    INFO(stolen.raw);
    CHECK(stolen.status == 404);
    CHECK(curl(with(with(on, post_args(kInitialize)), {"http://localhost/mcp/mine"}), as_other).status == 404);
    HttpAnswer own = curl(with(with(on, post_args(kInitialize)), {"http://localhost/mcp/demo"}), as_other);
    CHECK(own.status == 200);

    // Over TCP: its own token, which is not root's and acts as it.
    const RunResult root_token = env.ctl({"http-token"});
    const RunResult other_token = run_process(other.command({bin("mcpctl"), "--socket", env.socket(), "http-token", "--json"}));
    INFO(other_token.describe());
    REQUIRE(other_token.exit_code == 0);
    const json mine = json::parse(other_token.out);
    CHECK(mine["token"] != root_token.out.substr(0, root_token.out.size() - 1));
    std::string address;
    for (const auto& a : mine["addresses"]) {
        if (!a.get<std::string>().starts_with("unix:")) address = a;
    }
    REQUIRE(!address.empty());
    const std::vector<std::string> bearer = {"-H", "Authorization: Bearer " + mine["token"].get<std::string>()};
    CHECK(curl(with(with(bearer, post_args(echo_call(3, "x"), root_session, "application/json")),
                    {"http://" + address + "/mcp/demo"})).status == 404);
    CHECK(curl(with(with(bearer, post_args(kInitialize)), {"http://" + address + "/mcp/mine"})).status == 404);
    HttpAnswer tcp_own = curl(with(with(bearer, post_args(kInitialize)), {"http://" + address + "/mcp/demo"}));
    CHECK(tcp_own.status == 200);
    const json listed = json::parse(env.ctl({"--json", "sessions"}).out);
    int of_other = 0;
    for (const auto& s : listed["sessions"]) {
        if (s["uid"] != other.uid()) continue;
        ++of_other;
        CHECK(s["transport"] == "http");
    }
    CHECK(of_other == 2);

    // sharing = "user" over HTTP: each user's sessions on a child of its own, as that user.
    CHECK(curl(with(with(on, post_args(kInitialize)), {"http://localhost/mcp/per-user"})).status == 200);
    CHECK(curl(with(with(on, post_args(kInitialize)), {"http://localhost/mcp/per-user"}), as_other).status == 200);
    const json per_user = env.server("per-user");
    INFO(per_user.dump());
    REQUIRE(per_user["children"].size() == 2);
    std::vector<uid_t> uids;
    for (const json& child : per_user["children"]) {
        REQUIRE(child["pid"].is_number_integer());
        uids.push_back(process_real_uid(child["pid"].get<pid_t>()).value_or(99999));
    }
    std::sort(uids.begin(), uids.end());
    CHECK(uids == std::vector<uid_t>{0, other.uid()});
}

TEST_CASE("over HTTP one connection takes a request written in pieces, then several written at once, in order",
          "[http]") {
    // The connection reads its socket itself: a request may come in any number of reads, and a
    // read may hold more than one request (the next waits while the one before is answered).
    TestEnv env("http-pieces");
    const std::string http = start_http_demo(env);
    const std::string session = open_mcp_session(http, "demo", "pieces");
    REQUIRE_FALSE(session.empty());
    {
        HttpStreamClient client(http);
        const std::string first =
            mcp_request("demo", mcp_call("p1", "echo", {{"text", "in pieces"}}), session, false);
        for (std::size_t at = 0; at < first.size(); at += 7) {
            REQUIRE(client.send(std::string_view(first).substr(at, 7)));
            if (at % 70 == 0) std::this_thread::sleep_for(2ms);  // separate reads, now and then
        }
        std::optional<HttpHead> head = client.read_head();
        REQUIRE(head);
        CHECK(head->status == 200);
        std::optional<std::string> body = client.read_body();
        REQUIRE(body);
        CHECK(call_answer_text(*body) == "in pieces");

        std::string three;
        for (const char* word : {"one", "two", "three"})
            three +=
                mcp_request("demo", mcp_call(std::string("w-") + word, "echo", {{"text", word}}),
                            session, false);
        REQUIRE(client.send(three));
        for (const char* word : {"one", "two", "three"}) {
            head = client.read_head();
            REQUIRE(head);
            CHECK(head->status == 200);
            body = client.read_body();
            REQUIRE(body);
            CHECK(call_answer_text(*body) == word);
        }
    }
    // That client closed its connection: mcpd serves the next one.
    HttpStreamClient next(http);
    REQUIRE(next.send(
        mcp_request("demo", mcp_call("again", "echo", {{"text", "again"}}), session, false)));
    const std::optional<HttpHead> head = next.read_head();
    REQUIRE(head);
    CHECK(head->status == 200);
    const std::optional<std::string> body = next.read_body();
    REQUIRE(body);
    CHECK(call_answer_text(*body) == "again");
}

TEST_CASE("on the HTTP socket one user cannot hold every connection", "[http][users][dos]") {
    OtherUser other;
    TestEnv env("http-flood");
    open_directory(env.dir());
    const std::string http = env.path("http.sock");
    env.write_registry(kOpenSocket + "http_listen = [\"unix:" + http + "\"]\n\n" +
                       server_toml("demo", {}, {{"allow_users", "[\"" + other.id() + "\"]"}}));
    env.start_daemon();

    ConnectionFlood flood(http, other, 300);
    INFO("connection error: " << flood.connect_error());
    const ConnectionFlood::Check held = flood.check(2s);
    WARN("uid " << other.id() << " opened " << flood.connected() << " HTTP connections: " << held.describe());
    CHECK(held.open <= 128);
    CHECK(held.closed >= flood.connected() - 128);
    // The owner still gets in, and is served.
    HttpAnswer init = curl(with(with({"--unix-socket", http}, post_args(kInitialize)), {"http://localhost/mcp/demo"}));
    CHECK(init.status == 200);
}

TEST_CASE("over HTTP a repeated in-flight id is refused on its own POST, the first call unharmed",
          "[http]") {
    TestEnv env("http-repeat-id");
    const std::string http = start_http_demo(env);
    const std::vector<std::string> on = {"--unix-socket", http};
    const std::string url = "http://localhost/mcp/demo";
    const HttpAnswer init = curl(with(with(on, post_args(kInitialize)), {url}));
    REQUIRE(init.status == 200);
    const std::string session = init.headers.at("mcp-session-id");

    // Call 7 runs for two seconds on its own POST.
    const std::string slow = json{{"jsonrpc", "2.0"},
                                  {"id", 7},
                                  {"method", "tools/call"},
                                  {"params", {{"name", "slow"}, {"arguments", {{"steps", 20}, {"interval_ms", 100}}}}}}
                                 .dump();
    std::vector<std::string> first = {"/usr/bin/curl", "-s", "--max-time", "20"};
    for (const std::string& arg : with(with(on, post_args(slow, session, "application/json")), {url}))
        first.push_back(arg);
    BackgroundProcess running(first);
    wait_until("call 7 is in flight", 10s, [&] {
        const json stats = json::parse(env.ctl({"--json", "stats", "demo"}).out, nullptr, false);
        return stats["servers"][0]["totals"]["in_flight"] == 1;
    });

    // Another POST with id 7: refused on the POST that sent it, and nothing of it reaches the
    // first POST.
    const HttpAnswer repeated = curl(with(with(on, post_args(echo_call(7, "again"), session, "application/json")), {url}));
    INFO(repeated.raw);
    CHECK(repeated.status == 200);
    const json refused = json::parse(repeated.body, nullptr, false);
    CHECK(refused["id"] == 7);
    CHECK(refused["error"]["code"] == -32600);
    CHECK(refused["error"]["message"].get<std::string>().find("duplicate request id") != std::string::npos);
    // A client that also accepts a stream gets the same: nothing of it goes to the server.
    const HttpAnswer either = curl(with(with(on, post_args(echo_call(7, "again"), session)), {url}));
    INFO(either.raw);
    CHECK(either.status == 200);
    CHECK(json::parse(either.body, nullptr, false)["error"]["code"] == -32600);

    // The first POST gets its own answer: the tool's result, not the refusal.
    REQUIRE(running.wait_for_output("\"result\"", 20s));
    const json answer = json::parse(running.output(), nullptr, false);
    CHECK(answer["id"] == 7);
    CHECK(answer.contains("result"));
    CHECK_FALSE(answer.contains("error"));
    CHECK(echoed(json::parse(curl(with(with(on, post_args(echo_call(8, "after"), session, "application/json")), {url})).body,
                             nullptr, false)) == "after");
}

TEST_CASE("over HTTP a lazy server answers from its cache, and calls are counted and logged",
          "[http][lazy][stats]") {
    TestEnv env("http-lazy");
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nrequest_log = true\nhttp_listen = [\"unix:" + http + "\"]\n\n" +
                       server_toml("demo", {}, {{"lazy", "true"}, {"idle_timeout", "\"1s\""}}));
    env.start_daemon();
    const std::vector<std::string> on = {"--unix-socket", http};
    const std::string url = "http://localhost/mcp/demo";
    const auto starts = [&] { return count_of(env.daemon_log(), "-> starting"); };
    REQUIRE(env.ctl({"warm", "demo"}).exit_code == 0);
    wait_until("the warmed server to sleep", 20s, [&] {
        return env.ctl({"status"}).out.find("sleeping (cached ") != std::string::npos;
    });
    const std::size_t warmed = starts();

    // initialize and tools/list come from the cache: no process starts.
    const HttpAnswer init = curl(with(with(on, post_args(kInitialize)), {url}));
    INFO(init.raw);
    REQUIRE(init.status == 200);
    const std::string session = init.headers.at("mcp-session-id");
    CHECK(json::parse(init.body, nullptr, false)["result"]["serverInfo"]["name"] == "mcpd-demo-server");
    const HttpAnswer listed = curl(with(with(on, post_args(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
                                                           session, "application/json")), {url}));
    CHECK(json::parse(listed.body, nullptr, false)["result"]["tools"].size() >= 4);
    CHECK(starts() == warmed);
    CHECK(env.marked_processes().empty());
    CHECK(env.server("demo")["lazy"]["answered_from_cache"] == 2);

    // A call starts it once; stats count the call and the request log names it.
    CHECK(echoed(json::parse(curl(with(with(on, post_args(echo_call(3, "woken"), session, "application/json")), {url})).body,
                             nullptr, false)) == "woken");
    CHECK(starts() == warmed + 1);
    const json stats = json::parse(env.ctl({"--json", "stats", "demo", "--sessions"}).out, nullptr, false);
    INFO(stats.dump());
    CHECK(stats["servers"][0]["totals"]["requests"] >= 1);
    CHECK(env.daemon_log().find("client=curl-test method=tools/call tool=echo outcome=reply") != std::string::npos);
    CHECK(env.daemon_log().find("woken") == std::string::npos);
}

TEST_CASE(
    "over HTTP http_request_timeout cuts a late request and an idle connection, never an answer",
    "[http]") {
    TestEnv env("http-timeout");
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http +
                       "\"]\nhttp_request_timeout = \"400ms\"\n\n" + server_toml("demo"));
    env.start_daemon();
    const std::string session = open_mcp_session(http, "demo", "timeout");
    REQUIRE_FALSE(session.empty());
    const std::string slow = mcp_request(
        "demo", mcp_call("s", "slow", {{"steps", 3}, {"interval_ms", 400}}), session, false);
    {
        // A call that takes three times the timeout is answered, and the connection is then
        // kept for the next request: the deadline waits while a request is answered.
        HttpStreamClient client(http);
        const auto start = std::chrono::steady_clock::now();
        REQUIRE(client.send(slow));
        std::optional<HttpHead> head = client.read_head();
        REQUIRE(head);
        CHECK(head->status == 200);
        CHECK(std::chrono::steady_clock::now() - start >= 1s);
        REQUIRE(client.read_body());
        REQUIRE(client.send(
            mcp_request("demo", mcp_call("e", "echo", {{"text", "after"}}), session, false)));
        head = client.read_head();
        REQUIRE(head);
        CHECK(head->status == 200);
        const std::optional<std::string> body = client.read_body();
        REQUIRE(body);
        CHECK(call_answer_text(*body) == "after");
        // Then left idle: closed after the timeout.
        CHECK(client.wait_closed(5s));
    }
    {
        // Requests closer together than the timeout keep the connection for longer than it:
        // each answer moves the deadline (the timer is moved when it fires, not per request).
        HttpStreamClient client(http);
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < 6; ++i) {
            if (i > 0) std::this_thread::sleep_for(150ms);
            const std::string id = "kept-" + std::to_string(i);
            REQUIRE(client.send(
                mcp_request("demo", mcp_call(id, "echo", {{"text", id}}), session, false)));
            const std::optional<HttpHead> head = client.read_head(5s);
            REQUIRE(head);
            CHECK(head->status == 200);
            const std::optional<std::string> body = client.read_body();
            REQUIRE(body);
            CHECK(call_answer_text(*body) == id);
        }
        CHECK(std::chrono::steady_clock::now() - start >= 750ms);
        CHECK(client.wait_closed(5s));
    }
    {
        // A head that never ends: 408, then the close.
        HttpStreamClient client(http);
        REQUIRE(client.send("POST /mcp/demo HTTP/1.1\r\nHost: localhost\r\n"));
        const std::optional<HttpHead> head = client.read_head(5s);
        REQUIRE(head);
        CHECK(head->status == 408);
        CHECK(client.wait_closed(5s));
    }
}

TEST_CASE("over HTTP each request's Host and Origin are checked, on a kept connection too",
          "[http]") {
    // A client sends the same Host and Origin with every request and mcpd does not read an
    // unchanged pair again; a pair that changes on the same connection is read, and refused.
    TestEnv env("http-kept-checks");
    const std::string http = start_http_demo(env);
    const std::string session = open_mcp_session(http, "demo", "kept-checks");
    REQUIRE_FALSE(session.empty());
    const auto call = [&](const std::string& id, const std::string& headers) {
        std::string text =
            mcp_request("demo", mcp_call(id, "echo", {{"text", id}}), session, false);
        const std::string host = "Host: localhost\r\n";
        text.replace(text.find(host), host.size(), headers);
        return text;
    };
    const std::string plain = "Host: localhost\r\n";
    const std::string local_page = plain + "Origin: http://localhost:3000\r\n";
    const std::string other_site = plain + "Origin: http://evil.example\r\n";
    const std::string bad_host = "Host: a b\r\n";
    HttpStreamClient client(http);
    const std::pair<std::string, int> steps[] = {
        {plain, 200},      {plain, 200},      {other_site, 403}, {plain, 200},
        {local_page, 200}, {local_page, 200}, {other_site, 403}, {bad_host, 421},
        {local_page, 200}, {"Origin: null\r\n", 403}, {plain, 200}};
    int n = 0;
    for (const auto& [headers, status] : steps) {
        INFO("request " << n << ": " << headers);
        REQUIRE(client.send(call("k" + std::to_string(n++), headers)));
        const std::optional<HttpHead> head = client.read_head();
        REQUIRE(head);
        CHECK(head->status == status);
        REQUIRE(client.read_body());
    }
}
