// Router: request ids, progress tokens and cancellation (docs/MULTIPLEXING.md, "Both eras"):
// every session-side token is replaced on the way to the child and restored byte for byte.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

// A harness with a ready child, sessions 1 and 2 connected, and child ids starting at 100 so
// they cannot be mistaken for the sessions' own ids.
struct Two : RouterHarness {
    Two() {
        child_ready();
        connect(1);
        connect(2);
        env.next_child_id = 100;
    }
};

std::string request_with_id(const std::string& raw_id) {
    return R"({"jsonrpc":"2.0","id":)" + raw_id +
           R"(,"method":"tools/call","params":{"name":"echo","arguments":{"id":1,"text":"x"}}})";
}

}  // namespace

TEST_CASE("router: a forwarded request gets a fresh child id and its reply the original id",
          "[router]") {
    const std::vector<std::string> ids = {
        "1", R"("1")", "12345678901234567890", R"("a\"b")",      "-7",
        "0", R"("")",  R"("\u00e9t\u00e9")",   "\"caf\xc3\xa9\""};
    for (const std::string& id : ids) {
        DYNAMIC_SECTION("id " << id) {
            Two h;
            const std::string at_child = h.forward(1, request_with_id(id));
            // Only the id token changed.
            CHECK(at_child == request_with_id("100"));
            h.from_child(
                R"({"jsonrpc":"2.0","id":100,"result":{"content":[{"type":"text","text":"x"}]}})");
            CHECK(h.only_line_to(1) ==
                  R"({"jsonrpc":"2.0","id":)" + id +
                      R"(,"result":{"content":[{"type":"text","text":"x"}]}})");
            CHECK(h.env.sent_to(2).empty());
            CHECK(h.router.in_flight() == 0);
        }
    }
}

TEST_CASE("router: whitespace around the id is kept and only the token changes", "[router]") {
    Two h;
    const std::string at_child =
        h.forward(1, R"({ "jsonrpc" : "2.0" , "id" :  "x y"  , "method" : "tools/list" })");
    CHECK(at_child == R"({ "jsonrpc" : "2.0" , "id" :  100  , "method" : "tools/list" })");
    h.from_child(R"({"jsonrpc":"2.0", "id" : 100 ,"result":{}})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0", "id" : "x y" ,"result":{}})");
}

TEST_CASE("router: child errors are delivered with the original id", "[router]") {
    Two h;
    const std::string at_child = h.forward(2, request_with_id(R"("e")"));
    h.answer_error(at_child, -32602, "bad arguments");
    CHECK(h.only_line_to(2) ==
          R"({"jsonrpc":"2.0","id":"e","error":{"code":-32602,"message":"bad arguments"}})");
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router: two sessions may use the same id", "[router]") {
    Two h;
    const std::string a = h.forward(1, request_with_id("1"));
    const std::string b = h.forward(2, request_with_id("1"));
    REQUIRE(raw_id_of(a) != raw_id_of(b));
    h.answer(b, R"({"who":"b"})");
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":1,"result":{"who":"b"}})");
    CHECK(h.env.sent_to(1).empty());
    h.answer(a, R"({"who":"a"})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":1,"result":{"who":"a"}})");
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: ids 1 and \"1\" from one session are distinct requests", "[router]") {
    Two h;
    const std::string number = h.forward(1, request_with_id("1"));
    const std::string text = h.forward(1, request_with_id(R"("1")"));
    REQUIRE(raw_id_of(number) != raw_id_of(text));
    CHECK(h.env.sent_to(1).empty());  // neither was refused as a duplicate
    h.answer(text, R"({"n":2})");
    h.answer(number, R"({"n":1})");
    const auto& lines = h.env.sent_to(1);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == R"({"jsonrpc":"2.0","id":"1","result":{"n":2}})");
    CHECK(lines[1] == R"({"jsonrpc":"2.0","id":1,"result":{"n":1}})");
}

TEST_CASE("router: a duplicate in-flight id is refused and the first is unaffected", "[router]") {
    Two h;
    const std::string first = h.forward(1, request_with_id(R"("dup")"));
    h.send(1, R"({"jsonrpc":"2.0","id":"dup","method":"resources/list"})");
    const std::string refusal = h.only_line_to(1);
    CHECK(error_code_of(refusal) == -32600);
    CHECK(raw_id_of(refusal) == R"("dup")");
    CHECK(h.env.child_lines.empty());
    // Another session may use the same id meanwhile.
    h.forward(2, request_with_id(R"("dup")"));

    h.answer(first, R"({"first":true})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":"dup","result":{"first":true}})");
    // Once answered, the id may be used again; the child sees a new id.
    const std::string again = h.forward(1, request_with_id(R"("dup")"));
    CHECK(raw_id_of(again) != raw_id_of(first));
}

TEST_CASE("router: child ids are never reused, across sessions or after completion", "[router]") {
    Two h;
    std::set<std::string> seen;
    for (int round = 0; round < 5; ++round) {
        for (SessionId s : {1, 2}) {
            const std::string line = h.forward(s, request_with_id("1"));
            const std::string id = raw_id_of(line);
            CHECK(seen.insert(id).second);
            h.answer(line);
        }
    }
    CHECK(seen.size() == 10);
}

TEST_CASE("router: a child response with an unknown id is dropped and noted", "[router]") {
    Two h;
    const std::string pending = h.forward(1, request_with_id("1"));
    SECTION("an id mcpd never sent") {
        h.from_child(R"({"jsonrpc":"2.0","id":999,"result":{}})");
    }
    SECTION("the own id, but as a string") {
        h.from_child(R"({"jsonrpc":"2.0","id":")" + raw_id_of(pending) + R"(","result":{}})");
    }
    SECTION("an error with a null id, two requests at the child, is not broadcast") {
        h.forward(2, request_with_id("2"));
        h.env.session_lines.clear();
        h.from_child(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}})");
    }
    SECTION("an answer to an already answered request") {
        h.answer(pending);
        h.env.session_lines.clear();
        h.answer(pending);
    }
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
    CHECK_FALSE(h.env.notes.empty());
}

TEST_CASE("router: unknown methods are forwarded with id and token rewriting", "[router]") {
    Two h;
    const std::string at_child = h.forward(
        1,
        R"({"jsonrpc":"2.0","id":5,"method":"x-vendor/thing","params":{"_meta":{"progressToken":"t"},"a":[1,2]}})");
    const json j = parse(at_child);
    CHECK(j["id"] == 100);
    CHECK(j["method"] == "x-vendor/thing");
    CHECK(j["params"]["a"] == json::array({1, 2}));
    CHECK(raw_progress_token_of(at_child) != R"("t")");
    h.answer_error(at_child, -32601, "Method not found");
    CHECK(h.only_line_to(1) ==
          R"({"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}})");

    // An unknown notification goes through unchanged.
    const std::string note = R"({"jsonrpc":"2.0","method":"x-vendor/hello","params":{"id":5}})";
    CHECK(h.forward(1, note) == note);
}

// ---- progress ----

TEST_CASE("router: progress tokens are replaced and mapped back byte for byte", "[router]") {
    const std::vector<std::string> tokens = {R"("7")", "7", "12345678901234567890", R"("a\"b")",
                                             "-3"};
    for (const std::string& token : tokens) {
        DYNAMIC_SECTION("token " << token) {
            Two h;
            const std::string request =
                R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":)" +
                token + R"(}}})";
            const std::string at_child = h.forward(1, request);
            const std::string own = raw_progress_token_of(at_child);
            CHECK(own != token);
            CHECK(
                at_child ==
                R"({"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":)" +
                    own + R"(}}})");

            h.from_child(
                R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                own + R"(,"progress":1,"total":3,"message":"one"}})");
            CHECK(
                h.only_line_to(1) ==
                R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                    token + R"(,"progress":1,"total":3,"message":"one"}})");
            CHECK(h.env.sent_to(2).empty());

            // Released with the response: a late progress goes nowhere.
            h.answer(at_child);
            h.env.session_lines.clear();
            h.from_child(
                R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                own + R"(,"progress":3,"total":3}})");
            CHECK(h.env.sent_to(1).empty());
            CHECK(h.env.sent_to(2).empty());
        }
    }
}

TEST_CASE("router: equal tokens from two sessions stay apart", "[router]") {
    Two h;
    const std::string req =
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken" : 7 }}})";
    const std::string a = h.forward(1, req);
    const std::string b = h.forward(2, req);
    const std::string own_a = raw_progress_token_of(a);
    const std::string own_b = raw_progress_token_of(b);
    REQUIRE(own_a != own_b);
    CHECK(own_a != raw_id_of(a));
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" + own_b +
        R"(,"progress":0.5}})");
    CHECK(
        h.only_line_to(2) ==
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":0.5}})");
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router: a progress token of any number comes back to its session byte for byte",
          "[router]") {
    // The schema's ProgressToken is a string or a number, not only an integer.
    for (const char* token :
         {"1.5", "1e3", "-0.25", "2E-7", "-0", "1.0", "12345678901234567890.5"}) {
        DYNAMIC_SECTION("token " << token) {
            Two h;
            const std::string at_child = h.forward(
                1,
                std::string(
                    R"({"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"_meta":{"progressToken":)") +
                    token + "}}}");
            const std::string own = raw_progress_token_of(at_child);
            CHECK(own != token);
            h.from_child(
                R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                own + R"(,"progress":1}})");
            CHECK(
                h.only_line_to(1) ==
                std::string(
                    R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)") +
                    token + R"(,"progress":1}})");
            CHECK(h.env.sent_to(2).empty());
            h.answer(at_child);
            CHECK(raw_id_of(h.only_line_to(1)) == R"("r")");
        }
    }
}

TEST_CASE("router: a progress token that is not a string or a number is refused", "[router]") {
    for (const char* token : {"null", "true", "{}", "[1]"}) {
        DYNAMIC_SECTION("token " << token) {
            Two h;
            h.send(
                1,
                std::string(
                    R"({"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"_meta":{"progressToken":)") +
                    token + "}}}");
            const std::string reply = h.only_line_to(1);
            CHECK(error_code_of(reply) == -32602);
            CHECK(raw_id_of(reply) == R"("r")");
            CHECK(h.env.child_lines.empty());
            CHECK(h.router.in_flight() == 0);
        }
    }
}

TEST_CASE("router: a progress notification with an unknown token is dropped", "[router]") {
    Two h;
    h.forward(
        1,
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}})");
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}})");
    h.from_child(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})");
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: a params.progressToken outside _meta is payload, not a token", "[router]") {
    // Only params._meta.progressToken is replaced; the rest of the payload stays byte-identical
    // (docs/MULTIPLEXING.md, "Both eras", splicing).
    Two h;
    const std::string at_child = h.forward(
        1,
        R"({"jsonrpc":"2.0","id":1,"method":"x-vendor/track","params":{"progressToken":"mine"}})");
    CHECK(
        at_child ==
        R"({"jsonrpc":"2.0","id":100,"method":"x-vendor/track","params":{"progressToken":"mine"}})");
}

TEST_CASE("router: a session token that looks like mcpd's own stays apart", "[router]") {
    Two h;
    const std::string progress_prefix =
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)";
    const std::string first = h.forward(
        2,
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"x"}}})");
    const std::string own_first = raw_progress_token_of(first);
    // Session 1 picks, as its own token, exactly what the child was given for session 2.
    const std::string second = h.forward(
        1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":)" +
               own_first + "}}}");
    const std::string own_second = raw_progress_token_of(second);
    REQUIRE(own_second != own_first);
    h.from_child(progress_prefix + own_first + R"(,"progress":1}})");
    CHECK(h.only_line_to(2) == progress_prefix + R"("x","progress":1}})");
    CHECK(h.env.sent_to(1).empty());
    h.from_child(progress_prefix + own_second + R"(,"progress":1}})");
    CHECK(h.only_line_to(1) == progress_prefix + own_first + R"(,"progress":1}})");
    CHECK(h.env.sent_to(2).empty());
}

// ---- cancellation ----

TEST_CASE("router: a session's cancellation reaches the child with the child id", "[router]") {
    Two h;
    const std::string at_child = h.forward(1, request_with_id(R"("r1")"));
    h.send(
        1,
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1","reason":"user said \"stop\""}})");
    CHECK(
        h.only_child_line() ==
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":100,"reason":"user said \"stop\""}})");
    CHECK(h.router.in_flight() == 0);

    // The child answers anyway: dropped silently.
    h.answer(at_child);
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.notes.empty());
    // The id is free again for that session.
    h.forward(1, request_with_id(R"("r1")"));
}

TEST_CASE("router: cancellations of unknown or finished requests are ignored", "[router]") {
    Two h;
    const std::string done = h.forward(1, request_with_id("1"));
    h.answer(done);
    h.forward(1, request_with_id(R"("live")"));
    h.env.clear_records();
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
    h.send(1,
           R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}})");
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}})");
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"none"}})");
    // The session's initialize (id 0 in connect) was answered locally: ignored as well.
    CHECK(h.env.child_lines.empty());
    CHECK(h.router.in_flight() == 1);
}

TEST_CASE("router: cancelling \"1\" does not cancel 1", "[router]") {
    Two h;
    const std::string number = h.forward(1, request_with_id("1"));
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"1"}})");
    CHECK(h.env.child_lines.empty());
    h.answer(number);
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":1,"result":{}})");
}

TEST_CASE("router: a session cannot cancel another session's request", "[router]") {
    Two h;
    const std::string theirs = h.forward(1, request_with_id(R"("r1")"));
    h.send(2,
           R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1"}})");
    CHECK(h.env.child_lines.empty());
    CHECK(h.router.in_flight() == 1);
    h.answer(theirs, R"({"ok":1})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":"r1","result":{"ok":1}})");
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: cancelling a request releases its progress token", "[router]") {
    Two h;
    const std::string at_child = h.forward(
        1,
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}})");
    const std::string own = raw_progress_token_of(at_child);
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" + own +
        R"(,"progress":1}})");
    CHECK(h.env.sent_to(1).empty());
}
