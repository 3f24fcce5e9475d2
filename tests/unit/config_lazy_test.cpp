// lazy: each server's own setting, else [daemon] lazy, resolved into every entry when the
// registry is read; its idle time.
#include <catch2/catch.hpp>

#include "registry_parse.h"

using namespace mcpd;

TEST_CASE("lazy: a server's own setting, else the daemon's, is in every entry", "[registry][lazy]") {
    const config::LoadResult plain = parse(R"([servers.a]
command = "x"
[servers.b]
command = "y"
lazy = true
)");
    INFO(describe(plain));
    REQUIRE(plain.registry);
    CHECK(plain.registry->find("a")->lazy == false);
    CHECK(plain.registry->find("b")->lazy == true);

    const config::LoadResult all = parse(R"([daemon]
lazy = true
[servers.a]
command = "x"
[servers.b]
command = "y"
lazy = false
)");
    INFO(describe(all));
    REQUIRE(all.registry);
    CHECK(all.registry->daemon.lazy);
    CHECK(all.registry->find("a")->lazy == true);
    CHECK(all.registry->find("b")->lazy == false);
}

TEST_CASE("lazy: a value that is not a boolean is refused", "[registry][lazy]") {
    CHECK(contains(only_error(parse("[servers.a]\ncommand = \"x\"\nlazy = \"yes\"\n")).message,
                   "lazy"));
    CHECK(contains(only_error(parse("[daemon]\nlazy = 1\n[servers.a]\ncommand = \"x\"\n")).message,
                   "lazy"));
}

TEST_CASE("lazy: the idle time is idle_timeout, or ten minutes without one", "[registry][lazy]") {
    config::ServerConfig server;
    CHECK(config::lazy_idle_timeout(server) == std::chrono::minutes(10));
    server.idle_timeout = std::chrono::seconds(30);
    CHECK(config::lazy_idle_timeout(server) == std::chrono::seconds(30));
}
