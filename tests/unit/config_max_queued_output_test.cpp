// [daemon] max_queued_output: the output all clients together may have queued.
#include <catch2/catch.hpp>
#include <string>

#include "config/registry.h"
#include "registry_parse.h"

using namespace mcpd::config;

TEST_CASE("max_queued_output defaults to 64 MiB", "[registry][budget]") {
    const LoadResult result = parse("[daemon]\n");
    REQUIRE(result.registry);
    CHECK(result.registry->daemon.max_queued_output == 64u * 1024 * 1024);
}

TEST_CASE("max_queued_output is read as a byte count", "[registry][budget]") {
    const LoadResult result = parse("[daemon]\nmax_queued_output = 16777216\n");
    INFO(describe(result));
    REQUIRE(result.registry);
    CHECK(result.registry->daemon.max_queued_output == 16u * 1024 * 1024);

    // Equal to the per-session cap is enough.
    const LoadResult equal =
        parse("[daemon]\nmax_session_queue_bytes = 2048\nmax_queued_output = 2048\n");
    INFO(describe(equal));
    REQUIRE(equal.registry);
    CHECK(equal.registry->daemon.max_queued_output == 2048);
}

TEST_CASE("max_queued_output below max_session_queue_bytes is an error naming both",
          "[registry][budget]") {
    const ConfigError error = only_error(
        parse("[daemon]\nmax_session_queue_bytes = 8388608\nmax_queued_output = 4194304\n"));
    CHECK(error.line == 3);
    CHECK(error.column == 21);
    CHECK(error.message ==
          "'max_queued_output' (4194304 bytes) must be at least 'max_session_queue_bytes' "
          "(8388608 bytes): what all clients together may have queued cannot be less than what "
          "one session may; raise max_queued_output or lower max_session_queue_bytes");

    // The same with the default budget: reported where the file raises the per-session cap.
    const ConfigError raised =
        only_error(parse("[daemon]\nlog_level = \"info\"\nmax_session_queue_bytes = 100000000\n"));
    CHECK(raised.line == 3);
    CHECK(
        raised.message.starts_with("'max_queued_output' (67108864 bytes) must be at least "
                                   "'max_session_queue_bytes' (100000000 bytes)"));
}

TEST_CASE("max_queued_output takes an integer of at least 1024", "[registry][budget]") {
    const ConfigError small = only_error(parse("[daemon]\nmax_queued_output = 100\n"));
    CHECK(small.line == 2);
    CHECK(small.message == "expected an integer of at least 1024 for 'max_queued_output', got 100");

    const ConfigError text = only_error(parse("[daemon]\nmax_queued_output = \"64M\"\n"));
    CHECK(text.message == "expected an integer for 'max_queued_output', got string");

    const ConfigError typo = only_error(parse("[daemon]\nmax_queued_outptu = 1048576\n"));
    CHECK(typo.message ==
          "unknown key 'max_queued_outptu' in [daemon]; did you mean 'max_queued_output'?");
}
