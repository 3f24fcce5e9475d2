// Router, legacy children: what the child sends a session is limited to what the session's
// negotiated protocol revision has.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"
#include "router_clients.h"
#include "router_lines.h"

using namespace mcpd;
using namespace mcpd::testing;
using Catch::Matchers::Contains;

namespace {

// Every client capability there is, sub-capabilities of 2025-11-25 included.
const json kEverything = {{"sampling", {{"tools", json::object()}, {"context", json::object()}}},
                          {"elicitation", {{"form", json::object()}, {"url", json::object()}}},
                          {"roots", json::object()}};

// Session 1 negotiated `version` (the child speaks 2025-11-25) and has a request in flight.
struct OlderSession : RouterHarness {
    explicit OlderSession(const std::string& version) {
        child_ready("2025-11-25");
        connect(1, version, kEverything);
        env.next_child_id = 100;
        busy =
            forward(1, R"({"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"x"}})");
    }
    std::string busy;
};

}  // namespace

TEST_CASE("router exact: a child request the session's revision lacks is declined -32601",
          "[router][exact]") {
    struct Case {
        const char* version;
        const char* method;
        std::string params;
        const char* needs;
    };
    const std::vector<Case> cases = {
        {"2024-11-05", "elicitation/create", R"({"message":"m","requestedSchema":{}})",
         "2025-06-18"},
        {"2025-03-26", "elicitation/create", R"({"message":"m","requestedSchema":{}})",
         "2025-06-18"},
        {"2025-06-18", "sampling/createMessage", kSamplingToolsParams, "2025-11-25"},
        {"2025-03-26", "sampling/createMessage", kSamplingToolsParams, "2025-11-25"},
        {"2025-06-18", "tasks/get", R"({"taskId":"x"})", "2025-11-25"},
        {"2025-06-18", "tasks/result", R"({"taskId":"x"})", "2025-11-25"},
        {"2025-06-18", "tasks/list", "{}", "2025-11-25"},
        {"2024-11-05", "tasks/cancel", R"({"taskId":"x"})", "2025-11-25"},
    };
    for (const Case& c : cases) {
        DYNAMIC_SECTION(c.method << " to a " << c.version << " session") {
            OlderSession h(c.version);
            h.from_child(child_request(R"("q")", c.method, c.params));
            CHECK(h.env.sent_to(1).empty());
            const std::string reply = h.only_child_line();
            CHECK(raw_id_of(reply) == R"("q")");
            CHECK(error_code_of(reply) == -32601);
            const std::string message = parse(reply)["error"]["message"];
            CHECK_THAT(message, Contains(c.method));
            CHECK_THAT(message, Contains(c.version));
            CHECK_THAT(message, Contains(c.needs));
            CHECK(noted(h.env, "declined a request from the server"));
        }
    }
}

TEST_CASE("router exact: a child request the session's revision has is delivered",
          "[router][exact]") {
    struct Case {
        const char* version;
        const char* method;
        std::string params;
    };
    const std::vector<Case> cases = {
        {"2025-06-18", "elicitation/create", R"({"message":"m","requestedSchema":{}})"},
        {"2025-06-18", "sampling/createMessage", kSamplingParams},
        {"2024-11-05", "sampling/createMessage", kSamplingParams},
        {"2024-11-05", "roots/list", "{}"},
        {"2025-11-25", "sampling/createMessage", kSamplingToolsParams},
        {"2025-11-25", "tasks/get", R"({"taskId":"x"})"},
    };
    for (const Case& c : cases) {
        DYNAMIC_SECTION(c.method << " to a " << c.version << " session") {
            OlderSession h(c.version);
            const std::string request = child_request(R"("q")", c.method, c.params);
            h.from_child(request);
            CHECK(h.env.child_lines.empty());
            const std::string delivered = h.only_line_to(1);
            CHECK(delivered == child_request(raw_id_of(delivered), c.method, c.params));
        }
    }
}

TEST_CASE("router exact: task status is not sent to an owner whose revision predates tasks",
          "[router][exact]") {
    for (const std::string version : {"2025-06-18", "2025-11-25"}) {
        DYNAMIC_SECTION("owner at " << version) {
            OlderSession h(version);
            h.answer(
                h.busy,
                R"({"task":{"taskId":"t-1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttl":1000}})");
            h.env.clear_records();
            const std::string status =
                R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-1","status":"working"}})";
            h.from_child(status);
            if (version == "2025-11-25") {
                CHECK(h.only_line_to(1) == status);
            } else {
                CHECK(h.env.sent_to(1).empty());
                CHECK(noted(h.env, "session 1, notifications/tasks/status"));
            }
        }
    }
}

TEST_CASE("router exact: an elicitation completion is not sent to a session that predates it",
          "[router][exact]") {
    OlderSession h("2025-06-18");
    // A -32042 error makes the session the one waiting for the elicitation's completion.
    h.from_child(
        std::string(R"({"jsonrpc":"2.0","id":)") + raw_id_of(h.busy) +
        R"(,"error":{"code":-32042,"message":"open","data":{"elicitations":[{"mode":"url","elicitationId":"e-1","url":"https://x","message":"m"}]}}})");
    h.env.clear_records();
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e-1"}})");
    CHECK(h.env.sent_to(1).empty());
    CHECK(noted(h.env, "session 1, notifications/elicitation/complete"));
}

TEST_CASE("router exact: a task-linked notification is dropped for an owner that predates it",
          "[router][exact]") {
    OlderSession h("2025-06-18");
    h.answer(
        h.busy,
        R"({"task":{"taskId":"t-1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttl":1000}})");
    h.env.clear_records();
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-1","status":"working","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}}})");
    CHECK(h.env.sent_to(1).empty());
    // One every revision has still reaches it.
    const std::string vendor =
        R"({"jsonrpc":"2.0","method":"x-vendor/step","params":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}}})";
    h.from_child(vendor);
    CHECK(h.only_line_to(1) == vendor);
}
