// A StreamTransport over a real socket pair and event loop: what its output cap lets through to a
// client that reads and to one that does not, and what it does with a client's line over
// max_message_bytes.
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "byte_units.h"
#include "daemon/control/output_budget.h"
#include "daemon/mux/stream_transport.h"

using mcpd::OutputBudget;
using mcpd::ClientTransport;
using mcpd::StreamTransport;

namespace {

// One session on one end of a socket pair; the test is the client at the other end.
class SessionRig {
public:
    SessionRig(std::size_t max_message_bytes, std::size_t max_queue_bytes) {
        int fds[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
        client_ = fds[1];
        base_ = event_base_new();
        mcpd::BufferEvent bev(bufferevent_socket_new(base_, fds[0], BEV_OPT_CLOSE_ON_FREE));
        ClientTransport::Callbacks callbacks;
        callbacks.on_line = [this](ClientTransport&, mcpd::wire::PaddedText line) {
            lines.emplace_back(line.text);
        };
        callbacks.on_input_ended = [](ClientTransport&) {};
        callbacks.on_closed = [this](ClientTransport&, const std::string& reason, bool) {
            closed_reason = reason;
        };
        callbacks.on_reply_lost = [this](ClientTransport&, std::string_view id, std::string_view why) {
            lost.emplace_back(std::string(id), std::string(why));
        };
        session = std::make_unique<StreamTransport>(1, "demo", mcpd::PeerCredentials{},
                                                    std::move(bev), mcpd::BufferEvent(), writes_,
                                                    max_message_bytes, max_queue_bytes, budget_);
        session->start(std::move(callbacks));
    }
    ~SessionRig() {
        session.reset();
        ::close(client_);
        event_base_free(base_);
    }
    SessionRig(const SessionRig&) = delete;
    SessionRig& operator=(const SessionRig&) = delete;

    // One turn of the loop, without waiting.
    void turn() { event_base_loop(base_, EVLOOP_NONBLOCK); }
    // Read what the client's end holds now, at most `most` bytes; returns how many.
    std::size_t read(std::string& into, std::size_t most) {
        const std::size_t old = into.size();
        into.resize(old + most);
        const ssize_t n = ::read(client_, into.data() + old, most);
        into.resize(old + (n > 0 ? static_cast<std::size_t>(n) : 0));
        return n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    // Write all of `bytes` as the client, turning the loop while the socket is full.
    void write(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::write(client_, bytes.data(), bytes.size());
            if (n > 0) bytes.remove_prefix(static_cast<std::size_t>(n));
            REQUIRE((n > 0 || errno == EAGAIN));
            turn();
        }
        turn();
    }

    std::unique_ptr<StreamTransport> session;
    std::vector<std::string> lines;
    std::vector<std::pair<std::string, std::string>> lost;
    std::string closed_reason;

private:
    int client_ = -1;
    event_base* base_ = nullptr;
    OutputBudget budget_{256 * kMiB};
    mcpd::WriteCoalescer writes_;
};

// A message of `bytes` bytes (newline not counted), filled with `fill`.
std::string message(std::size_t bytes, char fill) {
    std::string text = R"({"jsonrpc":"2.0","id":1,"result":{"text":")";
    text.append(bytes - text.size() - 4, fill);
    text += "\"}}";
    text.resize(bytes, ' ');
    return text;
}

}  // namespace

TEST_CASE("session: two results larger than the cap sent at once reach a client that reads",
          "[session]") {
    SessionRig rig(16 * kMiB, 4 * kMiB);  // the defaults
    const std::string first = message(6 * kMiB, 'a');
    const std::string second = message(6 * kMiB, 'b');
    rig.session->send(first);
    rig.session->send(second);
    rig.session->send(R"({"jsonrpc":"2.0","method":"notifications/message"})");
    REQUIRE_FALSE(rig.session->closed());

    // The client reads 64 KiB at a time; more small messages keep coming meanwhile.
    std::string got;
    std::string expected = first + "\n" + second + "\n" +
                           R"({"jsonrpc":"2.0","method":"notifications/message"})" + "\n";
    for (int round = 0; got.size() < expected.size() && round < 100000; ++round) {
        rig.read(got, 64 * 1024);
        if (round % 50 == 49) {
            const std::string note = R"({"jsonrpc":"2.0","method":"n","params":{"round":)" +
                                     std::to_string(round) + "}}";
            rig.session->send(note);
            expected += note;
            expected += '\n';
        }
        rig.turn();
        INFO("closed: " << rig.closed_reason);
        REQUIRE_FALSE(rig.session->closed());
    }
    CHECK(got.size() == expected.size());
    CHECK(got == expected);
}

TEST_CASE("session: a client that reads nothing is cut once the cap has piled up", "[session]") {
    constexpr std::size_t kCap = 1 * kMiB;
    constexpr std::size_t kMessage = 64 * 1024;
    SessionRig rig(16 * kMiB, kCap);
    const std::string line = message(kMessage, 'x');
    std::size_t accepted = 0;
    for (int i = 0; i < 1000 && !rig.session->closed(); ++i) {
        rig.session->send(line);
        if (!rig.session->closed()) accepted += kMessage + 1;
        rig.turn();
    }
    REQUIRE(rig.session->closed());
    CHECK(rig.closed_reason.find("the client stopped reading") != std::string::npos);
    CHECK(rig.closed_reason.find("since it last read") != std::string::npos);
    // What reached the socket was read by nobody; what was queued besides: the cap, the
    // first message and the one let past it, no more.
    std::string in_socket;
    while (rig.read(in_socket, kMiB) > 0) {
    }
    INFO(accepted << " bytes accepted, " << in_socket.size() << " of them in the socket");
    CHECK(accepted - in_socket.size() <= kCap + 2 * (kMessage + 1));
    CHECK(accepted - in_socket.size() > kCap - 2 * (kMessage + 1));
}

TEST_CASE("session: a client that read and then stopped is cut too", "[session]") {
    constexpr std::size_t kCap = 1 * kMiB;
    SessionRig rig(16 * kMiB, kCap);
    const std::string big = message(3 * kMiB, 'y');
    rig.session->send(big);
    rig.session->send(big);
    std::string got;
    for (int round = 0; round < 20; ++round) {
        rig.read(got, 64 * 1024);
        rig.turn();
    }
    REQUIRE_FALSE(rig.session->closed());
    // From here on it reads nothing: small messages pile up until the cap.
    const std::string note = message(1000, 'z');
    for (int i = 0; i < 5000 && !rig.session->closed(); ++i) {
        rig.session->send(note);
        rig.turn();
    }
    CHECK(rig.session->closed());
    CHECK(rig.closed_reason.find("the client stopped reading") != std::string::npos);
}

TEST_CASE("session: an answer over max_message_bytes is reported by its id and the session stays",
          "[session]") {
    SessionRig rig(4096, 4 * kMiB);
    const std::string filler(10000, 'r');
    // The id first (most serialisers), and last (JavaScript SDKs).
    rig.write(R"({"jsonrpc":"2.0","id":"mcpd-7","result":{"roots":[{"uri":"file:///)" + filler +
              R"("}]}})" + "\n");
    rig.write(R"({"jsonrpc":"2.0","result":{"content":{"type":"text","text":")" + filler +
              R"("}},"id":12})" + "\n");
    // An error answer is an answer too.
    rig.write(R"({"jsonrpc":"2.0","id":13,"error":{"code":-1,"message":")" + filler + R"("}})" +
              "\n");
    // A request is not: it is answered, not reported.
    rig.write(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"text":")" + filler +
              R"("}})" + "\n");
    rig.write(R"({"jsonrpc":"2.0","id":4,"method":"ping"})"
              "\n");

    REQUIRE(rig.lost.size() == 3);
    CHECK(rig.lost[0].first == R"("mcpd-7")");
    CHECK(rig.lost[1].first == "12");
    CHECK(rig.lost[2].first == "13");
    for (const auto& [id, why] : rig.lost) {
        INFO(why);
        CHECK(why.find("over max_message_bytes (4096)") != std::string::npos);
        CHECK(why.find("10") != std::string::npos);
    }
    CHECK_FALSE(rig.session->closed());
    REQUIRE(rig.lines.size() == 1);  // the ping, after all of them
    CHECK(rig.lines[0] == R"({"jsonrpc":"2.0","id":4,"method":"ping"})");

    // The client is told each time; the request by its id.
    std::string got;
    while (rig.read(got, 65536) > 0) {
    }
    CHECK(got.find(R"("id":3)") != std::string::npos);
    CHECK(got.find(R"("id":null)") != std::string::npos);
}
