// mcpd's own conversation with a server process: the era probe, the legacy MCP handshake and
// health pings.
//
// mcpd initializes each child exactly once (initialize → result → notifications/initialized)
// and keeps the InitializeResult for the sessions that attach later. Its own requests use ids
// from the same counter the router uses for session requests (daemon/mux/child_ids.h), so ids
// never collide. The revisions it speaks are in daemon/mux/mcp_versions.h.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/duration.h"
#include "daemon/mux/child_ids.h"

namespace mcpd {

// How long the era probe waits in silence once the child has shown life (handshake.cpp).
inline constexpr Duration kProbeSilence = std::chrono::seconds(2);

class Handshake {
public:
    // What mcpd declares as its client capabilities, for the revision of the request.
    using CapabilitiesFor = std::function<nlohmann::json(std::string_view version)>;

    struct Callbacks {
        std::function<void(std::string_view line)> send;
        std::function<void(const nlohmann::json& initialize_result)> on_ready;
        std::function<void(std::string why)> on_failed;
        std::function<void()> on_pong;
        // Arm (or re-arm) the probe's timer, which calls probe_timed_out; nullopt cancels it.
        std::function<void(std::optional<Duration> after)> probe_timer = nullptr;
    };

    Handshake(ChildIds& ids, Callbacks callbacks);

    // Send initialize, declaring `capabilities` as mcpd's client capabilities.
    void begin(const nlohmann::json& capabilities = nlohmann::json::object());
    void begin(CapabilitiesFor capabilities);
    // Ask server/discover: a DiscoverResult means modern (ready at once), -32022 a modern
    // server without mcpd's revision (failed); any other answer falls back to initialize
    // (legacy). With `start_timeout`, the era is unknown and this is the probe: silence falls
    // back too (the timing is explained in handshake.cpp), a late answer still decides, and an
    // exit before the verdict is exited_on_probe(). Without it the child is known to be modern.
    void begin_probe(const nlohmann::json& capabilities,
                     std::optional<Duration> start_timeout = std::nullopt);
    void begin_probe(CapabilitiesFor capabilities,
                     std::optional<Duration> start_timeout = std::nullopt);
    // A line on the child's stdout or stderr: its start-up is over, silence counts from now.
    void child_showed_life() {
        if (probe_ == Probe::awaiting_life) start_silence();
    }
    // The probe's timer expired. Returns true when that made mcpd fall back to initialize.
    bool probe_timed_out();
    // The probe was sent and no verdict came yet (initialize may already be on its way).
    bool probing() const { return probe_ != Probe::none && !ready_; }
    // Whether an exit now means "exited on the era probe": the era was unknown and the child
    // never answered the probe (some legacy servers exit on any request before initialize).
    bool exited_on_probe() const { return probing() && probe_ != Probe::known_modern; }
    // Legacy: ping. Modern (no ping exists): server/discover.
    void send_ping();

    // A message from the child. Returns true when it was an answer to mcpd's own request (or
    // a ping mcpd answered); false when it belongs to the sessions.
    bool handle(const nlohmann::json& message);
    // Whether a response with this id answers one of mcpd's own requests.
    bool owns(std::uint64_t id) const {
        return (id == initialize_id_ && !ready_) || (probe_id_ != 0 && id == probe_id_) ||
               pending_pings_.contains(id) || abandoned_.contains(id);
    }
    // Whether owns() can be true of any id: false once ready with nothing of mcpd's own
    // waiting, when every answer is a session's and its id need not be read for this.
    bool awaits_answers() const {
        return !ready_ || probe_id_ != 0 || !pending_pings_.empty() || !abandoned_.empty();
    }

    // Ready, with no ping or probe of mcpd's own waiting for an answer: what an upgrade in
    // place can carry (docs/UPGRADE.md).
    bool settled() const { return ready_ && probe_ == Probe::none && pending_pings_.empty(); }
    // mcpd's requests whose answers are swallowed if they still come.
    const std::unordered_set<std::uint64_t>& abandoned() const { return abandoned_; }
    // A handshake the process before an upgrade in place completed with this child.
    void restore_ready(nlohmann::json initialize_result, std::string protocol_version, bool modern,
                       std::unordered_set<std::uint64_t> abandoned) {
        initialize_result_ = std::move(initialize_result);
        protocol_version_ = std::move(protocol_version);
        modern_ = modern;
        abandoned_ = std::move(abandoned);
        probe_ = Probe::none;
        ready_ = true;
    }

    bool ready() const { return ready_; }
    bool modern() const { return modern_; }
    const nlohmann::json& initialize_result() const { return initialize_result_; }
    const std::string& protocol_version() const { return protocol_version_; }

private:
    enum class Probe {
        none,             // no server/discover sent, or its verdict is in
        known_modern,     // sent to a child known (or pinned) to be modern: no timing
        awaiting_life,    // sent; the child has said nothing yet
        awaiting_answer,  // sent; the child has shown life, silence counts
        fell_back,        // unanswered in time: initialize sent, a late answer still decides
    };

    bool handle_message(const nlohmann::json& message);
    void send_initialize(const std::string& version);
    void on_initialize_reply(const nlohmann::json& message);
    void on_probe_reply(const nlohmann::json& message);
    void start_silence();
    void end_probe();
    void arm_probe_timer(std::optional<Duration> after);
    std::string discover_request(std::uint64_t id) const;

    ChildIds& ids_;
    Callbacks callbacks_;
    CapabilitiesFor capabilities_;
    Probe probe_ = Probe::none;
    std::uint64_t probe_id_ = 0;
    Duration silence_{};
    std::uint64_t initialize_id_ = 0;
    std::unordered_map<std::uint64_t, bool> pending_pings_;
    // mcpd's requests whose answers it no longer wants (the probe after a legacy verdict, the
    // initialize after a late modern one): swallowed, never passed to the sessions.
    std::unordered_set<std::uint64_t> abandoned_;
    bool ready_ = false;
    bool modern_ = false;
    bool retried_ = false;
    nlohmann::json initialize_result_;
    std::string protocol_version_;
};

}  // namespace mcpd
