#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/log.h"

namespace {

struct Captured {
    mcpd::log::Level level;
    std::string server;
    std::string message;
};
std::vector<Captured> g_captured;

void capture(mcpd::log::Level level, std::string_view server, std::string_view message) {
    g_captured.push_back({level, std::string(server), std::string(message)});
}

}  // namespace

TEST_CASE("log: a sink receives each line with its server, filtered by level", "[log]") {
    g_captured.clear();
    mcpd::log::set_sink(&capture);
    mcpd::log::set_level(mcpd::log::Level::info);
    mcpd::log::debug("demo", "too chatty");
    mcpd::log::info("demo", "hello from demo");
    mcpd::log::error("daemon trouble");
    mcpd::log::set_sink(nullptr);
    REQUIRE(g_captured.size() == 2);
    CHECK(g_captured[0].level == mcpd::log::Level::info);
    CHECK(g_captured[0].server == "demo");  // journald gets it as SERVER=demo
    CHECK(g_captured[0].message == "hello from demo");
    CHECK(g_captured[1].level == mcpd::log::Level::error);
    CHECK(g_captured[1].server.empty());
}

TEST_CASE("log: level names parse and print", "[log]") {
    mcpd::log::Level level{};
    for (const char* name : {"debug", "info", "warning", "error"}) {
        REQUIRE(mcpd::log::parse_level(name, level));
        CHECK(mcpd::log::level_name(level) == name);
    }
    CHECK_FALSE(mcpd::log::parse_level("verbose", level));
}
