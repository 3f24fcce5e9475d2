// The envelope of an ordinary small message, read in one plain pass.
//
// Nearly every line mcpd forwards is a small message of the usual shape: an object of
// unescaped keys, integer numbers, each envelope field once and of its usual type. For such a
// line the general scanner (simdjson's stage 1, then its on-demand walk) costs several times
// what one pass over the bytes does. `scan_plain` is that pass: it validates the whole message
// (UTF-8, syntax, string escapes, integers) and fills the Envelope exactly as
// EnvelopeScanner's walk would, or it answers `false` and leaves the decision to the general
// scanner. It never refuses anything: an invalid message, a fraction or exponent, an escaped
// key, a repeated envelope field, a value of an unusual type, deep nesting or a long message
// all return false, so the general scanner alone decides every error and every unusual case.
// The envelope fuzzer checks that the two agree on every message this one accepts.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/json_envelope.h"

namespace mcpd::wire {

// Messages longer than this go to the general scanner, whose SIMD stage 1 wins on long text.
inline constexpr std::size_t kPlainScanMaxBytes = 16 * 1024;

// True when `text` is a valid message of the usual shape; `out` is then its envelope. False
// says nothing about `text`, and leaves `out` in no particular state. Strings are searched
// sixteen bytes at a time into the padding, which is never taken for part of the message.
bool scan_plain(PaddedText text, Envelope& out);

}  // namespace mcpd::wire
