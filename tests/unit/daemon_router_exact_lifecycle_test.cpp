// Router, legacy children: a session's notifications before its initialize is answered, and
// the list_changed notifications a restarted child is entitled to.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"
#include "router_lines.h"

using namespace mcpd;
using namespace mcpd::testing;
using Catch::Matchers::Contains;

namespace {

const std::string kInitialize =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})";
const std::string kVendorNote = R"({"jsonrpc":"2.0","method":"x-vendor/note","params":{"n":1}})";

// The methods of what session `id` was sent, sorted.
std::vector<std::string> methods_sent_to(RouterHarness& h, SessionId id) {
    std::vector<std::string> methods;
    for (const std::string& line : h.env.sent_to(id)) methods.push_back(parse(line)["method"]);
    std::sort(methods.begin(), methods.end());
    return methods;
}

json result_with_capabilities(const json& capabilities) {
    json result = demo_initialize_result();
    result["capabilities"] = capabilities;
    return result;
}

}  // namespace

TEST_CASE("router exact: notifications before the initialize answer never reach the child",
          "[router][exact]") {
    RouterHarness h;
    h.child_ready();
    h.router.attach(7);
    for (
        const std::string& line :
        {kVendorNote,
         std::string(
             R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})"),
         std::string(
             R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}})")}) {
        h.env.notes.clear();
        h.send(7, line);
        CHECK(h.env.child_lines.empty());
        CHECK(h.env.sent_to(7).empty());
        CHECK(noted(h.env, "dropped a notification from a client session before its initialize"));
        CHECK(noted(h.env, std::string("session 7, ") += parse(line)["method"].get<std::string>()));
    }
    // Once answered, the same notification passes.
    h.send(7, kInitialize);
    h.env.clear_records();
    h.send(7, kVendorNote);
    CHECK(h.only_child_line() == kVendorNote);
}

TEST_CASE("router exact: a waiting notification sent before initialize is dropped when replayed",
          "[router][exact]") {
    // Lines wait in order for the child: the one sent ahead of initialize is still refused.
    RouterHarness h;
    h.router.attach(1);
    h.send(1, kVendorNote);
    h.send(1, kInitialize);
    h.send(1, R"({"jsonrpc":"2.0","method":"x-vendor/after"})");
    h.child_ready();
    CHECK(h.only_child_line() == R"({"jsonrpc":"2.0","method":"x-vendor/after"})");
    CHECK(parse(h.only_line_to(1))["result"]["protocolVersion"] == "2025-11-25");
    CHECK(noted(h.env, "session 1, x-vendor/note"));
}

TEST_CASE("router exact: notifications/initialized before initialize is still only swallowed",
          "[router][exact]") {
    RouterHarness h;
    h.child_ready();
    h.router.attach(1);
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.notes.empty());
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router exact: a modern child takes notifications without a handshake",
          "[router][exact]") {
    RouterHarness h;
    h.router.on_child_ready(json{{"supportedVersions", {"2026-07-28"}}}, "2026-07-28", true);
    h.router.attach(1);
    h.send(1, kVendorNote);
    CHECK(h.only_child_line() == kVendorNote);
}

TEST_CASE("router exact: a restarted child's list_changed follow its declared capabilities",
          "[router][exact]") {
    struct Case {
        const char* what;
        json capabilities;
        std::vector<std::string> expected;
    };
    const std::vector<Case> cases = {
        {"tools only",
         {{"tools", {{"listChanged", true}}},
          {"prompts", {{"listChanged", false}}},
          {"resources", {{"subscribe", true}}}},
         {"notifications/tools/list_changed"}},
        {"prompts and resources",
         {{"prompts", {{"listChanged", true}}}, {"resources", {{"listChanged", true}}}},
         {"notifications/prompts/list_changed", "notifications/resources/list_changed"}},
        {"all three",
         {{"tools", {{"listChanged", true}}},
          {"prompts", {{"listChanged", true}}},
          {"resources", {{"listChanged", true}}}},
         {"notifications/prompts/list_changed", "notifications/resources/list_changed",
          "notifications/tools/list_changed"}},
        {"none declared", json::object(), {}},
        {"listChanged that is not true",
         {{"tools", {{"listChanged", "true"}}},
          {"prompts", {{"listChanged", 1}}},
          {"resources", true}},
         {}},
    };
    for (const Case& c : cases) {
        DYNAMIC_SECTION(c.what) {
            RouterHarness h;
            h.child_ready();
            h.connect(1);
            h.connect(2);
            h.router.on_child_gone("crashed");
            h.env.clear_records();
            h.router.on_child_ready(result_with_capabilities(c.capabilities), "2025-11-25");
            CHECK(methods_sent_to(h, 1) == c.expected);
            CHECK(methods_sent_to(h, 2) == c.expected);
        }
    }
}

TEST_CASE("router exact: the new child's capabilities count and the old one's do not",
          "[router][exact]") {
    RouterHarness h;
    h.router.on_child_ready(result_with_capabilities({{"tools", {{"listChanged", true}}}}),
                            "2025-11-25");
    h.connect(1);
    h.router.on_child_gone("restarting");
    h.env.clear_records();
    h.router.on_child_ready(result_with_capabilities({{"prompts", {{"listChanged", true}}}}),
                            "2025-11-25");
    CHECK(methods_sent_to(h, 1) == std::vector<std::string>{"notifications/prompts/list_changed"});
}
