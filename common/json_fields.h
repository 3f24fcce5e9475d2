// The fields of an untrusted JSON object read by type, through json_read, keeping the first
// problem as a sentence: for a record read whole before anything of it is used (an upgrade's
// state, daemon/upgrade_state and the supervisor's snapshot). A field missing or of another
// type reads as empty, and the reader says which it was.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace mcpd::json_read {

class FieldReader {
public:
    // It reads `object` where it lies: the object must outlive the reader.
    explicit FieldReader(const nlohmann::json& object) : object_(object) {}
    explicit FieldReader(nlohmann::json&&) = delete;
    explicit FieldReader(const nlohmann::json&&) = delete;

    std::string text(std::string_view key);
    bool flag(std::string_view key);
    // An exact integer within [min, max]; past them "out of range".
    std::int64_t integer(std::string_view key,
                         std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                         std::int64_t max = std::numeric_limits<std::int64_t>::max());
    // null as none, or an exact integer within [min, max]; missing, of another type or past
    // them, a problem (and none).
    std::optional<std::int64_t> nullable_integer(std::string_view key, std::int64_t min,
                                                 std::int64_t max);
    // The member when it is an object, or an array; null (and the problem noted) otherwise.
    const nlohmann::json* object(std::string_view key);
    const nlohmann::json* array(std::string_view key);

    // Note a problem of the caller's own finding (only the first is kept).
    void fail(std::string why);
    bool ok() const { return error_.empty(); }
    // The first problem: "its \"KEY\" is missing or of the wrong type", or the caller's.
    const std::string& error() const { return error_; }

private:
    void wrong(std::string_view key);

    const nlohmann::json& object_;
    std::string error_;
};

}  // namespace mcpd::json_read
