// Router: a lazy server. Sessions answered from the catalog while no process runs (the
// version negotiated per session, the lists, setLevel remembered), everything else waiting
// for the one start; the lists read again when the child is ready, the changed ones announced;
// and the idle rule, which each kind of open work holds off.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

struct LazyEnvironment : FakeRouterEnvironment {
    std::vector<Catalog> saved;
    int idle_calls = 0;
    void catalog_refreshed(const Catalog& catalog) override { saved.push_back(catalog); }
    void child_idle() override { ++idle_calls; }
};

Catalog lazy_catalog() {
    Catalog catalog;
    catalog.protocol_version = "2025-11-25";
    catalog.handshake = demo_initialize_result("2025-11-25");
    catalog.list(ListKind::tools).items = json::array({{{"name", "echo"}}, {{"name", "slow"}}});
    catalog.list(ListKind::tools).known = true;
    catalog.list(ListKind::resources).items = json::array({{{"uri", "demo://mine"}}});
    catalog.list(ListKind::resources).known = true;
    catalog.list(ListKind::resources).private_scope = true;
    catalog.list(ListKind::resource_templates).known = true;
    return catalog;
}

struct LazyRouter {
    LazyEnvironment env;
    Router router{router_config(), env, env};
    wire::EnvelopeScanner scanner{kTestMaxMessage};

    explicit LazyRouter(bool serve_private = false) {
        router.set_lazy(true, std::chrono::seconds(60));
        router.set_catalog(lazy_catalog(), serve_private);
    }
    void send(SessionId id, std::string line) { router.on_session_line(id, line); }
    void from_child(std::string line) {
        wire::Envelope e;
        REQUIRE(scanner.scan(line, e) == wire::ScanStatus::ok);
        router.on_child_message(line, e);
    }
    void initialize(SessionId id, const std::string& version) {
        router.attach(id);
        send(id, json{{"jsonrpc", "2.0"},
                      {"id", 0},
                      {"method", "initialize"},
                      {"params",
                       {{"protocolVersion", version},
                        {"capabilities", json::object()},
                        {"clientInfo", {{"name", "c"}, {"version", "1"}}}}}}
                     .dump());
        send(id, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    }
    // The child is ready; answer mcpd's own list requests with `tools` (the others empty).
    // Returns every line the child got.
    std::vector<std::string> wake(const json& tools) {
        router.on_child_ready(demo_initialize_result("2025-11-25"), "2025-11-25");
        const std::vector<std::string> got = env.child_lines;
        for (const std::string& line : got) {
            const json request = parse(line);
            const std::string method = request.value("method", "");
            json result = json::object();
            if (method == "tools/list") result["tools"] = tools;
            if (method == "resources/list") result["resources"] = json::array({{{"uri", "demo://mine"}}});
            if (method == "resources/templates/list") result["resourceTemplates"] = json::array();
            if (method.ends_with("/list"))
                from_child(json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", result}}.dump());
        }
        env.child_lines.clear();
        return got;
    }
};

}  // namespace

TEST_CASE("lazy router: initialize and the lists come from the catalog, with no process",
          "[router][lazy]") {
    LazyRouter h;
    REQUIRE(h.router.sleeping());
    h.initialize(1, "2025-06-18");
    CHECK(h.env.want_child_calls == 0);
    const std::vector<std::string>& got = h.env.sent_to(1);
    REQUIRE(got.size() == 1);
    const json init = parse(got.front());
    // The session's own version, as a running child's sessions get it.
    CHECK(init["result"]["protocolVersion"] == "2025-06-18");
    CHECK(init["result"]["serverInfo"]["name"] == "demo-server");
    h.env.clear_records();

    h.send(1, R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
    h.send(1, R"({"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}})");
    h.send(1, R"({"jsonrpc":"2.0","id":4,"method":"ping"})");
    REQUIRE(h.env.sent_to(1).size() == 3);
    const json tools = parse(h.env.sent_to(1)[0]);
    CHECK(tools["id"] == 2);
    CHECK(tools["result"]["tools"].size() == 2);
    CHECK_FALSE(tools["result"].contains("nextCursor"));
    CHECK(parse(h.env.sent_to(1)[1])["result"] == json::object());
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.want_child_calls == 0);
    CHECK(h.router.answered_from_cache() == 3);  // initialize, tools/list, setLevel
}

TEST_CASE("lazy router: a call waits for the one start, and the remembered level reaches the child",
          "[router][lazy]") {
    LazyRouter h;
    h.initialize(1, "2025-11-25");
    h.initialize(2, "2025-11-25");
    h.send(1, R"({"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"info"}})");
    h.env.clear_records();
    h.send(1, R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}})");
    h.send(2, R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}})");
    CHECK(h.env.want_child_calls >= 1);  // the supervisor starts it once, however often asked
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).empty());

    const std::vector<std::string> got = h.wake(json::array({{{"name", "echo"}}, {{"name", "slow"}}}));
    // Nothing changed: nobody is told the lists did; the catalog was saved again.
    CHECK(h.env.sent_to(1).empty());
    REQUIRE(h.env.saved.size() == 1);
    CHECK(h.env.saved.front().list(ListKind::tools).items.size() == 2);
    CHECK(h.env.saved.front().complete());
    // The queued calls went to the child, and the level the session set while it slept.
    int calls = 0;
    bool level = false;
    for (const std::string& line : got) {
        const json message = parse(line);
        if (message.value("method", "") == "tools/call") ++calls;
        if (message.value("method", "") == "logging/setLevel")
            level = message["params"]["level"] == "info";
    }
    CHECK(calls == 2);
    CHECK(level);
}

TEST_CASE("lazy router: a list that changed while it slept is announced once it wakes",
          "[router][lazy]") {
    LazyRouter h;
    h.initialize(1, "2025-11-25");
    h.env.clear_records();
    h.send(1, R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}})");
    h.wake(json::array({{{"name", "echo"}}, {{"name", "slow"}}, {{"name", "fresh"}}}));
    const std::vector<std::string>& got = h.env.sent_to(1);
    REQUIRE(got.size() == 1);
    CHECK(parse(got.front())["method"] == "notifications/tools/list_changed");
    REQUIRE(h.env.saved.size() == 1);
    CHECK(h.env.saved.front().list(ListKind::tools).items.size() == 3);
    REQUIRE(h.router.catalog());
    CHECK(h.router.catalog()->list(ListKind::tools).items.size() == 3);
}

TEST_CASE("lazy router: a private list is served from the catalog only to one user's child",
          "[router][lazy]") {
    LazyRouter shared(false);
    shared.initialize(1, "2025-11-25");
    shared.env.clear_records();
    shared.send(1, R"({"jsonrpc":"2.0","id":5,"method":"resources/list"})");
    CHECK(shared.env.sent_to(1).empty());  // it waits for the child instead
    CHECK(shared.env.want_child_calls == 1);

    LazyRouter own(true);
    own.initialize(1, "2025-11-25");
    own.env.clear_records();
    own.send(1, R"({"jsonrpc":"2.0","id":5,"method":"resources/list"})");
    REQUIRE(own.env.sent_to(1).size() == 1);
    CHECK(parse(own.env.sent_to(1).front())["result"]["resources"].size() == 1);
}

TEST_CASE("lazy router: idle after its idle time with nothing open, and not before", "[router][lazy]") {
    LazyRouter h;
    h.initialize(1, "2025-11-25");
    h.send(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}})");
    std::string call;
    for (const std::string& line : h.wake(json::array({{{"name", "echo"}}, {{"name", "slow"}}}))) {
        if (parse(line).value("method", "") == "tools/call") call = line;
    }
    REQUIRE_FALSE(call.empty());
    // The call is open: no idle deadline however long it runs.
    REQUIRE(h.router.in_flight() == 1);
    h.env.advance(std::chrono::minutes(5));
    h.router.on_timer();
    CHECK(h.env.idle_calls == 0);
    // Answered: the idle time counts from the answer.
    h.from_child(R"({"jsonrpc":"2.0","id":)" + raw_id_of(call) + R"(,"result":{"content":[]}})");
    REQUIRE(h.router.in_flight() == 0);
    const auto deadline = h.router.next_deadline();
    REQUIRE(deadline);
    CHECK(*deadline == h.env.now() + std::chrono::seconds(60));
    h.env.advance(std::chrono::seconds(59));
    h.router.on_timer();
    CHECK(h.env.idle_calls == 0);
    h.env.advance(std::chrono::seconds(1));
    h.router.on_timer();
    CHECK(h.env.idle_calls == 1);

    // A subscription keeps it up.
    h.send(1, R"({"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"demo://mine"}})");
    const std::string subscribe = h.env.child_lines.back();
    h.from_child(R"({"jsonrpc":"2.0","id":)" + raw_id_of(subscribe) + R"(,"result":{}})");
    REQUIRE(h.router.in_flight() == 0);
    CHECK_FALSE(h.router.next_deadline());
}

namespace {

// A modern (2026-07-28) server's catalog: its DiscoverResult and its tools.
Catalog lazy_modern_catalog() {
    Catalog catalog;
    catalog.protocol_version = "2026-07-28";
    catalog.modern = true;
    catalog.handshake = {{"supportedVersions", json::array({"2026-07-28"})},
                         {"capabilities", {{"tools", {{"listChanged", true}}}}},
                         {"instructions", "use echo"},
                         {"cacheScope", "public"},
                         {"ttlMs", 1000}};
    catalog.list(ListKind::tools).items = json::array({{{"name", "echo"}}});
    catalog.list(ListKind::tools).known = true;
    return catalog;
}

std::string lazy_modern_request(int id, const std::string& method, const std::string& version) {
    return json{{"jsonrpc", "2.0"},
                {"id", id},
                {"method", method},
                {"params",
                 {{"_meta",
                   {{"io.modelcontextprotocol/protocolVersion", version},
                    {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}}
        .dump();
}

}  // namespace

TEST_CASE("lazy router: a modern session's server/discover and lists come from the catalog",
          "[router][lazy]") {
    LazyEnvironment env;
    Router router{router_config(), env, env};
    router.set_lazy(true, std::chrono::seconds(60));
    router.set_catalog(lazy_modern_catalog(), false);
    REQUIRE(router.sleeping());
    router.attach(1);
    CHECK(env.want_child_calls == 0);
    auto send = [&router](std::string line) { router.on_session_line(1, line); };

    send(lazy_modern_request(1, "server/discover", "2026-07-28"));
    send(lazy_modern_request(2, "tools/list", "2026-07-28"));
    REQUIRE(env.sent_to(1).size() == 2);
    const json discover = parse(env.sent_to(1)[0]);
    CHECK(discover["id"] == 1);
    CHECK(discover["result"]["instructions"] == "use echo");
    CHECK(discover["result"]["supportedVersions"] == json::array({"2026-07-28"}));
    const json tools = parse(env.sent_to(1)[1]);
    CHECK(tools["result"]["tools"] == json::array({{{"name", "echo"}}}));
    CHECK(router.answered_from_cache() == 2);

    SECTION("a revision the server lacks is refused as the server would, with what it supports") {
        env.clear_records();
        send(lazy_modern_request(3, "tools/list", "2099-01-01"));
        REQUIRE(env.sent_to(1).size() == 1);
        const json refused = parse(env.sent_to(1)[0]);
        CHECK(refused["id"] == 3);
        CHECK(refused["error"]["code"] == -32022);
        CHECK(refused["error"]["data"]["supported"] == json::array({"2026-07-28"}));
        CHECK(refused["error"]["data"]["requested"] == "2099-01-01");
    }
    SECTION("a call starts the child, which is asked for its lists with a _meta of mcpd's own") {
        env.clear_records();
        send(R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})");
        CHECK(env.want_child_calls == 1);
        CHECK(env.sent_to(1).empty());
        router.on_child_ready(lazy_modern_catalog().handshake, "2026-07-28", true);
        bool asked_tools = false;
        for (const std::string& line : env.child_lines) {
            const json request = parse(line);
            if (request.value("method", "") != "tools/list") continue;
            asked_tools = true;
            CHECK(request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] ==
                  "2026-07-28");
            CHECK(request["params"]["_meta"].contains("io.modelcontextprotocol/clientCapabilities"));
        }
        CHECK(asked_tools);
    }
    SECTION("a request without its revision is the child's to refuse") {
        env.clear_records();
        send(R"({"jsonrpc":"2.0","id":4,"method":"tools/list"})");
        CHECK(env.sent_to(1).empty());
        CHECK(env.want_child_calls == 1);
    }
}

TEST_CASE("lazy router: a cancellation while nothing runs starts nothing", "[router][lazy]") {
    LazyRouter h;
    h.initialize(1, "2025-11-25");
    h.env.clear_records();
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}})");
    CHECK(h.env.want_child_calls == 0);
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("lazy router: the catalog's tools are the listed ones the stats count by name",
          "[router][lazy]") {
    // Sessions are listed the tools from the catalog, not from the child: a call of one is
    // counted under its name, as when the list passed from the child.
    LazyRouter h;
    CHECK(h.router.stats().listed_tools().contains("echo"));
    CHECK(h.router.stats().listed_tools().contains("slow"));
    CHECK_FALSE(h.router.stats().listed_tools().contains("fresh"));
    h.initialize(1, "2025-11-25");
    h.send(1, R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}})");
    // Woken, the child lists a tool more: the refreshed catalog's names are counted.
    h.wake(json::array({{{"name", "echo"}}, {{"name", "slow"}}, {{"name", "fresh"}}}));
    CHECK(h.router.stats().listed_tools().contains("fresh"));
}

TEST_CASE("lazy router: a running child's announced lists come from its current catalog",
          "[router][lazy]") {
    LazyRouter h;
    h.initialize(1, "2025-11-25");
    h.send(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}})");
    h.wake(json::array({{{"name", "echo"}}, {{"name", "fresh"}}}));
    h.env.clear_records();
    const std::uint64_t from_cache = h.router.answered_from_cache();

    // tools declare listChanged: no round trip, and the child's newest list.
    h.send(1, R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
    CHECK(h.env.child_lines.empty());
    REQUIRE(h.env.sent_to(1).size() == 1);
    CHECK(parse(h.env.sent_to(1)[0])["result"]["tools"].size() == 2);
    CHECK(h.router.answered_from_cache() == from_cache + 1);

    // prompts do not: the child could change them unannounced, so it is asked.
    h.send(1, R"({"jsonrpc":"2.0","id":3,"method":"prompts/list"})");
    REQUIRE(h.env.child_lines.size() == 1);
    CHECK(parse(h.env.child_lines[0])["method"] == "prompts/list");
    h.env.clear_records();

    // Once the child announces a change, its lists are the child's until read again.
    h.from_child(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    h.env.clear_records();
    h.send(1, R"({"jsonrpc":"2.0","id":4,"method":"tools/list"})");
    bool forwarded = false;
    for (const std::string& line : h.env.child_lines) {
        const json request = parse(line);
        forwarded = forwarded || (request.value("method", "") == "tools/list" &&
                                  request.contains("id") && h.env.sent_to(1).empty());
    }
    CHECK(forwarded);
    CHECK(h.env.sent_to(1).empty());
}
