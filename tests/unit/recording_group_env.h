// A GroupEnvironment that keeps what a group router writes: each line to the client, and each
// message to a member in a queue of its own, taken in order by the test.
#pragma once

#include <catch2/catch.hpp>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mux/group_router.h"

namespace mcpd::testing {

struct RecordingGroupEnv : GroupEnvironment {
    std::vector<std::string> client;
    std::vector<std::deque<nlohmann::json>> members{std::deque<nlohmann::json>(), std::deque<nlohmann::json>()};
    void to_client(std::string_view line) override { client.emplace_back(line); }
    void to_member(std::size_t member, std::string_view line) override {
        members.at(member).push_back(nlohmann::json::parse(line));
    }
    void note(std::string_view) override {}

    // The oldest message member `member` was sent and has not been taken.
    nlohmann::json take(std::size_t member) {
        REQUIRE_FALSE(members.at(member).empty());
        nlohmann::json message = members[member].front();
        members[member].pop_front();
        return message;
    }
    nlohmann::json last_client() {
        REQUIRE_FALSE(client.empty());
        return nlohmann::json::parse(client.back());
    }
};

}  // namespace mcpd::testing
