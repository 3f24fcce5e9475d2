// A client that closes its input right after its requests (`printf ... | mcpctl connect`)
// still gets every reply: the session stays open until the last one is written.
#include <catch2/catch.hpp>
#include <fstream>

#include "harness.h"
#include "raw_client.h"

using namespace integration;

namespace {

// initialize, initialized, a call that answers after 300 ms, one that answers at once.
const char* const kRequests =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"eof","version":"1"}}})"
    "\n"
    R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
    "\n"
    R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"steps":3,"interval_ms":100}}})"
    "\n"
    R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"last words"}}})"
    "\n";

void require_every_reply(const std::string& out) {
    INFO(out);
    CHECK(out.find(R"("id":1,"result":{)") != std::string::npos);
    CHECK(out.find(R"("id":2,"result":{"content":[{"type":"text","text":"done after 3 steps")") !=
          std::string::npos);
    CHECK(out.find(R"("id":3,"result":{"content":[{"type":"text","text":"last words")") !=
          std::string::npos);
}

}  // namespace

TEST_CASE("a socket session that half-closes gets its in-flight replies, then the end",
          "[session]") {
    TestEnv env("eof-socket");
    env.write_registry(server_toml("demo"));
    env.start_daemon();

    RawClient client(env.socket());
    client.send(R"({"protocol":1,"command":"attach","server":"demo"})"
                "\n");
    const auto attached = client.read_line();
    REQUIRE(attached);
    REQUIRE(attached->find(R"("ok":true)") != std::string::npos);
    client.send(kRequests);
    client.close_input();

    std::string out;
    while (const auto line = client.read_line(20s)) out += *line + "\n";
    require_every_reply(out);
    // Nothing but the three replies: the close came after them, not instead of them.
    CHECK(std::count(out.begin(), out.end(), '\n') == 3);
}

TEST_CASE("messages sent in the same write as the attach request reach the server",
          "[session]") {
    // The control connection reads the attach line; what follows it in its buffer belongs to
    // the session, which must take it over rather than lose it.
    TestEnv env("attach-pipelined");
    env.write_registry(server_toml("demo"));
    env.start_daemon();

    RawClient client(env.socket());
    client.send(std::string(R"({"protocol":1,"command":"attach","server":"demo"})") + "\n" +
                kRequests);
    const auto attached = client.read_line();
    REQUIRE(attached);
    REQUIRE(attached->find(R"("ok":true)") != std::string::npos);
    client.close_input();
    std::string out;
    while (const auto line = client.read_line(20s)) out += *line + "\n";
    require_every_reply(out);
}

TEST_CASE("mcpctl connect with stdin at its end still prints every reply, copying or passing",
          "[session]") {
    TestEnv env("eof-connect");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    const std::string requests = env.path("requests.jsonl");
    std::ofstream(requests) << kRequests;
    const std::string ctl = bin("mcpctl") + " --socket " + env.socket() + " connect demo";

    SECTION("a file on stdin and stdout (copied)") {
        const RunResult r = run_process({"/bin/sh", "-c", ctl + " <" + requests}, 30s);
        REQUIRE(r.exit_code == 0);
        require_every_reply(r.out);
    }
    SECTION("pipes on both (passed to mcpd)") {
        const RunResult r =
            run_process({"/bin/sh", "-c", "cat " + requests + " | " + ctl + " | cat"}, 30s);
        REQUIRE(r.exit_code == 0);
        require_every_reply(r.out);
    }
}
