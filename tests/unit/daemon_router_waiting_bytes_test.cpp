// Router: what one session's lines may hold while they wait for a child that is not ready
// (or, under sharing = "project", for the session's project): bounded in bytes per session
// as well as in lines, so that one session cannot fill mcpd's memory before a child starts,
// and another session's lines still wait their turn (docs/man/mcpd.toml.5, [daemon]).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"

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
