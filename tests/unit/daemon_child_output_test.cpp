// ChildOutput, the dispatch every line a server writes on stdout goes through in production:
// the child's pings are answered at once, answers to mcpd's own requests (the handshake,
// health pings) go to the Handshake and never to a session, everything else to the router.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/server/child_output.h"
#include "fake_router_environment.h"
#include "handshake_recorder.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

struct Dispatch {
    Dispatch() {
        router.env.next_child_id = 1000;  // the router's ids, apart from the handshake's
    }

    void from_child(std::string line) {
        line.reserve(line.size() + wire::kScanPadding);
        output.on_message(wire::PaddedText{line}, &recorder.handshake, router.router);
    }

    // mcpd's initialize answered: the handshake is ready and the router serves sessions.
    void handshake_done() {
        recorder.handshake.begin();
        REQUIRE(recorder.sent.size() == 1);
        const std::string id = recorder.sent[0]["id"].dump();
        from_child(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":)" +
                   demo_initialize_result().dump() + "}");
        REQUIRE(recorder.ready.has_value());
        router.router.on_child_ready(*recorder.ready, "2025-11-25");
        recorder.sent.clear();
    }

    std::vector<std::string> to_child;
    RouterHarness router;
    HandshakeRecorder recorder;
    ChildOutput output{"demo", kTestMaxMessage,
                       [this](std::string_view line) { to_child.emplace_back(line); }};
};

}  // namespace

TEST_CASE("child output: a ping from the child is answered at once and reaches no session",
          "[child-output]") {
    Dispatch d;
    d.handshake_done();
    d.router.connect(1);
    d.from_child(R"({"jsonrpc":"2.0","id":"p-1","method":"ping"})");
    REQUIRE(d.to_child.size() == 1);
    CHECK(d.to_child[0] == R"({"jsonrpc":"2.0","id":"p-1","result":{}})");
    CHECK(d.router.env.sent_to(1).empty());
    CHECK(d.router.env.child_lines.empty());

    // A ping before the handshake is done is answered too.
    Dispatch early;
    early.from_child(R"({"jsonrpc":"2.0","id":7,"method":"ping"})");
    REQUIRE(early.to_child.size() == 1);
    CHECK(early.to_child[0] == R"({"jsonrpc":"2.0","id":7,"result":{}})");
}

TEST_CASE("child output: a health ping's answer goes to the handshake, a session's to it",
          "[child-output]") {
    Dispatch d;
    d.handshake_done();
    d.router.connect(1);
    // A session request and a health ping at the child at once.
    const std::string call = d.router.forward(
        1, R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo"}})");
    d.recorder.handshake.send_ping();
    REQUIRE(d.recorder.sent.size() == 1);
    const std::string ping_id = d.recorder.sent[0]["id"].dump();
    CHECK(ping_id != raw_id_of(call));

    d.from_child(R"({"jsonrpc":"2.0","id":)" + ping_id + R"(,"result":{}})");
    CHECK(d.recorder.pongs == 1);
    CHECK(d.router.env.sent_to(1).empty());

    d.from_child(R"({"jsonrpc":"2.0","id":)" + raw_id_of(call) + R"(,"result":{"content":[]}})");
    CHECK(d.router.only_line_to(1) == R"({"jsonrpc":"2.0","id":"c","result":{"content":[]}})");
    CHECK(d.recorder.pongs == 1);
}

TEST_CASE("child output: lines that are not JSON-RPC, or come before the handshake, reach nobody",
          "[child-output]") {
    Dispatch d;
    d.router.router.attach(1);
    d.from_child(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    d.handshake_done();
    d.router.connect(2);
    d.from_child("starting up...");
    d.from_child(R"({"jsonrpc":"1.0","method":"notifications/tools/list_changed"})");
    CHECK(d.router.env.sent_to(1).empty());
    CHECK(d.router.env.sent_to(2).empty());
    CHECK(d.to_child.empty());
    // Once ready, the same notification is the sessions'.
    d.from_child(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    CHECK(d.router.only_line_to(2) == R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
}

TEST_CASE("child output: a server's batch is split and each message routed as usual",
          "[child-output]") {
    // 2025-03-26 lets a server send a JSON array of messages on one line.
    Dispatch d;
    d.handshake_done();
    d.router.connect(1);
    d.router.connect(2);
    const std::string a = d.router.forward(
        1, R"({"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo"}})");
    const std::string b = d.router.forward(
        2, R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}})");
    const std::string c = d.router.forward(
        1, R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo"}})");
    const std::string log =
        R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})";
    d.from_child("[" + log + R"(, {"jsonrpc":"2.0","id":)" + raw_id_of(a) +
                 R"(,"result":{"content":[]}},{"jsonrpc":"2.0","id":"p","method":"ping"},)" +
                 R"({"jsonrpc":"1.0","id":)" + raw_id_of(b) + R"(,"result":{}},42] )");
    const std::vector<std::string>& to_1 = d.router.env.sent_to(1);
    REQUIRE(to_1.size() == 2);
    CHECK(to_1[0] == log);
    CHECK(to_1[1] == R"({"jsonrpc":"2.0","id":"a","result":{"content":[]}})");
    // An answer in it that is not JSON-RPC fails its request, as on a line of its own.
    const std::vector<std::string>& to_2 = d.router.env.sent_to(2);
    REQUIRE(to_2.size() == 2);
    CHECK(to_2[0] == log);
    CHECK(raw_id_of(to_2[1]) == "7");
    CHECK(error_code_of(to_2[1]) == -32603);
    REQUIRE(d.to_child.size() == 1);
    CHECK(d.to_child[0] == R"({"jsonrpc":"2.0","id":"p","result":{}})");
    CHECK(d.router.router.in_flight() == 1);  // c is still at the child

    // An empty batch holds nothing to route.
    d.router.env.clear_records();
    d.from_child("[]");
    CHECK(d.router.env.sent_to(1).empty());
    d.router.answer(c);
    CHECK(raw_id_of(d.router.only_line_to(1)) == R"("c")");
}
