// Typed reads of untrusted JSON (nlohmann): the value when it has the wanted type, otherwise
// nothing. nlohmann's get<T>() and value(key, default) throw when a peer sends another type
// (a number where a string belongs), and one uncaught throw ends the daemon with every
// session; every read of a peer's JSON goes through these instead.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mcpd::json_read {

// The member `key` of `object`, of any type; null when `object` is not an object or lacks it.
const nlohmann::json* member(const nlohmann::json& object, std::string_view key);

// The member `key` when it is a string.
const std::string* string_at(const nlohmann::json& object, std::string_view key);
// The member `key` when it is a string, else `fallback` (absent, null or another type).
std::string string_or(const nlohmann::json& object, std::string_view key, std::string fallback);
// The member `key` when it is an object.
const nlohmann::json* object_at(const nlohmann::json& object, std::string_view key);
// The member `key` when it is an integer that an int64 holds exactly (not 1.0, not "1").
std::optional<std::int64_t> integer_at(const nlohmann::json& object, std::string_view key);
// The member `key` when it is true or false.
std::optional<bool> bool_at(const nlohmann::json& object, std::string_view key);

// `value` itself as an exact int64 integer.
std::optional<std::int64_t> as_integer(const nlohmann::json& value);

// The JSON type of a value as a peer would name it: "a string", "a number", "null", ...
std::string_view type_phrase(const nlohmann::json& value);

}  // namespace mcpd::json_read
