// An MCP client session for the tests: attached to a server over mcpd's control socket, or
// talking to a spawned `mcpctl connect` through its stdin and stdout.
//
// Every line received is kept as it came (for byte-exact checks) and parsed with
// nlohmann::json. Messages a test is not waiting for right now (notifications, other
// responses, server requests) stay in an inbox, in arrival order, for later inspection.
// A session can be driven blocking (send_line, wait_response) or from a poll() loop over
// many sessions (queue, flush, read_available).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "process.h"

namespace integration {

// The raw JSON text of member `key` of the object `object_text` (its top level only);
// nullopt when the text is not an object or has no such member.
std::optional<std::string> raw_member(std::string_view object_text, std::string_view key);
// The raw text at a path of members: raw_member(raw_member(text, a), b) and so on.
std::optional<std::string> raw_path(std::string_view object_text,
                                    const std::vector<std::string>& path);

// A JSON-RPC request line (no '\n') whose id is written exactly as `raw_id`.
std::string request_line(std::string_view raw_id, const std::string& method,
                         const nlohmann::json& params = nlohmann::json::object());

// The _meta a 2026-07-28 client sends with every request: its version, no capabilities, and
// `client` (version "1") as its clientInfo.
nlohmann::json modern_meta(const std::string& client);

// One line received from the peer.
struct McpMessage {
    std::uint64_t seq = 0;  // arrival order within its session, from 1
    std::string raw;        // without the '\n'
    nlohmann::json json;    // is_discarded() when the line is not JSON

    bool is_request() const;
    bool is_notification() const;
    bool is_response() const;
    bool is_error() const { return is_response() && json.contains("error"); }
    std::string method() const;
    // The id exactly as it was written, "" when there is none.
    std::string raw_id() const;
    // result.content[0].text of a tools/call result, "" when absent.
    std::string tool_text() const;
    // error.code, 0 when this is no error.
    int error_code() const;
};

class McpSession {
public:
    // Connect to mcpd at `socket_path` and attach to `server`. Throws with mcpd's reply when
    // the attach is refused or nothing answers within `timeout`.
    McpSession(const std::string& socket_path, const std::string& server, Duration timeout = 20s);
    // Talk over descriptors that are already open (read from `in_fd`, write to `out_fd`);
    // takes ownership of both.
    McpSession(int in_fd, int out_fd, std::string label);
    ~McpSession();
    McpSession(const McpSession&) = delete;
    McpSession& operator=(const McpSession&) = delete;

    // The session number mcpd gave in its attach reply (0 for descriptor sessions).
    std::uint64_t session_id() const { return session_id_; }
    const std::string& label() const { return label_; }
    int read_fd() const { return in_fd_; }
    int write_fd() const { return out_fd_; }

    // --- blocking use ---

    // Send `line` and a '\n'; false when the peer stopped reading within `timeout` or closed.
    bool send_line(std::string_view line, Duration timeout = 10s);
    // Send a request whose id is written exactly as `raw_id` (JSON text such as 7 or "7").
    void request_raw(std::string_view raw_id, const std::string& method,
                     const nlohmann::json& params = nlohmann::json::object());
    // Send a request with the given id (an integer or a string); returns the id.
    nlohmann::json request(const std::string& method, const nlohmann::json& params,
                           const nlohmann::json& id);
    // Send a request with the next integer id of this session's counter; returns the id.
    nlohmann::json request(const std::string& method,
                           const nlohmann::json& params = nlohmann::json::object());
    // tools/call NAME with `arguments` (and `meta` as params._meta when not null).
    nlohmann::json call_tool(const std::string& name, const nlohmann::json& arguments,
                             const nlohmann::json& meta = nullptr);
    void notify(const std::string& method, const nlohmann::json& params = nlohmann::json::object());

    // initialize (with clientInfo {client_name, "1.0"} and `capabilities`), wait for its
    // result, then notifications/initialized. FAILs when it is not answered with a result.
    McpMessage initialize(const std::string& client_name,
                          const nlohmann::json& capabilities = nlohmann::json::object(),
                          Duration timeout = 20s);

    // The response to `id` (compared as JSON: 1 and "1" differ), taken out of the inbox or
    // read until it arrives; everything else read meanwhile stays in the inbox. FAILs on
    // timeout or end of stream, naming the session and what it received.
    McpMessage wait_response(const nlohmann::json& id, Duration timeout = 20s);
    // The first message in the inbox, or read later, that satisfies `match`, taken out of the
    // inbox; nullopt on timeout or end of stream.
    std::optional<McpMessage> wait_for(const std::function<bool(const McpMessage&)>& match,
                                       Duration timeout);
    // Read whatever arrives within `wait` into the inbox; false at end of stream.
    bool pump(Duration wait);
    // Whether the peer ends the stream (EOF or an error) within `timeout`, reading and
    // discarding what it sends meanwhile.
    bool wait_closed(Duration timeout);

    // --- inspection ---

    const std::deque<McpMessage>& inbox() const { return inbox_; }
    // The notifications in the inbox with this method (all of them when `method` is empty).
    std::vector<McpMessage> notifications(const std::string& method = {}) const;
    // The same, taken out of the inbox.
    std::vector<McpMessage> take_notifications(const std::string& method = {});
    // Responses in the inbox (none taken out).
    std::vector<McpMessage> responses() const;
    // Every message still in the inbox, one a line, for failure messages.
    std::string describe_inbox(std::size_t max_lines = 20) const;
    bool at_eof() const { return eof_; }
    // The errno of the read or write that ended the stream, 0 for a plain EOF.
    int stream_error() const { return stream_error_; }

    // --- poll() loop use ---

    // Add `line` and a '\n' to the output waiting for flush().
    void queue(std::string_view line);
    // Write what the socket takes now; returns whether output is still waiting.
    bool flush();
    bool output_waiting() const { return out_sent_ < out_.size(); }
    // Read what is available now (never blocks); returns the number of new messages, which are
    // appended to the inbox unless `sink` takes them. Sets at_eof() at end of stream.
    std::size_t read_available(const std::function<void(McpMessage&&)>& sink = {});

    // Shut down the write direction (the peer sees EOF on its input).
    void close_write();

private:
    // Send the attach request and read mcpd's reply line (what follows it stays buffered).
    void attach(const std::string& server, Duration timeout);
    // Read what the descriptor has now into in_buffer_ (sets eof_ at the end of the stream).
    void read_into_buffer();
    // Complete lines out of in_buffer_, to `sink` or the inbox; returns how many.
    std::size_t split_lines(const std::function<void(McpMessage&&)>& sink);

    std::string label_;
    int in_fd_ = -1;
    int out_fd_ = -1;
    std::uint64_t session_id_ = 0;
    std::string in_buffer_;
    std::string out_;
    std::size_t out_sent_ = 0;
    std::deque<McpMessage> inbox_;
    std::uint64_t received_ = 0;
    std::int64_t next_id_ = 1;
    bool eof_ = false;
    int stream_error_ = 0;
};

// A child process whose stdin and stdout are pipes to the test (stderr is captured in a
// file), such as `mcpctl connect` run the way an agent runs it. Reaped on destruction.
class PipedProcess {
public:
    explicit PipedProcess(const std::vector<std::string>& argv, const std::string& stderr_path);
    ~PipedProcess();
    PipedProcess(const PipedProcess&) = delete;
    PipedProcess& operator=(const PipedProcess&) = delete;

    pid_t pid() const { return pid_; }
    // The session over its stdout (read) and stdin (write).
    McpSession& session() { return *session_; }
    // Wait up to `timeout` for it to exit; the decoded status, nullopt when it still runs.
    std::optional<int> wait_exit(Duration timeout);

private:
    pid_t pid_ = -1;
    std::optional<int> status_;
    std::unique_ptr<McpSession> session_;
};

}  // namespace integration
