// The request log's line and journal fields: every figure named, a peer's text quoted so that
// it cannot pass for another field, and nothing of a request's arguments or result.
#include <catch2/catch.hpp>

#include <algorithm>

#include "daemon/mux/request_log.h"

using namespace mcpd;
using namespace std::chrono_literals;

namespace {

bool has_field(const RequestLogLine& line, const std::string& field) {
    return std::find(line.fields.begin(), line.fields.end(), field) != line.fields.end();
}

}  // namespace

TEST_CASE("a settled tools/call is one line and one field per figure", "[stats][request_log]") {
    const SettledRequest request{7, "claude-code", "tools/call", "echo", Outcome::tool_error,
                                 1500us, 96, 180};
    const RequestLogLine line = request_log_line("demo", request);
    CHECK(line.message ==
          "request session=7 client=claude-code method=tools/call tool=echo outcome=tool_error "
          "duration_us=1500 bytes_in=96 bytes_out=180");
    for (const char* field : {"SERVER=demo", "SESSION=7", "CLIENT=claude-code", "METHOD=tools/call",
                              "TOOL=echo", "OUTCOME=tool_error", "DURATION_US=1500",
                              "BYTES_IN=96", "BYTES_OUT=180"}) {
        INFO(field);
        CHECK(has_field(line, field));
    }
    CHECK(line.fields.size() == 9);
}

TEST_CASE("a method without a tool, and a client that gave no name, leave those out",
          "[stats][request_log]") {
    const SettledRequest request{3, "", "resources/read", "", Outcome::timeout, 2s, 50, 0};
    const RequestLogLine line = request_log_line("files", request);
    CHECK(line.message ==
          "request session=3 method=resources/read outcome=timeout duration_us=2000000 "
          "bytes_in=50 bytes_out=0");
    CHECK_FALSE(has_field(line, "TOOL="));
    CHECK(std::none_of(line.fields.begin(), line.fields.end(),
                       [](const std::string& f) { return f.starts_with("CLIENT=") || f.starts_with("TOOL="); }));
}

TEST_CASE("a client's name with spaces, quotes or '=' is quoted, so it forges no field",
          "[stats][request_log]") {
    const SettledRequest request{1, "evil outcome=reply \"x\\", "tools/call", "a=b",
                                 Outcome::error, 1ms, 1, 1};
    const RequestLogLine line = request_log_line("demo", request);
    CHECK(line.message ==
          "request session=1 client=\"evil outcome=reply \\\"x\\\\\" method=tools/call "
          "tool=\"a=b\" outcome=error duration_us=1000 bytes_in=1 bytes_out=1");
    // A journal field is its own entry: its value needs no quoting.
    CHECK(has_field(line, "CLIENT=evil outcome=reply \"x\\"));
    CHECK(has_field(line, "TOOL=a=b"));
}
