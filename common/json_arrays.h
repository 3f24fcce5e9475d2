// Arrays inside a message the scanner accepted, read where they lie (nothing is copied or
// re-serialised, so ids and strings keep their bytes): the exact text of each element, and
// every array at a path of members.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <vector>

#include "common/json_envelope.h"

namespace mcpd {

// The exact bytes of each element of `array` (trailing whitespace excluded), appended to
// `out`; false when the array is not well formed or holds more than `max` elements.
bool array_elements(simdjson::ondemand::array& array, std::vector<std::string_view>& out,
                    std::size_t max = std::numeric_limits<std::size_t>::max());

// An array inside a message: where it lies and where each element lies.
struct RawArray {
    wire::Span span;  // brackets included
    std::vector<wire::Span> elements;
};
// Every array at `path` (member names from the root object, escapes decoded). A member named
// twice gives both: peers disagree on which one counts, so each is treated alike.
std::vector<RawArray> raw_arrays_at(std::string_view line,
                                    std::initializer_list<std::string_view> path);

}  // namespace mcpd
