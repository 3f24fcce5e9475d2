#include "daemon/mux/request_log.h"

#include <chrono>

namespace mcpd {
namespace {

// A value a peer chose (a client's name, a tool's) as one token of the line: quoted, with
// quotes and backslashes escaped, when it holds a space, a quote, a backslash or '=', or is
// empty; control characters are escaped by the log itself.
void append_value(std::string& out, std::string_view value) {
    const bool plain = !value.empty() && value.find_first_of(" \"\\=") == std::string_view::npos;
    if (plain) {
        out += value;
        return;
    }
    out += '"';
    for (const char c : value) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    out += '"';
}

void append_pair(std::string& out, std::string_view key, std::string_view value) {
    out += ' ';
    out += key;
    out += '=';
    append_value(out, value);
}

}  // namespace

RequestLogLine request_log_line(std::string_view server, const SettledRequest& r) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(r.duration).count();
    const std::string outcome(to_string(r.outcome));
    RequestLogLine line;
    line.message = "request";
    append_pair(line.message, "session", std::to_string(r.session));
    if (!r.client.empty()) append_pair(line.message, "client", r.client);
    append_pair(line.message, "method", r.method);
    if (!r.tool.empty()) append_pair(line.message, "tool", r.tool);
    append_pair(line.message, "outcome", outcome);
    append_pair(line.message, "duration_us", std::to_string(us));
    append_pair(line.message, "bytes_in", std::to_string(r.bytes_in));
    append_pair(line.message, "bytes_out", std::to_string(r.bytes_out));

    const auto field = [&line](std::string_view key, std::string_view value) {
        std::string text(key);
        text += '=';
        text += value;
        line.fields.push_back(std::move(text));
    };
    field("SERVER", server);
    field("SESSION", std::to_string(r.session));
    if (!r.client.empty()) field("CLIENT", r.client);
    field("METHOD", r.method);
    if (!r.tool.empty()) field("TOOL", r.tool);
    field("OUTCOME", outcome);
    field("DURATION_US", std::to_string(us));
    field("BYTES_IN", std::to_string(r.bytes_in));
    field("BYTES_OUT", std::to_string(r.bytes_out));
    return line;
}

}  // namespace mcpd
