// FieldReader: typed fields of an untrusted object, the first problem kept (json_fields.h).
#include "common/json_fields.h"

#include "common/json_read.h"

namespace mcpd::json_read {

void FieldReader::wrong(std::string_view key) {
    fail("its \"" + std::string(key) + "\" is missing or of the wrong type");
}

void FieldReader::fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
}

std::string FieldReader::text(std::string_view key) {
    if (const std::string* value = string_at(object_, key)) return *value;
    wrong(key);
    return {};
}

bool FieldReader::flag(std::string_view key) {
    if (const std::optional<bool> value = bool_at(object_, key)) return *value;
    wrong(key);
    return false;
}

std::int64_t FieldReader::integer(std::string_view key, std::int64_t min, std::int64_t max) {
    const std::optional<std::int64_t> value = integer_at(object_, key);
    if (!value) {
        wrong(key);
        return 0;
    }
    if (*value < min || *value > max) {
        fail("its \"" + std::string(key) + "\" is out of range");
        return 0;
    }
    return *value;
}

std::optional<std::int64_t> FieldReader::nullable_integer(std::string_view key, std::int64_t min,
                                                          std::int64_t max) {
    const nlohmann::json* value = member(object_, key);
    if (value != nullptr && value->is_null()) return std::nullopt;
    if (value == nullptr || !as_integer(*value)) {
        wrong(key);
        return std::nullopt;
    }
    return integer(key, min, max);
}

const nlohmann::json* FieldReader::object(std::string_view key) {
    if (const nlohmann::json* value = object_at(object_, key)) return value;
    wrong(key);
    return nullptr;
}

const nlohmann::json* FieldReader::array(std::string_view key) {
    const nlohmann::json* value = member(object_, key);
    if (value != nullptr && value->is_array()) return value;
    wrong(key);
    return nullptr;
}

}  // namespace mcpd::json_read
