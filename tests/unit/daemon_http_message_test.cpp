// HTTP/1.1 for the MCP endpoint (daemon/control/http_message.h): request heads as real clients
// send them, everything that could be read two ways refused, Accept, and the responses.
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/control/http_message.h"

using namespace mcpd;

namespace {

Result<HttpRequestHead> message_test_parse(const std::string& head) {
    return parse_request_head(head);
}

// Why `head` was refused, or "" when it was not.
std::string message_test_refusal(const std::string& head) {
    const Result<HttpRequestHead> parsed = parse_request_head(head);
    return parsed.ok() ? "" : parsed.error();
}

}  // namespace

TEST_CASE("a curl request head is read", "[http-message]") {
    const std::string head =
        "POST /mcp/github?trace=1 HTTP/1.1\r\n"
        "Host: localhost:8808\r\n"
        "User-Agent: curl/7.88.1\r\n"
        "Accept: application/json, text/event-stream\r\n"
        "Content-Type: application/json\r\n"
        "Mcp-Protocol-Version: 2025-06-18\r\n"
        "Content-Length: 58\r\n"
        "\r\n";
    REQUIRE(request_head_end(head + "{\"jsonrpc\"") == head.size());
    const Result<HttpRequestHead> parsed = message_test_parse(head);
    INFO((parsed ? "" : parsed.error()));
    REQUIRE(parsed.ok());
    CHECK(parsed->method == "POST");
    CHECK(parsed->path == "/mcp/github");
    CHECK(parsed->query == "trace=1");
    CHECK(parsed->minor == 1);
    CHECK(parsed->header("host") == std::optional<std::string_view>("localhost:8808"));
    CHECK(parsed->header("mcp-protocol-version") == std::optional<std::string_view>("2025-06-18"));
    CHECK_FALSE(parsed->header("Host").has_value());  // names are asked for in lowercase
    CHECK_FALSE(parsed->header("mcp-session-id").has_value());
    CHECK(parsed->content_length == std::optional<std::size_t>(58));
    CHECK_FALSE(parsed->chunked);
    CHECK(parsed->keep_alive);
    CHECK(parsed->header_count() == 6);
}

TEST_CASE("a node fetch request head is read", "[http-message]") {
    // undici (Node's fetch): lowercase names, keep-alive, LF-only line ends accepted too.
    const std::string head =
        "GET /mcp/all HTTP/1.1\n"
        "host: 127.0.0.1:8808\n"
        "connection: keep-alive\n"
        "mcp-session-id: m1.abc.def\n"
        "last-event-id: 12\n"
        "accept: text/event-stream\n"
        "accept-language: *\n"
        "sec-fetch-mode: cors\n"
        "user-agent: node\n"
        "accept-encoding: gzip, deflate\n"
        "\n";
    CHECK(request_head_end(head) == head.size());
    const Result<HttpRequestHead> parsed = message_test_parse(head);
    REQUIRE(parsed.ok());
    CHECK(parsed->method == "GET");
    CHECK(parsed->path == "/mcp/all");
    CHECK(parsed->query.empty());
    CHECK(parsed->header("mcp-session-id") == std::optional<std::string_view>("m1.abc.def"));
    CHECK(parsed->header("last-event-id") == std::optional<std::string_view>("12"));
    CHECK_FALSE(parsed->content_length.has_value());
    CHECK(parsed->keep_alive);
}

TEST_CASE("request_head_end finds the empty line after any line end", "[http-message]") {
    CHECK(request_head_end("GET / HTTP/1.1\r\nHost: x\r\n") == std::string::npos);
    CHECK(request_head_end("GET / HTTP/1.1\r\nHost: x\r\n\r") == std::string::npos);
    CHECK(request_head_end("GET / HTTP/1.1\r\nHost: x\r\n\r\nbody") == 27);
    CHECK(request_head_end("GET / HTTP/1.1\nHost: x\n\nbody") == 24);
    CHECK(request_head_end("GET / HTTP/1.1\nHost: x\n\r\nbody") == 25);
    CHECK(request_head_end("") == std::string::npos);
}

TEST_CASE("a head that arrives a byte at a time is looked through once, and its end is found",
          "[http-message]") {
    // Every way of ending a head, fed a byte at a time: each search starts where the last one
    // left off (head_search_from) and finds the end at the byte that completes it, as a search
    // of the whole would.
    const std::string heads[] = {
        "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\nHost: x\n\n",
        "GET / HTTP/1.1\nHost: x\n\r\n",     "GET / HTTP/1.1\r\nHost: x\r\n\n",
        "\n\n",                               "\r\n\r\n"};
    for (const std::string& head : heads) {
        INFO(head);
        std::string received;
        std::size_t from = 0;
        std::size_t found = std::string::npos;
        for (const char c : head + "{}") {
            received += c;
            CHECK(from <= received.size());
            found = request_head_end(received, from);
            CHECK(found == request_head_end(received));
            if (found != std::string::npos) break;
            from = head_search_from(received);
        }
        CHECK(found == head.size());
        CHECK(received.size() == head.size());
    }
    CHECK(head_search_from("") == 0);
    CHECK(head_search_from("a") == 0);
    CHECK(head_search_from("abc") == 1);
}

TEST_CASE("values are trimmed and repeated list headers joined", "[http-message]") {
    const Result<HttpRequestHead> parsed = message_test_parse(
        "GET /mcp HTTP/1.1\r\nHost:\t localhost \t\r\nAccept: application/json\r\n"
        "X-Empty:\r\nAccept: text/event-stream\r\naccept:\r\n\r\n");
    REQUIRE(parsed.ok());
    CHECK(parsed->header("host") == std::optional<std::string_view>("localhost"));
    CHECK(parsed->header("accept") ==
          std::optional<std::string_view>("application/json, text/event-stream"));
    CHECK(parsed->header("x-empty") == std::optional<std::string_view>(""));
}

TEST_CASE("many joined values and the headers after them are all read, in a copy too",
          "[http-message]") {
    // Each join grows the head's own text: the lines not yet read must still be found.
    std::string text = "GET /mcp HTTP/1.1\r\nHost: localhost\r\n";
    std::string expected;
    for (int i = 0; i < 40; ++i) {
        const std::string item = "item-" + std::to_string(i) + std::string(20, 'x');
        text += "X-List: " + item + "\r\nX-After-" + std::to_string(i) + ": " + std::to_string(i) +
                "\r\n";
        expected += (i == 0 ? "" : ", ") + item;
    }
    text += "Content-Length: 0\r\n\r\n";
    const Result<HttpRequestHead> parsed = message_test_parse(text);
    REQUIRE(parsed.ok());
    const HttpRequestHead copy = parsed.value();
    for (const HttpRequestHead* head : {&parsed.value(), &copy}) {
        CHECK(head->header("x-list") == std::optional<std::string_view>(expected));
        for (int i = 0; i < 40; ++i)
            CHECK(head->header("x-after-" + std::to_string(i)) ==
                  std::optional<std::string_view>(std::to_string(i)));
        CHECK(head->header("content-length") == std::optional<std::string_view>("0"));
        CHECK(head->header_count() == 43);
        CHECK(head->headers().front() ==
              std::pair<std::string_view, std::string_view>("host", "localhost"));
    }
}

TEST_CASE("each header read on every request has a slot, found in any case and order",
          "[http-message]") {
    // Sent in reverse order, names in capitals, with an unknown header among them. The values
    // are in capitals too: a name is lowered where it lies, and what follows it is kept.
    const auto value_of = [](std::size_t slot) {
        // Content-Length must be a number; the others are any text.
        return kKnownHeaders[slot] == "content-length"
                   ? std::to_string(slot)
                   : "V" + std::to_string(slot) + "-KEPT-IN-CAPITALS";
    };
    std::string text = "POST /mcp HTTP/1.1\r\n";
    for (std::size_t i = kKnownHeaders.size(); i-- > 0;) {
        if (kKnownHeaders[i] == "transfer-encoding") continue;  // not beside Content-Length
        std::string upper(kKnownHeaders[i]);
        for (char& c : upper)
            if (c >= 'a' && c <= 'z') c = static_cast<char>(c - ('a' - 'A'));
        text += upper + ": " + value_of(i) + "\r\n";
        if (i == 5) text += "X-Unknown: u\r\n";
    }
    text += "\r\n";
    INFO(text);
    const Result<HttpRequestHead> parsed = message_test_parse(text);
    REQUIRE(parsed.ok());
    const HttpRequestHead copy = parsed.value();
    for (const HttpRequestHead* head : {&parsed.value(), &copy}) {
        for (std::size_t i = 0; i < kKnownHeaders.size(); ++i) {
            INFO(kKnownHeaders[i]);
            if (kKnownHeaders[i] == "transfer-encoding") {
                CHECK_FALSE(head->header(kKnownHeaders[i]).has_value());
                continue;
            }
            CHECK(head->header(kKnownHeaders[i]) == std::optional<std::string_view>(value_of(i)));
            // The same name held at run time, as a caller might: the same answer.
            const std::string held(kKnownHeaders[i]);
            CHECK(head->header(held) == head->header(kKnownHeaders[i]));
        }
        CHECK(head->header("x-unknown") == std::optional<std::string_view>("u"));
        CHECK_FALSE(head->header("x-absent").has_value());
        CHECK(head->header_count() == kKnownHeaders.size());
    }
    // One known header alone: the others are absent, not found at its slot.
    const Result<HttpRequestHead> one = message_test_parse("GET /mcp HTTP/1.1\r\nAccept: a\r\n\r\n");
    REQUIRE(one.ok());
    CHECK(one->header("accept") == std::optional<std::string_view>("a"));
    CHECK_FALSE(one->header("host").has_value());
    CHECK_FALSE(one->header("mcp-session-id").has_value());
}

TEST_CASE("a singleton header sent twice is refused", "[http-message]") {
    for (const std::string_view name : kSingletonHeaders) {
        INFO(name);
        std::string head = "POST /mcp HTTP/1.1\r\n";
        head += std::string(name) + ": a\r\n";
        head += "X-Between: 1\r\n";
        std::string upper(name);
        upper[0] = static_cast<char>(upper[0] - 32);
        head += upper + ": a\r\n\r\n";
        CHECK(message_test_refusal(head) ==
              "malformed HTTP request: the header " + std::string(name) + " was sent twice");
    }
}

TEST_CASE("folded lines, control characters and bad names are refused", "[http-message]") {
    const std::string start = "GET /mcp HTTP/1.1\r\nHost: localhost\r\n";
    CHECK(message_test_refusal(start + "X-A: one\r\n two\r\n\r\n").find("folded") !=
          std::string::npos);
    CHECK(message_test_refusal(start + "X-A: one\r\n\ttwo\r\n\r\n").find("folded") !=
          std::string::npos);
    CHECK(message_test_refusal("GET /mcp HTTP/1.1\r\n Host: localhost\r\n\r\n").find("folded") !=
          std::string::npos);
    CHECK(message_test_refusal(start + "X-A: a\rb\r\n\r\n").find("control") != std::string::npos);
    CHECK(message_test_refusal(start + std::string("X-A: a\0b\r\n\r\n", 12)).find("control") !=
          std::string::npos);
    CHECK(message_test_refusal(start + "X-A: a\x7f\r\n\r\n").find("control") != std::string::npos);
    CHECK(message_test_refusal(start + "X-A : a\r\n\r\n").find("token") != std::string::npos);
    CHECK(message_test_refusal(start + "X(A): a\r\n\r\n").find("token") != std::string::npos);
    CHECK(message_test_refusal(start + ": a\r\n\r\n").find("token") != std::string::npos);
    CHECK(message_test_refusal(start + "no colon\r\n\r\n").find("':'") != std::string::npos);
    CHECK(message_test_refusal(start).find("empty line") != std::string::npos);
    // Bytes over 0x7F are allowed in values (obs-text), tabs too.
    CHECK(message_test_refusal(start + "X-A: caf\xc3\xa9\tau lait\r\n\r\n").empty());
}

TEST_CASE("a control character is found at any place in a long value", "[http-message]") {
    // Values are checked sixteen bytes at a time: every place in and after the first blocks.
    const std::string start = "GET /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: ";
    const std::string plain(40, 'v');
    for (std::size_t at = 0; at < plain.size(); ++at) {
        for (const char bad : {'\0', '\x01', '\x1f', '\r', '\x7f'}) {
            std::string value = plain;
            value[at] = bad;
            INFO("byte " << static_cast<int>(static_cast<unsigned char>(bad)) << " at " << at);
            CHECK(message_test_refusal(start + value + "\r\n\r\n").find("control") !=
                  std::string::npos);
        }
        for (const char fine : {'\t', ' ', '~', '\x80', '\xe9', '\xff'}) {
            std::string value = plain;
            value[at] = fine;
            // Not at the ends, where blanks are trimmed.
            if (at == 0 || at + 1 == plain.size()) value[at] = 'v';
            INFO("byte " << static_cast<int>(static_cast<unsigned char>(fine)) << " at " << at);
            CHECK(message_test_refusal(start + value + "\r\n\r\n").empty());
        }
    }
    // In a head of many lines: a control character in any value refuses it, line ends of
    // either kind do not.
    std::string lines;
    for (int i = 0; i < 8; ++i)
        lines += "X-" + std::to_string(i) + ": " + std::string(13 + i, 'v') + "\r\n";
    lines += "X-Lf: lf\n";
    for (std::size_t at = 0; at < lines.size(); ++at) {
        if (lines[at] != 'v') continue;
        for (const char bad : {'\r', '\x7f', '\x01'}) {
            std::string changed = lines;
            changed[at] = bad;
            INFO("byte " << static_cast<int>(static_cast<unsigned char>(bad)) << " at " << at);
            CHECK(
                message_test_refusal("GET /mcp HTTP/1.1\r\n" + changed + "\r\n").find("control") !=
                std::string::npos);
        }
    }
    CHECK(message_test_refusal("GET /mcp HTTP/1.1\r\n" + lines + "\r\n").empty());
    // The same scrub in responses: each control character becomes a space, wherever it is.
    for (std::size_t at = 0; at < plain.size(); ++at) {
        std::string value = plain;
        value[at] = '\n';
        std::string expected = plain;
        expected[at] = ' ';
        CHECK(http_response(200, {{"X-A", value}}, "", true) ==
              "HTTP/1.1 200 OK\r\nX-A: " + expected +
                  "\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n");
    }
}

TEST_CASE("a request line that is not METHOD /path HTTP/1.x is refused", "[http-message]") {
    for (const char* bad :
         {"GET /mcp\r\n\r\n", "GET  /mcp HTTP/1.1\r\n\r\n", "GET /mcp HTTP/1.1 \r\n\r\n",
          "GET /m cp HTTP/1.1\r\n\r\n", "GET mcp HTTP/1.1\r\n\r\n", "GET * HTTP/1.1\r\n\r\n",
          "GET http://localhost/mcp HTTP/1.1\r\n\r\n", "GET /mcp HTTP/2.0\r\n\r\n",
          "GET /mcp HTTP/1.2\r\n\r\n", "GET /mcp http/1.1\r\n\r\n", "G(T /mcp HTTP/1.1\r\n\r\n",
          "GET /mcp#frag HTTP/1.1\r\n\r\n", "GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n",
          "GET /mcp\t HTTP/1.1\r\n\r\n", "\r\nGET /mcp HTTP/1.1\r\n\r\n", ""}) {
        INFO(bad);
        CHECK_FALSE(message_test_refusal(bad).empty());
    }
    const Result<HttpRequestHead> old = message_test_parse("DELETE /mcp/x? HTTP/1.0\r\n\r\n");
    REQUIRE(old.ok());
    CHECK(old->method == "DELETE");
    CHECK(old->path == "/mcp/x");
    CHECK(old->query.empty());
    CHECK(old->minor == 0);
}

TEST_CASE("smuggling attempts are refused", "[http-message]") {
    const std::string start = "POST /mcp HTTP/1.1\r\nHost: localhost\r\n";
    CHECK(message_test_refusal(start + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n") ==
          "malformed HTTP request: Content-Length and Transfer-Encoding were both sent");
    CHECK(message_test_refusal(start + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n")
              .find("both") != std::string::npos);
    CHECK(message_test_refusal(start + "Transfer-Encoding: gzip\r\n\r\n") ==
          "malformed HTTP request: the only Transfer-Encoding read is chunked");
    CHECK_FALSE(message_test_refusal(start + "Transfer-Encoding: gzip, chunked\r\n\r\n").empty());
    CHECK_FALSE(
        message_test_refusal(start + "Transfer-Encoding: chunked, chunked\r\n\r\n").empty());
    CHECK_FALSE(message_test_refusal(start + "Transfer-Encoding: xchunked\r\n\r\n").empty());
    CHECK_FALSE(message_test_refusal(start + "Transfer-Encoding:\r\n\r\n").empty());
    CHECK_FALSE(
        message_test_refusal("POST /mcp HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n").empty());
    CHECK_FALSE(
        message_test_refusal(start + "Content-Length: 5\r\nContent-Length: 5\r\n\r\n").empty());
    // Chunked alone is read, and left to the caller to answer.
    const Result<HttpRequestHead> chunked =
        message_test_parse(start + "Transfer-Encoding: Chunked\r\n\r\n");
    REQUIRE(chunked.ok());
    CHECK(chunked->chunked);
    CHECK_FALSE(chunked->content_length.has_value());
}

TEST_CASE("Content-Length is digits only and fits", "[http-message]") {
    const std::string start = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: ";
    for (const char* bad : {"+5", "-5", "5 x", "5,5", "0x10", "", "5.0", "99999999999999999999999",
                            "18446744073709551616"}) {
        INFO(bad);
        CHECK(message_test_refusal(start + bad + "\r\n\r\n") ==
              "malformed HTTP request: Content-Length is not a number of bytes");
    }
    // A space after the number is refused too (peers disagree on it); one before it is not.
    CHECK(message_test_refusal(start + "5 \r\n\r\n") ==
          "malformed HTTP request: Content-Length is not a number of bytes");
    CHECK_FALSE(message_test_refusal(start + "5\t\r\n\r\n").empty());
    CHECK(message_test_parse("POST /mcp HTTP/1.1\r\nContent-Length:5\r\n\r\n")->content_length ==
          std::optional<std::size_t>(5));
    CHECK(message_test_parse(start + " 5\r\n\r\n")->content_length ==
          std::optional<std::size_t>(5));
    CHECK(message_test_parse(start + "0\r\n\r\n")->content_length == std::optional<std::size_t>(0));
    CHECK(message_test_parse(start + "007\r\n\r\n")->content_length ==
          std::optional<std::size_t>(7));
    CHECK(message_test_parse(start + "18446744073709551615\r\n\r\n")->content_length ==
          std::optional<std::size_t>(18446744073709551615ull));
}

TEST_CASE("Connection decides whether the connection is kept", "[http-message]") {
    const auto kept = [](const std::string& version, const std::string& connection) {
        const Result<HttpRequestHead> parsed =
            message_test_parse("GET /mcp " + version + "\r\n" + connection + "\r\n");
        REQUIRE(parsed.ok());
        return parsed->keep_alive;
    };
    CHECK(kept("HTTP/1.1", ""));
    CHECK(kept("HTTP/1.1", "Connection: keep-alive\r\n"));
    CHECK_FALSE(kept("HTTP/1.1", "Connection: close\r\n"));
    CHECK_FALSE(kept("HTTP/1.1", "Connection: Close\r\n"));
    CHECK_FALSE(kept("HTTP/1.1", "Connection: TE, close\r\n"));
    CHECK_FALSE(kept("HTTP/1.1", "Connection: keep-alive\r\nConnection: close\r\n"));
    CHECK(kept("HTTP/1.1", "Connection: closed\r\n"));
    CHECK_FALSE(kept("HTTP/1.0", ""));
    CHECK(kept("HTTP/1.0", "Connection: Keep-Alive\r\n"));
    CHECK_FALSE(kept("HTTP/1.0", "Connection: keep-alive, close\r\n"));
    CHECK_FALSE(kept("HTTP/1.0", "Connection: close\r\n"));
}

TEST_CASE("accepts reads media ranges, weights and wildcards", "[http-message]") {
    const std::string_view json_media = "application/json";
    const std::string_view sse_media = "text/event-stream";
    CHECK_FALSE(accepts(std::nullopt, json_media));
    CHECK_FALSE(accepts("", json_media));
    CHECK(accepts("application/json, text/event-stream", json_media));
    CHECK(accepts("application/json, text/event-stream", sse_media));
    CHECK(accepts("Application/JSON", json_media));
    CHECK_FALSE(accepts("application/json", sse_media));
    CHECK(accepts("*/*", sse_media));
    CHECK(accepts("text/*", sse_media));
    CHECK_FALSE(accepts("text/*", json_media));
    CHECK_FALSE(accepts("application/jsonx", json_media));
    CHECK_FALSE(accepts("application/json-seq", json_media));
    CHECK(accepts("application/json;charset=utf-8", json_media));
    CHECK(accepts("application/json ; q=0.5", json_media));
    CHECK(accepts("application/json;q=1.000", json_media));
    CHECK(accepts("application/json;Q=0.001", json_media));
    // q=0 means "not acceptable", and the most specific range decides.
    CHECK_FALSE(accepts("application/json;q=0", json_media));
    CHECK_FALSE(accepts("application/json;q=0.000", json_media));
    CHECK_FALSE(accepts("*/*, application/json;q=0", json_media));
    CHECK_FALSE(accepts("text/*;q=0, */*", sse_media));
    CHECK(accepts("*/*;q=0, text/event-stream", sse_media));
    CHECK(accepts("text/*;q=0, text/event-stream;q=0.1", sse_media));
    CHECK(accepts("application/json;q=0, application/json;q=0.2", json_media));
    // A malformed weight counts for nothing.
    CHECK_FALSE(accepts("application/json;q=2", json_media));
    CHECK_FALSE(accepts("application/json;q=1.5", json_media));
    CHECK_FALSE(accepts("application/json;q=", json_media));
    CHECK_FALSE(accepts("application/json;q=0.1234", json_media));
    CHECK_FALSE(accepts("application/json;q", json_media));
    CHECK(accepts("application/json;q=x, */*", json_media));
    // A comma inside a quoted parameter does not split the list.
    CHECK_FALSE(accepts("text/html;x=\"a, application/json\"", json_media));
    CHECK(accepts("text/html;x=\"a,\\\" b\", application/json", json_media));
    CHECK_FALSE(accepts("application", json_media));
    CHECK_FALSE(accepts("*/json", json_media));
    CHECK_FALSE(accepts(",,,", json_media));
}

TEST_CASE("responses are written with their length and connection", "[http-message]") {
    CHECK(http_response(200, {{"Content-Type", "application/json"}}, "{}", true) ==
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
          "Connection: keep-alive\r\n\r\n{}");
    CHECK(http_response(202, {}, "", false) ==
          "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    CHECK(http_response(204, {}, "ignored", true) ==
          "HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n");
    CHECK(http_response(418, {}, "", false).starts_with("HTTP/1.1 418 \r\n"));
    const std::pair<int, const char*> phrases[] = {{400, "Bad Request"},
                                                   {401, "Unauthorized"},
                                                   {403, "Forbidden"},
                                                   {404, "Not Found"},
                                                   {405, "Method Not Allowed"},
                                                   {406, "Not Acceptable"},
                                                   {408, "Request Timeout"},
                                                   {409, "Conflict"},
                                                   {411, "Length Required"},
                                                   {413, "Content Too Large"},
                                                   {415, "Unsupported Media Type"},
                                                   {421, "Misdirected Request"},
                                                   {429, "Too Many Requests"},
                                                   {431, "Request Header Fields Too Large"},
                                                   {500, "Internal Server Error"},
                                                   {503, "Service Unavailable"}};
    for (const auto& phrase : phrases) {
        CHECK(http_response(phrase.first, {}, "", true)
                  .starts_with("HTTP/1.1 " + std::to_string(phrase.first) + " " + phrase.second +
                               "\r\n"));
    }
    // A value taken from a peer cannot add a header line.
    CHECK(http_response(400, {{"X-A", "a\r\nSet-Cookie: x"}}, "", false) ==
          "HTTP/1.1 400 Bad Request\r\nX-A: a  Set-Cookie: x\r\nContent-Length: 0\r\n"
          "Connection: close\r\n\r\n");
}

TEST_CASE("a streamed response is a chunked head and chunks", "[http-message]") {
    CHECK(http_stream_head(
              200, {{"Content-Type", "text/event-stream"}, {"Mcp-Session-Id", "m1.a.b"}}, true) ==
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: m1.a.b\r\n"
          "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n");
    CHECK(http_chunk("hello") == "5\r\nhello\r\n");
    CHECK(http_chunk(std::string(255, 'x')) == "ff\r\n" + std::string(255, 'x') + "\r\n");
    CHECK(http_chunk(std::string(4096, 'x')).starts_with("1000\r\n"));
    CHECK(http_chunk("") == "");
    CHECK(http_last_chunk() == "0\r\n\r\n");
}

TEST_CASE("bearer credentials: the scheme in any case, then one or more spaces", "[http-message]") {
    CHECK(bearer_credentials("Bearer abc") == std::optional<std::string_view>("abc"));
    CHECK(bearer_credentials("bEaReR   abc") == std::optional<std::string_view>("abc"));
    CHECK_FALSE(bearer_credentials("Basic abc"));
    CHECK_FALSE(bearer_credentials("Bearer"));
    CHECK_FALSE(bearer_credentials("Bearer   "));
    CHECK_FALSE(bearer_credentials("Bearerabc"));
}

TEST_CASE("a known header's name with one byte outside the token set is refused",
          "[http-message]") {
    // Known names are lowered sixteen bytes at a time and matched whole; anything else still
    // meets the byte-by-byte check, at every place of the name.
    for (const std::string_view known : kKnownHeaders) {
        for (std::size_t at = 0; at < known.size(); ++at) {
            for (const char bad : {'(', ' ', '\x80', '\x01', '@', '['}) {
                if (at == 0 && bad == ' ') continue;  // a folded line, refused as such
                std::string name(known);
                name[at] = bad;
                INFO(name << " byte " << static_cast<int>(static_cast<unsigned char>(bad)));
                const std::string why = message_test_refusal("GET /mcp HTTP/1.1\r\n" + name +
                                                             ": v\r\n\r\n");
                CHECK(why.find("token") != std::string::npos);
            }
        }
    }
    // A long name, and names in mixed case, known or not, are read lowered.
    const std::string long_name(40, 'X');
    const Result<HttpRequestHead> parsed = message_test_parse(
        "GET /mcp HTTP/1.1\r\nMcP-SeSsIoN-iD: s\r\n" + long_name +
        ": l\r\nX-Mixed-Case: m\r\n\r\n");
    REQUIRE(parsed.ok());
    CHECK(parsed->header("mcp-session-id") == std::optional<std::string_view>("s"));
    CHECK(parsed->header(std::string(40, 'x')) == std::optional<std::string_view>("l"));
    CHECK(parsed->header("x-mixed-case") == std::optional<std::string_view>("m"));
}

TEST_CASE("a response's kept head and its framing make the whole response", "[http-message]") {
    const std::vector<std::pair<std::string, std::string>> headers = {
        {"Content-Type", "application/json"}, {"Mcp-Session-Id", "a\r\nb"}};
    for (const int status : {200, 202, 204, 304, 404, 418}) {
        for (const bool keep_alive : {true, false}) {
            for (const std::string& body :
                 {std::string(), std::string("{}"), std::string(300, 'b')}) {
                HttpFramingBuffer buffer;
                std::string pieces = http_response_head(status, headers);
                pieces += http_response_framing(status, body.size(), keep_alive, buffer);
                if (http_status_has_body(status)) pieces += body;
                INFO(status << " " << keep_alive << " " << body.size());
                CHECK(pieces == http_response(status, headers, body, keep_alive));
            }
        }
    }
    HttpFramingBuffer buffer;
    CHECK(http_response_framing(200, SIZE_MAX, true, buffer) ==
          "Content-Length: " + std::to_string(SIZE_MAX) + "\r\nConnection: keep-alive\r\n\r\n");
}

TEST_CASE("request_head_end finds the first empty line wherever the line ends fall",
          "[http-message]") {
    // Line ends are found sixteen bytes at a time: every place against a byte-by-byte reading.
    const auto reference = [](std::string_view text) {
        for (std::size_t at = 0; at < text.size(); ++at) {
            if (text[at] != '\n') continue;
            if (at + 1 < text.size() && text[at + 1] == '\n') return at + 2;
            if (at + 2 < text.size() && text[at + 1] == '\r' && text[at + 2] == '\n') return at + 3;
        }
        return std::string_view::npos;
    };
    for (std::size_t length = 0; length < 70; ++length) {
        for (const std::string_view blank : {"\n\n", "\n\r\n", "\r\n\r\n", "\n\r", "\r\n"}) {
            for (std::size_t at = 0; at <= length; ++at) {
                std::string text(length, 'h');
                for (std::size_t i = 7; i < length; i += 11) text[i] = '\n';  // lines, not blank
                text.insert(at, blank);
                text += "body\n\nmore";
                INFO(length << " " << at);
                CHECK(request_head_end(text) == reference(text));
            }
        }
    }
}

TEST_CASE("a head read again holds only the second request, found as in a fresh head",
          "[http-message]") {
    // A connection reads each of its requests into the one head it keeps.
    HttpRequestHead head;
    REQUIRE(read_request_head("POST /mcp/github?trace=1 HTTP/1.1\r\n"
                              "Host: localhost:8808\r\n"
                              "Mcp-Session-Id: first-session\r\n"
                              "X-Only-First: yes\r\n"
                              "Connection: close\r\n"
                              "Transfer-Encoding: chunked\r\n"
                              "\r\n",
                              head)
                .ok());
    CHECK(head.chunked);
    CHECK_FALSE(head.keep_alive);
    const std::string second =
        "GET /mcp/all HTTP/1.0\r\n"
        "Connection: keep-alive\r\n"
        "Accept: text/event-stream\r\n"
        "Content-Length: 12\r\n"
        "\r\n";
    REQUIRE(read_request_head(second, head).ok());
    const Result<HttpRequestHead> fresh = message_test_parse(second);
    REQUIRE(fresh.ok());
    CHECK(head.method == "GET");
    CHECK(head.path == "/mcp/all");
    CHECK(head.query.empty());
    CHECK(head.minor == 0);
    CHECK_FALSE(head.chunked);
    CHECK(head.keep_alive);
    CHECK(head.content_length == std::optional<std::size_t>(12));
    CHECK_FALSE(head.header("host").has_value());
    CHECK_FALSE(head.header("mcp-session-id").has_value());
    CHECK_FALSE(head.header("x-only-first").has_value());
    CHECK(head.header("accept") == std::optional<std::string_view>("text/event-stream"));
    CHECK(head.headers() == fresh->headers());
    CHECK(head.header_count() == 3);

    // A refused head leaves nothing of the one before it to be read as valid.
    CHECK_FALSE(read_request_head("GET /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", head).ok());
    REQUIRE(read_request_head("DELETE /mcp HTTP/1.1\r\n\r\n", head).ok());
    CHECK(head.header_count() == 0);
    CHECK_FALSE(head.content_length.has_value());
    CHECK_FALSE(head.header("accept").has_value());
}
