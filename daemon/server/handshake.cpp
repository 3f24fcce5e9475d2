#include "daemon/server/handshake.h"

#include <algorithm>

#include "common/json_read.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/mcp_versions.h"

namespace mcpd {

using nlohmann::json;

Handshake::Handshake(ChildIds& ids, Callbacks callbacks)
    : ids_(ids), callbacks_(std::move(callbacks)) {}

void Handshake::begin(const json& capabilities) {
    begin(CapabilitiesFor([capabilities](std::string_view) { return capabilities; }));
}

void Handshake::begin(CapabilitiesFor capabilities) {
    capabilities_ = std::move(capabilities);
    send_initialize(legacy_protocol_versions().front());
}

void Handshake::send_initialize(const std::string& version) {
    initialize_id_ = ids_.next();
    const json request = {
        {"jsonrpc", "2.0"},
        {"id", initialize_id_},
        {"method", "initialize"},
        {"params",
         {{"protocolVersion", version},
          {"capabilities", capabilities_ ? capabilities_(version) : json::object()},
          {"clientInfo", {{"name", "mcpd"}, {"version", MCPD_VERSION}}}}},
    };
    callbacks_.send(request.dump());
}

// When the probe gives up. A server may spend seconds before it reads stdin (npx or uvx
// installing, docker pulling, a JVM loading), and until then its silence says nothing about
// its era, so the clock does not start at spawn:
// - The silence that means "legacy" is kProbeSilence counted from the child's first line on
//   stdout or stderr: a process that writes is running its own code, so a legacy server that
//   ignores unknown requests but logs at start-up is still judged within seconds.
// - A child that shows no life at all is given half of start_timeout (the other half is for
//   initialize): most servers answer the probe one way or the other long before that.
// - Falling back is not a verdict: initialize follows the probe on the same stdin, so a slow
//   modern server answers the probe first, and its late DiscoverResult (or -32022) still
//   decides (the initialize is then abandoned); a late error is ignored. Only a dual-era
//   server that answered initialize after a late DiscoverResult (rare: slower than the
//   silence and logging early) may have been switched to legacy for that process.
// - An exit before the verdict is an exit on the probe (exited_on_probe), however long it took.
void Handshake::begin_probe(const json& capabilities, std::optional<Duration> start_timeout) {
    begin_probe(CapabilitiesFor([capabilities](std::string_view) { return capabilities; }),
                start_timeout);
}

void Handshake::begin_probe(CapabilitiesFor capabilities, std::optional<Duration> start_timeout) {
    capabilities_ = std::move(capabilities);
    probe_id_ = ids_.next();
    callbacks_.send(discover_request(probe_id_));
    if (!start_timeout) {
        probe_ = Probe::known_modern;  // only start_timeout bounds the wait
        return;
    }
    const Duration without_life = *start_timeout / 2;
    silence_ = std::min(kProbeSilence, without_life);
    probe_ = Probe::awaiting_life;
    arm_probe_timer(without_life);
}

void Handshake::start_silence() {
    probe_ = Probe::awaiting_answer;
    arm_probe_timer(silence_);
}

void Handshake::arm_probe_timer(std::optional<Duration> after) {
    if (callbacks_.probe_timer) callbacks_.probe_timer(after);
}

void Handshake::end_probe() {
    if (probe_ == Probe::awaiting_life || probe_ == Probe::awaiting_answer) {
        arm_probe_timer(std::nullopt);
    }
    probe_ = Probe::none;
    probe_id_ = 0;
}

std::string Handshake::discover_request(std::uint64_t id) const {
    const json request = {
        {"jsonrpc", "2.0"},
        {"id", id},
        {"method", "server/discover"},
        {"params",
         {{"_meta",
           {{kMetaProtocolVersion, kModernProtocolVersion},
            {kMetaClientCapabilities,
             capabilities_ ? capabilities_(kModernProtocolVersion) : json::object()},
            {kMetaClientInfo,
             {{"name", "mcpd"}, {"version", MCPD_VERSION}}}}}}},
    };
    return request.dump();
}

bool Handshake::probe_timed_out() {
    if (ready_ || (probe_ != Probe::awaiting_life && probe_ != Probe::awaiting_answer))
        return false;
    probe_ = Probe::fell_back;  // probe_id_ stays: a late answer still decides
    send_initialize(legacy_protocol_versions().front());
    return true;
}

void Handshake::on_probe_reply(const json& message) {
    const bool initialize_sent = probe_ == Probe::fell_back;
    end_probe();
    const auto result = message.find("result");
    if (result != message.end() && result->is_object()) {
        const auto versions = result->find("supportedVersions");
        const bool speaks_ours =
            versions != result->end() && versions->is_array() &&
            std::find(versions->begin(), versions->end(),
                      json(std::string(kModernProtocolVersion))) != versions->end();
        if (!speaks_ours) {
            callbacks_.on_failed("the server answered server/discover without supporting " +
                                 std::string(kModernProtocolVersion) +
                                 ", the modern revision mcpd speaks");
            return;
        }
        if (initialize_sent) {
            abandoned_.insert(initialize_id_);  // its refusal must not reach the sessions
            initialize_id_ = 0;
        }
        ready_ = true;
        modern_ = true;
        protocol_version_ = std::string(kModernProtocolVersion);
        initialize_result_ = *result;
        callbacks_.on_ready(initialize_result_);
        return;
    }
    const auto error = message.find("error");
    if (error != message.end() && json_read::integer_at(*error, "code") == -32022) {
        // Modern, but none of the revisions it lists is ours: falling back would be wrong.
        callbacks_.on_failed("the server is modern but does not speak " +
                             std::string(kModernProtocolVersion) + ": " + error->dump());
        return;
    }
    // Any other answer: a legacy server (which already has its initialize after a fallback).
    if (!initialize_sent) send_initialize(legacy_protocol_versions().front());
}

void Handshake::send_ping() {
    const std::uint64_t id = ids_.next();
    pending_pings_[id] = true;
    if (modern_) {
        callbacks_.send(discover_request(id));
        return;
    }
    const json request = {{"jsonrpc", "2.0"}, {"id", id}, {"method", "ping"}};
    callbacks_.send(request.dump());
}

bool Handshake::handle(const json& message) {
    try {
        return handle_message(message);
    } catch (const std::exception& error) {
        // A backstop: every read of the reply is typed, so this is a bug in mcpd.
        callbacks_.on_failed(std::string("mcpd could not read the server's answer (") +
                             error.what() + ")");
        return true;
    }
}

bool Handshake::handle_message(const json& message) {
    if (!message.is_object()) return false;
    const auto method = message.find("method");
    const auto id = message.find("id");
    if (method != message.end()) {
        // The child pings us: answer at once, whoever is attached.
        if (*method == "ping" && id != message.end()) {
            callbacks_.send(
                json{{"jsonrpc", "2.0"}, {"id", *id}, {"result", json::object()}}.dump());
            return true;
        }
        return false;
    }
    if (id == message.end() || !id->is_number_unsigned()) return false;
    const std::uint64_t value = id->get<std::uint64_t>();
    if (probe_id_ != 0 && value == probe_id_) {
        on_probe_reply(message);
        return true;
    }
    if (value == initialize_id_ && !ready_) {
        on_initialize_reply(message);
        return true;
    }
    if (const auto ping = pending_pings_.find(value); ping != pending_pings_.end()) {
        pending_pings_.erase(ping);
        if (callbacks_.on_pong) callbacks_.on_pong();
        return true;
    }
    return abandoned_.erase(value) > 0;
}

void Handshake::on_initialize_reply(const json& message) {
    if (const auto error = message.find("error"); error != message.end()) {
        // A server that refuses our version may list the ones it speaks (-32602 with
        // data.supported): retry once with the newest we share.
        if (!retried_ && error->is_object() && error->contains("data") &&
            (*error)["data"].is_object() && (*error)["data"].contains("supported") &&
            (*error)["data"]["supported"].is_array()) {
            for (const std::string& ours : legacy_protocol_versions()) {
                for (const json& theirs : (*error)["data"]["supported"]) {
                    if (theirs.is_string() && theirs.get<std::string>() == ours) {
                        retried_ = true;
                        send_initialize(ours);
                        return;
                    }
                }
            }
        }
        std::string text =
            error->is_object() && error->contains("message") && (*error)["message"].is_string()
                ? (*error)["message"].get<std::string>()
                : error->dump();
        callbacks_.on_failed("the server refused initialize: " + text);
        return;
    }
    const auto result = message.find("result");
    if (result == message.end() || !result->is_object() || !result->contains("protocolVersion") ||
        !(*result)["protocolVersion"].is_string()) {
        callbacks_.on_failed("the server answered initialize without a protocolVersion");
        return;
    }
    const std::string version = (*result)["protocolVersion"].get<std::string>();
    if (!speaks_legacy_version(version)) {
        callbacks_.on_failed("the server wants protocol version " + version +
                             ", which mcpd does not speak");
        return;
    }
    if (probe_ == Probe::fell_back) {
        // Legacy after all: the probe's answer, should it still come, is nobody's.
        abandoned_.insert(probe_id_);
        end_probe();
    }
    ready_ = true;
    protocol_version_ = version;
    initialize_result_ = *result;
    callbacks_.send(jsonrpc::notification("notifications/initialized"));
    callbacks_.on_ready(initialize_result_);
}

}  // namespace mcpd
