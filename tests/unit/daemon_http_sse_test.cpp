// Server-Sent Events (daemon/http/sse.h): the text of events and keep-alives, the replay
// buffer behind Last-Event-ID, and the header's value read back.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/http/sse.h"

using namespace mcpd;

TEST_CASE("an event is an id line and one data line per line", "[sse]") {
    CHECK(sse_event("7", R"({"jsonrpc":"2.0"})") == "id: 7\ndata: {\"jsonrpc\":\"2.0\"}\n\n");
    CHECK(sse_event("", "hello") == "data: hello\n\n");
    CHECK(sse_event("", "") == "data: \n\n");
    CHECK(sse_event("1", "a\nb") == "id: 1\ndata: a\ndata: b\n\n");
    CHECK(sse_event("1", "a\r\nb") == "id: 1\ndata: a\ndata: b\n\n");
    CHECK(sse_event("1", "a\rb") == "id: 1\ndata: a\ndata: b\n\n");
    CHECK(sse_event("1", "a\n\nb") == "id: 1\ndata: a\ndata: \ndata: b\n\n");
    CHECK(sse_event("1", "a\n") == "id: 1\ndata: a\ndata: \n\n");
    CHECK(sse_event("1", "a\r") == "id: 1\ndata: a\ndata: \n\n");
    CHECK(sse_event("1", "\r\n") == "id: 1\ndata: \ndata: \n\n");
}

TEST_CASE("an event's text cannot start fields of its own", "[sse]") {
    // A line break in the data would otherwise start an "event:" or "id:" field.
    const std::string event = sse_event("3", "x\r\nevent: evil\nid: 99\rretry: 1");
    CHECK(event == "id: 3\ndata: x\ndata: event: evil\ndata: id: 99\ndata: retry: 1\n\n");
    CHECK(sse_event("4\r\ndata: evil", "x") == "id: 4data: evil\ndata: x\n\n");
}

TEST_CASE("a comment is a keep-alive on one line", "[sse]") {
    CHECK(sse_comment("keep-alive") == ": keep-alive\n\n");
    CHECK(sse_comment("") == ": \n\n");
    CHECK(sse_comment("a\nb\r\nc") == ": a b  c\n\n");
}

TEST_CASE("the replay buffer numbers events and replays a stream after an id", "[sse]") {
    SseReplayBuffer buffer(1 << 20);
    CHECK(buffer.last_id() == 0);
    CHECK(buffer.bytes() == 0);
    CHECK(buffer.append("one", "get") == 1);
    CHECK(buffer.append("two", "post-1") == 2);
    CHECK(buffer.append("three", "get") == 3);
    CHECK(buffer.append("four", "get") == 4);
    CHECK(buffer.last_id() == 4);
    CHECK(buffer.bytes() == 3 * 3 + 6 + sse_event("1", "one").size() +
                                sse_event("2", "two").size() + sse_event("3", "three").size() +
                                sse_event("4", "four").size());

    using Events = std::vector<std::string>;
    CHECK(buffer.since(1, "get") ==
          std::optional<Events>(Events{"id: 3\ndata: three\n\n", "id: 4\ndata: four\n\n"}));
    CHECK(buffer.since(3, "get") == std::optional<Events>(Events{"id: 4\ndata: four\n\n"}));
    CHECK(buffer.since(4, "get") == std::optional<Events>(Events{}));
    CHECK(buffer.since(2, "post-1") == std::optional<Events>(Events{}));
    // 0, a session's first GET: every event of its stream (the server's requests sent before
    // the client opened it).
    CHECK(buffer.since(0, "get") == std::optional<Events>(Events{"id: 1\ndata: one\n\n", "id: 3\ndata: three\n\n",
                                                                 "id: 4\ndata: four\n\n"}));
    // An id of another stream, or one not given yet: nothing to resume from.
    CHECK_FALSE(buffer.since(2, "get").has_value());
    CHECK_FALSE(buffer.since(1, "post-1").has_value());
    CHECK_FALSE(buffer.since(5, "get").has_value());
}

TEST_CASE("the replay buffer drops its oldest events past its bound", "[sse]") {
    const std::size_t one = sse_event("1", "0123456789").size() + 3;  // with "get"
    SseReplayBuffer buffer(3 * one);
    for (int i = 0; i < 5; ++i) buffer.append("0123456789", "get");
    CHECK(buffer.last_id() == 5);
    CHECK(buffer.bytes() <= 3 * one);
    // 1 and 2 are gone: resuming after 1 (or from the start) would miss 2.
    CHECK_FALSE(buffer.since(1, "get").has_value());
    CHECK_FALSE(buffer.since(0, "get").has_value());
    // After 2 every later event is still there (2 itself need not be).
    REQUIRE(buffer.since(2, "get").has_value());
    CHECK(buffer.since(2, "get")->size() == 3);
    CHECK(buffer.since(2, "get")->front() == sse_event("3", "0123456789"));
    CHECK(buffer.since(4, "get")->size() == 1);

    // An event larger than the bound on its own is numbered, and nothing is kept.
    CHECK(buffer.append(std::string(10 * one, 'x'), "get") == 6);
    CHECK(buffer.bytes() == 0);
    CHECK_FALSE(buffer.since(5, "get").has_value());
    CHECK(buffer.since(6, "get") ==
          std::optional<std::vector<std::string>>(std::vector<std::string>{}));
    CHECK(buffer.append("next", "get") == 7);
    CHECK(buffer.since(6, "get")->size() == 1);
}

TEST_CASE("Last-Event-ID is read back only as the events were numbered", "[sse]") {
    CHECK(parse_last_event_id("1") == std::optional<std::uint64_t>(1));
    CHECK(parse_last_event_id("42") == std::optional<std::uint64_t>(42));
    CHECK(parse_last_event_id("18446744073709551615") ==
          std::optional<std::uint64_t>(18446744073709551615ull));
    for (const char* bad : {"", "0", "007", "-1", "+1", " 1", "1 ", "1a", "0x10", "1.0",
                            "18446744073709551616", "99999999999999999999999"}) {
        INFO(bad);
        CHECK_FALSE(parse_last_event_id(bad).has_value());
    }
}
