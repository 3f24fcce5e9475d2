#include <catch2/catch.hpp>
#include <string>

#include "daemon/mux/lost_message_id.h"

using mcpd::LostMessageId;
using mcpd::read_lost_message_id;

namespace {

// The first and last `n` bytes of `line`, as a LineReader keeps them.
LostMessageId edges_of(const std::string& line, std::size_t n = 64) {
    return read_lost_message_id(std::string_view(line).substr(0, n),
                              std::string_view(line).substr(line.size() > n ? line.size() - n : 0));
}

const std::string kPayload(4096, 'x');

}  // namespace

TEST_CASE("message edges: the id written before the payload is read from the head") {
    const LostMessageId e =
        edges_of(R"({"jsonrpc":"2.0","id":42,"result":{"text":")" + kPayload + R"("}})");
    CHECK(e.id == "42");
    CHECK(e.response);
    CHECK_FALSE(e.request);
}

TEST_CASE("message edges: the id written after the payload is read from the tail") {
    const LostMessageId e = edges_of(R"({"result":{"content":[{"type":"text","text":")" + kPayload +
                                    R"("}]},"jsonrpc":"2.0","id":"req-7"})");
    CHECK(e.id == R"("req-7")");
    CHECK(e.response);
}

TEST_CASE("message edges: a request is told from a response") {
    const LostMessageId request = edges_of(R"({"method":"tools/call","params":{"text":")" +
                                          kPayload + R"("},"jsonrpc":"2.0","id":9})");
    CHECK(request.request);
    CHECK_FALSE(request.response);
    CHECK(request.id == "9");
    const LostMessageId error =
        edges_of(R"({"jsonrpc":"2.0","id":-3,"error":{"code":1,"data":")" + kPayload + R"("}})");
    CHECK(error.response);
    CHECK(error.id == "-3");
}

TEST_CASE("message edges: nested ids, escapes and members after the payload are no trap") {
    // The payload ends in an object with its own "id", and a string full of quotes.
    const std::string line = R"({"jsonrpc":"2.0","result":{"items":[{"id":1},{"id":2}],"s":")" +
                             kPayload + R"(\"id\":5,\\"},"id":"\"q\\","extra":[1,{"a":"}"}]})";
    const LostMessageId e = edges_of(line, 96);
    CHECK(e.id == R"("\"q\\")");
    CHECK(e.response);
}

TEST_CASE("message edges: nothing is believed that an edge cuts off") {
    // The id's value runs into the end of the head: it might go on.
    CHECK(read_lost_message_id(R"({"jsonrpc":"2.0","id":12)", "").id.empty());
    // A tail that starts inside the id token.
    CHECK(read_lost_message_id("", R"(2345})").id.empty());
    // No object at all, and ids of the wrong type.
    CHECK(edges_of("not json at all " + kPayload).id.empty());
    CHECK(edges_of(R"({"id":null,"result":")" + kPayload + R"("})").id.empty());
    CHECK(edges_of(R"({"result":")" + kPayload + R"(","id":1.5})").id.empty());
    CHECK(edges_of(R"({"result":")" + kPayload + R"(","id":true})").id.empty());
}

TEST_CASE("message edges: a whole line that is not valid UTF-8 still shows its id") {
    const std::string line = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"text\":\"caf\xe9\"}}";
    const LostMessageId e = read_lost_message_id(line, line);
    CHECK(e.id == "3");
    CHECK(e.response);
}
