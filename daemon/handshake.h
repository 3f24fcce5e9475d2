// mcpd's own conversation with a server process: the legacy MCP handshake and health pings.
//
// mcpd initializes each child exactly once (initialize → result → notifications/initialized)
// and keeps the InitializeResult for the sessions that attach later. Its own requests use ids
// from the same counter the router will use for session requests, so ids never collide.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace mcpd {

// The legacy protocol revisions mcpd speaks, newest first.
const std::vector<std::string>& legacy_protocol_versions();
// The modern (stateless) revision mcpd speaks.
inline constexpr std::string_view kModernProtocolVersion = "2026-07-28";

class ChildIds {
public:
    // Never reused for the life of the child.
    std::uint64_t next() { return next_++; }

private:
    std::uint64_t next_ = 1;
};

class Handshake {
public:
    struct Callbacks {
        std::function<void(std::string_view line)> send;
        std::function<void(const nlohmann::json& initialize_result)> on_ready;
        std::function<void(std::string why)> on_failed;
        std::function<void()> on_pong;
    };

    Handshake(ChildIds& ids, Callbacks callbacks);

    // Send initialize, declaring `capabilities` as mcpd's client capabilities.
    void begin(const nlohmann::json& capabilities = nlohmann::json::object());
    // Find the child's era first: ask server/discover; a DiscoverResult means modern (ready at
    // once), anything else falls back to initialize (legacy). `probe_timed_out` falls back too.
    void begin_probe(const nlohmann::json& capabilities);
    void probe_timed_out();
    bool probing() const { return probe_id_ != 0; }
    // Legacy: ping. Modern (no ping exists): server/discover.
    void send_ping();

    // A message from the child. Returns true when it was an answer to mcpd's own request (or
    // a ping mcpd answered); false when it belongs to the sessions.
    bool handle(const nlohmann::json& message);
    // Whether a response with this id answers one of mcpd's own requests.
    bool owns(std::uint64_t id) const {
        return (id == initialize_id_ && !ready_) || id == probe_id_ || pending_pings_.contains(id);
    }

    bool ready() const { return ready_; }
    bool modern() const { return modern_; }
    const nlohmann::json& initialize_result() const { return initialize_result_; }
    const std::string& protocol_version() const { return protocol_version_; }

private:
    bool handle_message(const nlohmann::json& message);
    void send_initialize(const std::string& version);
    nlohmann::json capabilities_ = nlohmann::json::object();
    void on_initialize_reply(const nlohmann::json& message);
    void on_probe_reply(const nlohmann::json& message);
    std::string discover_request(std::uint64_t id) const;
    std::uint64_t probe_id_ = 0;
    bool modern_ = false;

    ChildIds& ids_;
    Callbacks callbacks_;
    std::uint64_t initialize_id_ = 0;
    std::unordered_map<std::uint64_t, bool> pending_pings_;
    bool ready_ = false;
    bool retried_ = false;
    nlohmann::json initialize_result_;
    std::string protocol_version_;
};

}  // namespace mcpd
