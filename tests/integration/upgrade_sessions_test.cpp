// An upgrade in place carries the client sessions (docs/UPGRADE.md): a session on the socket
// and one whose pipes `mcpctl connect` passed go on across the exec with their ids, their
// subscriptions and their handshake; what a client had half written, or writes during the
// exec, is read by the new process; every request is answered once, with its own id, while
// sixteen clients keep pipelining through ten upgrades.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "call_text.h"
#include "harness.h"
#include "http_stream_client.h"
#include "mcp_session.h"
#include "other_user.h"
#include "proc_fs.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr const char* kCounterUri = "demo://counter";
constexpr const char* kUpdated = "notifications/resources/updated";

std::size_t descriptors_of(pid_t pid) {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
        ++count;
    return count;
}

// Updates `session` has received after its message `after`, reading what arrives meanwhile.
bool updates_after(McpSession& session, std::uint64_t after, std::size_t count, Duration timeout) {
    return poll_until(timeout, [&] {
        session.pump(20ms);
        std::size_t seen = 0;
        for (const McpMessage& m : session.notifications(kUpdated)) seen += m.seq > after ? 1 : 0;
        return seen >= count;
    });
}

// Write `bytes` as they are (no newline): a line begun and not finished.
void write_raw(McpSession& session, const std::string& bytes) {
    REQUIRE(::write(session.write_fd(), bytes.data(), bytes.size()) ==
            static_cast<ssize_t>(bytes.size()));
}

// The answer to `id`, or nullopt: for client threads, where Catch's assertions may not run.
std::optional<McpMessage> answer_to(McpSession& session, const json& id, Duration timeout) {
    return session.wait_for(
        [&](const McpMessage& m) { return m.is_response() && m.json.contains("id") && m.json["id"] == id; },
        timeout);
}

std::string echo_line(const std::string& raw_id, const std::string& text) {
    return request_line(raw_id, "tools/call", {{"name", "echo"}, {"arguments", {{"text", text}}}});
}

// What one loaded client sent and got.
struct Tally {
    std::size_t sent = 0, answered = 0, progress = 0, progress_out_of_order = 0;
    std::string first_problem;
};

// A client over HTTP: its session, and the connections it keeps alive.
struct HttpClientOf {
    std::string session;
    std::vector<std::unique_ptr<HttpStreamClient>> connections;
};

// A call reporting progress in 4 steps on the POST's own stream, with a token of its own.
void http_progress_call(HttpClientOf& client, int batch, Tally& t) {
    const std::string token = "http-tok-" + std::to_string(batch);
    HttpStreamClient& c = *client.connections[0];
    ++t.sent;
    c.send(mcp_request("live", mcp_call("p-" + std::to_string(batch), "slow", {{"steps", 4}, {"interval_ms", 20}}, token),
                       client.session, true));
    int last = 0;
    std::string answer;
    if (const std::optional<HttpHead> head = c.read_head(30s); head && head->status == 200) {
        while (const std::optional<std::string> event = c.next_event(30s)) {
            const json m = json::parse(*event, nullptr, false);
            if (!m.is_discarded() && m.value("method", "") == "notifications/progress") {
                const int value = m["params"]["progress"].get<int>();
                t.progress_out_of_order += value == last + 1 && m["params"]["progressToken"] == token ? 0 : 1;
                last = value;
                ++t.progress;
            } else {
                answer = *event;
            }
        }
    }
    if (call_answer_text(answer) == "done after 4 steps") ++t.answered;
    else if (t.first_problem.empty()) t.first_problem = "a progress call: " + answer;
}

}  // namespace

TEST_CASE("sessions on the socket and from mcpctl connect go on across upgrades, as they were",
          "[upgrade]") {
    TestEnv env("upgrade-sessions");
    env.write_registry(server_toml("live", {"--tick-ms=100"}));
    env.start_daemon();
    env.wait_state("live", "running");
    const pid_t live = *env.server_pid("live");
    const pid_t daemon = env.daemon_pid();

    McpSession socket(env.socket(), "live");
    socket.initialize("on-the-socket");
    PipedProcess agent({bin("mcpctl"), "--socket", env.socket(), "connect", "live"},
                       env.path("connect.err"));
    McpSession& passed = agent.session();
    passed.initialize("passed-pipes");
    const McpMessage subscribed =
        socket.wait_response(socket.request("resources/subscribe", {{"uri", kCounterUri}}));
    REQUIRE(subscribed.json.contains("result"));
    REQUIRE(updates_after(socket, subscribed.seq, 1, 5s));
    CHECK(call_text(passed, "echo", {{"text", "before"}}) == "before");
    const std::uint64_t socket_id = socket.session_id();

    for (int round = 1; round <= 3; ++round) {
        const std::string r = std::to_string(round);
        // A line the socket's client has half written when mcpd is replaced.
        const std::string line = echo_line("\"half-" + r + "\"", "socket " + r);
        write_raw(socket, line.substr(0, line.size() / 2));
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO("round " << round << ": " << upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        CHECK(env.daemon_pid() == daemon);
        CHECK(env.server_pid("live") == live);
        // The rest of it, to the new process.
        write_raw(socket, line.substr(line.size() / 2) + "\n");
        const McpMessage reply = socket.wait_response("half-" + r);
        CHECK(reply.tool_text() == "socket " + r);
        CHECK(call_text(passed, "echo", {{"text", "pipes " + r}}) == "pipes " + r);
        // The subscription is still this session's, at the same process.
        CHECK(updates_after(socket, reply.seq, 2, 5s));
    }
    CHECK(env.status_json()["daemon"]["upgrades"] == 3);
    CHECK(env.server("live")["sessions"] == 2);
    // Nothing was answered twice: what is left in the inboxes are notifications only.
    socket.pump(200ms);
    passed.pump(50ms);
    CHECK(socket.responses().empty());
    CHECK(passed.responses().empty());
    CHECK(passed.notifications(kUpdated).empty());  // never subscribed

    const std::string log = env.daemon_log();
    CHECK(count_of(log, "[live] ready: protocol") == 1);  // the handshake was never repeated
    CHECK(count_of(log, "session " + std::to_string(socket_id) + " carried across the upgrade") == 3);
    CHECK(count_of(log, "carried across the upgrade (pid ") == 6);

    // The agent leaves: its mcpctl connect hears the session end from the new process.
    passed.close_write();
    CHECK(agent.wait_exit(10s) == 0);
    socket.close_write();
    CHECK(socket.wait_closed(10s));
    CHECK(poll_until(5s, [&] { return env.server("live")["sessions"] == 0; }));
    // Logged exactly as any session's end (the link carried too).
    CHECK(poll_until(5s, [&] { return count_of(env.daemon_log(), "ended:") >= 2; }));
}

TEST_CASE("ten upgrades while sixteen clients pipeline calls, follow progress and hold subscriptions: every request answered once",
          "[upgrade]") {
    TestEnv env("upgrade-load");
    const std::string http = env.path("http.sock");
    // Beside it, a server waiting out a long backoff, which the upgrades carry as it is, and
    // one client each of a server with a private process per session and of a project server.
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" +
                       server_toml("live", {"--tick-ms=50"}) +
                       server_toml("flaky", {}, {{"restart", "\"always\""}, {"restart_delay", "\"1h\""}},
                                   "/bin/false") +
                       server_toml("private", {}, {{"sharing", "\"exclusive\""}}) +
                       server_toml("proj", {}, {{"sharing", "\"project\""}}));
    env.start_daemon();
    env.wait_state("live", "running");
    env.wait_state("flaky", "backoff");
    const json flaky_restarts = env.server("flaky")["restarts"];
    const pid_t live = *env.server_pid("live");
    const pid_t daemon = env.daemon_pid();

    // Six clients on the socket, six through mcpctl connect's passed pipes, two over HTTP.
    std::vector<std::unique_ptr<McpSession>> on_socket;
    std::vector<std::unique_ptr<PipedProcess>> agents;
    std::vector<McpSession*> clients;
    for (int i = 0; i < 6; ++i) {
        on_socket.push_back(std::make_unique<McpSession>(env.socket(), "live"));
        clients.push_back(on_socket.back().get());
        agents.push_back(std::make_unique<PipedProcess>(
            std::vector<std::string>{bin("mcpctl"), "--socket", env.socket(), "connect", "live"},
            env.path("connect-" + std::to_string(i) + ".err")));
        clients.push_back(&agents.back()->session());
    }
    on_socket.push_back(std::make_unique<McpSession>(env.socket(), "private"));
    clients.push_back(on_socket.back().get());
    const std::string project = env.path("project");
    REQUIRE(::mkdir(project.c_str(), 0700) == 0);
    agents.push_back(std::make_unique<PipedProcess>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 "cd '" + project + "' && exec '" + bin("mcpctl") + "' --socket '" +
                                     env.socket() + "' connect proj"},
        env.path("connect-project.err")));
    clients.push_back(&agents.back()->session());
    for (std::size_t i = 0; i < clients.size(); ++i) clients[i]->initialize("loaded-" + std::to_string(i));
    // Clients 2 and 3 (one on the socket, one through passed pipes) hold a subscription.
    for (McpSession* subscriber : {clients[2], clients[3]})
        REQUIRE(subscriber->wait_response(subscriber->request("resources/subscribe", {{"uri", kCounterUri}}))
                    .json.contains("result"));
    // The HTTP clients: one pipelining echo calls on eight kept-alive connections, one
    // following a call's progress on its POST's stream; each its own session.
    std::vector<HttpClientOf> over_http(2);
    for (std::size_t h = 0; h < over_http.size(); ++h) {
        over_http[h].session = open_mcp_session(http, "live", "http-" + std::to_string(h));
        REQUIRE_FALSE(over_http[h].session.empty());
        for (int c = 0; c < (h == 0 ? 8 : 1); ++c)
            over_http[h].connections.push_back(std::make_unique<HttpStreamClient>(http));
    }
    // The fewest over half a second: a connection being closed as it is counted is not one the
    // daemon keeps.
    std::size_t descriptors = descriptors_of(daemon);
    for (int i = 0; i < 10; ++i) {
        std::this_thread::sleep_for(50ms);
        descriptors = std::min(descriptors, descriptors_of(daemon));
    }
    const std::vector<pid_t> processes = env.marked_processes();  // live, private and proj's
    const std::size_t resident = resident_bytes(daemon).value_or(0);
    REQUIRE(resident > 0);

    std::atomic<bool> stop{false};
    std::vector<Tally> tallies(clients.size() + over_http.size());
    std::vector<std::thread> threads;
    for (std::size_t h = 0; h < over_http.size(); ++h) {
        threads.emplace_back([&, h] {
            HttpClientOf& client = over_http[h];
            Tally& t = tallies[clients.size() + h];
            int batch = 0;
            while (!stop.load()) {
                ++batch;
                if (h == 1) {
                    http_progress_call(client, batch, t);
                    continue;
                }
                // One call on each connection, then the answers.
                std::vector<std::string> texts;
                for (std::size_t k = 0; k < client.connections.size(); ++k) {
                    texts.push_back("t" + std::to_string(batch) + "-" + std::to_string(k));
                    client.connections[k]->send(mcp_request(
                        "live", mcp_call("h-" + texts.back(), "echo", {{"text", texts.back()}}), client.session, false));
                }
                t.sent += client.connections.size();
                for (std::size_t k = 0; k < client.connections.size(); ++k) {
                    const std::optional<HttpHead> head = client.connections[k]->read_head(30s);
                    const std::string body = head ? client.connections[k]->read_body(30s).value_or("") : "";
                    const json answer = json::parse(body, nullptr, false);
                    if (head && head->status == 200 && call_answer_text(body) == texts[k] &&
                        !answer.is_discarded() && answer.value("id", "") == "h-" + texts[k])
                        ++t.answered;
                    else if (t.first_problem.empty())
                        t.first_problem = "connection " + std::to_string(k) + ": " + body;
                }
            }
        });
    }
    for (std::size_t i = 0; i < clients.size(); ++i) {
        threads.emplace_back([&, i] {
            McpSession& s = *clients[i];
            Tally& t = tallies[i];
            const bool follows_progress = i < 2;
            std::map<std::string, std::string> expected;  // raw id → text
            int batch = 0;
            while (!stop.load()) {
                ++batch;
                if (follows_progress) {
                    // A call reporting progress in 4 steps, with a token of its own.
                    const std::string token = "tok-" + std::to_string(i) + "-" + std::to_string(batch);
                    const json id = s.call_tool("slow", {{"steps", 4}, {"interval_ms", 20}},
                                                {{"progressToken", token}});
                    ++t.sent;
                    const std::optional<McpMessage> reply = answer_to(s, id, 30s);
                    if (reply && reply->tool_text() == "done after 4 steps") ++t.answered;
                    else if (t.first_problem.empty()) t.first_problem = reply ? reply->raw : "no answer";
                    int last = 0;
                    for (const McpMessage& p : s.take_notifications("notifications/progress")) {
                        if (p.json["params"]["progressToken"] != token) continue;
                        const int value = p.json["params"]["progress"].get<int>();
                        t.progress_out_of_order += value == last + 1 ? 0 : 1;
                        last = value;
                        ++t.progress;
                    }
                    continue;
                }
                // Sixteen calls written at once, then their answers, in whatever order.
                for (int k = 0; k < 16; ++k) {
                    const std::string raw = "\"c" + std::to_string(i) + "-" + std::to_string(batch) +
                                            "-" + std::to_string(k) + "\"";
                    const std::string text = "t" + std::to_string(batch * 100 + k);
                    expected[raw] = text;
                    s.queue(echo_line(raw, text));
                }
                t.sent += 16;
                while (s.flush()) s.pump(1ms);
                for (auto it = expected.begin(); it != expected.end();) {
                    const std::optional<McpMessage> reply = answer_to(s, json::parse(it->first), 30s);
                    if (reply && reply->tool_text() == it->second) ++t.answered;
                    else if (t.first_problem.empty()) t.first_problem = reply ? reply->raw : "no answer to " + it->first;
                    it = expected.erase(it);
                }
            }
        });
    }
    std::this_thread::sleep_for(300ms);
    std::size_t upgrades = 0;
    for (int round = 0; round < 10; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO("upgrade " << round + 1 << ": " << upgraded.describe());
        CHECK(upgraded.exit_code == 0);
        upgrades += upgraded.exit_code == 0 ? 1 : 0;
        std::this_thread::sleep_for(100ms);
    }
    stop = true;
    for (std::thread& thread : threads) thread.join();

    CHECK(upgrades == 10);
    CHECK(env.status_json()["daemon"]["upgrades"] == 10);
    CHECK(env.daemon_pid() == daemon);
    CHECK(env.server_pid("live") == live);
    for (std::size_t h = 0; h < over_http.size(); ++h) {
        const Tally& t = tallies[clients.size() + h];
        INFO("HTTP client " << h << ": sent " << t.sent << ", answered " << t.answered
                            << ", first problem " << t.first_problem);
        CHECK(t.sent > 0);
        CHECK(t.answered == t.sent);
        CHECK(t.first_problem.empty());
        if (h == 1) {
            CHECK(t.progress == 4 * t.sent);
            CHECK(t.progress_out_of_order == 0);
        }
    }
    for (std::size_t i = 0; i < clients.size(); ++i) {
        const Tally& t = tallies[i];
        INFO("client " << i << ": sent " << t.sent << ", answered " << t.answered << ", first problem "
                       << t.first_problem << "\n" << clients[i]->describe_inbox());
        CHECK(t.sent > 0);
        CHECK(t.answered == t.sent);
        CHECK(t.first_problem.empty());
        CHECK(clients[i]->responses().empty());  // none answered twice
        if (i < 2) {
            CHECK(t.progress == 4 * t.sent);
            CHECK(t.progress_out_of_order == 0);
        }
    }
    CHECK(env.marked_processes() == processes);
    CHECK(env.state("flaky") == "backoff");
    CHECK(env.server("flaky")["restarts"] == flaky_restarts);
    // The subscriptions are still held, each by its own client.
    for (std::size_t i = 0; i < clients.size(); ++i) {
        const std::uint64_t last = clients[i]->inbox().empty() ? 0 : clients[i]->inbox().back().seq;
        if (i == 2 || i == 3) CHECK(updates_after(*clients[i], last, 2, 5s));
        else CHECK(clients[i]->notifications(kUpdated).empty());
    }
    CHECK(count_of(env.daemon_log(), "[live] ready: protocol") == 1);
    // No descriptor left behind by ten execs, and no memory. Measured after one more upgrade
    // with the clients quiet, so that the process measured holds the carried state, not the
    // pages of read buffers the last burst of load touched: those made the figure vary by
    // 6 % on a loaded machine. A connection just closed may take a moment to be seen closed.
    REQUIRE(env.ctl({"upgrade", "--wait"}).exit_code == 0);
    poll_until(5s, [&] { return descriptors_of(daemon) == descriptors; });
    CHECK(descriptors_of(daemon) == descriptors);
    const std::size_t resident_after = resident_bytes(daemon).value_or(0);
    INFO("resident before " << resident << " bytes, after " << resident_after);
    CHECK(resident_after <= resident + resident / 20);
}

TEST_CASE("a line a server had half written at the exec is read on by the new process, answered once",
          "[upgrade]") {
    TestEnv env("upgrade-server-half-line");
    // Everything the server writes goes in two halves, 1.5 s apart: the upgrade comes between.
    // No health pings: one in flight (its answer split too) would be waited out.
    env.write_registry(server_toml("split", {"--split-ms=1500", "--tick-ms=0"}, {{"health_interval", "\"0s\""}}));
    env.start_daemon();
    env.wait_state("split", "running", 20s);
    const pid_t split = *env.server_pid("split");
    McpSession session(env.socket(), "split");
    session.initialize("half-lines");
    for (int round = 1; round <= 2; ++round) {
        const std::string r = std::to_string(round);
        const json id = session.call_tool("echo", {{"text", "split " + r}});
        std::this_thread::sleep_for(300ms);  // its first half is written by now
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        CHECK(session.wait_response(id, 10s).tool_text() == "split " + r);
    }
    CHECK(env.server_pid("split") == split);
    // Both upgrades came while a line was half written, and it was read on, not lost.
    CHECK(count_of(env.daemon_log(), "bytes, read on)") == 2);
    session.pump(200ms);
    CHECK(session.responses().empty());
}

TEST_CASE("a long call in flight is carried: the new process relays its progress and its answer, once",
          "[upgrade]") {
    TestEnv env("upgrade-in-flight");
    env.write_registry(server_toml("live"));
    env.start_daemon();
    env.wait_state("live", "running");
    PipedProcess agent({bin("mcpctl"), "--socket", env.socket(), "connect", "live"},
                       env.path("connect.err"));
    McpSession& session = agent.session();
    session.initialize("long-call");
    // Ten steps of 150 ms: the upgrades happen while it runs, and none waits for it.
    const json id = session.call_tool("slow", {{"steps", 10}, {"interval_ms", 150}},
                                      {{"progressToken", "long"}});
    REQUIRE(session.wait_for([](const McpMessage& m) { return m.method() == "notifications/progress"; }, 5s));
    for (int round = 0; round < 3; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
    }
    const McpMessage reply = session.wait_response(id, 10s);
    CHECK(reply.tool_text() == "done after 10 steps");
    // Every step's progress, in order, the first one taken above.
    int last = 1;
    for (const McpMessage& p : session.take_notifications("notifications/progress")) {
        CHECK(p.json["params"]["progressToken"] == "long");
        CHECK(p.json["params"]["progress"] == last + 1);
        last = p.json["params"]["progress"].get<int>();
    }
    CHECK(last == 10);
    session.pump(300ms);
    CHECK(session.responses().empty());
    // Counted once, as answered, in the server's stats.
    const RunResult stats = env.ctl({"stats", "live", "--json"});
    INFO(stats.describe());
    const json counted = json::parse(stats.out, nullptr, false);
    REQUIRE_FALSE(counted.is_discarded());
    const json& totals = counted["servers"][0]["totals"];
    CHECK(totals["in_flight"] == 0);
    CHECK(totals["requests"].get<int>() >= 1);
    CHECK(totals["replies"] == totals["requests"]);
    CHECK(counted["servers"][0]["sessions_total"] == 1);
}

TEST_CASE("a session's private process and a project's child are carried with their sessions",
          "[upgrade]") {
    TestEnv env("upgrade-instances");
    env.write_registry(server_toml("private", {}, {{"sharing", "\"exclusive\""}}) +
                       server_toml("proj", {}, {{"sharing", "\"project\""}}));
    env.start_daemon();
    const std::string site = env.path("site");
    REQUIRE(::mkdir(site.c_str(), 0700) == 0);
    char* real = ::realpath(site.c_str(), nullptr);
    REQUIRE(real != nullptr);
    const std::string project(real);
    ::free(real);

    McpSession own(env.socket(), "private");
    own.initialize("private-client");
    PipedProcess agent({"/bin/sh", "-c",
                        "cd '" + project + "' && exec '" + bin("mcpctl") + "' --socket '" +
                            env.socket() + "' connect proj"},
                       env.path("connect.err"));
    McpSession& in_project = agent.session();
    in_project.initialize("project-agent");
    CHECK(call_text(in_project, "cwd") == project);
    CHECK(call_text(own, "echo", {{"text", "mine"}}) == "mine");
    const std::vector<pid_t> before = env.marked_processes();
    REQUIRE(before.size() == 2);

    for (int round = 0; round < 2; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        // The same two processes, each still serving its own session.
        std::vector<pid_t> now = env.marked_processes();
        CHECK(now == before);
        CHECK(call_text(own, "echo", {{"text", "still mine"}}) == "still mine");
        CHECK(call_text(in_project, "cwd") == project);
    }
    const json server = env.server("proj");
    INFO(server.dump());
    REQUIRE(server["children"].is_array());
    REQUIRE(server["children"].size() == 1);
    CHECK(server["children"][0]["project"] == project);
    CHECK(server["children"][0]["sessions"] == 1);
    // A new session of the same project joins the carried child; a new private session gets
    // a process of its own.
    PipedProcess second({"/bin/sh", "-c",
                         "cd '" + project + "' && exec '" + bin("mcpctl") + "' --socket '" +
                             env.socket() + "' connect proj"},
                        env.path("connect2.err"));
    second.session().initialize("second-agent");
    CHECK(call_text(second.session(), "cwd") == project);
    CHECK(env.marked_processes().size() == 2);
    // The private process goes with its session, as before the upgrades.
    own.close_write();
    CHECK(own.wait_closed(10s));
    wait_until("the private process to stop", 20s, [&] { return env.marked_processes().size() == 1; });
    // What it counted stays with its server's name, and an upgrade keeps that too.
    const auto totals = [&] {
        const json stats = json::parse(env.ctl({"--json", "stats", "private"}).out, nullptr, false);
        return stats.is_discarded() ? json() : stats["servers"][0]["totals"];
    };
    const json counted = totals();
    REQUIRE(counted.is_object());
    REQUIRE(counted["requests"].get<int>() >= 3);
    const RunResult upgraded = env.ctl({"upgrade", "--wait"});
    INFO(upgraded.describe());
    REQUIRE(upgraded.exit_code == 0);
    CHECK(totals() == counted);
}

TEST_CASE("a refused upgrade leaves the sessions as they were, their clients read again", "[upgrade]") {
    TestEnv env("upgrade-refused-sessions");
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" + server_toml("live"));
    env.start_daemon();
    env.wait_state("live", "running");
    McpSession socket(env.socket(), "live");
    socket.initialize("refused-socket");
    PipedProcess agent({bin("mcpctl"), "--socket", env.socket(), "connect", "live"},
                       env.path("connect.err"));
    McpSession& passed = agent.session();
    passed.initialize("refused-pipes");
    const std::string liar = env.path("liar");
    {
        std::ofstream script(liar);
        script << "#!/bin/sh\necho 'mcpd-state ok 2 0000'\n";
    }
    ::chmod(liar.c_str(), 0755);
    // An mcpd too old for this state's version refuses it, as it says.
    const std::string older = env.path("older");
    {
        std::ofstream script(older);
        script << "#!/bin/sh\necho 'mcpd: the state cannot be taken: the state is of version 3; this mcpd reads "
                  "versions 1 to 2' >&2\nexit 1\n";
    }
    ::chmod(older.c_str(), 0755);
    // An HTTP session, its connection kept alive across the refusals.
    const std::string http_session = open_mcp_session(http, "live", "refused-http");
    REQUIRE_FALSE(http_session.empty());
    HttpStreamClient kept(http);
    const std::string half = echo_line("\"during\"", "written during the refusal");
    int round = 0;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--binary", "/bin/true"}, std::vector<std::string>{"--binary", liar},
          std::vector<std::string>{"--binary", older}, std::vector<std::string>{"--binary", env.path("missing")}}) {
        const std::string post = mcp_request("live", mcp_call("h" + std::to_string(++round), "echo", {{"text", "over http"}}),
                                             http_session, false);
        REQUIRE(kept.send(post.substr(0, post.size() / 2)));
        // Half a line before, the rest after: what was held while mcpd waited is read again.
        write_raw(socket, half.substr(0, 20));
        std::vector<std::string> command = {"upgrade"};
        command.insert(command.end(), args.begin(), args.end());
        const RunResult refused = env.ctl(command);
        INFO(refused.describe());
        CHECK(refused.exit_code == 1);
        if (args[1] == older) CHECK(refused.err.find("this mcpd reads versions 1 to 2") != std::string::npos);
        write_raw(socket, half.substr(20) + "\n");
        REQUIRE(kept.send(post.substr(post.size() / 2)));
        const std::optional<HttpHead> head = kept.read_head();
        REQUIRE(head);
        CHECK(head->status == 200);
        CHECK(call_answer_text(kept.read_body().value_or("")) == "over http");
        CHECK(socket.wait_response("during").tool_text() == "written during the refusal");
        CHECK(call_text(passed, "echo", {{"text", "untouched"}}) == "untouched");
    }
    CHECK(env.status_json()["daemon"]["upgrades"] == 0);
    CHECK(env.server("live")["sessions"] == 3);
}

TEST_CASE("a dual-era server's legacy process is carried with its legacy client, the modern one beside it",
          "[upgrade]") {
    TestEnv env("upgrade-legacy");
    env.write_registry(server_toml("dual", {"--era=dual", "--tick-ms=100"}));
    env.start_daemon();
    const json modern_meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                              {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    McpSession modern(env.socket(), "dual");
    CHECK(modern.wait_response(modern.call_tool("echo", {{"text", "modern"}}, modern_meta)).tool_text() ==
          "modern");
    McpSession legacy(env.socket(), "dual");
    legacy.initialize("legacy-client");
    const McpMessage subscribed =
        legacy.wait_response(legacy.request("resources/subscribe", {{"uri", kCounterUri}}));
    REQUIRE_FALSE(subscribed.is_error());
    const json before = env.server("dual");
    INFO(before.dump());
    REQUIRE(before["legacy_process"].is_object());
    const json legacy_pid = before["legacy_process"]["pid"];
    const json modern_pid = before["pid"];

    for (int round = 0; round < 2; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        const json now = env.server("dual");
        INFO(now.dump());
        REQUIRE(now["legacy_process"].is_object());
        CHECK(now["legacy_process"]["pid"] == legacy_pid);
        CHECK(now["legacy_process"]["sessions"] == 1);
        CHECK(now["pid"] == modern_pid);
        CHECK(call_text(legacy, "echo", {{"text", "legacy " + std::to_string(round)}}) ==
              "legacy " + std::to_string(round));
        CHECK(modern.wait_response(modern.call_tool("echo", {{"text", "still modern"}}, modern_meta))
                  .tool_text() == "still modern");
        const std::uint64_t last = legacy.inbox().empty() ? 0 : legacy.inbox().back().seq;
        CHECK(updates_after(legacy, last, 1, 5s));
    }
    // Each process did its handshake once: the legacy one its initialize, the modern one its
    // discover.
    const std::string log = env.daemon_log();
    CHECK(count_of(log, "[dual] ready: protocol 2025-") == 1);
    CHECK(count_of(log, "[dual] ready: protocol 2026-07-28") == 1);
    // The legacy client leaves: its process goes, as before the upgrades.
    legacy.close_write();
    CHECK(legacy.wait_closed(10s));
    CHECK(poll_until(10s, [&] { return !env.server("dual")["legacy_process"].is_object(); }));
}

TEST_CASE("another user's session is carried as that user: it still acts as itself and sees only its own",
          "[upgrade][access]") {
    const OtherUser user;
    TestEnv env("upgrade-other-user");
    env.write_registry(kOpenSocket + server_toml("shared", {}, {{"allow_users", "[\"" + user.id() + "\"]"}}));
    env.start_daemon();
    open_directory(env.dir());
    env.wait_state("shared", "running");
    PipedProcess theirs(user.command({bin("mcpctl"), "--socket", env.socket(), "connect", "shared"}),
                        env.path("theirs.err"));
    theirs.session().initialize("other-user-agent");
    McpSession mine(env.socket(), "shared");
    mine.initialize("owner-agent");
    const auto uid_of_sessions = [&](const RunResult& listed) {
        std::vector<std::uint64_t> uids;
        const json parsed = json::parse(listed.out, nullptr, false);
        if (parsed.is_discarded()) return uids;
        for (const json& s : parsed["sessions"]) uids.push_back(s["uid"].get<std::uint64_t>());
        std::sort(uids.begin(), uids.end());
        return uids;
    };
    const RunResult upgraded = env.ctl({"upgrade", "--wait"});
    INFO(upgraded.describe());
    REQUIRE(upgraded.exit_code == 0);
    // Who each session acts as was read again from its socket: the other user's is still its.
    const RunResult all = env.ctl({"--json", "sessions"});
    INFO(all.out);
    CHECK(uid_of_sessions(all) == std::vector<std::uint64_t>{0, user.uid()});
    const RunResult own = run_process(user.command({bin("mcpctl"), "--socket", env.socket(), "--json", "sessions"}));
    INFO(own.describe());
    CHECK(uid_of_sessions(own) == std::vector<std::uint64_t>{user.uid()});
    CHECK(call_text(theirs.session(), "echo", {{"text", "still mine"}}) == "still mine");
    theirs.session().close_write();
    CHECK(theirs.wait_exit(10s) == 0);
}

