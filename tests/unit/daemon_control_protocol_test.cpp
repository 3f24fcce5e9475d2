#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "daemon/control_connection.h"

using mcpd::speaks_our_protocol;
using nlohmann::json;

namespace {

bool speaks(const char* version) {
    return speaks_our_protocol(json::parse(std::string("{\"protocol\": ") + version + "}"));
}

}  // namespace

TEST_CASE("the control protocol version is compared as the exact integer it was written as") {
    CHECK(speaks("1"));
    CHECK(speaks_our_protocol(json{{"protocol", 1}}));  // built, not parsed: a signed integer
    CHECK_FALSE(speaks("4294967297"));                  // 2^32 + 1: an int cut would read 1
    CHECK_FALSE(speaks("-4294967295"));
    CHECK_FALSE(speaks("18446744073709551617"));  // past 64 bits: parsed as a float
    CHECK_FALSE(speaks("1.0"));
    CHECK_FALSE(speaks("\"1\""));
    CHECK_FALSE(speaks("true"));
    CHECK_FALSE(speaks("null"));
    CHECK_FALSE(speaks("2"));
    CHECK_FALSE(speaks("0"));
    CHECK_FALSE(speaks_our_protocol(json::object()));
}
