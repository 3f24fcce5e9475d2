// A client that closed its input stays until its requests are answered; a 2026 listen
// stream is never answered while it lives, so it does not hold the session open.
#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

TEST_CASE("router: an open listen stream does not count as unanswered", "[router][modern]") {
    RouterHarness h;
    h.router.on_child_ready(json{{"supportedVersions", {"2026-07-28"}},
                                 {"capabilities", {{"tools", {{"listChanged", true}}}}}},
                            "2026-07-28", true);
    h.router.attach(1);
    const std::string meta =
        R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
        R"("io.modelcontextprotocol/clientCapabilities":{}})";
    h.send(1, R"({"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"filter":)"
              R"({"toolsListChanged":true},)" + meta + "}}");
    h.only_child_line();
    CHECK(h.router.unanswered(1) == 0);

    h.send(1, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo",)" + meta + "}}");
    const std::string call = h.only_child_line();
    CHECK(h.router.unanswered(1) == 1);
    h.answer(call, R"({"content":[]})");
    CHECK(h.router.unanswered(1) == 0);
    CHECK(h.router.in_flight() == 1);  // the stream itself lives on until the session leaves
}
