// Session multiplexing: many MCP sessions on one server process, each seeing exactly its own
// replies, progress, log messages, subscriptions and server requests.
#include <poll.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr const char* kCounter = "demo://counter";

// The raw id of call `call` of session `index` in the load test. Even sessions use the same
// ids as each other (0, "0", 2, "2", ...: an integer and a string with the same digits);
// odd ones use negative integers or integers past double precision, and strings whose bytes
// must come back as written (an escape, or UTF-8).
std::string load_raw_id(int index, int call) {
    const bool shared = index % 2 == 0;
    if (call % 2 == 0) {
        if (shared) return std::to_string(call);
        if (index % 4 == 1) return std::to_string(-1 - call);
        return std::to_string(9007199254740993LL + index * 1000LL + call);
    }
    if (shared) return "\"" + std::to_string(call - 1) + "\"";
    if (index % 4 == 1) return "\"e\\u0073c-" + std::to_string(call) + "\"";
    return "\"s" + std::to_string(index) + "-\xc3\xbc-" + std::to_string(call) + "\"";
}

// Read from every session for `wait`.
void pump_all(const std::vector<McpSession*>& sessions, Duration wait) {
    const auto deadline = Clock::now() + wait;
    do {
        for (McpSession* s : sessions) s->pump(5ms);
    } while (Clock::now() < deadline);
}

// The notifications with `method` received after message number `after_seq`.
std::size_t count_after(const McpSession& s, const std::string& method, std::uint64_t after_seq) {
    std::size_t count = 0;
    for (const McpMessage& m : s.notifications(method)) count += m.seq > after_seq ? 1 : 0;
    return count;
}

}  // namespace

TEST_CASE("32 sessions x 500 pipelined echo calls each get exactly their own replies",
          "[multiplex]") {
    constexpr int kSessions = 32;
    constexpr int kCalls = 500;
    TestEnv env("mux-load");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");

    std::vector<std::unique_ptr<McpSession>> sessions;
    std::vector<std::unordered_map<std::string, std::string>> expected(kSessions);
    std::vector<std::unordered_set<std::string>> answered(kSessions);
    for (int s = 0; s < kSessions; ++s) {
        sessions.push_back(std::make_unique<McpSession>(env.socket(), "demo"));
        sessions.back()->initialize("load-" + std::to_string(s));
        for (int c = 0; c < kCalls; ++c) {
            const std::string raw_id = load_raw_id(s, c);
            const std::string text =
                "session " + std::to_string(s) + " call " + std::to_string(c) + " \"q\" \xc3\xbc";
            REQUIRE(expected[s].emplace(raw_id, text).second);
            sessions.back()->queue(request_line(
                raw_id, "tools/call", {{"name", "echo"}, {"arguments", {{"text", text}}}}));
        }
    }

    std::vector<std::string> problems;
    std::size_t notifications = 0;
    int total = 0;
    const auto check_reply = [&](int s, McpMessage&& m) {
        const auto note = [&](const std::string& what) {
            if (problems.size() < 20)
                problems.push_back("session " + std::to_string(s) + ": " + what + ": " +
                                   m.raw.substr(0, 200));
        };
        if (m.is_notification()) {
            ++notifications;
            return;
        }
        if (!m.is_response()) return note("not a response");
        const auto it = expected[s].find(m.raw_id());
        if (it == expected[s].end()) return note("a reply with an id it never sent");
        if (!answered[s].insert(it->first).second) return note("a second reply");
        ++total;
        if (m.is_error() || m.tool_text() != it->second) note("not its own text");
    };

    const auto started = Clock::now();
    const auto deadline = started + 45s;
    std::vector<pollfd> fds(kSessions);
    bool ended = false;  // a session's stream ended: the test has failed, stop early
    while (total < kSessions * kCalls && !ended && Clock::now() < deadline) {
        for (int s = 0; s < kSessions; ++s) {
            const bool writing = sessions[s]->output_waiting() && sessions[s]->flush();
            fds[s] = pollfd{sessions[s]->read_fd(), short(POLLIN | (writing ? POLLOUT : 0)), 0};
        }
        ::poll(fds.data(), fds.size(), 100);
        for (int s = 0; s < kSessions; ++s) {
            if ((fds[s].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            sessions[s]->read_available([&](McpMessage&& m) { check_reply(s, std::move(m)); });
            if (sessions[s]->at_eof()) {
                problems.push_back("session " + std::to_string(s) + " ended");
                ended = true;
            }
        }
    }
    const long long took = ms_since(started);
    WARN(kSessions << " sessions x " << kCalls << " echo calls: " << total << " replies in " << took
                   << " ms, " << (took > 0 ? total * 1000LL / took : 0) << " calls/s");
    // Anything late would be a duplicate or a stray.
    const auto settle = Clock::now() + 300ms;
    while (Clock::now() < settle) {
        for (int s = 0; s < kSessions; ++s)
            sessions[s]->read_available([&](McpMessage&& m) { check_reply(s, std::move(m)); });
        std::this_thread::sleep_for(20ms);
    }

    INFO("first problems:\n"
         << [&] {
                std::string text;
                for (const std::string& p : problems) text += "  " + p + "\n";
                return text;
            }());
    CHECK(problems.empty());
    CHECK(total == kSessions * kCalls);
    CHECK(notifications == 0);
    for (int s = 0; s < kSessions; ++s) {
        INFO("session " << s);
        CHECK(answered[s].size() == static_cast<std::size_t>(kCalls));
    }
    CHECK(env.marked_processes().size() == 1);
}

TEST_CASE("progress goes only to the session whose call it is, with its token bytes",
          "[multiplex]") {
    TestEnv env("mux-progress");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession a(env.socket(), "demo"), b(env.socket(), "demo"), c(env.socket(), "demo"),
        d(env.socket(), "demo");
    for (McpSession* s : {&a, &b, &c, &d}) s->initialize("progress-" + s->label());

    const json args = {{"steps", 5}, {"interval_ms", 40}};
    const json id_a = a.call_tool("slow", args, {{"progressToken", 1}});
    const json id_b = b.call_tool("slow", args, {{"progressToken", "1"}});
    const json id_c = c.call_tool("slow", args);
    const json id_d = d.call_tool("slow", args, {{"progressToken", 1}});  // same token as a

    const std::vector<std::pair<McpSession*, std::string>> with_token = {
        {&a, "1"}, {&b, "\"1\""}, {&d, "1"}};
    std::map<McpSession*, McpMessage> results;
    results.emplace(&a, a.wait_response(id_a, 10s));
    results.emplace(&b, b.wait_response(id_b, 10s));
    results.emplace(&c, c.wait_response(id_c, 10s));
    results.emplace(&d, d.wait_response(id_d, 10s));
    for (auto& [session, result] : results) CHECK(result.tool_text() == "done after 5 steps");
    pump_all({&a, &b, &c, &d}, 100ms);

    for (const auto& [session, token] : with_token) {
        INFO(session->label() << " inbox:\n" << session->describe_inbox());
        const std::vector<McpMessage> progress = session->notifications("notifications/progress");
        REQUIRE(progress.size() == 5);
        for (std::size_t i = 0; i < progress.size(); ++i) {
            CHECK(raw_path(progress[i].raw, {"params", "progressToken"}) == token);
            CHECK(progress[i].json["params"]["progress"] == i + 1);
            CHECK(progress[i].seq < results.at(session).seq);  // all before the result
        }
    }
    INFO("inbox of the session without a token:\n" << c.describe_inbox());
    CHECK(c.notifications().empty());
}

TEST_CASE("a cancelled call gets no response, its progress stops, the session goes on",
          "[multiplex]") {
    TestEnv env("mux-cancel");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession a(env.socket(), "demo");
    a.initialize("canceller");

    const auto started = Clock::now();
    const json id =
        a.call_tool("slow", {{"steps", 50}, {"interval_ms", 50}}, {{"progressToken", "cancel-me"}});
    wait_until("three progress notifications", 10s, [&] {
        a.pump(10ms);
        return a.notifications("notifications/progress").size() >= 3;
    });
    a.notify("notifications/cancelled",
             {{"requestId", id}, {"reason", "the test changed its mind"}});
    a.pump(300ms);  // progress already on its way may still land
    const std::size_t at_cancel = a.notifications("notifications/progress").size();
    a.pump(2500ms + 700ms - std::chrono::duration_cast<Duration>(Clock::now() - started));
    WARN("cancel: " << at_cancel << " progress notifications up to the cancel (+300 ms), "
                    << a.notifications("notifications/progress").size() << " in all after "
                    << ms_since(started) << " ms");

    INFO("inbox:\n" << a.describe_inbox());
    CHECK(a.responses().empty());
    CHECK(a.notifications("notifications/progress").size() == at_cancel);
    CHECK(at_cancel < 50);

    const json listing = json::parse(env.ctl({"--json", "sessions", "demo"}).out);
    REQUIRE(listing["sessions"].size() == 1);
    CHECK(listing["sessions"][0]["in_flight"] == 0);

    const McpMessage echo = a.wait_response(a.call_tool("echo", {{"text", "after cancel"}}));
    CHECK(echo.tool_text() == "after cancel");
    CHECK_FALSE(a.at_eof());
}

TEST_CASE("resource updates fan out to subscribers, counted per session", "[multiplex]") {
    TestEnv env("mux-subscribe");
    env.write_registry(server_toml("demo", {"--tick-ms=100"}));
    env.start_daemon();
    McpSession a(env.socket(), "demo"), b(env.socket(), "demo"), c(env.socket(), "demo");
    for (McpSession* s : {&a, &b, &c}) s->initialize("subscriber-" + s->label());
    const std::string updated = "notifications/resources/updated";
    const auto call = [](McpSession& s, const std::string& method) {
        const McpMessage reply = s.wait_response(s.request(method, {{"uri", kCounter}}));
        INFO(s.label() << " " << method << ": " << reply.raw);
        CHECK(reply.json.contains("result"));
        return reply.seq;
    };

    const std::vector<McpSession*> all = {&a, &b, &c};
    // Wait until `s` has `count` updates after message `after`, reading every session.
    const auto wait_updates = [&](McpSession& s, std::uint64_t after, std::size_t count) {
        wait_until(std::to_string(count) + " updates on " + s.label(), 10s, [&] {
            pump_all(all, 20ms);
            return count_after(s, updated, after) >= count;
        });
    };

    call(a, "resources/subscribe");
    call(b, "resources/subscribe");
    wait_updates(a, 0, 3);
    wait_updates(b, 0, 3);
    CHECK(c.notifications(updated).empty());
    for (const McpMessage& m : b.notifications(updated)) CHECK(m.json["params"]["uri"] == kCounter);

    // a leaves: b still holds the subscription at the server. mcpd drops a from the fan-out
    // before it answers, so nothing for a may follow the answer.
    const std::uint64_t a_left = call(a, "resources/unsubscribe");
    const std::uint64_t b_seen = b.inbox().empty() ? 0 : b.inbox().back().seq;
    wait_updates(b, b_seen, 4);
    INFO("a:\n" << a.describe_inbox() << "b:\n" << b.describe_inbox());
    CHECK(count_after(a, updated, a_left) == 0);

    // b leaves: nobody is subscribed.
    const std::uint64_t b_left = call(b, "resources/unsubscribe");
    pump_all(all, 600ms);
    CHECK(count_after(a, updated, a_left) == 0);
    CHECK(count_after(b, updated, b_left) == 0);
    CHECK(c.notifications(updated).empty());

    // The count went to zero, not below: a new subscriber is served again.
    const std::uint64_t c_joined = call(c, "resources/subscribe");
    wait_updates(c, c_joined, 2);
    CHECK(count_after(a, updated, a_left) == 0);
    CHECK(count_after(b, updated, b_left) == 0);
}

TEST_CASE("each session gets log messages at its own level", "[multiplex]") {
    TestEnv env("mux-log-level");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession a(env.socket(), "demo"), b(env.socket(), "demo");
    a.initialize("verbose");
    b.initialize("quiet");
    CHECK(a.wait_response(a.request("logging/setLevel", {{"level", "debug"}}))
              .json.contains("result"));
    CHECK(b.wait_response(b.request("logging/setLevel", {{"level", "error"}}))
              .json.contains("result"));

    // Whether `s` has received the log message `text`; a ping round trip first, so anything
    // mcpd sent before has arrived.
    const auto got = [](McpSession& s, const std::string& text) {
        s.wait_response(s.request("ping"));
        for (const McpMessage& m : s.notifications("notifications/message")) {
            if (m.json["params"]["data"] == text) return true;
        }
        return false;
    };
    for (McpSession* caller : {&a, &b}) {
        const std::string info = "info from " + std::string(caller == &a ? "a" : "b");
        const std::string error = "error from " + std::string(caller == &a ? "a" : "b");
        INFO(info);
        CHECK(
            caller->wait_response(caller->call_tool("log", {{"level", "info"}, {"message", info}}))
                .tool_text() == "logged");
        CHECK(got(a, info));
        CHECK_FALSE(got(b, info));
        CHECK(
            caller
                ->wait_response(caller->call_tool("log", {{"level", "error"}, {"message", error}}))
                .tool_text() == "logged");
        CHECK(got(a, error));
        CHECK(got(b, error));
    }
    INFO("a:\n" << a.describe_inbox() << "b:\n" << b.describe_inbox());
    for (const McpMessage& m : b.notifications("notifications/message"))
        CHECK(m.json["params"]["level"] == "error");
}

TEST_CASE("a server request goes to the one session with a call in flight", "[multiplex]") {
    TestEnv env("mux-sampling");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession a(env.socket(), "demo"), b(env.socket(), "demo");
    a.initialize("sampler", {{"sampling", json::object()}});
    b.initialize("bystander", {{"sampling", json::object()}});

    const json call = a.call_tool("sample", {{"prompt", "say hi"}});
    const auto asked = a.wait_for([](const McpMessage& m) { return m.is_request(); }, 10s);
    INFO("a:\n" << a.describe_inbox());
    REQUIRE(asked);
    CHECK(asked->method() == "sampling/createMessage");
    CHECK(asked->json["params"]["messages"][0]["content"]["text"] == "say hi");
    const std::string raw_id = asked->raw_id();
    WARN("sampling/createMessage reached the session with id " << raw_id);
    CHECK(asked->json["id"].is_string());
    CHECK_FALSE(asked->json["id"].get<std::string>().starts_with("s-"));  // the server's own
    const json answer = {{"role", "assistant"},
                         {"content", {{"type", "text"}, {"text", "hi from a"}}},
                         {"model", "test-model"},
                         {"stopReason", "endTurn"}};
    a.send_line(R"({"jsonrpc":"2.0","id":)" + raw_id + R"(,"result":)" + answer.dump() + "}");
    const McpMessage result = a.wait_response(call);
    CHECK(result.tool_text() == "hi from a");
    CHECK_FALSE(result.json["result"].value("isError", false));

    // With calls in flight on both sessions, mcpd cannot tell whose it is and declines.
    const json slow =
        b.call_tool("slow", {{"steps", 10}, {"interval_ms", 50}}, {{"progressToken", "b"}});
    REQUIRE(
        b.wait_for([](const McpMessage& m) { return m.method() == "notifications/progress"; }, 5s));
    const McpMessage declined = a.wait_response(a.call_tool("sample", {{"prompt", "again"}}));
    INFO("declined: " << declined.raw);
    CHECK(declined.json["result"].value("isError", false));
    b.wait_response(slow);
    a.pump(100ms);
    INFO("b:\n" << b.describe_inbox());
    for (const McpMessage& m : b.inbox()) CHECK_FALSE(m.is_request());
}

TEST_CASE("mcpctl sessions and status show the attached sessions", "[multiplex]") {
    TestEnv env("mux-listing");
    env.write_registry(server_toml("demo") + server_toml("other"));
    env.start_daemon();
    McpSession a(env.socket(), "demo"), b(env.socket(), "demo"), c(env.socket(), "other");
    a.initialize("alpha-agent");
    b.initialize("beta-agent");
    c.initialize("gamma-agent");

    const RunResult table = env.ctl({"sessions"});
    INFO(table.describe());
    REQUIRE(table.exit_code == 0);
    for (const char* name : {"alpha-agent", "beta-agent", "gamma-agent"})
        CHECK(table.out.find(name) != std::string::npos);
    const RunResult only_demo = env.ctl({"--json", "sessions", "demo"});
    REQUIRE(only_demo.exit_code == 0);
    const json listing = json::parse(only_demo.out);
    REQUIRE(listing["sessions"].size() == 2);
    std::set<std::string> names;
    for (const json& s : listing["sessions"]) {
        names.insert(s["client"]["name"].get<std::string>());
        CHECK(s["server"] == "demo");
        CHECK(s["transport"] == "socket");
        CHECK((s["id"] == a.session_id() || s["id"] == b.session_id()));
    }
    CHECK(names == std::set<std::string>{"alpha-agent", "beta-agent"});

    // The SESSIONS column is the last one of each server's row.
    const auto sessions_column = [&](const std::string& name) {
        const RunResult status = env.ctl({"status"});
        std::istringstream lines(status.out);
        for (std::string line; std::getline(lines, line);) {
            if (!line.starts_with(name + " ")) continue;
            return line.substr(line.find_last_of(' ') + 1);
        }
        return std::string("(no row for ") + name + " in:\n" + status.out + ")";
    };
    CHECK(sessions_column("demo") == "2");
    CHECK(sessions_column("other") == "1");
    CHECK(env.server("demo")["sessions"] == 2);
    b.close_write();
    wait_until("demo lists one session", 5s, [&] { return sessions_column("demo") == "1"; });
}

TEST_CASE("autostart = false starts on the first attach, idle_timeout stops after the last",
          "[multiplex]") {
    TestEnv env("mux-on-demand");
    env.write_registry(
        server_toml("demo", {}, {{"autostart", "false"}, {"idle_timeout", "\"500ms\""}}));
    env.start_daemon();
    std::this_thread::sleep_for(300ms);
    CHECK(env.state("demo") == "stopped");
    CHECK(env.marked_processes().empty());

    const auto attached = Clock::now();
    {
        McpSession a(env.socket(), "demo");
        a.initialize("on-demand");
        WARN("first attach to an answered initialize: " << ms_since(attached) << " ms");
        CHECK(env.state("demo") == "running");
        CHECK(a.wait_response(a.call_tool("echo", {{"text", "hi"}})).tool_text() == "hi");
        std::this_thread::sleep_for(900ms);  // past idle_timeout, with a session attached
        CHECK(env.state("demo") == "running");
        CHECK(env.marked_processes().size() == 1);
    }
    const auto left = Clock::now();
    env.wait_state("demo", "stopped", 10s);
    WARN("stopped " << ms_since(left) << " ms after the last session left (idle_timeout 500ms)");
    wait_until("the server process is gone", 5s, [&] { return env.marked_processes().empty(); });
}

TEST_CASE("mcpctl connect gives an agent's pipes a session", "[multiplex]") {
    TestEnv env("mux-connect");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    const RunResult help = env.ctl({"connect", "--help"});
    REQUIRE(help.exit_code == 0);
    env.wait_state("demo", "running");
    PipedProcess ctl({bin("mcpctl"), "--socket", env.socket(), "connect", "demo"},
                     env.path("connect.err"));
    McpSession& agent = ctl.session();
    agent.initialize("piped-agent");
    const McpMessage echo =
        agent.wait_response(agent.call_tool("echo", {{"text", "through pipes"}}));
    CHECK(echo.tool_text() == "through pipes");

    const json listing = json::parse(env.ctl({"--json", "sessions"}).out);
    REQUIRE(listing["sessions"].size() == 1);
    const json& session = listing["sessions"][0];
    CHECK(session["client"]["name"] == "piped-agent");
    CHECK(session["pid"] == ctl.pid());
    WARN("mcpctl connect session transport: " << session["transport"]);
    if (session["transport"] == "fds") {
        // mcpd itself holds the agent's pipes: nobody copies the bytes.
        const auto link = [](const std::string& path) {
            std::error_code ec;
            return std::filesystem::read_symlink(path, ec).string();
        };
        const std::string stdin_pipe = link("/proc/self/fd/" + std::to_string(agent.write_fd()));
        const std::string stdout_pipe = link("/proc/self/fd/" + std::to_string(agent.read_fd()));
        std::set<std::string> held;
        for (const auto& entry : std::filesystem::directory_iterator(
                 "/proc/" + std::to_string(env.daemon_pid()) + "/fd"))
            held.insert(link(entry.path()));
        CHECK(held.contains(stdin_pipe));
        CHECK(held.contains(stdout_pipe));
        std::set<std::string> ctl_held;
        for (const auto& entry :
             std::filesystem::directory_iterator("/proc/" + std::to_string(ctl.pid()) + "/fd"))
            ctl_held.insert(link(entry.path()));
        WARN("mcpctl itself still holds the stdin pipe: " << ctl_held.contains(stdin_pipe)
                                                          << ", the stdout pipe: "
                                                          << ctl_held.contains(stdout_pipe));
    }

    const auto closed = Clock::now();
    agent.close_write();
    const auto status = ctl.wait_exit(10s);
    WARN("mcpctl connect exited " << ms_since(closed) << " ms after its stdin closed");
    INFO("mcpctl stderr: " << [&] {
        std::ifstream in(env.path("connect.err"));
        return std::string(std::istreambuf_iterator<char>(in), {});
    }());
    REQUIRE(status.has_value());
    CHECK(*status == 0);
    wait_until("the session is gone", 5s, [&] {
        return json::parse(env.ctl({"--json", "sessions"}).out)["sessions"].empty();
    });
}

TEST_CASE("a 16 MiB tool result reaches its session intact next to small calls", "[multiplex]") {
    TestEnv env("large-result");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession big(env.socket(), "demo");
    McpSession small(env.socket(), "demo");
    big.initialize("big");
    small.initialize("small");

    constexpr std::size_t kBytes = 16 * 1024 * 1024 - 4096;  // under max_message_bytes with JSON
    const auto started = Clock::now();
    const json id = big.call_tool("large", {{"bytes", kBytes}});
    const json echo = small.call_tool("echo", {{"text", "still here"}});
    CHECK(small.wait_response(echo, 30s).tool_text() == "still here");
    const McpMessage reply = big.wait_response(id, 60s);
    WARN("16 MiB result through mcpd in " << ms_since(started) << " ms");
    REQUIRE(reply.is_response());
    REQUIRE_FALSE(reply.is_error());
    const std::string text = reply.tool_text();
    CHECK(text.size() == kBytes);
    // The demo server writes a..z repeating; every byte came through unchanged.
    bool intact = true;
    for (std::size_t i = 0; i < text.size() && intact; ++i) {
        intact = text[i] == static_cast<char>('a' + i % 26);
    }
    CHECK(intact);
    CHECK(reply.raw_id() == id.dump());
}
