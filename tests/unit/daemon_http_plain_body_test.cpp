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
