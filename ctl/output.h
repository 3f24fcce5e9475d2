// Where mcpctl's output goes and how it looks: text tables, JSON lines, "mcpctl: " errors.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace mcpctl {

struct ClientError;

// Results go to stdout, errors to stderr. In JSON mode everything a script needs, errors
// included, is one JSON object per line on stdout.
class Output {
public:
    Output(std::ostream& out, std::ostream& err, bool json) : out_(out), err_(err), json_(json) {}

    bool json() const { return json_; }
    std::ostream& out() { return out_; }
    std::ostream& err() { return err_; }

    // One compact JSON line on stdout, flushed (logs --follow streams them). No control
    // character is left raw, in strings either (escape_controls).
    void print_json(const nlohmann::json& value);
    // Human text on stdout, as is.
    void print_text(std::string_view text);
    // "mcpctl: MESSAGE" on stderr, whatever the mode, control characters escaped.
    void error(std::string_view message);

    // The daemon's "error" object: {"error": {...}} on stdout in JSON mode, else its message
    // and then each of its details (one per line, as the daemon wrote them, control characters
    // escaped) on stderr.
    void daemon_error(const nlohmann::json& error);
    // A failure on our side of the socket, the same way.
    void client_error(const ClientError& error);

private:
    std::ostream& out_;
    std::ostream& err_;
    bool json_;
};

// Columns padded to their widest cell, two spaces apart, one line per row, no trailing spaces.
std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

// Text for a JSON field of `object`: strings as they are but with control characters escaped
// (escape_controls: a server's or a client's text cannot drive the terminal), numbers in
// decimal, "-" when absent or null.
std::string field_text(const nlohmann::json& object, std::string_view key);

// The "servers" array of a reply (status, stats, start/stop/restart), or an empty one.
const nlohmann::json& servers_in(const nlohmann::json& result);

// "claude-code 2.0.1" from a session's "client" ({"name", "version"}, as the client chose them,
// escaped as field_text does); "-" before it said who it is.
std::string client_text(const nlohmann::json& session);

// Join strings with a separator.
std::string join(const std::vector<std::string>& items, std::string_view separator);

}  // namespace mcpctl
