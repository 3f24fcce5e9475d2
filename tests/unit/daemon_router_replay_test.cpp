// Replay after a crash (router_replay.cpp, replay_policy.h; docs/MULTIPLEXING.md): what a
// child that died had in flight is sent to the next child, or answered with outcome
// "unknown", one rule at a time.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/mux/replay_policy.h"
#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;
using Catch::Matchers::Contains;
using V = ReplayVerdict;

namespace {

config::ServerConfig replay_test_config(config::Replay mode) {
    config::ServerConfig config = router_config();
    config.replay = mode;
    return config;
}

struct ReplayRunning : RouterHarness {
    explicit ReplayRunning(config::Replay mode = config::Replay::safe)
        : RouterHarness(replay_test_config(mode)) {
        child_ready("2025-11-25");
        connect(1);
        connect(2);
        env.next_child_id = 100;
    }
    // A new child is ready: the lines it received with `method`, in order.
    std::vector<std::string> restart_and_take(std::string_view method) {
        env.clear_records();
        env.next_child_id = 1;
        child_ready("2025-11-25");
        std::vector<std::string> lines;
        for (const std::string& line : env.child_lines) {
            if (parse(line).value("method", "") == method) lines.push_back(line);
        }
        env.child_lines.clear();
        env.session_lines.clear();  // what a restart tells them (the lists may have changed)
        return lines;
    }
};

std::string replay_request(const std::string& raw_id, const std::string& method,
                    const std::string& params = "{}") {
    return R"({"jsonrpc":"2.0","id":)" + raw_id + R"(,"method":")" + method +
           R"(","params":)" + params + "}";
}

std::string tool_call(const std::string& raw_id, const std::string& tool) {
    return replay_request(raw_id, "tools/call", R"({"name":")" + tool + R"(","arguments":{}})");
}

const std::string kReplayTools = R"({"tools":[
    {"name":"look","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
    {"name":"put","inputSchema":{"type":"object"},
     "annotations":{"idempotentHint":true,"destructiveHint":false}},
    {"name":"wipe","inputSchema":{"type":"object"},
     "annotations":{"readOnlyHint":true,"destructiveHint":true}},
    {"name":"send","inputSchema":{"type":"object"}}]})";

}  // namespace

// ---- the policy, one rule at a time ----

TEST_CASE("replay policy: a request never written is always sent again") {
    for (const config::Replay mode :
         {config::Replay::off, config::Replay::safe, config::Replay::annotated}) {
        ReplayFacts facts{"tools/call", false, false, 3, std::nullopt, mode};
        CHECK(replay_verdict(facts) == V::unwritten);
    }
}

TEST_CASE("replay policy: the methods safe by the specification are replayed once") {
    for (const char* method :
         {"tools/list", "prompts/list", "resources/list", "resources/templates/list",
          "resources/read", "prompts/get", "completion/complete", "ping", "server/discover"}) {
        INFO(method);
        CHECK(replay_verdict({method, true, false, 0, std::nullopt, config::Replay::safe}) ==
              V::safe);
        CHECK(replay_verdict({method, true, false, 1, std::nullopt, config::Replay::safe}) ==
              V::poison);
        CHECK(replay_verdict({method, true, false, 0, std::nullopt, config::Replay::off}) ==
              V::unknown);
    }
    for (const char* method : {"tools/call", "resources/subscribe", "tasks/list", "x-vendor/list",
                               "logging/setLevel", ""}) {
        INFO(method);
        CHECK(replay_verdict({method, true, false, 0, std::nullopt, config::Replay::safe}) ==
              V::unknown);
    }
}

TEST_CASE("replay policy: a tools/call is replayed only for annotated tools, and only when "
          "the server opted in") {
    const ToolHints read_only{true, std::nullopt, std::nullopt};
    const ToolHints idempotent_kind{std::nullopt, true, false};
    const ToolHints idempotent_maybe_destructive{std::nullopt, true, std::nullopt};
    const ToolHints contradictory{true, std::nullopt, true};
    const ToolHints none{};
    auto verdict = [](const ToolHints& hints, config::Replay mode) {
        return replay_verdict({"tools/call", true, false, 0, hints, mode});
    };
    CHECK(verdict(read_only, config::Replay::annotated) == V::annotated);
    CHECK(verdict(idempotent_kind, config::Replay::annotated) == V::annotated);
    // destructiveHint defaults to true in the specification; contradictions fail closed.
    CHECK(verdict(idempotent_maybe_destructive, config::Replay::annotated) == V::unknown);
    CHECK(verdict(contradictory, config::Replay::annotated) == V::unknown);
    CHECK(verdict(none, config::Replay::annotated) == V::unknown);
    // Annotations are untrusted unless the server opted in.
    CHECK(verdict(read_only, config::Replay::safe) == V::unknown);
    CHECK(verdict(read_only, config::Replay::off) == V::unknown);
    // A tool the child never listed.
    CHECK(replay_verdict({"tools/call", true, false, 0, std::nullopt, config::Replay::annotated}) ==
          V::unknown);
}

TEST_CASE("replay policy: progress relayed commits a request") {
    CHECK(replay_verdict({"resources/read", true, true, 0, std::nullopt, config::Replay::safe}) ==
          V::progressed);
    CHECK(replay_verdict({"resources/read", false, true, 0, std::nullopt, config::Replay::safe}) ==
          V::unwritten);
}

TEST_CASE("replay policy: only what could be replayed keeps its line") {
    CHECK(worth_keeping("tools/list", std::nullopt, config::Replay::safe));
    CHECK_FALSE(worth_keeping("tools/list", std::nullopt, config::Replay::off));
    CHECK_FALSE(worth_keeping("tools/call", ToolHints{true, {}, {}}, config::Replay::safe));
    CHECK(worth_keeping("tools/call", ToolHints{true, {}, {}}, config::Replay::annotated));
    CHECK_FALSE(worth_keeping("tools/call", std::nullopt, config::Replay::annotated));
}

// ---- the router carrying it out ----

TEST_CASE("router replay: a safe request in flight is sent to the next child with the "
          "session's id") {
    ReplayRunning h;
    h.forward(1, replay_request(R"("list-1")", "tools/list"));
    h.forward(2, replay_request("7", "resources/read", R"({"uri":"file:///a"})"));
    h.router.on_child_gone("the server exited with status 9");
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.router.unanswered(1) == 1);

    const std::vector<std::string> lists = h.restart_and_take("tools/list");
    const std::vector<std::string> reads = h.restart_and_take("resources/read");
    REQUIRE(lists.size() == 1);
    REQUIRE(reads.empty());  // taken with the first restart already
    h.answer(lists[0], R"({"tools":[]})");
    CHECK(raw_id_of(h.only_line_to(1)) == R"("list-1")");
    CHECK(h.router.replay().count_of(V::safe) == 2);
    CHECK(h.router.stats().total().replayed == 2);
    CHECK(h.router.stats().total().child_died == 0);
}

TEST_CASE("router replay: replayed requests go in their order, ahead of lines that came "
          "later") {
    ReplayRunning h;
    h.forward(1, replay_request("1", "prompts/get", R"({"name":"a"})"));
    h.forward(1, replay_request("2", "prompts/get", R"({"name":"b"})"));
    h.router.on_child_gone("crashed");
    h.send(1, replay_request("3", "prompts/get", R"({"name":"c"})"));
    const std::vector<std::string> got = h.restart_and_take("prompts/get");
    REQUIRE(got.size() == 3);
    CHECK(parse(got[0])["params"]["name"] == "a");
    CHECK(parse(got[1])["params"]["name"] == "b");
    CHECK(parse(got[2])["params"]["name"] == "c");
}

TEST_CASE("router replay: a tools/call that reached the child gets outcome unknown") {
    ReplayRunning h;
    h.forward(1, tool_call("5", "send"));
    h.router.on_child_gone("the server exited with status 1");
    const std::string reply = h.only_line_to(1);
    CHECK(raw_id_of(reply) == "5");
    CHECK(error_code_of(reply) == -32603);
    CHECK(parse(reply)["error"]["data"]["outcome"] == "unknown");
    CHECK(parse(reply)["error"]["data"]["reason"] == "the server exited with status 1");
    CHECK(h.router.replay().count_of(V::unknown) == 1);
    CHECK(h.restart_and_take("tools/call").empty());
}

TEST_CASE("router replay: a request the child never got is sent again, with its own id and "
          "progress token") {
    ReplayRunning h;
    const std::string at_child = h.forward(
        1, replay_request(R"("c1")", "tools/call",
                   R"({"name":"send","_meta":{"progressToken":"tok-9"},"arguments":{}})"));
    const std::string written = h.forward(2, tool_call("8", "send"));
    // The child died before its stdin took the first line; the second reached it. The
    // unwritten bytes start with the end of a line the pipe took in part.
    const std::string unwritten = "\"x\"}}\n" + at_child + "\n";
    h.router.on_child_gone("crashed", unwritten);
    CHECK(h.env.sent_to(1).empty());
    CHECK(parse(h.only_line_to(2))["error"]["data"]["outcome"] == "unknown");

    const std::vector<std::string> calls = h.restart_and_take("tools/call");
    REQUIRE(calls.size() == 1);
    const json again = parse(calls[0]);
    CHECK(again["params"]["name"] == "send");
    CHECK(again["params"]["_meta"]["progressToken"] != "tok-9");  // mcpd's own again
    h.from_child(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                 again["params"]["_meta"]["progressToken"].dump() + R"(,"progress":1}})");
    CHECK(parse(h.only_line_to(1))["params"]["progressToken"] == "tok-9");
    h.answer(calls[0], R"({"content":[]})");
    CHECK(raw_id_of(h.only_line_to(1)) == R"("c1")");
    CHECK(h.router.replay().count_of(V::unwritten) == 1);
}

TEST_CASE("router replay: a request the child could not take is sent to the next child") {
    ReplayRunning h;
    h.env.child_accepts = false;
    h.send(1, tool_call("1", "send"));
    CHECK(h.env.refused_child_lines.size() == 1);
    h.router.on_child_gone("stdin closed");
    CHECK(h.env.sent_to(1).empty());
    h.env.child_accepts = true;
    const std::vector<std::string> calls = h.restart_and_take("tools/call");
    REQUIRE(calls.size() == 1);
    h.answer(calls[0]);
    CHECK(raw_id_of(h.only_line_to(1)) == "1");
}

TEST_CASE("router replay: annotated tools are replayed when the server opted in") {
    ReplayRunning h(config::Replay::annotated);
    const std::string list = h.forward(1, replay_request("1", "tools/list"));
    h.answer(list, kReplayTools);
    h.env.clear_records();
    h.forward(1, tool_call("10", "look"));
    h.forward(1, tool_call("11", "put"));
    h.forward(1, tool_call("12", "wipe"));
    h.forward(1, tool_call("13", "send"));
    h.router.on_child_gone("crashed");
    std::vector<std::string> answered;
    for (const std::string& line : h.env.sent_to(1)) {
        answered.push_back(raw_id_of(line));
        CHECK(parse(line)["error"]["data"]["outcome"] == "unknown");
    }
    std::sort(answered.begin(), answered.end());
    CHECK(answered == std::vector<std::string>{"12", "13"});
    const std::vector<std::string> calls = h.restart_and_take("tools/call");
    REQUIRE(calls.size() == 2);
    CHECK(parse(calls[0])["params"]["name"] == "look");
    CHECK(parse(calls[1])["params"]["name"] == "put");
    CHECK(h.router.replay().count_of(V::annotated) == 2);
}

TEST_CASE("router replay: the same tools are not replayed without replay = \"annotated\"") {
    ReplayRunning h(config::Replay::safe);
    const std::string list = h.forward(1, replay_request("1", "tools/list"));
    h.answer(list, kReplayTools);
    h.env.clear_records();
    h.forward(1, tool_call("10", "look"));
    h.router.on_child_gone("crashed");
    CHECK(parse(h.only_line_to(1))["error"]["data"]["outcome"] == "unknown");
}

TEST_CASE("router replay: a request whose progress reached its client is not replayed") {
    ReplayRunning h;
    const std::string at_child = h.forward(
        1, replay_request("4", "resources/read",
                   R"({"uri":"file:///big","_meta":{"progressToken":"t"}})"));
    h.from_child(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                 raw_progress_token_of(at_child) + R"(,"progress":1}})");
    h.env.clear_records();
    h.router.on_child_gone("crashed");
    const std::string reply = h.only_line_to(1);
    CHECK(parse(reply)["error"]["data"]["outcome"] == "unknown");
    CHECK_THAT(parse(reply)["error"]["message"].get<std::string>(), Contains("progress"));
    CHECK(h.router.replay().count_of(V::progressed) == 1);
}

TEST_CASE("router replay: a request in flight through two crashes is a poison pill") {
    ReplayRunning h;
    h.forward(1, replay_request("1", "resources/read", R"({"uri":"file:///kills"})"));
    h.router.on_child_gone("crashed");
    CHECK(h.env.sent_to(1).empty());
    REQUIRE(h.restart_and_take("resources/read").size() == 1);
    h.router.on_child_gone("crashed again");
    const std::string reply = h.only_line_to(1);
    CHECK(raw_id_of(reply) == "1");
    CHECK(parse(reply)["error"]["data"]["outcome"] == "unknown");
    CHECK_THAT(parse(reply)["error"]["message"].get<std::string>(), Contains("not sent again"));
    CHECK(h.router.replay().count_of(V::safe) == 1);
    CHECK(h.router.replay().count_of(V::poison) == 1);
    CHECK(h.restart_and_take("resources/read").empty());
}

TEST_CASE("router replay: replay = \"off\" sends only what the child never got") {
    ReplayRunning h(config::Replay::off);
    h.forward(1, replay_request("1", "tools/list"));
    h.router.on_child_gone("crashed");
    CHECK(parse(h.only_line_to(1))["error"]["data"]["outcome"] == "unknown");
}

TEST_CASE("router replay: kept lines are bounded and given back when answered") {
    ReplayRunning h;
    const std::string list = h.forward(1, replay_request("1", "tools/list"));
    CHECK(h.router.replay().kept_bytes() == replay_request("1", "tools/list").size());
    const std::string sent = h.forward(1, tool_call("2", "send"));  // not worth keeping
    CHECK(h.router.replay().kept_bytes() == replay_request("1", "tools/list").size());
    h.answer(list, R"({"tools":[]})");
    h.answer(sent);
    CHECK(h.router.replay().kept_bytes() == 0);

    // Past the budget a safe request is not kept, so it cannot be replayed.
    const std::string big_uri(ReplayState::kMaxKeptBytes, 'u');
    h.forward(1, replay_request("3", "resources/read", R"({"uri":")" + big_uri + R"("})"));
    CHECK(h.router.replay().kept_bytes() == 0);
    h.env.clear_records();
    h.router.on_child_gone("crashed");
    CHECK(parse(h.only_line_to(1))["error"]["data"]["outcome"] == "unknown");
    CHECK(h.router.replay().kept_bytes() == 0);
}

TEST_CASE("router replay: a session that left has nothing replayed") {
    ReplayRunning h;
    h.forward(1, replay_request("1", "tools/list"));
    h.router.detach(1);
    h.router.on_child_gone("crashed");
    CHECK(h.restart_and_take("tools/list").empty());
}

TEST_CASE("router replay: a replayed request the next child never comes for may have run") {
    ReplayRunning h;
    h.forward(1, replay_request("1", "tools/list"));
    h.router.on_child_gone("crashed");
    REQUIRE(h.env.sent_to(1).empty());

    SECTION("start_timeout passes") {
        h.env.advance(11s);
        h.router.on_timer();
    }
    SECTION("the server fails") {
        h.router.fail_waiting("it failed");
    }
    const std::string reply = h.only_line_to(1);
    CHECK(raw_id_of(reply) == "1");
    CHECK(parse(reply)["error"]["data"]["outcome"] == "unknown");
}

TEST_CASE("router replay: a request the dead child never got fails plainly when none comes") {
    ReplayRunning h;
    h.env.child_accepts = false;
    h.send(1, tool_call("1", "send"));
    h.router.on_child_gone("stdin closed");
    h.router.fail_waiting("it was stopped");
    const std::string reply = h.only_line_to(1);
    CHECK(error_code_of(reply) == -32603);
    CHECK_FALSE(parse(reply)["error"]["data"].contains("outcome"));
}

TEST_CASE("router replay: hints are kept for bounded names only") {
    ReplayRunning h(config::Replay::annotated);
    const std::string long_name(200, 'n');
    const std::string list = h.forward(1, replay_request("1", "tools/list"));
    h.answer(list, R"({"tools":[{"name":")" + long_name +
                       R"(","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]})");
    CHECK_FALSE(h.router.replay().hints(long_name).has_value());
    h.env.clear_records();
    h.forward(1, tool_call("2", long_name));
    h.router.on_child_gone("crashed");
    CHECK(parse(h.only_line_to(1))["error"]["data"]["outcome"] == "unknown");
}
