// Router: what one session's lines may hold while they wait for a child that is not ready
// (or, under sharing = "project", for the session's project, or under "serialized" for their
// turn) and what its requests in flight keep: bounded in bytes per session as well as in
// lines, so that one session cannot fill mcpd's memory, and another session's lines still go
// through (docs/man/mcpd.toml.5, [daemon]).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/mux/request_ids.h"
#include "fake_router_environment.h"
#include "router_clients.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

// A tools/call request of about `bytes` bytes.
std::string large_call(int id, std::size_t bytes) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":")" +
           std::string(bytes, 'x') + R"("}}})";
}

}  // namespace

TEST_CASE("router: a session's waiting lines are bounded in bytes, not only in count",
          "[router][limits]") {
    RouterHarness h;
    h.connect(1);  // the initialize waits too, for the child
    h.connect(2);
    constexpr std::size_t kLine = 1024 * 1024;
    const std::size_t fit = Router::kMaxWaitingBytes / kLine;  // lines that fit, about
    const int sent = static_cast<int>(fit) + 8;
    for (int id = 1; id <= sent; ++id) h.send(1, large_call(id, kLine));
    // Past the bound, each request is answered at once; the rest wait.
    const std::vector<std::string> refused = h.env.sent_to(1);
    REQUIRE_FALSE(refused.empty());
    CHECK(refused.size() < 10);
    for (const std::string& reply : refused) CHECK(error_code_of(reply) == -32603);
    CHECK(raw_id_of(refused.back()) == std::to_string(sent));
    CHECK(h.env.child_lines.empty());
    // Another session's small line still waits its turn.
    h.send(2, R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})");
    CHECK(h.env.sent_to(2).empty());

    // Once the child is ready, what waited goes to it, and the session may queue again.
    h.child_ready();
    CHECK(h.env.child_lines.size() == static_cast<std::size_t>(sent) - refused.size() + 1);
}

namespace {

// A request for the slow tool whose id is a string of about 64 KiB, numbered `n`.
std::string call_with_long_id(int n) {
    return R"({"jsonrpc":"2.0","id":")" + std::string(64 * 1024, 'i') + std::to_string(n) +
           R"(","method":"tools/call","params":{"name":"slow"}})";
}

}  // namespace

TEST_CASE("router: what a session's requests in flight keep is bounded in bytes",
          "[router][limits]") {
    ClientPair h;
    const std::size_t each = RequestIds::cost(64 * 1024 + 5, 0);
    const int fit = static_cast<int>(Router::kMaxInFlightBytes / each);
    const int sent = fit + 8;
    for (int n = 1; n <= sent; ++n) h.send(1, call_with_long_id(n));
    // The child got those that fit; each later one was answered at once.
    const std::vector<std::string> refused = h.env.sent_to(1);
    REQUIRE(refused.size() >= 8);
    CHECK(refused.size() < 12);
    for (const std::string& reply : refused) {
        CHECK(error_code_of(reply) == -32603);
        CHECK_THAT(reply, Catch::Contains("in flight"));
    }
    CHECK(h.env.child_lines.size() == static_cast<std::size_t>(sent) - refused.size());
    const std::string first_at_child = h.env.child_lines.front();

    // Another session is not held back.
    h.env.clear_records();
    h.forward(2, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");

    // An answer frees room: the next request goes to the child.
    h.answer(first_at_child);
    h.env.clear_records();
    h.forward(1, call_with_long_id(sent + 1));
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router: a session's requests waiting their turn (serialized) are bounded in bytes",
          "[router][limits]") {
    config::ServerConfig config = router_config();
    config.sharing = config::Sharing::serialized;
    RouterHarness h(config);
    h.child_ready();
    h.connect(1);
    h.connect(2);
    h.send(1, R"({"jsonrpc":"2.0","id":"busy","method":"tools/call","params":{"name":"slow"}})");
    const std::string busy = h.only_child_line();
    constexpr std::size_t kLine = 1024 * 1024;
    const int sent = static_cast<int>(Router::kMaxWaitingBytes / kLine) + 8;
    for (int id = 1; id <= sent; ++id) h.send(1, large_call(id, kLine));
    const std::vector<std::string> refused = h.env.sent_to(1);
    REQUIRE_FALSE(refused.empty());
    CHECK(refused.size() < 10);
    for (const std::string& reply : refused) {
        CHECK(error_code_of(reply) == -32603);
        CHECK_THAT(reply, Catch::Contains("wait their turn"));
    }
    CHECK(raw_id_of(refused.back()) == std::to_string(sent));
    CHECK(h.env.child_lines.empty());

    // Another session's request still waits its turn behind them, and once the queue has
    // drained the session may queue again.
    h.env.clear_records();
    h.send(2, R"({"jsonrpc":"2.0","id":"other","method":"tools/list"})");
    CHECK(h.env.sent_to(2).empty());
    h.answer(busy);
    for (int answered = 0; answered < sent + 1 && !h.env.child_lines.empty(); ++answered) {
        const std::string next = h.env.child_lines.back();
        h.env.child_lines.clear();
        h.answer(next);
    }
    CHECK(h.env.sent_to(2).size() == 1);
    h.env.clear_records();
    h.send(1, R"({"jsonrpc":"2.0","id":"again","method":"tools/call","params":{"name":"slow"}})");
    CHECK(h.env.child_lines.size() == 1);
    CHECK(h.env.sent_to(1).empty());
}
