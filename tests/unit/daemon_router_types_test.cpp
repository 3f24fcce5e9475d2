// Router: values of the wrong JSON type where mcpd reads a field itself. Each used to throw out
// of the router and end the daemon; now each gets an answer and the router carries on.
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

std::string initialize_with(const std::string& params) {
    return R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":)" + params + "}";
}

// After whatever came before, the router still serves session `id`.
void check_still_serving(RouterHarness& h, SessionId id) {
    h.env.clear_records();
    h.send(id, R"({"jsonrpc":"2.0","id":"p","method":"ping"})");
    CHECK(parse(h.only_line_to(id))["result"] == json::object());
}

}  // namespace

TEST_CASE("router: initialize with a protocolVersion that is not a string is refused", "[router][types]") {
    for (const std::string version : {"20251125", "null", "[]", "{}", "true", "1.5"}) {
        DYNAMIC_SECTION("protocolVersion " << version) {
            RouterHarness h;
            h.child_ready();
            h.router.attach(1);
            h.send(1, initialize_with(R"({"protocolVersion":)" + version +
                                      R"(,"capabilities":{},"clientInfo":{"name":"x","version":"1"}})"));
            const std::string reply = h.only_line_to(1);
            CHECK(error_code_of(reply) == -32602);
            CHECK(parse(reply)["error"]["message"].get<std::string>().find("protocolVersion must be a string") !=
                  std::string::npos);
            CHECK(h.env.child_lines.empty());
            check_still_serving(h, 1);
        }
    }
}

TEST_CASE("router: clientInfo fields and capabilities of other types are ignored", "[router][types]") {
    for (const std::string info : {R"({"name":5,"version":"1"})", R"({"name":"x","version":null})",
                                   R"({"name":[],"version":{}})", R"("x")", "7"}) {
        DYNAMIC_SECTION("clientInfo " << info) {
            RouterHarness h;
            h.child_ready();
            h.router.attach(1);
            h.send(1, initialize_with(R"({"protocolVersion":"2025-11-25","capabilities":5,"clientInfo":)" +
                                      info + "}"));
            const json reply = parse(h.only_line_to(1));
            CHECK(reply["result"]["protocolVersion"] == "2025-11-25");
            check_still_serving(h, 1);
        }
    }
}

TEST_CASE("router: a child's sampling or elicitation request with odd field types is declined or routed, never thrown", "[router][types]") {
    const json caps = {{"sampling", json::object()}, {"elicitation", {{"form", json::object()}}}};
    struct Case {
        const char* method;
        const char* params;
        bool routed;
    };
    const Case cases[] = {
        // includeContext other than absent/"none" asks for context the session did not declare.
        {"sampling/createMessage", R"({"messages":[],"maxTokens":1,"includeContext":5})", false},
        {"sampling/createMessage", R"({"messages":[],"maxTokens":1,"includeContext":null})", true},
        {"sampling/createMessage", R"({"messages":[],"maxTokens":1,"includeContext":{}})", false},
        // A null mode is the default form; a mode of another type is neither kind.
        {"elicitation/create", R"({"message":"m","requestedSchema":{},"mode":null})", true},
        {"elicitation/create", R"({"message":"m","requestedSchema":{},"mode":7})", false},
        {"elicitation/create", R"({"message":"m","requestedSchema":{},"mode":["url"]})", false},
    };
    for (const Case& c : cases) {
        DYNAMIC_SECTION(c.method << " " << c.params) {
            RouterHarness h;
            h.child_ready();
            h.connect(1, "2025-11-25", caps);
            h.forward(1, R"({"jsonrpc":"2.0","id":"busy","method":"tools/call","params":{"name":"slow"}})");
            h.from_child(std::string(R"({"jsonrpc":"2.0","id":"s1","method":")") + c.method +
                         R"(","params":)" + c.params + "}");
            if (c.routed) {
                CHECK(parse(h.only_line_to(1))["method"] == c.method);
                CHECK(h.env.child_lines.empty());
            } else {
                CHECK(h.env.sent_to(1).empty());
                const json reply = parse(h.only_child_line());
                CHECK(reply["id"] == "s1");
            }
            check_still_serving(h, 1);
        }
    }
}

TEST_CASE("router: a session's response is never answered, however malformed", "[router][types]") {
    // An error with "id": null is what a peer sends back for a line it could not read; answering
    // it again made two such peers ping-pong forever.
    for (const std::string& line :
         {std::string(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}})"),
          std::string(R"({"jsonrpc":"2.0","id":{},"result":{}})"),
          std::string(R"({"jsonrpc":"1.0","id":3,"result":{}})"),
          std::string(R"({"id":null,"error":{"code":-32700,"message":"parse error"}})"),
          std::string(R"({"jsonrpc":"2.0","id":1.5,"error":{"code":1,"message":"m"}})")}) {
        DYNAMIC_SECTION(line) {
            RouterHarness h;
            h.child_ready();
            h.connect(1);
            h.send(1, line);
            CHECK(h.env.sent_to(1).empty());
            CHECK(h.env.child_lines.empty());
            check_still_serving(h, 1);
        }
    }
}
