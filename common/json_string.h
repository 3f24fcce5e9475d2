// JSON string text: the escape grammar, checked and decoded where it lies in a message.
//
// mcpd forwards most strings as they are and decodes only the few it keeps (ids, methods, a
// task id). JSON allows a lone UTF-16 surrogate escape ("\ud83d" with no low half, RFC 8259
// 8.2), which JavaScript and Python emit for a string cut mid-pair and which simdjson and
// nlohmann both refuse: it is forwarded unchanged, and decoded as U+FFFD.
#pragma once

#include <string>
#include <string_view>

namespace mcpd::wire {

// Whether every escape of a string's raw text (between its quotes) is valid JSON. The UTF-8
// is the caller's to check (simdjson's stage 1 does it for the scanner).
bool valid_escapes(std::string_view body);

// A string's raw text (between its quotes) unescaped into `out` (cleared first), a lone
// surrogate as U+FFFD; false on an invalid escape.
bool unescape(std::string_view body, std::string& out);

// Whether `token` is a JSON integer, -?(0|[1-9][0-9]*), of any length (an id or error code
// need not fit 64 bits to be valid JSON).
bool is_integer_token(std::string_view token);

// The value of a raw JSON string token without its quotes, when it has no escapes.
std::string_view unquoted(std::string_view token);

// The value of a raw JSON string token (quotes included), unescaped into `out`; false when it
// is not a string token with valid escapes. A lone UTF-16 surrogate escape ("\ud83d" with no
// low half: valid JSON, and what JavaScript and Python emit for a string cut mid-pair) becomes
// U+FFFD, so every string the scanner keeps is UTF-8.
bool decode_string(std::string_view token, std::string& out);

// `text` (a message the scanner accepted) with each lone surrogate escape replaced by
// "\ufffd", of the same length: for DOM parsers that refuse lone surrogates (nlohmann throws
// parse_error on them). Everything else is unchanged.
std::string without_lone_surrogates(std::string_view text);

}  // namespace mcpd::wire
