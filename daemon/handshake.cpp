#include "daemon/handshake.h"

#include <algorithm>

#include "common/json_read.h"

namespace mcpd {

using nlohmann::json;

const std::vector<std::string>& legacy_protocol_versions() {
    static const std::vector<std::string> versions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                      "2024-11-05"};
    return versions;
}

namespace {

bool speaks(const std::string& version) {
    const auto& known = legacy_protocol_versions();
    return std::find(known.begin(), known.end(), version) != known.end();
}

}  // namespace

Handshake::Handshake(ChildIds& ids, Callbacks callbacks)
    : ids_(ids), callbacks_(std::move(callbacks)) {}

void Handshake::begin(const json& capabilities) {
    capabilities_ = capabilities;
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
          {"capabilities", capabilities_},
          {"clientInfo", {{"name", "mcpd"}, {"version", MCPD_VERSION}}}}},
    };
    callbacks_.send(request.dump());
}

void Handshake::begin_probe(const json& capabilities) {
    capabilities_ = capabilities;
    probe_id_ = ids_.next();
    callbacks_.send(discover_request(probe_id_));
}

std::string Handshake::discover_request(std::uint64_t id) const {
    const json request = {
        {"jsonrpc", "2.0"},
        {"id", id},
        {"method", "server/discover"},
        {"params",
         {{"_meta",
           {{"io.modelcontextprotocol/protocolVersion", kModernProtocolVersion},
            {"io.modelcontextprotocol/clientCapabilities", json::object()},
            {"io.modelcontextprotocol/clientInfo", {{"name", "mcpd"}, {"version", MCPD_VERSION}}}}}}},
    };
    return request.dump();
}

void Handshake::probe_timed_out() {
    if (probe_id_ == 0 || ready_) return;
    probe_id_ = 0;  // a late answer is ignored
    begin(capabilities_);
}

void Handshake::on_probe_reply(const json& message) {
    probe_id_ = 0;
    const auto result = message.find("result");
    if (result != message.end() && result->is_object()) {
        const auto versions = result->find("supportedVersions");
        const bool speaks_ours = versions != result->end() && versions->is_array() &&
                                 std::find(versions->begin(), versions->end(),
                                           json(std::string(kModernProtocolVersion))) != versions->end();
        if (!speaks_ours) {
            callbacks_.on_failed("the server answered server/discover without supporting " +
                                 std::string(kModernProtocolVersion) + ", the modern revision mcpd speaks");
            return;
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
    begin(capabilities_);  // any other answer: a legacy server
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
            callbacks_.send(json{{"jsonrpc", "2.0"}, {"id", *id}, {"result", json::object()}}.dump());
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
    return false;
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
        std::string text = error->is_object() && error->contains("message") &&
                                   (*error)["message"].is_string()
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
    if (!speaks(version)) {
        callbacks_.on_failed("the server wants protocol version " + version +
                             ", which mcpd does not speak");
        return;
    }
    ready_ = true;
    protocol_version_ = version;
    initialize_result_ = *result;
    callbacks_.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    callbacks_.on_ready(initialize_result_);
}

}  // namespace mcpd
