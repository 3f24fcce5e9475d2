// FieldReader: typed fields of an untrusted object, the first problem kept as a sentence.
#include <catch2/catch.hpp>

#include "common/json_fields.h"

using mcpd::json_read::FieldReader;
using nlohmann::json;

TEST_CASE("field reader: each field by its type, the first problem named") {
    const json object = {{"name", "a"}, {"on", true}, {"n", 7}, {"list", {1}}, {"table", json::object()}};
    FieldReader in(object);
    CHECK(in.text("name") == "a");
    CHECK(in.flag("on"));
    CHECK(in.integer("n", 0, 10) == 7);
    CHECK(in.array("list") != nullptr);
    CHECK(in.object("table") != nullptr);
    CHECK(in.ok());

    CHECK(in.integer("name") == 0);  // a string where a number belongs
    CHECK(in.text("missing").empty());
    CHECK_FALSE(in.ok());
    CHECK(in.error() == "its \"name\" is missing or of the wrong type");
}

TEST_CASE("field reader: numbers out of range, not exact, or too large are refused") {
    const json eleven = {{"n", 11}}, fraction_of = {{"n", 1.5}},
               huge_of = {{"n", 18446744073709551615ULL}}, empty = json::object(),
               array = json::array();
    FieldReader range(eleven);
    CHECK(range.integer("n", 0, 10) == 0);
    CHECK(range.error() == "its \"n\" is out of range");
    FieldReader fraction(fraction_of);
    fraction.integer("n");
    CHECK_FALSE(fraction.ok());
    FieldReader huge(huge_of);
    huge.integer("n");
    CHECK_FALSE(huge.ok());
    FieldReader own(empty);
    own.fail("first");
    own.fail("second");
    CHECK(own.error() == "first");
    FieldReader not_object(array);
    CHECK(not_object.text("x").empty());
    CHECK_FALSE(not_object.ok());
}
