#include <catch2/catch.hpp>

#include "daemon/server/config_change.h"

using mcpd::classify_change;
using mcpd::ConfigChange;
using mcpd::config::ServerConfig;

namespace {

ServerConfig demo() {
    ServerConfig config;
    config.name = "demo";
    config.command = "mcpd-demo-server";
    config.allow_users = {"alice"};
    return config;
}

}  // namespace

TEST_CASE("a server entry's change is classified by what the process would see") {
    const ServerConfig current = demo();
    CHECK(classify_change(current, current) == ConfigChange::none);

    ServerConfig users = current;
    users.allow_users = {"alice", "bob"};
    CHECK(classify_change(current, users) == ConfigChange::access);

    ServerConfig groups = current;
    groups.allow_groups = {"developers"};
    groups.allow_users.clear();
    CHECK(classify_change(current, groups) == ConfigChange::access);

    // Whether its requests are logged is mcpd's alone: no restart, whichever way it goes.
    ServerConfig logged = current;
    logged.request_log = true;
    CHECK(classify_change(current, logged) == ConfigChange::access);
    ServerConfig quiet = logged;
    quiet.request_log = false;
    CHECK(classify_change(logged, quiet) == ConfigChange::access);
    CHECK(classify_change(quiet, current) == ConfigChange::access);
    ServerConfig logged_and_args = logged;
    logged_and_args.args = {"--verbose"};
    CHECK(classify_change(current, logged_and_args) == ConfigChange::restart);

    // So is what is replayed when the process dies: read by the router at that moment.
    ServerConfig trusting = current;
    trusting.replay = mcpd::config::Replay::annotated;
    CHECK(classify_change(current, trusting) == ConfigChange::access);

    ServerConfig args = users;
    args.args = {"--verbose"};
    CHECK(classify_change(current, args) == ConfigChange::restart);

    ServerConfig timing = current;
    timing.stop_grace = std::chrono::seconds(7);
    CHECK(classify_change(current, timing) == ConfigChange::restart);
}

TEST_CASE("a sandbox change restarts the server: its box is made when a process starts") {
    const ServerConfig current = demo();
    ServerConfig boxed = current;
    boxed.sandbox.preset = "project";
    CHECK(classify_change(current, boxed) == ConfigChange::restart);
    ServerConfig limited = boxed;
    limited.sandbox.memory = 512ULL << 20;
    CHECK(classify_change(boxed, limited) == ConfigChange::restart);
    ServerConfig off = boxed;
    off.sandbox = {};
    off.sandbox.off = true;
    CHECK(classify_change(boxed, off) == ConfigChange::restart);
}
