// Router: sharing = "serialized" (docs/MULTIPLEXING.md, "Legacy children", server → client
// requests): one session request at the child at a time, so a server→client request can only
// belong to the session that is waiting. The requests that wait their turn keep every
// guarantee of "Both eras" (ids, cancellation).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

struct Serialized : RouterHarness {
    Serialized() : RouterHarness(serialized_config()) {
        child_ready();
        connect(1, "2025-11-25", {{"sampling", json::object()}});
        connect(2, "2025-11-25", {{"sampling", json::object()}});
        env.next_child_id = 100;
    }
    static config::ServerConfig serialized_config() {
        config::ServerConfig config = router_config();
        config.sharing = config::Sharing::serialized;
        return config;
    }
};

std::string call(const std::string& raw_id, const std::string& name = "slow") {
    return R"({"jsonrpc":"2.0","id":)" + raw_id + R"(,"method":"tools/call","params":{"name":")" +
           name + R"("}})";
}

}  // namespace

TEST_CASE("router: serialized requests reach the child one at a time", "[router]") {
    Serialized h;
    const std::string first = h.forward(1, call("1", "a"));
    h.send(2, call("1", "b"));
    h.send(1, call("2", "c"));
    CHECK(h.env.child_lines.empty());

    h.answer(first, R"({"n":"a"})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":1,"result":{"n":"a"}})");
    const std::string second = h.only_child_line();
    CHECK(second == call("101", "b"));

    // Only the waiting session can have caused a server→client request.
    h.from_child(
        R"({"jsonrpc":"2.0","id":"s","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}})");
    CHECK(h.env.sent_to(2).size() == 1);
    CHECK(h.env.sent_to(1).empty());
    h.env.session_lines.clear();

    h.answer(second, R"({"n":"b"})");
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":1,"result":{"n":"b"}})");
    const std::string third = h.only_child_line();
    CHECK(third == call("102", "c"));
    h.answer(third);
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":2,"result":{}})");
    CHECK(h.router.in_flight() == 0);
}

TEST_CASE("router: a serialized request waiting its turn counts as outstanding", "[router]") {
    // Ids: a request whose id is still outstanding on the same session → -32600.
    Serialized h;
    const std::string busy = h.forward(2, call("1"));
    h.send(1, call(R"("x")"));
    h.send(1, call(R"("x")", "other"));
    const std::string refusal = h.only_line_to(1);
    CHECK(error_code_of(refusal) == -32600);
    CHECK(raw_id_of(refusal) == R"("x")");
    h.answer(busy);
    CHECK(h.only_child_line() == call("101"));
}

TEST_CASE("router: cancelling a serialized request that waits keeps it from the child",
          "[router]") {
    // Cancellation: a cancelled request is not worked on; the waiting one was never sent, so
    // nothing needs to reach the child at all.
    Serialized h;
    const std::string busy = h.forward(2, call("1"));
    h.send(1, call(R"("x")"));
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}})");
    h.answer(busy);
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router: a departing session's waiting serialized requests are dropped", "[router]") {
    Serialized h;
    const std::string busy = h.forward(2, call("1"));
    h.send(1, call("1"));
    h.router.detach(1);
    h.answer(busy);
    CHECK(h.env.child_lines.empty());
    CHECK(h.router.in_flight() == 0);
}

TEST_CASE("router: serialized requests waiting their turn go to the next child", "[router]") {
    Serialized h;
    h.forward(2, call("1"));
    h.send(1, call(R"("w")"));
    h.router.on_child_gone("crashed");
    // The call at the child may have run; the one waiting its turn never reached it.
    CHECK(parse(h.only_line_to(2))["error"]["data"]["outcome"] == "unknown");
    CHECK(h.env.sent_to(1).empty());
    h.env.clear_records();
    h.child_ready();
    std::vector<std::string> calls;
    for (const std::string& line : h.env.child_lines) {
        if (parse(line).value("method", "") == "tools/call") calls.push_back(line);
    }
    REQUIRE(calls.size() == 1);
    h.env.session_lines.clear();
    h.answer(calls[0]);
    CHECK(raw_id_of(h.only_line_to(1)) == R"("w")");
}

TEST_CASE("router: a cancelled serialized request lets the next one go", "[router]") {
    Serialized h;
    h.forward(1, call("1"));
    h.send(2, call("1"));
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
    REQUIRE(h.env.child_lines.size() == 2);
    CHECK(parse(h.env.child_lines[0])["method"] == "notifications/cancelled");
    CHECK(h.env.child_lines[1] == call("101"));
}
