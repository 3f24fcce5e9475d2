// Arrays inside a message the scanner accepted, read where they lie: the bytes of each element,
// and every array at a path of members (the cold paths that rewrite a list in a message).
#include "common/json_arrays.h"

#include <optional>
#include <span>

#include "common/json_string.h"

namespace mcpd {

namespace {

namespace od = simdjson::ondemand;

std::string_view trim_right(std::string_view text) {
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' ||
                             text.back() == '\r'))
        text.remove_suffix(1);
    return text;
}

// A member's name as the peer meant it, escapes decoded (a lone surrogate as U+FFFD): an
// escaped letter must not hide a member from mcpd while the child reads it. Stage 1 has
// checked that the closing quote is there.
bool key_text(od::field& field, std::string_view& key, std::string& storage) {
    const char* const start = field.key().raw();
    const char* p = start;
    while (*p != '"') p += *p == '\\' ? 2 : 1;
    key = std::string_view(start, static_cast<std::size_t>(p - start));
    if (key.find('\\') == std::string_view::npos) return true;
    if (!wire::unescape(key, storage)) return false;
    key = storage;
    return true;
}

// Every array at `path` below `object`, a member named twice counting twice.
bool collect_arrays(od::object& object, std::span<const std::string_view> path,
                    std::vector<std::string_view>& out) {
    std::string storage;
    for (auto field_result : object) {
        od::field field;
        std::string_view key;
        if (std::move(field_result).get(field) != simdjson::SUCCESS ||
            !key_text(field, key, storage))
            return false;
        if (key != path.front()) continue;
        od::value value = field.value();
        if (path.size() > 1) {
            od::object inner;
            if (value.get_object().get(inner) != simdjson::SUCCESS) continue;
            if (!collect_arrays(inner, path.subspan(1), out)) return false;
            continue;
        }
        od::array array;
        std::string_view bytes;
        if (value.get_array().get(array) != simdjson::SUCCESS) continue;
        if (array.raw_json().get(bytes) != simdjson::SUCCESS) return false;
        out.push_back(trim_right(bytes));
    }
    return true;
}

// The bytes of one value, consuming it (an object's or array's in full).
std::optional<std::string_view> value_bytes(od::value& value) {
    od::json_type type;
    if (value.type().get(type) != simdjson::SUCCESS) return std::nullopt;
    std::string_view bytes;
    if (type == od::json_type::object) {
        od::object object;
        if (value.get_object().get(object) != simdjson::SUCCESS ||
            object.raw_json().get(bytes) != simdjson::SUCCESS)
            return std::nullopt;
    } else if (type == od::json_type::array) {
        od::array array;
        if (value.get_array().get(array) != simdjson::SUCCESS ||
            array.raw_json().get(bytes) != simdjson::SUCCESS)
            return std::nullopt;
    } else {
        bytes = value.raw_json_token();
    }
    return trim_right(bytes);
}

}  // namespace

bool array_elements(simdjson::ondemand::array& array, std::vector<std::string_view>& out,
                    std::size_t max) {
    for (auto element_result : array) {
        od::value element;
        if (std::move(element_result).get(element) != simdjson::SUCCESS) return false;
        if (out.size() == max) return false;
        const std::optional<std::string_view> bytes = value_bytes(element);
        if (!bytes) return false;
        out.push_back(*bytes);
    }
    return true;
}

namespace {

wire::Span span_in(std::string_view whole, std::string_view part, std::uint32_t shift = 0) {
    return wire::Span{static_cast<std::uint32_t>(part.data() - whole.data()) + shift,
                      static_cast<std::uint32_t>(part.size())};
}

}  // namespace

std::vector<RawArray> raw_arrays_at(std::string_view line,
                                    std::initializer_list<std::string_view> path) {
    // Cold paths only (a listen's filter, a tasks/list result): padded copies cost nothing.
    const simdjson::padded_string text(line);
    od::parser parser;
    od::document doc;
    od::object root;
    std::vector<std::string_view> arrays;
    if (path.size() == 0 || parser.iterate(text).get(doc) != simdjson::SUCCESS ||
        doc.get_object().get(root) != simdjson::SUCCESS ||
        !collect_arrays(root, std::span(path.begin(), path.size()), arrays))
        return {};
    std::vector<RawArray> out;
    for (const std::string_view bytes : arrays) {
        RawArray found;
        found.span = span_in(text, bytes);
        // Its elements, from the array read again on its own.
        const simdjson::padded_string inner(bytes);
        od::document array_doc;
        od::array array;
        if (parser.iterate(inner).get(array_doc) != simdjson::SUCCESS ||
            array_doc.get_array().get(array) != simdjson::SUCCESS)
            return {};
        std::vector<std::string_view> elements;
        if (!array_elements(array, elements)) return {};
        for (const std::string_view element : elements)
            found.elements.push_back(span_in(inner, element, found.span.offset));
        out.push_back(std::move(found));
    }
    return out;
}

}  // namespace mcpd
