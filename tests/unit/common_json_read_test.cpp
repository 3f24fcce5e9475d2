// Typed reads of a peer's JSON: a value of the wanted type or nothing, never a throw.
#include <catch2/catch.hpp>

#include "common/json_read.h"

using nlohmann::json;
namespace jr = mcpd::json_read;

TEST_CASE("typed reads give the value only when it has the wanted type") {
    const json j = json::parse(R"({"s":"x","n":5,"neg":-4294967295,"big":18446744073709551615,
        "f":1.0,"b":true,"o":{},"a":[],"z":null})");
    CHECK(*jr::string_at(j, "s") == "x");
    for (const char* key : {"n", "f", "b", "o", "a", "z", "missing"}) {
        INFO(key);
        CHECK(jr::string_at(j, key) == nullptr);
        CHECK(jr::string_or(j, key, "fallback") == "fallback");
    }
    CHECK(jr::integer_at(j, "n") == 5);
    CHECK(jr::integer_at(j, "neg") == -4294967295LL);
    CHECK_FALSE(jr::integer_at(j, "big"));  // no int64 holds it
    CHECK_FALSE(jr::integer_at(j, "f"));    // 1.0 is not an integer
    CHECK_FALSE(jr::integer_at(j, "s"));
    CHECK(jr::bool_at(j, "b") == true);
    CHECK_FALSE(jr::bool_at(j, "n"));
    CHECK(jr::object_at(j, "o") != nullptr);
    CHECK(jr::object_at(j, "a") == nullptr);
    // Not an object at all: nothing, whatever the key.
    for (const json& other : {json(5), json("s"), json::array({1}), json(nullptr)}) {
        CHECK(jr::member(other, "s") == nullptr);
        CHECK(jr::string_or(other, "s", "d") == "d");
    }
    CHECK(jr::type_phrase(j["s"]) == "a string");
    CHECK(jr::type_phrase(j["n"]) == "an integer");
    CHECK(jr::type_phrase(j["z"]) == "null");
}
