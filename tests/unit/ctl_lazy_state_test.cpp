// How a lazy server without a process reads in mcpctl: sleeping with the time of its cache, or
// cold; anything else (a running lazy server, a server that is not lazy) has no such text.
#include <catch2/catch.hpp>

#include "ctl/lazy_state.h"

using nlohmann::json;

TEST_CASE("a lazy server without a process reads as sleeping or cold", "[ctl][lazy]") {
    json server = {{"name", "demo"}, {"state", "stopped"}, {"lazy", {{"cached", nullptr}}}};
    CHECK(mcpctl::lazy_state_text(server) == "cold (no cache)");
    server["lazy"]["cached"] = 1796000000;
    const std::string sleeping = mcpctl::lazy_state_text(server);
    CHECK(sleeping.starts_with("sleeping (cached 20"));
    CHECK(sleeping.size() == std::string("sleeping (cached 2026-11-29 10:14)").size());
    server["state"] = "running";
    CHECK(mcpctl::lazy_state_text(server).empty());
    const json not_lazy = {{"name", "demo"}, {"state", "stopped"}, {"lazy", nullptr}};
    CHECK(mcpctl::lazy_state_text(not_lazy).empty());
}
