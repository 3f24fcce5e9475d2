// The group router as pure logic, with fake members: what each member is sent and what the
// client sees.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <deque>
#include <span>
#include <string>
#include <vector>

#include "daemon/mux/group_names.h"
#include "daemon/mux/group_router.h"

using namespace mcpd;
using nlohmann::json;

namespace {

struct FakeEnv : GroupEnvironment {
    std::vector<std::string> client;
    std::vector<std::deque<json>> members{std::deque<json>(), std::deque<json>(), std::deque<json>()};
    std::vector<std::string> member_lines;  // every line sent to any member, as sent
    int scanned_lines = 0;  // of those, sent with their envelope (checked against a fresh scan)
    std::vector<std::string> notes;
    int piece_writes = 0;  // lines written to the client in pieces (an answer's id swapped)
    void to_client(std::string_view line) override { client.emplace_back(line); }
    void to_client_pieces(std::span<const std::string_view> pieces) override {
        ++piece_writes;
        client.push_back(wire::joined(pieces));
    }
    void to_member(std::size_t member, std::string_view line) override {
        members.at(member).push_back(json::parse(line));
        member_lines.emplace_back(line);
    }
    void to_member_scanned(std::size_t member, std::string_view line,
                           const wire::Envelope& envelope) override {
        static wire::EnvelopeScanner scanner(1024 * 1024);
        std::string copy(line);
        wire::Envelope fresh;
        REQUIRE(scanner.scan(copy, fresh) == wire::ScanStatus::ok);
        CHECK(fresh == envelope);
        ++scanned_lines;
        to_member(member, line);
    }
    void note(std::string_view message) override { notes.emplace_back(message); }

    json take(std::size_t member) {
        REQUIRE_FALSE(members.at(member).empty());
        json message = members[member].front();
        members[member].pop_front();
        return message;
    }
    json last_client() {
        REQUIRE_FALSE(client.empty());
        return json::parse(client.back());
    }
};

GroupSpec two_members() {
    GroupSpec spec;
    spec.name = "dev";
    spec.members = {{"alpha", {}, {}, {}}, {"beta", {}, {}, {}}};
    spec.members[1].member_filters.tools.exclude = {"secret_*"};
    return spec;
}

std::string answer(const json& request, const json& result) {
    return json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", result}}.dump();
}

// Initialize the group with `caps` per member; the client's id is "init".
void initialize(GroupRouter& router, FakeEnv& env, const std::vector<json>& caps,
                const std::vector<std::string>& versions = {}) {
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}})");
    for (std::size_t i = 0; i < caps.size(); ++i) {
        const json request = env.take(i);
        REQUIRE(request["method"] == "initialize");
        CHECK(request["params"]["clientInfo"]["name"] == "agent");
        json result = {{"protocolVersion", versions.empty() ? "2025-06-18" : versions[i]},
                       {"capabilities", caps[i]},
                       {"serverInfo", {{"name", "s" + std::to_string(i)}, {"version", "1"}}},
                       {"instructions", "use member " + std::to_string(i)}};
        router.on_member_line(i, answer(request, result));
    }
    router.on_client_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    for (std::size_t i = 0; i < caps.size(); ++i) {
        if (!env.members[i].empty()) CHECK(env.take(i)["method"] == "notifications/initialized");
    }
}

const json kToolsOnly = {{"tools", {{"listChanged", true}}}};

}  // namespace

TEST_CASE("group names: prefixing, the model-name rule and un-prefixing", "[group]") {
    CHECK(group::prefixed("github", "__", "create_issue") == "github__create_issue");
    CHECK_FALSE(group::prefixed("github", "__", "has space"));
    CHECK_FALSE(group::prefixed("a.b", "__", "x"));  // '.' is a server name character only
    CHECK_FALSE(group::prefixed("s", "__", std::string(126, 'x')));
    CHECK(group::prefixed("s", "__", std::string(125, 'x')));
    const std::vector<std::string> servers = {"git", "git__hub", "memory"};
    auto found = group::unprefixed(servers, "__", "git__hub__list");
    REQUIRE(found);
    CHECK(found->member == 1);
    CHECK(found->name == "list");
    found = group::unprefixed(servers, "__", "git__status");
    REQUIRE(found);
    CHECK(found->member == 0);
    CHECK(found->name == "status");
    CHECK_FALSE(group::unprefixed(servers, "__", "memory__"));
    CHECK_FALSE(group::unprefixed(servers, "__", "other__x"));
    CHECK(group::template_matches("file:///{path}", "file:///a/b"));
    CHECK(group::template_matches("repo://{owner}/{name}/issues", "repo://o/n/issues"));
    CHECK_FALSE(group::template_matches("repo://{owner}/issues", "repo://o/pulls"));
    CHECK_FALSE(group::template_matches("a*b://{x}", "aXb://y"));
}

TEST_CASE("a group's initialize: the union of capabilities, its name, joined instructions",
          "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    initialize(router, env,
               {json{{"tools", {{"listChanged", true}}}, {"logging", json::object()}},
                json{{"tools", json::object()}, {"resources", {{"subscribe", true}}}}});
    const json reply = json::parse(env.client.front());
    CHECK(reply["id"] == "init");
    const json& result = reply["result"];
    CHECK(result["protocolVersion"] == "2025-06-18");
    CHECK(result["serverInfo"]["name"] == "dev");
    CHECK(result["capabilities"]["tools"] == json{{"listChanged", true}});
    CHECK(result["capabilities"]["resources"] == json{{"subscribe", true}});
    CHECK(result["capabilities"]["logging"] == json::object());
    CHECK_FALSE(result["capabilities"].contains("prompts"));
    CHECK_FALSE(result["capabilities"].contains("completions"));
    CHECK(result["instructions"] == "## alpha\nuse member 0\n\n## beta\nuse member 1");
    CHECK(router.left_out().empty());
}

TEST_CASE("a member on another protocol version is left out with its reason", "[group]") {
    FakeEnv env;
    GroupSpec spec = two_members();
    spec.members.push_back({"gamma", {}, {}, {}});
    GroupRouter router(spec, env, 1);
    initialize(router, env, {kToolsOnly, kToolsOnly, kToolsOnly},
               {"2025-06-18", "2024-11-05", "2025-06-18"});
    CHECK(env.last_client()["result"]["protocolVersion"] == "2025-06-18");
    const auto left = router.left_out();
    REQUIRE(left.size() == 1);
    CHECK(left.at("beta") == "it speaks protocol 2024-11-05, not the group's 2025-06-18");
    CHECK(env.members[1].empty());  // not sent notifications/initialized
}

TEST_CASE("merged pagination: every page of every member once, filters, group cursors",
          "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    initialize(router, env, {kToolsOnly, kToolsOnly});
    env.client.clear();
    std::vector<std::string> seen;
    std::optional<std::string> cursor;
    // alpha: two pages (3 tools, then 1); beta: one page of 3, one of them filtered out.
    const std::vector<std::vector<std::string>> pages = {{"a1", "a2", "a3"}, {"a4"},
                                                        {"b1", "secret_key", "b2"}};
    for (std::size_t page = 0; page < pages.size(); ++page) {
        json request = {{"jsonrpc", "2.0"}, {"id", 10 + page}, {"method", "tools/list"}};
        if (cursor) request["params"] = {{"cursor", *cursor}};
        router.on_client_line(request.dump());
        const std::size_t member = page < 2 ? 0 : 1;
        const json sent = env.take(member);
        CHECK(sent["method"] == "tools/list");
        if (page == 1) {
            CHECK(sent["params"]["cursor"] == "alpha-page-2");
        } else {
            CHECK_FALSE(sent.contains("params"));
        }
        json tools = json::array();
        for (const std::string& name : pages[page]) tools.push_back({{"name", name}, {"title", "T " + name}});
        json result = {{"tools", tools}};
        if (page == 0) result["nextCursor"] = "alpha-page-2";
        router.on_member_line(member, answer(sent, result));
        const json reply = env.last_client();
        CHECK(reply["id"] == 10 + page);
        for (const json& tool : reply["result"]["tools"]) {
            seen.push_back(tool["name"]);
            CHECK(tool["title"] == "T " + tool["name"].get<std::string>().substr(tool["name"].get<std::string>().find("__") + 2));
        }
        if (page + 1 < pages.size()) {
            REQUIRE(reply["result"].contains("nextCursor"));
            cursor = reply["result"]["nextCursor"];
        } else {
            CHECK_FALSE(reply["result"].contains("nextCursor"));
        }
    }
    CHECK(seen == std::vector<std::string>{"alpha__a1", "alpha__a2", "alpha__a3", "alpha__a4",
                                           "beta__b1", "beta__b2"});

    SECTION("a cursor of another session is refused") {
        FakeEnv other_env;
        GroupRouter other(two_members(), other_env, 2);
        initialize(other, other_env, {kToolsOnly, kToolsOnly});
        other.on_client_line(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"},
                                  {"params", {{"cursor", *cursor}}}}.dump());
        const json reply = other_env.last_client();
        CHECK(reply["error"]["code"] == -32602);
        CHECK(other_env.members[0].empty());
    }
    SECTION("a cursor of an old list is refused after list_changed") {
        router.on_member_line(0, R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
        CHECK(env.last_client()["method"] == "notifications/tools/list_changed");
        router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", 99}, {"method", "tools/list"},
                                   {"params", {{"cursor", *cursor}}}}.dump());
        CHECK(env.last_client()["error"]["code"] == -32602);
        CHECK(env.last_client()["error"]["message"].get<std::string>().find("changed") != std::string::npos);
    }
}

namespace {

// A member's answer as its router hands it over: `child_line` read as the child sent it, the
// router's changes to it (`changes_of`, from the child's envelope: at least the member
// session's id) spliced in, and the pieces given to the group with the child's envelope.
template <typename ChangesOf>
void hand_over(GroupRouter& router, std::size_t member, const std::string& child_line,
               ChangesOf&& changes_of) {
    std::string text = child_line;
    wire::EnvelopeScanner scanner(1024 * 1024);
    wire::Envelope child;
    REQUIRE(scanner.scan(text, child) == wire::ScanStatus::ok);
    const wire::Replacements changes = changes_of(child);
    std::vector<std::string_view> pieces;
    wire::splice(child_line, changes, pieces);
    router.on_member_answer(member, pieces, child, changes);
}

}  // namespace

TEST_CASE("tools/call goes to its member un-prefixed, the answer keeps the client's id",
          "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    initialize(router, env, {kToolsOnly, kToolsOnly});
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"beta__echo","arguments":{"x":1},"_meta":{"progressToken":"p1"}}})");
    CHECK(env.members[0].empty());
    const json sent = env.take(1);
    CHECK(sent["params"]["name"] == "echo");
    CHECK(sent["params"]["arguments"] == json{{"x", 1}});
    CHECK(sent["params"]["_meta"]["progressToken"] == "p1");
    CHECK(router.unanswered() == 1);
    // Progress (its token is the client's own: the member's router restored it) and the result.
    router.on_member_line(1, R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1}})");
    CHECK(env.last_client()["params"]["progressToken"] == "p1");
    router.on_member_line(1, "{\"jsonrpc\":\"2.0\",\"id\":" + sent["id"].dump() +
                                 ",\"result\":{\"content\":[]}}");
    CHECK(env.client.back() == R"({"jsonrpc":"2.0","id":"call-1","result":{"content":[]}})");
    CHECK(router.unanswered() == 0);

    SECTION("a filtered-out tool is refused as unknown, and nothing is sent") {
        router.on_client_line(
            R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"beta__secret_key"}})");
        CHECK(env.members[1].empty());
        CHECK(env.last_client()["error"]["code"] == -32602);
        CHECK(env.last_client()["error"]["message"] == "Unknown tool: beta__secret_key");
    }
    SECTION("a name with no member's prefix is unknown") {
        router.on_client_line(R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo"}})");
        CHECK(env.last_client()["error"]["message"] == "Unknown tool: echo");
    }
    SECTION("a plain call reaches its member as the client's bytes, only the id and name new") {
        const int scanned_before = env.scanned_lines;
        router.on_client_line(
            R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"alpha__ech\u006f","arguments":{"z":"\u00e9","a":[2,1]}}})");
        const json plain = env.take(0);
        CHECK(env.scanned_lines == scanned_before + 1);  // the member's router gets the envelope
        CHECK(env.member_lines.back() ==
              R"({"jsonrpc":"2.0","id":)" + plain["id"].dump() +
                  R"(,"method":"tools/call","params":{"name":"echo","arguments":{"z":"\u00e9","a":[2,1]}}})");
    }
    SECTION("an answer handed over with its envelope reaches the client as a read one does") {
        router.on_client_line(
            R"({"jsonrpc":"2.0","id":"c-9","method":"tools/call","params":{"name":"alpha__echo"}})");
        const json call = env.take(0);
        // The child's line, with the member session's id spliced in by its router.
        const std::string child_line =
            R"({"jsonrpc":"2.0","id":4242,"result":{"content":[{"type":"text","text":"ok"}]}})";
        const std::string member_id = call["id"].dump();
        const auto id_only = [&](const wire::Envelope& child) {
            return wire::Replacements{{child.id, member_id}};
        };
        hand_over(router, 0, child_line, id_only);
        CHECK(env.client.back() ==
              R"({"jsonrpc":"2.0","id":"c-9","result":{"content":[{"type":"text","text":"ok"}]}})");
        CHECK(env.piece_writes == 1);  // the pieces went out with one swapped, not joined first
        CHECK(router.unanswered() == 0);

        // Handed over again (a late duplicate), it finds no request and reaches no one.
        const std::size_t written = env.client.size();
        hand_over(router, 0, child_line, id_only);
        CHECK(env.client.size() == written);
    }
    SECTION("an answer whose router changed a field before its id keeps that change") {
        router.on_client_line(
            R"({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"alpha__echo"}})");
        const json call = env.take(0);
        const std::string child_line =
            R"({"result":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-child"}},"content":[]},"jsonrpc":"2.0","id":77})";
        const std::string member_id = call["id"].dump();
        hand_over(router, 0, child_line, [&](const wire::Envelope& child) {
            REQUIRE_FALSE(child.related_task_id.empty());
            // Given out of text order, as a router may list them.
            return wire::Replacements{{child.id, member_id},
                                      {child.related_task_id, R"("t-session")"}};
        });
        CHECK(env.client.back() ==
              R"({"result":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-session"}},"content":[]},"jsonrpc":"2.0","id":11})");
        CHECK(env.piece_writes == 1);
        CHECK(router.unanswered() == 0);
    }
    SECTION("a call asking for a task, or naming its tool twice, is rewritten whole") {
        router.on_client_line(
            R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"alpha__echo","task":{"ttl":5}}})");
        const json tasked = env.take(0);
        CHECK_FALSE(tasked["params"].contains("task"));
        CHECK(tasked["params"]["name"] == "echo");
        router.on_client_line(
            R"({"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"beta__secret_key","name":"alpha__echo"}})");
        CHECK(env.take(0)["params"]["name"] == "echo");
        // One name only reaches the member: never the filtered one beside it.
        CHECK(env.member_lines.back().find("secret_key") == std::string::npos);
    }
    SECTION("a cancellation reaches the member with its id") {
        router.on_client_line(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__slow"}})");
        const json slow = env.take(0);
        router.on_client_line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"bored"}})");
        const json cancel = env.take(0);
        CHECK(cancel["method"] == "notifications/cancelled");
        CHECK(cancel["params"]["requestId"] == slow["id"]);
        CHECK(cancel["params"]["reason"] == "bored");
        CHECK(router.unanswered() == 0);
    }
}

TEST_CASE("resources go to the member that listed them or whose template matches", "[group]") {
    FakeEnv env;
    GroupSpec spec = two_members();
    for (GroupMemberSpec& member : spec.members) member.group_filters.resources.exclude = {"mem://private/*"};
    GroupRouter router(spec, env, 1);
    const json resources = {{"resources", {{"subscribe", true}}}};
    initialize(router, env, {resources, resources});
    router.on_client_line(R"({"jsonrpc":"2.0","id":1,"method":"resources/list"})");
    json sent = env.take(0);
    router.on_member_line(0, answer(sent, {{"resources", {{{"uri", "mem://a"}, {"name", "a"}},
                                                          {{"uri", "mem://private/k"}, {"name", "k"}}}}}));
    CHECK(env.last_client()["result"]["resources"].size() == 1);
    const std::string next = env.last_client()["result"]["nextCursor"];
    router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "resources/list"}, {"params", {{"cursor", next}}}}.dump());
    sent = env.take(1);
    router.on_member_line(1, answer(sent, {{"resources", {{{"uri", "doc://b"}, {"name", "b"}}}}}));
    router.on_client_line(R"({"jsonrpc":"2.0","id":3,"method":"resources/templates/list"})");
    sent = env.take(0);
    router.on_member_line(0, answer(sent, {{"resourceTemplates", json::array()}}));
    const std::string next_templates = env.last_client()["result"]["nextCursor"];
    router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", 4}, {"method", "resources/templates/list"}, {"params", {{"cursor", next_templates}}}}.dump());
    sent = env.take(1);
    router.on_member_line(1, answer(sent, {{"resourceTemplates", {{{"uriTemplate", "doc://{name}"}, {"name", "docs"}}}}}));

    router.on_client_line(R"({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"doc://b"}})");
    CHECK(env.take(1)["params"]["uri"] == "doc://b");
    router.on_client_line(R"({"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{"uri":"mem://a"}})");
    CHECK(env.take(0)["method"] == "resources/subscribe");
    router.on_client_line(R"({"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"doc://other"}})");
    CHECK(env.take(1)["params"]["uri"] == "doc://other");  // by its template
    router.on_client_line(R"({"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"mem://private/k"}})");
    CHECK(env.last_client()["error"]["code"] == -32002);
    router.on_client_line(R"({"jsonrpc":"2.0","id":9,"method":"resources/subscribe","params":{"uri":"nowhere://x"}})");
    CHECK(env.last_client()["error"]["code"] == -32002);

    SECTION("an unlisted URI is read from the members in turn") {
        router.on_client_line(R"({"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"x://y"}})");
        json first = env.take(0);
        router.on_member_line(0, json{{"jsonrpc", "2.0"}, {"id", first["id"]}, {"error", {{"code", -32002}, {"message", "Resource not found"}}}}.dump());
        json second = env.take(1);
        CHECK(second["params"]["uri"] == "x://y");
        router.on_member_line(1, answer(second, {{"contents", json::array()}}));
        CHECK(env.last_client()["id"] == 10);
        CHECK(env.last_client()["result"]["contents"] == json::array());
    }
}

TEST_CASE("a member restarting in the middle of a list: its items leave, then come back",
          "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    initialize(router, env, {kToolsOnly, kToolsOnly});
    router.on_client_line(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
    json sent = env.take(0);
    router.on_member_line(0, answer(sent, {{"tools", {{{"name", "a1"}}}}}));
    const std::string next = env.last_client()["result"]["nextCursor"];
    // beta goes away before the client asks for its page.
    router.member_down(1, "it exited");
    CHECK(env.last_client()["method"] == "notifications/tools/list_changed");
    router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}, {"params", {{"cursor", next}}}}.dump());
    CHECK(env.last_client()["error"]["code"] == -32602);
    router.on_client_line(R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})");
    sent = env.take(0);
    router.on_member_line(0, answer(sent, {{"tools", {{{"name", "a1"}}}}}));
    CHECK_FALSE(env.last_client()["result"].contains("nextCursor"));  // beta is away
    router.member_up(1);
    CHECK(env.last_client()["method"] == "notifications/tools/list_changed");
    router.on_client_line(R"({"jsonrpc":"2.0","id":4,"method":"tools/list"})");
    sent = env.take(0);
    router.on_member_line(0, answer(sent, {{"tools", {{{"name", "a1"}}}}}));
    CHECK(env.last_client()["result"].contains("nextCursor"));
}

TEST_CASE("a member's request to the client comes back to that member with its id", "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    initialize(router, env, {kToolsOnly, kToolsOnly});
    router.on_member_line(1, R"({"jsonrpc":"2.0","id":"m-7","method":"sampling/createMessage","params":{"messages":[]}})");
    const json request = env.last_client();
    CHECK(request["method"] == "sampling/createMessage");
    CHECK(request["id"] != "m-7");
    router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", {{"role", "assistant"}}}}.dump());
    CHECK(env.members[0].empty());
    const json back = env.take(1);
    CHECK(back["id"] == "m-7");
    CHECK(back["result"]["role"] == "assistant");
    // A second answer to the same request is dropped.
    router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", json::object()}}.dump());
    CHECK(env.members[1].empty());
}

TEST_CASE("logging/setLevel reaches every member that logs, one answer", "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    initialize(router, env, {json{{"logging", json::object()}}, json{{"logging", json::object()}}});
    env.client.clear();
    router.on_client_line(R"({"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"debug"}})");
    const json a = env.take(0);
    const json b = env.take(1);
    CHECK(a["params"]["level"] == "debug");
    router.on_member_line(0, answer(a, json::object()));
    CHECK(env.client.empty());
    router.on_member_line(1, answer(b, json::object()));
    CHECK(env.client.back() == R"({"jsonrpc":"2.0","id":"lvl","result":{}})");
}

TEST_CASE("a server with filters served alone keeps its names and its own answer", "[group]") {
    FakeEnv env;
    GroupSpec spec;
    spec.name = "solo";
    spec.prefix = false;
    spec.members = {{"solo", {}, {}, {}}};
    spec.members[0].member_filters.tools.allow = {"get_*"};
    GroupRouter router(spec, env, 1);
    initialize(router, env, {kToolsOnly});
    CHECK(json::parse(env.client.front())["result"]["serverInfo"]["name"] == "s0");
    router.on_client_line(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
    const json sent = env.take(0);
    router.on_member_line(0, answer(sent, {{"tools", {{{"name", "get_a"}}, {{"name", "put_a"}}}}}));
    CHECK(env.last_client()["result"]["tools"] == json{{{"name", "get_a"}}});
    router.on_client_line(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"put_a"}})");
    CHECK(env.last_client()["error"]["message"] == "Unknown tool: put_a");
    router.on_client_line(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_a"}})");
    CHECK(env.take(0)["params"]["name"] == "get_a");
}

TEST_CASE("a member whose session closes fails only its own requests", "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    initialize(router, env, {kToolsOnly, kToolsOnly});
    router.on_client_line(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__x"}})");
    router.on_client_line(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"beta__y"}})");
    router.member_closed(0, "the server was removed");
    CHECK(env.client.size() >= 2);
    bool failed_one = false;
    for (const std::string& line : env.client) {
        const json message = json::parse(line);
        if (message.contains("id") && message["id"] == 1) failed_one = message.contains("error");
        CHECK_FALSE((message.contains("id") && message["id"] == 2));
    }
    CHECK(failed_one);
    CHECK(router.unanswered() == 1);
    CHECK(router.left_out().at("alpha") == "the server was removed");
}

TEST_CASE("bad client lines get the answer a server's router gives, by their id", "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    initialize(router, env, {kToolsOnly, kToolsOnly});
    env.client.clear();
    router.on_client_line(R"({"jsonrpc":"2.0","id":4,"method":"tools/list","params":true})");
    CHECK(env.last_client()["id"] == 4);
    CHECK(env.last_client()["error"]["code"] == -32600);
    router.on_client_line(R"({"jsonrpc":"1.0","id":"x","method":"ping"})");
    CHECK(env.last_client()["id"] == "x");
    router.on_client_line(R"({"jsonrpc":"2.0","id":null,"method":"ping"})");
    CHECK(env.last_client()["id"].is_null());
    router.on_client_line("[1,2]");
    CHECK(env.last_client()["error"]["code"] == -32600);
    router.on_client_line("{not json");
    CHECK(env.last_client()["error"]["code"] == -32700);
    // A bad response is dropped, never answered.
    const std::size_t before = env.client.size();
    router.on_client_line(R"({"jsonrpc":"2.0","id":null,"result":{}})");
    CHECK(env.client.size() == before);
    // A name that is not a string, or no params at all, is an unknown tool.
    router.on_client_line(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}})");
    CHECK(env.last_client()["error"]["message"] == "Unknown tool: ");
    router.on_client_line(R"({"jsonrpc":"2.0","id":6,"method":"tools/call"})");
    CHECK(env.last_client()["id"] == 6);
    CHECK(env.members[0].empty());
    CHECK(env.members[1].empty());
    CHECK(router.unanswered() == 0);
}

TEST_CASE("requests sent during the members' initialize wait for it, and count as unanswered",
          "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    router.on_client_line(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}})");
    router.on_client_line(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
    // A cancellation of the initialize does not stop its answer.
    router.on_client_line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
    CHECK(router.unanswered() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const json request = env.take(i);
        router.on_member_line(i, answer(request, {{"protocolVersion", "2025-06-18"}, {"capabilities", kToolsOnly}}));
    }
    CHECK(json::parse(env.client.front())["id"] == 1);
    const json list = env.take(0);  // the queued tools/list went on to the first member
    CHECK(list["method"] == "tools/list");
    CHECK(router.unanswered() == 1);
}

namespace {

const json kModernMeta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                          {"io.modelcontextprotocol/clientCapabilities", json::object()},
                          {"io.modelcontextprotocol/clientInfo", {{"name", "modern-agent"}, {"version", "2"}}}};

// A 2026-07-28 client's first request: alpha answers server/discover (a modern server), beta
// does not know it (a legacy server), so the group initializes beta's session itself.
void modern_setup(GroupRouter& router, FakeEnv& env, const std::string& first) {
    router.on_client_line(first);
    const json discover_a = env.take(0);
    CHECK(discover_a["method"] == "server/discover");
    CHECK(discover_a["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"] == "modern-agent");
    const json discover_b = env.take(1);
    router.on_member_line(0, answer(discover_a, {{"supportedVersions", {"2026-07-28"}},
                                                 {"capabilities", {{"tools", {{"listChanged", true}}}}},
                                                 {"instructions", "modern alpha"}}));
    router.on_member_line(1, json{{"jsonrpc", "2.0"}, {"id", discover_b["id"]},
                                  {"error", {{"code", -32601}, {"message", "Method not found"}}}}.dump());
    const json initialize = env.take(1);
    CHECK(initialize["method"] == "initialize");
    CHECK(initialize["params"]["protocolVersion"] == "2025-11-25");
    CHECK(initialize["params"]["clientInfo"]["name"] == "modern-agent");
    router.on_member_line(1, answer(initialize, {{"protocolVersion", "2025-11-25"},
                                                 {"capabilities", {{"tools", {{"listChanged", true}}},
                                                                   {"resources", {{"subscribe", true}}}}},
                                                 {"instructions", "legacy beta"}}));
    CHECK(env.take(1)["method"] == "notifications/initialized");
}

}  // namespace

TEST_CASE("a 2026-07-28 client: modern and legacy members behind one discover", "[group][modern]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    modern_setup(router, env,
                 json{{"jsonrpc", "2.0"}, {"id", "d"}, {"method", "server/discover"}, {"params", {{"_meta", kModernMeta}}}}.dump());
    const json discovered = env.last_client();
    CHECK(discovered["id"] == "d");
    CHECK(discovered["result"]["supportedVersions"] == json{"2026-07-28"});
    CHECK(discovered["result"]["resultType"] == "complete");
    CHECK(discovered["result"]["capabilities"]["tools"] == json{{"listChanged", true}});
    CHECK(discovered["result"]["capabilities"]["resources"] == json{{"subscribe", true}});
    CHECK(discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "dev");
    CHECK(discovered["result"]["instructions"] == "## alpha\nmodern alpha\n\n## beta\nlegacy beta");
    CHECK(router.protocol() == "2026-07-28");
    CHECK(router.left_out().empty());

    // Requests travel with the client's own _meta, to either era.
    router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                               {"params", {{"name", "beta__echo"}, {"_meta", kModernMeta}}}}.dump());
    const json call = env.take(1);
    CHECK(call["params"]["name"] == "echo");
    CHECK(call["params"]["_meta"] == kModernMeta);
    router.on_member_line(1, answer(call, {{"content", json::array()}}));
    CHECK(env.last_client()["id"] == 1);
    // The same handed over with its envelope: a legacy member's result still gains what the
    // 2026-07-28 era asks of every result.
    router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"},
                               {"params", {{"name", "beta__echo"}, {"_meta", kModernMeta}}}}.dump());
    const json again = env.take(1);
    const std::string member_id = again["id"].dump();
    hand_over(router, 1, R"({"jsonrpc":"2.0","id":31,"result":{"content":[]}})",
              [&](const wire::Envelope& child) { return wire::Replacements{{child.id, member_id}}; });
    CHECK(env.last_client()["id"] == 2);
    CHECK(env.last_client()["result"]["resultType"] == "complete");
    CHECK(env.piece_writes == 0);

    // A legacy member's request to its session is answered by the group: no such thing in 2026.
    router.on_member_line(1, R"({"jsonrpc":"2.0","id":"r1","method":"roots/list"})");
    const json refused = env.take(1);
    CHECK(refused["id"] == "r1");
    CHECK(refused["error"]["code"] == -32601);
    // Unsolicited notifications reach no one without a stream.
    const std::size_t before = env.client.size();
    router.on_member_line(1, R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    router.on_member_line(1, R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})");
    CHECK(env.client.size() == before);
}

TEST_CASE("a 2026-07-28 client's listen stream carries every member's changes", "[group][modern]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    // The first request is an ordinary one: it is answered once the members are settled.
    modern_setup(router, env,
                 json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "resources/list"}, {"params", {{"_meta", kModernMeta}}}}.dump());
    const json list = env.take(1);  // alpha has no resources: the first page is beta's
    CHECK(list["method"] == "resources/list");
    router.on_member_line(1, answer(list, {{"resources", {{{"uri", "mem://a"}, {"name", "a"}}}}}));
    CHECK(env.last_client()["result"]["resources"][0]["uri"] == "mem://a");
    // What 2026-07-28 asks of every result, and of a list's: the group's pages are not cached.
    CHECK(env.last_client()["result"]["resultType"] == "complete");
    CHECK(env.last_client()["result"]["cacheScope"] == "private");
    CHECK(env.last_client()["result"]["ttlMs"] == 0);

    router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", "L1"}, {"method", "subscriptions/listen"},
                               {"params", {{"notifications", {{"toolsListChanged", true}, {"promptsListChanged", true},
                                                              {"resourceSubscriptions", {"mem://a", "nowhere://x"}}}},
                                           {"_meta", kModernMeta}}}}.dump());
    const json ack = env.last_client();
    CHECK(ack["method"] == "notifications/subscriptions/acknowledged");
    CHECK(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1");
    CHECK(ack["params"]["notifications"] == json{{"toolsListChanged", true}, {"resourceSubscriptions", {"mem://a"}}});
    const json listen = env.take(0);
    CHECK(listen["method"] == "subscriptions/listen");
    CHECK(listen["params"]["notifications"] == json{{"toolsListChanged", true}});
    CHECK(env.take(1)["params"]["uri"] == "mem://a");  // beta: resources/subscribe

    // alpha's stream notification, re-tagged with the client's stream id.
    router.on_member_line(0, json{{"jsonrpc", "2.0"}, {"method", "notifications/subscriptions/acknowledged"},
                                  {"params", {{"_meta", {{"io.modelcontextprotocol/subscriptionId", listen["id"]}}}}}}.dump());
    CHECK(env.last_client()["method"] == "notifications/subscriptions/acknowledged");  // only the group's
    const std::size_t acks = env.client.size();
    router.on_member_line(0, json{{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"},
                                  {"params", {{"_meta", {{"io.modelcontextprotocol/subscriptionId", listen["id"]}}}}}}.dump());
    REQUIRE(env.client.size() == acks + 1);
    CHECK(env.client.back() ==
          R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}})");
    // beta's unsolicited ones, carried on the stream.
    router.on_member_line(1, R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://a"}})");
    CHECK(env.last_client()["params"]["uri"] == "mem://a");
    CHECK(env.last_client()["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1");
    router.on_member_line(1, R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    CHECK(env.last_client()["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1");

    // alpha restarts: the stream says the tools changed, and alpha's listen is opened again.
    router.member_down(0, "restart");
    CHECK(env.last_client()["method"] == "notifications/tools/list_changed");
    router.member_up(0);
    CHECK(env.take(0)["method"] == "subscriptions/listen");

    // The client closes the stream: alpha's listen is cancelled, beta's URI unsubscribed.
    router.on_client_line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L1"}})");
    CHECK(env.take(0)["method"] == "notifications/cancelled");
    const json unsubscribe = env.take(1);
    CHECK(unsubscribe["method"] == "resources/unsubscribe");
    CHECK(unsubscribe["params"]["uri"] == "mem://a");
    const std::size_t after = env.client.size();
    router.on_member_line(1, R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    CHECK(env.client.size() == after);
}

TEST_CASE("prompts/get and completion/complete go to the member owning the prompt or template",
          "[group]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    const json caps = {{"prompts", json::object()}, {"resources", json::object()}, {"completions", json::object()}};
    initialize(router, env, {caps, caps});
    router.on_client_line(R"({"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"beta__greet","arguments":{"who":"x"}}})");
    const json get = env.take(1);
    CHECK(get["params"]["name"] == "greet");
    CHECK(get["params"]["arguments"] == json{{"who", "x"}});
    CHECK(env.members[0].empty());
    router.on_client_line(R"({"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"gamma__greet"}})");
    CHECK(env.last_client()["error"]["message"] == "Unknown prompt: gamma__greet");

    router.on_client_line(R"({"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"alpha__greet"},"argument":{"name":"who","value":"a"}}})");
    const json prompt_completion = env.take(0);
    CHECK(prompt_completion["params"]["ref"]["name"] == "greet");

    // A template is known once listed: its completion goes to the member that listed it.
    router.on_client_line(R"({"jsonrpc":"2.0","id":4,"method":"resources/templates/list"})");
    json list = env.take(0);
    router.on_member_line(0, answer(list, {{"resourceTemplates", json::array()}}));
    router.on_client_line(json{{"jsonrpc", "2.0"}, {"id", 5}, {"method", "resources/templates/list"},
                               {"params", {{"cursor", env.last_client()["result"]["nextCursor"]}}}}.dump());
    list = env.take(1);
    router.on_member_line(1, answer(list, {{"resourceTemplates", {{{"uriTemplate", "file:///{path}"}, {"name", "files"}}}}}));
    router.on_client_line(R"({"jsonrpc":"2.0","id":6,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"file:///{path}"},"argument":{"name":"path","value":"a"}}})");
    CHECK(env.take(1)["params"]["ref"]["uri"] == "file:///{path}");
    router.on_client_line(R"({"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"other://{x}"}}})");
    CHECK(env.last_client()["error"]["code"] == -32602);
}

TEST_CASE("a group's lines sent before its initialize is answered are bounded in bytes",
          "[group][limits]") {
    FakeEnv env;
    GroupRouter router(two_members(), env, 1);
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}})");
    // Lines of 4 MiB: fewer than kMaxEarlyLines of them pass kMaxEarlyBytes.
    const std::string text(4 * 1024 * 1024, 'x');
    const std::size_t fit = GroupRouter::kMaxEarlyBytes / text.size();
    REQUIRE(fit + 4 < GroupRouter::kMaxEarlyLines);
    for (std::size_t n = 0; n < fit + 4; ++n) {
        router.on_client_line(R"({"jsonrpc":"2.0","id":)" + std::to_string(n) +
                              R"(,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":")" +
                              text + R"("}}})");
    }
    // Those past the bound were refused at once, each with its own id.
    REQUIRE(env.client.size() >= 3);
    CHECK(env.client.size() <= 4);
    for (const std::string& line : env.client) {
        const json reply = json::parse(line);
        CHECK(reply["error"]["code"] == -32600);
    }
    CHECK(json::parse(env.client.back())["id"] == fit + 3);
    CHECK(router.unanswered() == 1 + (fit + 4 - env.client.size()));  // the initialize too
}
