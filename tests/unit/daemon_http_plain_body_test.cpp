// The usual POST body taken as it is (daemon/http/plain_body.h), and every other body left to
// the general path.
#include <catch2/catch.hpp>

#include "daemon/http/plain_body.h"

using mcpd::plain_body_message;

namespace {

std::optional<std::string> plain(std::string_view body, std::size_t max = 1 << 20) {
    mcpd::wire::EnvelopeScanner scanner(max + 4096);
    mcpd::wire::Envelope envelope;
    return plain_body_message(body, max, scanner, envelope);
}

}  // namespace

TEST_CASE("http: a call on one line is taken as it is, blanks around it dropped", "[http]") {
    const std::string call =
        R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a b"}}})";
    CHECK(plain(call) == call);
    CHECK(plain("  " + call + "\r\n") == call);
    CHECK(plain(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").has_value());
    CHECK(plain(R"({"jsonrpc":"2.0","id":1,"result":{}})").has_value());
    // A string may hold an escaped line break: it is no line break in the line.
    CHECK(plain(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"a\nb"}})").has_value());
}

TEST_CASE("http: every other body goes the general way", "[http]") {
    // initialize opens a session: the general path reads its parameters.
    CHECK_FALSE(plain(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})"));
    // A line break inside, pretty-printed JSON: it would split the line.
    CHECK_FALSE(plain("{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"ping\"}"));
    CHECK_FALSE(plain("{\"jsonrpc\":\"2.0\",\r\"id\":1,\"method\":\"ping\"}"));
    // A batch, a scalar, nothing, not JSON, a malformed envelope, too long.
    CHECK_FALSE(plain(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])"));
    CHECK_FALSE(plain("42"));
    CHECK_FALSE(plain("   "));
    CHECK_FALSE(plain(R"({"jsonrpc":"2.0","id":1,"method":"ping")"));
    CHECK_FALSE(plain(R"({"jsonrpc":"2.0","id":1,"method":5})"));
    CHECK_FALSE(plain(R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})"));
    CHECK_FALSE(plain(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", 10));
    // Bytes that are not UTF-8.
    CHECK_FALSE(plain("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}"));
}

TEST_CASE("http: a body with nothing around its message is taken, not copied", "[http]") {
    mcpd::wire::EnvelopeScanner scanner(4096 + 4096);
    mcpd::wire::Envelope envelope;
    const std::string call = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
    std::string body = call;
    body.reserve(call.size() + mcpd::wire::kScanPadding);
    const char* const bytes = body.data();
    std::optional<std::string> taken = plain_body_message(body, 4096, scanner, envelope);
    REQUIRE(taken == call);
    CHECK(taken->data() == bytes);  // the same memory
    CHECK(body.empty());
    CHECK(envelope.method == "ping");
    // Blanks around it: a copy, the body left as it was.
    std::string spaced = " " + call + "\r\n";
    CHECK(plain_body_message(spaced, 4096, scanner, envelope) == call);
    CHECK(spaced == " " + call + "\r\n");
    // Not taken: the body is left for the general path, whole.
    for (std::string other : {std::string(R"({"jsonrpc":"2.0","id":1,"method":"initialize"})"),
                              std::string(R"({"jsonrpc":"2.0","id":1,"method":"x"} {})"),
                              std::string("{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"x\"}"),
                              std::string(5000, '{') + "}"}) {
        const std::string before = other;
        INFO(before.substr(0, 60));
        CHECK_FALSE(plain_body_message(other, 4096, scanner, envelope).has_value());
        CHECK(other == before);
    }
}
