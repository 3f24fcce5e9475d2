// Scanning one line in a unit test: the status, the envelope and the text it points into,
// with the scanner's error in the failure message.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "common/json_envelope.h"

namespace mcpd::testing {

inline constexpr std::size_t kMax = 16 * 1024 * 1024;

struct Scanned {
    wire::ScanStatus status;
    wire::Envelope envelope;
    std::string text;  // the scanned text (unchanged by the scan)

    std::string span(wire::Span s) const { return std::string(s.in(text)); }
};

inline Scanned scan(const std::string& line) {
    static wire::EnvelopeScanner scanner(kMax);
    Scanned out{wire::ScanStatus::ok, {}, line};
    out.status = scanner.scan(out.text, out.envelope);
    INFO(line << " -> " << scanner.error());
    CHECK(out.text == line);
    return out;
}

inline Scanned scan_ok(const std::string& line) {
    Scanned s = scan(line);
    INFO(line);
    REQUIRE(s.status == wire::ScanStatus::ok);
    return s;
}

}  // namespace mcpd::testing
