// Soak: a million small requests (MCPD_SOAK_REQUESTS overrides the count) pipelined through 8
// sessions. Every reply arrives and is the request's own; afterwards mcpd holds no more
// memory than after the warm-up (5 % slack) and no more descriptors.
#include <poll.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <thread>
#include <unordered_map>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr int kSoakSessions = 8;
constexpr std::size_t kDepth = 64;  // calls each session keeps outstanding
constexpr long long kDefaultRequests = 1'000'000;
// Only a hang fails the soak on time: this long without a single reply.
constexpr Duration kStall = 60s;

long long soak_requests() {
    const char* text = std::getenv("MCPD_SOAK_REQUESTS");
    if (text == nullptr || *text == '\0') return kDefaultRequests;
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 10);
    if (*end != '\0' || value < kSoakSessions)
        FAIL("MCPD_SOAK_REQUESTS must be a count, not " << text);
    return value;
}

struct Lane {
    std::unique_ptr<McpSession> session;
    std::unordered_map<std::string, std::string> outstanding;  // raw id -> echo text
    long long sent = 0;
    long long answered = 0;
    long long wrong = 0;
    std::string first_wrong;
};

// Pipeline echo calls through every lane until each has sent `target` in all and had every
// one answered. False on a stall or a session that ends.
bool run(std::vector<Lane>& lanes, long long target) {
    std::vector<pollfd> fds(lanes.size());
    auto last_reply = Clock::now();
    for (;;) {
        bool done = true;
        for (std::size_t i = 0; i < lanes.size(); ++i) {
            Lane& lane = lanes[i];
            while (lane.outstanding.size() < kDepth && lane.sent < target) {
                const std::string id = std::to_string(++lane.sent);
                std::string text = "s" + std::to_string(i) + "-" + id;
                lane.session->queue(request_line(
                    id, "tools/call", {{"name", "echo"}, {"arguments", {{"text", text}}}}));
                lane.outstanding.emplace(id, std::move(text));
            }
            done = done && lane.sent == target && lane.outstanding.empty();
            const bool writing = lane.session->output_waiting() && lane.session->flush();
            fds[i] = pollfd{lane.session->read_fd(), short(POLLIN | (writing ? POLLOUT : 0)), 0};
        }
        if (done) return true;
        if (Clock::now() - last_reply > kStall) return false;
        ::poll(fds.data(), fds.size(), 100);
        for (std::size_t i = 0; i < lanes.size(); ++i) {
            if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            Lane& lane = lanes[i];
            lane.session->read_available([&](McpMessage&& m) {
                last_reply = Clock::now();
                const auto it = lane.outstanding.find(m.raw_id());
                if (it != lane.outstanding.end() && m.tool_text() == it->second) {
                    ++lane.answered;
                    lane.outstanding.erase(it);
                    return;
                }
                if (lane.wrong++ == 0) lane.first_wrong = m.raw.substr(0, 300);
            });
            if (lane.session->at_eof()) return false;
        }
    }
}

}  // namespace

TEST_CASE("a million pipelined requests through 8 sessions get every reply with no growth",
          "[fault][soak]") {
    const long long total = soak_requests();
    const long long per_lane = total / kSoakSessions;
    const long long warm_up = std::max<long long>(1, std::min<long long>(per_lane / 20, 5000));
    const auto started = Clock::now();
    TestEnv env("fault-soak");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t mcpd = env.daemon_pid();
    const pid_t server = *env.server_pid("demo");

    std::vector<Lane> lanes(kSoakSessions);
    for (int i = 0; i < kSoakSessions; ++i) {
        lanes[i].session = std::make_unique<McpSession>(env.socket(), "demo");
        lanes[i].session->initialize("soak-" + std::to_string(i));
    }
    const auto report = [&] {
        std::string text;
        for (const Lane& lane : lanes) {
            text += lane.session->label() + ": " + std::to_string(lane.answered) + " of " +
                    std::to_string(lane.sent) + " answered, " + std::to_string(lane.wrong) +
                    " wrong" + (lane.wrong ? " (first: " + lane.first_wrong + ")" : "") +
                    (lane.session->at_eof() ? ", ENDED" : "") + "\n";
        }
        return text;
    };

    // The warm-up grows every buffer and pool to its working size; "before" is measured after.
    {
        INFO(report());
        REQUIRE(run(lanes, warm_up));
    }
    std::this_thread::sleep_for(200ms);
    const std::size_t rss_before = *resident_bytes(mcpd);
    const std::size_t fds_before = *open_fd_count(mcpd);
    const auto soak_started = Clock::now();

    const bool finished = run(lanes, per_lane);
    const long long took = ms_since(soak_started);
    INFO(report());
    REQUIRE(finished);
    long long answered = 0, wrong = 0;
    for (const Lane& lane : lanes) {
        answered += lane.answered;
        wrong += lane.wrong;
    }
    CHECK(wrong == 0);
    CHECK(answered == per_lane * kSoakSessions);

    std::this_thread::sleep_for(200ms);
    const std::size_t rss_after = *resident_bytes(mcpd);
    const std::size_t fds_after = *open_fd_count(mcpd);
    WARN(answered << " requests answered (" << per_lane - warm_up
                  << " per session after a warm-up of " << warm_up << ") in " << took
                  << " ms; mcpd RSS " << rss_before / 1024 << " KiB after the warm-up, "
                  << rss_after / 1024 << " KiB at the end; " << fds_before << " -> " << fds_after
                  << " descriptors");
    CHECK(rss_after <= rss_before + rss_before / 20);
    CHECK(fds_after == fds_before);
    CHECK(env.server_pid("demo") == server);
    WARN("the soak took " << ms_since(started) << " ms in all");
}
