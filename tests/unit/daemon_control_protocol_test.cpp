// daemon/control_connection: requests in, replies out, and the descriptors of an attach.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <span>

#include "common/fd_passing.h"
#include "daemon/control/control_connection.h"

using nlohmann::json;

namespace {

// A handler with a bug: it throws on the first request, answers the second.
class ThrowingHandler final : public mcpd::RequestHandler {
public:
    void handle_request(mcpd::ControlConnection& c, const json& request) override {
        if (request.value("command", std::string()) == "boom") throw std::runtime_error("bug");
        c.reply_ok(json{{"fine", true}});
    }
};

}  // namespace

TEST_CASE("a request whose handler throws is answered with an error and the connection goes on") {
    event_base* base = event_base_new();
    REQUIRE(base != nullptr);
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    ThrowingHandler handler;
    mcpd::OutputBudget budget(1024 * 1024);
    {
        mcpd::ControlConnection connection(
            base, mcpd::UniqueFd(fds[0]), mcpd::PeerCredentials{}, handler, budget,
            mcpd::Duration(std::chrono::seconds(10)), [](mcpd::ControlConnection&) {});
        const std::string requests =
            "{\"protocol\":1,\"command\":\"boom\"}\n{\"protocol\":1,\"command\":\"ok\"}\n";
        REQUIRE(::write(fds[1], requests.data(), requests.size()) ==
                static_cast<ssize_t>(requests.size()));
        std::string received;
        for (int turn = 0; turn < 100 && std::count(received.begin(), received.end(), '\n') < 2;
             ++turn) {
            event_base_loop(base, EVLOOP_NONBLOCK);
            char buf[4096];
            const ssize_t n = ::read(fds[1], buf, sizeof buf);
            if (n > 0) received.append(buf, static_cast<std::size_t>(n));
        }
        const auto newline = received.find('\n');
        REQUIRE(newline != std::string::npos);
        const json first = json::parse(received.substr(0, newline));
        CHECK(first["ok"] == false);
        CHECK(first["error"]["message"] ==
              "mcpd could not handle this request; nothing else was affected");
        const json second = json::parse(received.substr(newline + 1));
        CHECK(second["ok"] == true);
    }
    ::close(fds[1]);
    event_base_free(base);
}

namespace {

// attach as the daemon answers it, for a client that never reads: so much was queued for it
// already that the reply cuts it off. Nothing may then be handed on or waited for.
class AttachHandler final : public mcpd::RequestHandler {
public:
    bool handed_null = false;
    bool asked_for_fds = false;
    void handle_request(mcpd::ControlConnection& c, const json& request) override {
        c.send(json{{"filler", std::string(9 * 1024 * 1024, 'x')}});  // over the 8 MiB cap
        c.reply_ok(json{{"session", 1}});
        if (request.value("pass_fds", false)) {
            c.receive_fds([this](std::vector<mcpd::UniqueFd>) { asked_for_fds = true; },
                          [this] { asked_for_fds = true; });
        } else {
            handed_null = c.hand_over() == nullptr;
        }
    }
};

}  // namespace

TEST_CASE("an attach whose reply cuts the client off hands nothing on") {
    for (const bool pass_fds : {false, true}) {
        DYNAMIC_SECTION("pass_fds " << pass_fds) {
            event_base* base = event_base_new();
            REQUIRE(base != nullptr);
            int fds[2];
            REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
            AttachHandler handler;
            mcpd::OutputBudget budget(64 * 1024 * 1024);
            bool closed = false;
            {
                mcpd::ControlConnection connection(
                    base, mcpd::UniqueFd(fds[0]), mcpd::PeerCredentials{}, handler, budget,
                    mcpd::Duration(std::chrono::seconds(10)),
                    [&closed](mcpd::ControlConnection&) { closed = true; });
                const std::string request = std::string("{\"protocol\":1,\"command\":\"attach\",") +
                                            "\"pass_fds\":" + (pass_fds ? "true" : "false") + "}\n";
                REQUIRE(::write(fds[1], request.data(), request.size()) ==
                        static_cast<ssize_t>(request.size()));
                for (int turn = 0; turn < 100 && !closed; ++turn)
                    event_base_loop(base, EVLOOP_NONBLOCK);
                CHECK(closed);
                CHECK(connection.closed());
                if (!pass_fds) CHECK(handler.handed_null);
                CHECK_FALSE(handler.asked_for_fds);
                CHECK(budget.total() == 0);
            }
            ::close(fds[1]);
            event_base_free(base);
        }
    }
}

namespace {

// attach with pass_fds as the daemon answers it: the reply, then the client's descriptors.
class PassFdsHandler final : public mcpd::RequestHandler {
public:
    std::vector<mcpd::UniqueFd> received;
    bool hung_up = false;
    void handle_request(mcpd::ControlConnection& c, const json&) override {
        c.reply_ok(json{{"send_fds", true}});
        c.receive_fds([this](std::vector<mcpd::UniqueFd> fds) { received = std::move(fds); },
                      [this] { hung_up = true; });
    }
};

}  // namespace

TEST_CASE("attach with pass_fds takes exactly the two descriptors the client passes") {
    for (const std::size_t count : {std::size_t{2}, std::size_t{1}}) {
        DYNAMIC_SECTION(count << " descriptors") {
            event_base* base = event_base_new();
            REQUIRE(base != nullptr);
            int fds[2];
            REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
            int agent[2];
            REQUIRE(::pipe2(agent, O_CLOEXEC) == 0);
            const mcpd::UniqueFd agent_read(agent[0]), agent_write(agent[1]);
            PassFdsHandler handler;
            mcpd::OutputBudget budget(1024 * 1024);
            bool closed = false;
            {
                mcpd::ControlConnection connection(
                    base, mcpd::UniqueFd(fds[0]), mcpd::PeerCredentials{}, handler, budget,
                    mcpd::Duration(std::chrono::seconds(10)),
                    [&closed](mcpd::ControlConnection&) { closed = true; });
                const std::string request = R"({"protocol":1,"command":"attach","pass_fds":true})"
                                            "\n";
                REQUIRE(::write(fds[1], request.data(), request.size()) ==
                        static_cast<ssize_t>(request.size()));
                // Nothing may be sent before the reply has been read (docs/CONTROL.md).
                std::string reply;
                for (int turn = 0; turn < 100 && reply.find('\n') == std::string::npos; ++turn) {
                    event_base_loop(base, EVLOOP_NONBLOCK);
                    char buf[256];
                    const ssize_t n = ::read(fds[1], buf, sizeof buf);
                    if (n > 0) reply.append(buf, static_cast<std::size_t>(n));
                }
                REQUIRE(json::parse(reply)["result"]["send_fds"] == true);
                const int passed[] = {agent_read.get(), agent_write.get()};
                REQUIRE(mcpd::send_fds(fds[1], std::span<const int>(passed, count), 'F').ok());
                for (int turn = 0; turn < 100 && handler.received.empty() && !closed; ++turn)
                    event_base_loop(base, EVLOOP_NONBLOCK);
                if (count == 2) {
                    CHECK(handler.received.size() == 2);
                    CHECK_FALSE(closed);
                } else {
                    CHECK(handler.received.empty());
                    CHECK(closed);  // a client that does not keep its word is let go
                }
                CHECK_FALSE(handler.hung_up);
            }
            ::close(fds[1]);
            event_base_free(base);
        }
    }
}
