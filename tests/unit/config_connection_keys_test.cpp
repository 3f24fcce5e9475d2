// [daemon] control_idle_timeout and max_owner_connections: how long an idle control connection
// lives, and how many connections root and mcpd's own user may each hold.
#include <catch2/catch.hpp>
#include <string>

#include "config/registry.h"
#include "registry_parse.h"

using namespace mcpd::config;
using namespace std::chrono_literals;

TEST_CASE("control connections idle for 10s and the owner holds 512 by default",
          "[registry][limits]") {
    const LoadResult result = parse("[servers.demo]\ncommand = \"x\"\n");
    INFO(describe(result));
    REQUIRE(result.registry.has_value());
    CHECK(result.registry->daemon.control_idle_timeout == 10s);
    CHECK(result.registry->daemon.max_owner_connections == 512);
}

TEST_CASE("control_idle_timeout and max_owner_connections are read from [daemon]",
          "[registry][limits]") {
    const LoadResult result =
        parse("[daemon]\ncontrol_idle_timeout = \"1500ms\"\nmax_owner_connections = 40\n");
    INFO(describe(result));
    REQUIRE(result.registry.has_value());
    CHECK(result.registry->daemon.control_idle_timeout == 1500ms);
    CHECK(result.registry->daemon.max_owner_connections == 40);
}

TEST_CASE("a zero idle timeout or owner cap is an error at its value", "[registry][limits]") {
    const ConfigError timeout = only_error(parse("[daemon]\ncontrol_idle_timeout = \"0s\"\n"));
    CHECK(timeout.line == 2);
    CHECK(timeout.message.find("control_idle_timeout") != std::string::npos);

    const ConfigError cap = only_error(parse("[daemon]\nmax_owner_connections = 0\n"));
    CHECK(cap.line == 2);
    CHECK(cap.message.find("max_owner_connections") != std::string::npos);

    const ConfigError text = only_error(parse("[daemon]\nmax_owner_connections = \"many\"\n"));
    CHECK(text.message.find("max_owner_connections") != std::string::npos);
}
