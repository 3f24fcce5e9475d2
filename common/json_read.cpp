#include "common/json_read.h"

#include <limits>

namespace mcpd::json_read {

using nlohmann::json;

const json* member(const json& object, std::string_view key) {
    if (!object.is_object()) return nullptr;
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

const std::string* string_at(const json& object, std::string_view key) {
    const json* value = member(object, key);
    return value != nullptr && value->is_string() ? value->get_ptr<const std::string*>() : nullptr;
}

std::string string_or(const json& object, std::string_view key, std::string fallback) {
    const std::string* value = string_at(object, key);
    return value != nullptr ? *value : std::move(fallback);
}

const json* object_at(const json& object, std::string_view key) {
    const json* value = member(object, key);
    return value != nullptr && value->is_object() ? value : nullptr;
}

std::optional<std::int64_t> as_integer(const json& value) {
    if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<std::int64_t>();
    if (value.is_number_unsigned()) {
        const auto n = value.get<std::uint64_t>();
        if (n <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return static_cast<std::int64_t>(n);
    }
    return std::nullopt;
}

std::optional<std::int64_t> integer_at(const json& object, std::string_view key) {
    const json* value = member(object, key);
    return value != nullptr ? as_integer(*value) : std::nullopt;
}

std::optional<bool> bool_at(const json& object, std::string_view key) {
    const json* value = member(object, key);
    return value != nullptr && value->is_boolean() ? std::optional<bool>(value->get<bool>())
                                                   : std::nullopt;
}

std::string_view type_phrase(const json& value) {
    switch (value.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::string: return "a string";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned: return "an integer";
        case json::value_t::number_float: return "a number with a fraction";
        case json::value_t::object: return "an object";
        case json::value_t::array: return "an array";
        default: return "not JSON";
    }
}

}  // namespace mcpd::json_read
