// [daemon] metrics_listen, metrics_token_file and request_log, and a server's own request_log.
#include <catch2/catch.hpp>
#include <string>

#include "config/registry.h"
#include "registry_parse.h"

using namespace mcpd::config;

namespace {

const Registry& loaded(const LoadResult& result) {
    INFO(describe(result));
    REQUIRE(result.registry.has_value());
    return *result.registry;
}

constexpr std::string_view kExpected =
    "; expected HOST:PORT with an IPv4 address, [IPV6]:PORT, or a bare PORT (then 127.0.0.1), "
    "such as \"127.0.0.1:9464\"";

}  // namespace

TEST_CASE("metrics are served nowhere and requests not logged by default", "[registry][metrics]") {
    const LoadResult result = parse("[servers.demo]\ncommand = \"x\"\n");
    const Registry& registry = loaded(result);
    CHECK(registry.daemon.metrics_listen.empty());
    CHECK_FALSE(registry.daemon.request_log);
    CHECK_FALSE(registry.servers.at(0).request_log.has_value());
    CHECK_FALSE(logs_requests(registry.daemon, registry.servers.at(0)));
}

TEST_CASE("metrics_listen keeps an address as written", "[registry][metrics]") {
    for (const char* address : {"127.0.0.1:9464", "9464", "[::1]:0", "0.0.0.0:9100"}) {
        const LoadResult result = parse("[daemon]\nmetrics_listen = \"" + std::string(address) +
                                        "\"\nmetrics_token_file = \"/etc/mcpd/metrics.token\"\n");
        CHECK(loaded(result).daemon.metrics_listen == address);
        CHECK(loaded(result).daemon.metrics_token_file == "/etc/mcpd/metrics.token");
    }
}

TEST_CASE("metrics_listen needs a metrics_token_file, relative to the registry",
          "[registry][metrics]") {
    const ConfigError error = only_error(parse("[daemon]\nmetrics_listen = \"127.0.0.1:9464\"\n"));
    CHECK(error.line == 2);
    CHECK(error.column == 18);
    CHECK(error.message ==
          "'metrics_listen' needs 'metrics_token_file': a file only mcpd's user may read (mode "
          "0600) holding the token a scraper must send as \"Authorization: Bearer TOKEN\" "
          "(Prometheus: bearer_token_file); create one with 'openssl rand -hex 32 > FILE && "
          "chmod 600 FILE'");
    // The key's order does not matter; a relative path is the registry's directory's.
    const LoadResult relative = parse(
        "[daemon]\nmetrics_token_file = \"secrets/../metrics.token\"\nmetrics_listen = \"9464\"\n");
    CHECK(loaded(relative).daemon.metrics_token_file == "/virtual/metrics.token");
    const ConfigError empty = only_error(parse("[daemon]\nmetrics_token_file = \"\"\n"));
    CHECK(empty.message == "expected a file path for 'metrics_token_file', got an empty string");
    // A token file alone serves nothing and is no error.
    CHECK(loaded(parse("[daemon]\nmetrics_token_file = \"/t\"\n")).daemon.metrics_listen.empty());
}

TEST_CASE("a metrics_listen that is no address is an error at its value", "[registry][metrics]") {
    const ConfigError error = only_error(parse("[daemon]\nmetrics_listen = \"localhost\"\n"));
    CHECK(error.file == "/virtual/mcpd.toml");
    CHECK(error.line == 2);
    CHECK(error.column == 18);
    CHECK(error.message ==
          "'metrics_listen': invalid listen address \"localhost\": it has no :PORT" +
              std::string(kExpected));

    const ConfigError port = only_error(parse("[daemon]\nmetrics_listen = \"127.0.0.1:99999\"\n"));
    CHECK(port.message ==
          "'metrics_listen': invalid listen address \"127.0.0.1:99999\": the "
          "port \"99999\" is not a number from 0 to 65535" +
              std::string(kExpected));

    const ConfigError number = only_error(parse("[daemon]\nmetrics_listen = 9464\n"));
    CHECK(number.line == 2);
    CHECK(number.message == "expected a string for 'metrics_listen', got integer");
}

TEST_CASE("request_log in [daemon] is every server's unless a server says otherwise",
          "[registry][metrics]") {
    const LoadResult result = parse(R"([daemon]
request_log = true

[servers.plain]
command = "x"

[servers.quiet]
command = "x"
request_log = false
)");
    const Registry& registry = loaded(result);
    CHECK(registry.daemon.request_log);
    const ServerConfig& plain = *registry.find("plain");
    const ServerConfig& quiet = *registry.find("quiet");
    CHECK_FALSE(plain.request_log.has_value());
    CHECK(quiet.request_log == false);
    CHECK(logs_requests(registry.daemon, plain));
    CHECK_FALSE(logs_requests(registry.daemon, quiet));

    const LoadResult loud = parse("[servers.loud]\ncommand = \"x\"\nrequest_log = true\n");
    const Registry& one = loaded(loud);
    CHECK_FALSE(one.daemon.request_log);
    CHECK(logs_requests(one.daemon, one.servers.at(0)));
}

TEST_CASE("request_log must be a boolean, in either table", "[registry][metrics]") {
    const ConfigError daemon = only_error(parse("[daemon]\nrequest_log = \"yes\"\n"));
    CHECK(daemon.line == 2);
    CHECK(daemon.column == 15);
    CHECK(daemon.message == "expected true or false for 'request_log', got string");

    const ConfigError server =
        only_error(parse("[servers.demo]\ncommand = \"x\"\nrequest_log = 1\n"));
    CHECK(server.line == 3);
    CHECK(server.column == 15);
    CHECK(server.message == "expected true or false for 'request_log', got integer");
}

TEST_CASE("a misspelt metrics key gets a did-you-mean", "[registry][metrics]") {
    CHECK(only_error(parse("[daemon]\nmetrics_listn = \"9464\"\n")).message ==
          "unknown key 'metrics_listn' in [daemon]; did you mean 'metrics_listen'?");
    CHECK(only_error(parse("[servers.demo]\ncommand = \"x\"\nrequest_logs = true\n")).message ==
          "unknown key 'request_logs' in server 'demo'; did you mean 'request_log'?");
}
