// The request log (`request_log = true`): one line per settled request, naming the server,
// the session's client, the method, the tool, how it ended, how long it took and its sizes,
// never its arguments or its result. With the journal each figure is a field too, so
// `journalctl --user -u mcpd TOOL=echo` selects one tool's calls.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "daemon/mux/router.h"

namespace mcpd {

struct RequestLogLine {
    std::string message;              // "request client=... method=... tool=... ..."
    std::vector<std::string> fields;  // "SERVER=...", "TOOL=...", ... for the journal
};

RequestLogLine request_log_line(std::string_view server, const SettledRequest& request);

}  // namespace mcpd
