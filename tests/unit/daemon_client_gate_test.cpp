// The client gate (mux/client_gate): what every message from a client must be before a router
// acts on it, and the same answers from a single server's Router and a GroupRouter.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common/json_envelope.h"
#include "daemon/mux/client_gate.h"
#include "daemon/mux/group_router.h"
#include "fake_router_environment.h"

using namespace mcpd;
using nlohmann::json;

namespace {

struct GateRun {
    std::string line;
    GateVerdict verdict;
};

GateRun gate(const std::string& line) {
    static wire::EnvelopeScanner scanner(1 << 20);
    GateRun run{line, {}};
    run.line.reserve(line.size() + wire::kScanPadding);
    wire::Envelope e;
    const wire::ScanStatus status = scanner.scan(wire::PaddedText{run.line}, e);
    run.verdict = check_client_message(status, e, run.line, scanner.error());
    return run;
}

struct GateGroupEnv : GroupEnvironment {
    std::vector<std::string> client;
    void to_client(std::string_view line) override { client.emplace_back(line); }
    void to_member(std::size_t, std::string_view) override {}
    void note(std::string_view) override {}
};

// Lines the gate refuses, each with the id the answer must carry (null when there is not
// exactly one usable id) and the error code.
struct Refused {
    const char* line;
    json id;
    int code;
};
const Refused kRefused[] = {
    {R"({"jsonrpc":"2.0","id":1,"method":)", nullptr, -32700},
    {"not json", nullptr, -32700},
    {R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", nullptr, -32600},
    {"42", nullptr, -32600},
    {R"({"jsonrpc":"1.0","id":5,"method":"ping"})", 5, -32600},
    {R"({"id":"a","method":"ping"})", "a", -32600},
    {R"({"jsonrpc":"2.0","id":7,"method":3})", 7, -32600},
    {R"({"jsonrpc":"2.0","id":7,"id":8,"method":"ping"})", nullptr, -32600},
    {R"({"jsonrpc":"2.0","id":7,"method":"ping","params":5})", 7, -32600},
    {R"({"jsonrpc":"2.0","id":7,"method":"ping","params":[1]})", 7, -32602},
    {R"({"jsonrpc":"2.0","id":"t","method":"tools/call","params":["echo"]})", "t", -32602},
    {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", nullptr, -32600},
    {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", nullptr, -32600},
    {R"({"jsonrpc":"2.0","id":9})", 9, -32600},
};

}  // namespace

TEST_CASE("client gate: requests, notifications and responses pass", "[gate]") {
    for (const char* line : {R"({"jsonrpc":"2.0","id":1,"method":"ping"})",
                             R"({"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}})",
                             R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                             R"({"jsonrpc":"2.0","id":3,"result":{}})",
                             R"({"jsonrpc":"2.0","id":"s","error":{"code":1,"message":"m"}})"}) {
        INFO(line);
        CHECK(gate(line).verdict.kind == GateVerdict::Kind::pass);
    }
}

TEST_CASE("client gate: a bad response is dropped, never answered", "[gate]") {
    for (const char* line : {R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}})",
                             R"({"jsonrpc":"1.0","id":3,"result":{}})",
                             R"({"jsonrpc":"2.0","id":{},"result":{}})",
                             R"({"id":null,"error":{"code":-32700,"message":"parse error"}})"}) {
        INFO(line);
        CHECK(gate(line).verdict.kind == GateVerdict::Kind::drop_response);
    }
}

TEST_CASE("client gate: a bad request is answered by its one usable id, with the spec's code",
          "[gate]") {
    for (const Refused& r : kRefused) {
        INFO(r.line);
        const GateRun run = gate(r.line);
        REQUIRE(run.verdict.kind == GateVerdict::Kind::reply);
        CHECK(run.verdict.code == r.code);
        CHECK((run.verdict.raw_id.empty() ? json(nullptr) : json::parse(run.verdict.raw_id)) == r.id);
        CHECK_FALSE(run.verdict.message.empty());
    }
}

TEST_CASE("client gate: a server's session and a group session refuse the same lines alike",
          "[gate]") {
    for (const Refused& r : kRefused) {
        INFO(r.line);
        testing::RouterHarness single;
        single.child_ready();
        single.connect(1);
        single.env.clear_records();
        single.send(1, r.line);
        const json from_router = json::parse(single.only_line_to(1));

        GateGroupEnv env;
        GroupSpec spec;
        spec.name = "dev";
        spec.members = {{"alpha", {}, {}, {}}};
        GroupRouter group(spec, env, 1);
        group.on_client_line(r.line);
        REQUIRE(env.client.size() == 1);
        const json from_group = json::parse(env.client.front());

        CHECK(from_router == from_group);
        CHECK(from_router["id"] == r.id);
        CHECK(from_router["error"]["code"] == r.code);
        CHECK(single.env.child_lines.empty());
    }
}
