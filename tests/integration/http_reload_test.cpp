// [daemon] http_listen applied at reload: an address added is served at once, one removed is no
// longer, and sessions elsewhere go on.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "curl_client.h"
#include "harness.h"

using namespace integration;
using nlohmann::json;

namespace {

std::vector<std::string> reload_post(const std::vector<std::string>& before, const std::string& url) {
    std::vector<std::string> args = before;
    args.insert(args.end(), {"-X", "POST", "-H", "Content-Type: application/json", "-H",
                             "Accept: application/json, text/event-stream", "--data-binary",
                             initialize_body("curl-reload"), url});
    return args;
}

// The loopback TCP address mcpctl http-token lists, or "" when there is none.
std::string reload_tcp_address(TestEnv& env) {
    const json info = json::parse(env.ctl({"--json", "http-token"}).out, nullptr, false);
    for (const json& address : info.value("addresses", json::array())) {
        const std::string text = address.get<std::string>();
        if (text.starts_with("127.0.0.1:")) return text;
    }
    return {};
}

}  // namespace

TEST_CASE("http_listen is applied at reload: an address added is served, one removed is not",
          "[http][reload]") {
    TestEnv env("http-reload");
    const std::string http = env.path("http.sock");
    const std::string servers = server_toml("demo");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" + servers);
    env.start_daemon();
    const std::vector<std::string> on_unix = {"--unix-socket", http};
    CHECK(curl(reload_post(on_unix, "http://localhost/mcp/demo")).status == 200);
    CHECK(reload_tcp_address(env).empty());

    // Loopback TCP added: served once mcpctl reload returns, with the user's token.
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\", \"127.0.0.1:0\"]\n\n" + servers);
    REQUIRE(env.ctl({"reload"}).exit_code == 0);
    const std::string address = reload_tcp_address(env);
    REQUIRE_FALSE(address.empty());
    const std::string token = json::parse(env.ctl({"--json", "http-token"}).out)["token"];
    const HttpAnswer over_tcp =
        curl(reload_post({"-H", "Authorization: Bearer " + token}, "http://" + address + "/mcp/demo"));
    INFO(over_tcp.raw);
    CHECK(over_tcp.status == 200);

    // Every address removed: neither is served any more, and demo still serves its sessions.
    env.write_registry("[daemon]\nhttp_listen = []\n\n" + servers);
    REQUIRE(env.ctl({"reload"}).exit_code == 0);
    CHECK(reload_tcp_address(env).empty());
    CHECK(curl(reload_post({"-H", "Authorization: Bearer " + token}, "http://" + address + "/mcp/demo")).status == 0);
    CHECK(curl(reload_post(on_unix, "http://localhost/mcp/demo")).status == 0);
    CHECK(env.server("demo")["state"] == "running");
}
