// metrics_listen's address: HOST:PORT, [V6]:PORT or a bare PORT; anything else refused with
// what was given and what is expected.
#include <catch2/catch.hpp>
#include <string>

#include "common/listen_address.h"

using mcpd::ListenAddress;
using mcpd::parse_listen_address;

namespace {

ListenAddress parsed(std::string_view text) {
    const auto result = parse_listen_address(text);
    INFO(std::string(text) << ": " << (result ? "" : result.error()));
    REQUIRE(result.ok());
    return result.value();
}

std::string refusal(std::string_view text) {
    const auto result = parse_listen_address(text);
    INFO(std::string(text));
    REQUIRE_FALSE(result.ok());
    CHECK_FALSE(result.transient());
    return result.error();
}

}  // namespace

TEST_CASE("a bare port listens on 127.0.0.1", "[listen_address]") {
    CHECK(parsed("9464") == ListenAddress{"127.0.0.1", 9464, false});
    CHECK(parsed("0") == ListenAddress{"127.0.0.1", 0, false});
    CHECK(parsed("65535").port == 65535);
    CHECK(parsed("09464").port == 9464);
}

TEST_CASE("HOST:PORT takes an IPv4 address", "[listen_address]") {
    CHECK(parsed("127.0.0.1:9464") == ListenAddress{"127.0.0.1", 9464, false});
    CHECK(parsed("0.0.0.0:80") == ListenAddress{"0.0.0.0", 80, false});
    CHECK(parsed("10.1.2.3:0") == ListenAddress{"10.1.2.3", 0, false});
    CHECK(parsed("localhost:9464") == ListenAddress{"127.0.0.1", 9464, false});
}

TEST_CASE("[V6]:PORT takes an IPv6 address, written canonically", "[listen_address]") {
    CHECK(parsed("[::1]:9464") == ListenAddress{"::1", 9464, true});
    CHECK(parsed("[::]:9464") == ListenAddress{"::", 9464, true});
    CHECK(parsed("[0:0:0:0:0:0:0:1]:1") == ListenAddress{"::1", 1, true});
    CHECK(parsed("[::ffff:127.0.0.1]:9") == ListenAddress{"::ffff:127.0.0.1", 9, true});
}

TEST_CASE("to_string writes what parse_listen_address reads back", "[listen_address]") {
    for (const char* text : {"127.0.0.1:9464", "[::1]:9464", "0.0.0.0:0"}) {
        CHECK(to_string(parsed(text)) == text);
        CHECK(parsed(to_string(parsed(text))) == parsed(text));
    }
    CHECK(to_string(parsed("9464")) == "127.0.0.1:9464");
}

TEST_CASE("anything else is refused, saying what was given and what is expected",
          "[listen_address]") {
    const std::string expected =
        "; expected HOST:PORT with an IPv4 address, [IPV6]:PORT, or a bare PORT (then "
        "127.0.0.1), such as \"127.0.0.1:9464\"";
    CHECK(refusal("") == "invalid listen address \"\": it is empty" + expected);
    CHECK(refusal("65536") ==
          "invalid listen address \"65536\": the port \"65536\" is not a "
          "number from 0 to 65535" +
              expected);
    CHECK(refusal("127.0.0.1") ==
          "invalid listen address \"127.0.0.1\": it has no :PORT" + expected);
    CHECK(refusal("127.0.0.1:") ==
          "invalid listen address \"127.0.0.1:\": the port \"\" is not "
          "a number from 0 to 65535" +
              expected);
    CHECK(refusal("127.0.0.1:http") ==
          "invalid listen address \"127.0.0.1:http\": the port "
          "\"http\" is not a number from 0 to 65535" +
              expected);
    CHECK(refusal("127.0.0.1:70000") ==
          "invalid listen address \"127.0.0.1:70000\": the port "
          "\"70000\" is not a number from 0 to 65535" +
              expected);
    CHECK(refusal("example.com:9464") ==
          "invalid listen address \"example.com:9464\": \"example.com\" is not an IPv4 address "
          "(host names are not looked up)" +
              expected);
    CHECK(refusal("::1:9464") ==
          "invalid listen address \"::1:9464\": an IPv6 address goes "
          "between brackets, as in \"[::1]:9464\"" +
              expected);
    CHECK(refusal("[::1]") ==
          "invalid listen address \"[::1]\": no :PORT follows the ']'" + expected);
    CHECK(refusal("[::1:9464") ==
          "invalid listen address \"[::1:9464\": the '[' is never closed" + expected);
    CHECK(refusal("[127.0.0.1]:9464") ==
          "invalid listen address \"[127.0.0.1]:9464\": "
          "\"127.0.0.1\" is not an IPv6 address" +
              expected);
    CHECK(refusal("x\n:1") ==
          "invalid listen address \"x\\u000a:1\": \"x\\u000a\" is not an "
          "IPv4 address (host names are not looked up)" +
              expected);
    for (const char* text : {":9464", "1.2.3:9464", "1.2.3.4.5:1", " 9464", "9464 ", "-1", "+80",
                             "127.0.0.1:+80", "127.0.0.1:-0", "[]:1", "[::1]9464"})
        refusal(text);
}
