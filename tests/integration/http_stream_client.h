// A bare HTTP/1.1 client on the front door's unix socket, for the tests that keep a connection
// open across something (an upgrade in place): requests written byte by byte as a test wants
// them, a whole answer read (a Content-Length body or a chunked one), or an SSE answer read
// event by event while it streams.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "process.h"

namespace integration {

struct HttpHead {
    int status = 0;
    std::map<std::string, std::string> headers;  // names lowercased
};

class HttpStreamClient {
public:
    // Connect to the unix socket `path`; throws when nothing accepts.
    explicit HttpStreamClient(const std::string& path);
    ~HttpStreamClient();
    HttpStreamClient(const HttpStreamClient&) = delete;
    HttpStreamClient& operator=(const HttpStreamClient&) = delete;

    // Write `bytes` as they are; false when the connection is gone.
    bool send(std::string_view bytes);
    // The head of the next answer; nullopt on a close or timeout.
    std::optional<HttpHead> read_head(Duration timeout = 10s);
    // After read_head: the whole body (Content-Length, or chunked to its last chunk).
    std::optional<std::string> read_body(Duration timeout = 10s);
    // After read_head of a chunked SSE answer: the data of the next event that has data (joined
    // by LF); nullopt when the stream ended (then ended() is true) or on a timeout.
    std::optional<std::string> next_event(Duration timeout = 10s);
    bool ended() const { return ended_; }
    // Whether the other side closes the connection within `timeout`.
    bool wait_closed(Duration timeout = 10s);

private:
    // Read more into raw_; false on a close or timeout.
    bool fill(Clock::time_point deadline);
    // Move whole chunks from raw_ to body_; true once the last chunk is in.
    bool take_chunks();

    int fd_ = -1;
    std::string raw_;
    std::string body_;  // decoded, not yet handed out
    std::optional<std::size_t> length_;  // a Content-Length answer's
    bool chunked_ = false;
    bool ended_ = false;
    bool closed_ = false;
};

// A request on the MCP endpoint /mcp/TARGET: a POST of `body` (JSON), with Mcp-Session-Id when
// `session` is not empty, accepting SSE when `sse`; a GET stream when `body` is empty.
std::string mcp_request(const std::string& target, const std::string& body,
                        const std::string& session, bool sse);

// A tools/call of `tool` with id "ID" (a string), reporting progress when `progress_token` is
// not empty.
std::string mcp_call(const std::string& id, const std::string& tool, const nlohmann::json& arguments,
                     const std::string& progress_token = {});
// The text of a tools/call answer; "" when `body` is none.
std::string call_answer_text(const std::string& body);
// A session of `target` initialized (2025-06-18) on a connection of its own to `path`, as client
// `client`: its Mcp-Session-Id, "" when that failed.
std::string open_mcp_session(const std::string& path, const std::string& target, const std::string& client);

}  // namespace integration
