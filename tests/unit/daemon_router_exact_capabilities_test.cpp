// Router, legacy children: a child request reaches a session only when that session declared
// the capability (and sub-capability) it needs; otherwise the child gets the spec's error.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"
#include "router_clients.h"

using namespace mcpd;
using namespace mcpd::testing;
using Catch::Matchers::Contains;

namespace {

struct CapabilityRow {
    const char* what;
    json capabilities;
    const char* method;
    std::string params;
    int code;             // 0: delivered
    const char* missing;  // what the decline names
};

const std::string kForm = R"({"message":"m","requestedSchema":{"type":"object"}})";
const std::string kFormExplicit =
    R"({"mode":"form","message":"m","requestedSchema":{"type":"object"}})";
const std::string kUrl = R"({"mode":"url","elicitationId":"e","url":"https://x","message":"m"})";

std::string with_context(const std::string& value) {
    std::string params = R"({"messages":[],"maxTokens":5,"includeContext":)";
    params += value;
    params += "}";
    return params;
}

std::vector<CapabilityRow> rows() {
    const json sampling = {{"sampling", json::object()}};
    const json elicitation = {{"elicitation", json::object()}};
    const json form = {{"elicitation", {{"form", json::object()}}}};
    const json url = {{"elicitation", {{"url", json::object()}}}};
    const std::string sample = kSamplingParams;
    const std::string this_server = with_context(R"("thisServer")");
    const std::string all_servers = with_context(R"("allServers")");
    // clang-format off
    return {
        // roots/list needs roots: -32601.
        {"roots undeclared", json::object(), "roots/list", "{}", -32601, "roots"},
        {"roots null", {{"roots", nullptr}}, "roots/list", "{}", -32601, "roots"},
        {"roots declared", {{"roots", json::object()}}, "roots/list", "{}", 0, ""},
        // sampling needs sampling, tools sampling.tools, a context sampling.context: -32601.
        {"sampling undeclared", {{"roots", json::object()}}, "sampling/createMessage", sample, -32601, "sampling"},
        {"sampling true", {{"sampling", true}}, "sampling/createMessage", sample, -32601, "sampling"},
        {"sampling declared", sampling, "sampling/createMessage", sample, 0, ""},
        {"tools without sampling.tools", sampling, "sampling/createMessage", kSamplingToolsParams, -32601, "sampling.tools"},
        {"tools with sampling.tools null", {{"sampling", {{"tools", nullptr}}}}, "sampling/createMessage", kSamplingToolsParams, -32601, "sampling.tools"},
        {"tools with sampling.tools", {{"sampling", {{"tools", json::object()}}}}, "sampling/createMessage", kSamplingToolsParams, 0, ""},
        {"thisServer without sampling.context", sampling, "sampling/createMessage", this_server, -32601, "sampling.context"},
        {"allServers without sampling.context", {{"sampling", {{"tools", json::object()}}}}, "sampling/createMessage", all_servers, -32601, "sampling.context"},
        {"allServers with sampling.context null", {{"sampling", {{"context", nullptr}}}}, "sampling/createMessage", all_servers, -32601, "sampling.context"},
        {"thisServer with sampling.context", {{"sampling", {{"context", json::object()}}}}, "sampling/createMessage", this_server, 0, ""},
        {"includeContext none", sampling, "sampling/createMessage", with_context(R"("none")"), 0, ""},
        // elicitation needs elicitation and the mode it asks for: -32602.
        {"elicitation undeclared", sampling, "elicitation/create", kForm, -32602, "elicitation"},
        {"elicitation null", {{"elicitation", nullptr}}, "elicitation/create", kForm, -32602, "elicitation"},
        {"form, empty elicitation", elicitation, "elicitation/create", kForm, 0, ""},
        {"explicit form, empty elicitation", elicitation, "elicitation/create", kFormExplicit, 0, ""},
        {"form, elicitation.form", form, "elicitation/create", kForm, 0, ""},
        {"form, url only", url, "elicitation/create", kFormExplicit, -32602, "elicitation.form"},
        {"form, elicitation.form null", {{"elicitation", {{"form", nullptr}}}}, "elicitation/create", kForm, -32602, "elicitation.form"},
        {"url, empty elicitation", elicitation, "elicitation/create", kUrl, -32602, "elicitation.url"},
        {"url, form only", form, "elicitation/create", kUrl, -32602, "elicitation.url"},
        {"url, elicitation.url null", {{"elicitation", {{"url", nullptr}}}}, "elicitation/create", kUrl, -32602, "elicitation.url"},
        {"url, elicitation.url", url, "elicitation/create", kUrl, 0, ""},
        {"unknown mode", kAllClientCapabilities, "elicitation/create", R"({"mode":"sms","message":"m"})", -32602, "mode"},
    };
    // clang-format on
}

}  // namespace

TEST_CASE("router exact: every capability row of a child request", "[router][exact]") {
    for (const CapabilityRow& row : rows()) {
        DYNAMIC_SECTION(row.method << ": " << row.what) {
            RouterHarness h;
            h.child_ready();
            h.connect(1, "2025-11-25", row.capabilities);
            h.forward(1,
                      R"({"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"x"}})");
            const std::string request = child_request(R"("q")", row.method, row.params);
            h.from_child(request);
            if (row.code == 0) {
                CHECK(h.env.child_lines.empty());
                const std::string delivered = h.only_line_to(1);
                CHECK(delivered == child_request(raw_id_of(delivered), row.method, row.params));
            } else {
                CHECK(h.env.sent_to(1).empty());
                const std::string reply = h.only_child_line();
                CHECK(raw_id_of(reply) == R"("q")");
                CHECK(error_code_of(reply) == row.code);
                CHECK_THAT(parse(reply)["error"]["message"].get<std::string>(),
                           Contains(row.missing));
                CHECK_FALSE(h.env.notes.empty());
            }
        }
    }
}

TEST_CASE("router exact: a request routed by its task is checked against the owner's capabilities",
          "[router][exact]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1, "2025-11-25", {{"sampling", json::object()}});
    h.answer(
        h.forward(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"task":{}}})"),
        R"({"task":{"taskId":"t-1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttl":1000}})");
    h.env.clear_records();
    h.from_child(child_request(
        "7", "elicitation/create",
        R"({"message":"m","requestedSchema":{},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}})"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(error_code_of(h.only_child_line()) == -32602);
}
