// Fault: the server is killed with SIGKILL while 16 sessions keep it busy. Every request in
// flight at the dead process is answered with an error, every other one exactly once, no
// session is dropped, and the restarted server serves each of them.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <map>
#include <set>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr int kSessions = 16;
constexpr std::size_t kEchoDepth = 16;  // echo calls each session keeps outstanding
constexpr int kSlowCalls = 2;           // per session, surely in flight at the kill

// One session's traffic: what it asked and what came back.
struct Traffic {
    std::unique_ptr<McpSession> session;
    std::map<std::string, std::string> echoes;  // raw id -> text, unanswered
    std::set<std::string> slow;                 // raw ids of slow calls, unanswered
    std::set<std::string> answered;             // every raw id answered so far
    int next_echo = 0;
    int echo_ok = 0;
    int echo_failed = 0;  // answered with the "server stopped" error
    int slow_failed = 0;
    int progress = 0;
    std::vector<std::string> problems;

    void send_echo() {
        const std::string id = std::to_string(next_echo++);
        const std::string text = "call " + id + " of " + session->label();
        echoes.emplace(id, text);
        session->queue(
            request_line(id, "tools/call", {{"name", "echo"}, {"arguments", {{"text", text}}}}));
    }

    void refill() {
        while (echoes.size() < kEchoDepth) send_echo();
    }

    void note(const std::string& what, const McpMessage& m) {
        if (problems.size() < 10) problems.push_back(what + ": " + m.raw.substr(0, 300));
    }

    // The "server stopped before answering" error of a request the dead process had.
    static bool stopped_error(const McpMessage& m) {
        return m.error_code() == -32603 &&
               m.json["error"].value("data", json::object()).value("reason", "") != "";
    }

    void take(McpMessage&& m) {
        if (m.is_notification()) {
            progress += m.method() == "notifications/progress";
            return;
        }
        if (!m.is_response()) return note("not a response", m);
        const std::string id = m.raw_id();
        if (!answered.insert(id).second) return note("a second answer", m);
        if (const auto it = echoes.find(id); it != echoes.end()) {
            if (stopped_error(m)) {
                ++echo_failed;
            } else if (m.tool_text() == it->second) {
                ++echo_ok;
            } else {
                note("not its own echo", m);
            }
            echoes.erase(it);
        } else if (slow.erase(id) == 1) {
            if (stopped_error(m)) {
                ++slow_failed;
            } else {
                note("a slow call in flight at the kill was not failed", m);
            }
        } else {
            note("an answer to an id it never sent", m);
        }
    }
};

// Flush and read every session until `done` holds or `timeout` passes; `refill` keeps the
// echo load going meanwhile. Returns whether `done` was reached.
bool drive(std::vector<Traffic>& traffic, bool refill, Duration timeout,
           const std::function<bool()>& done) {
    const auto deadline = Clock::now() + timeout;
    std::vector<pollfd> fds(traffic.size());
    while (!done()) {
        if (Clock::now() >= deadline) return false;
        for (std::size_t i = 0; i < traffic.size(); ++i) {
            Traffic& t = traffic[i];
            if (refill) t.refill();
            const bool writing = t.session->output_waiting() && t.session->flush();
            fds[i] = pollfd{t.session->read_fd(), short(POLLIN | (writing ? POLLOUT : 0)), 0};
        }
        ::poll(fds.data(), fds.size(), 50);
        for (std::size_t i = 0; i < traffic.size(); ++i) {
            if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            traffic[i].session->read_available(
                [&](McpMessage&& m) { traffic[i].take(std::move(m)); });
            if (traffic[i].session->at_eof()) return false;
        }
    }
    return true;
}

std::string summary(const std::vector<Traffic>& traffic) {
    std::string text;
    for (const Traffic& t : traffic) {
        text += t.session->label() + ": " + std::to_string(t.echo_ok) + " echoed, " +
                std::to_string(t.echo_failed) + " failed, " + std::to_string(t.echoes.size()) +
                " echo and " + std::to_string(t.slow.size()) + " slow unanswered" +
                (t.session->at_eof() ? ", ENDED" : "") + "\n";
        for (const std::string& p : t.problems) text += "  " + p + "\n";
    }
    return text;
}

}  // namespace

TEST_CASE("kill -9 of the server under 16-session load loses no request and no session",
          "[fault]") {
    const auto started = Clock::now();
    TestEnv env("fault-child-kill");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");

    std::vector<Traffic> traffic(kSessions);
    for (int s = 0; s < kSessions; ++s) {
        traffic[s].session = std::make_unique<McpSession>(env.socket(), "demo");
        traffic[s].session->initialize("kill-load-" + std::to_string(s));
        for (int k = 0; k < kSlowCalls; ++k) {
            const std::string id = "\"slow-" + std::to_string(k) + "\"";
            traffic[s].slow.insert(id);
            traffic[s].session->queue(
                request_line(id, "tools/call",
                             {{"name", "slow"},
                              {"arguments", {{"steps", 1000}, {"interval_ms", 50}}},
                              {"_meta", {{"progressToken", "p" + std::to_string(k)}}}}));
        }
    }

    // Load until every slow call has reported progress (so it runs at the server) and every
    // session has had a good share of echo calls answered.
    const bool loaded = drive(traffic, true, 60s, [&] {
        return std::all_of(traffic.begin(), traffic.end(), [](const Traffic& t) {
            return t.progress >= kSlowCalls && t.echo_ok >= 100;
        });
    });
    INFO(summary(traffic));
    REQUIRE(loaded);

    const pid_t victim = *env.server_pid("demo");
    const std::vector<pid_t> ours = env.marked_processes();
    REQUIRE(std::find(ours.begin(), ours.end(), victim) != ours.end());
    REQUIRE(::kill(victim, SIGKILL) == 0);

    // The load goes on through the restart: requests sent meanwhile wait for the new process.
    std::optional<pid_t> successor;
    auto last_poll = Clock::now();
    const bool restarted = drive(traffic, true, 60s, [&] {
        if (Clock::now() - last_poll < 200ms) return false;
        last_poll = Clock::now();
        const json demo = env.server("demo");
        if (demo.value("state", "") != "running" || !demo["pid"].is_number_integer()) return false;
        successor = demo["pid"].get<pid_t>();
        return *successor != victim;
    });
    INFO(summary(traffic));
    REQUIRE(restarted);
    // Then no new calls: every outstanding one must be answered, exactly once.
    const bool drained = drive(traffic, false, 60s, [&] {
        return std::all_of(traffic.begin(), traffic.end(),
                           [](const Traffic& t) { return t.echoes.empty() && t.slow.empty(); });
    });
    INFO(summary(traffic));
    REQUIRE(drained);

    int echo_ok = 0, echo_failed = 0;
    for (Traffic& t : traffic) {
        INFO(t.session->label());
        CHECK(t.problems.empty());
        CHECK(t.slow_failed == kSlowCalls);
        CHECK_FALSE(t.session->at_eof());
        echo_ok += t.echo_ok;
        echo_failed += t.echo_failed;
    }
    WARN(echo_ok << " echo calls answered, " << echo_failed
                 << " failed with the server (in flight at the kill)");

    // The new process serves every session: one more wave, all answered with their own text.
    const int before = echo_ok;
    for (Traffic& t : traffic) {
        for (int i = 0; i < 20; ++i) t.send_echo();
    }
    const bool served = drive(traffic, false, 60s, [&] {
        return std::all_of(traffic.begin(), traffic.end(),
                           [](const Traffic& t) { return t.echoes.empty(); });
    });
    INFO(summary(traffic));
    REQUIRE(served);
    int after = 0;
    for (Traffic& t : traffic) {
        CHECK(t.problems.empty());
        after += t.echo_ok;
    }
    CHECK(after - before == kSessions * 20);

    const json sessions = json::parse(env.ctl({"--json", "sessions", "demo"}).out);
    CHECK(sessions["sessions"].size() == static_cast<std::size_t>(kSessions));
    CHECK(env.marked_processes() == std::vector<pid_t>{*successor});
    WARN("kill -9 under 16-session load took " << ms_since(started) << " ms in all");
}
