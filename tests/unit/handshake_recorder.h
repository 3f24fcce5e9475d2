// A Handshake whose callbacks record everything it does: the lines it sends, its verdict,
// its failures, the child's pongs and what it asks of its probe timer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/server/handshake.h"

namespace mcpd::testing {

struct HandshakeRecorder {
    HandshakeRecorder() : handshake(ids, callbacks()) {}
    HandshakeRecorder(const HandshakeRecorder&) = delete;
    HandshakeRecorder& operator=(const HandshakeRecorder&) = delete;

    Handshake::Callbacks callbacks() {
        Handshake::Callbacks c;
        c.send = [this](std::string_view line) { sent.push_back(nlohmann::json::parse(line)); };
        c.on_ready = [this](const nlohmann::json& result) { ready = result; };
        c.on_failed = [this](std::string why) { failures.push_back(std::move(why)); };
        c.on_pong = [this] { ++pongs; };
        c.probe_timer = [this](std::optional<Duration> after) {
            timer_calls.push_back(after);
            timer = after;
        };
        return c;
    }

    ChildIds ids;
    std::vector<nlohmann::json> sent;
    std::optional<nlohmann::json> ready;
    std::vector<std::string> failures;
    int pongs = 0;
    std::vector<std::optional<Duration>> timer_calls;
    std::optional<Duration> timer;  // armed, and for how long
    Handshake handshake;
};

}  // namespace mcpd::testing
