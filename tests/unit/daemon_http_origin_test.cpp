// DNS rebinding (daemon/http/origin_check.h): which names a listener answers to, and the Host
// and Origin headers of pages that try to reach it under a name of their own.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/http/origin_check.h"

using namespace mcpd;

namespace {

bool origin_test_host_ok(std::optional<std::string_view> host, const OriginPolicy& policy,
                         bool unix_socket = false) {
    return check_host(host, policy, unix_socket).ok();
}

bool origin_test_origin_ok(std::optional<std::string_view> origin, const OriginPolicy& policy) {
    return check_origin(origin, policy).ok();
}

}  // namespace

TEST_CASE("a listener answers to the loopback names and the host it was bound to", "[origin]") {
    const std::vector<std::string> loopback = {"localhost", "127.0.0.1", "[::1]"};
    CHECK(origin_policy_for("127.0.0.1").hosts == loopback);
    CHECK(origin_policy_for("::1").hosts == loopback);
    CHECK(origin_policy_for("localhost").hosts == loopback);
    CHECK(origin_policy_for("").hosts == loopback);
    // A wildcard names no host: only the loopback names are answered.
    CHECK(origin_policy_for("0.0.0.0").hosts == loopback);
    CHECK(origin_policy_for("::").hosts == loopback);
    CHECK(origin_policy_for("[::]").hosts == loopback);
    CHECK(origin_policy_for("192.168.1.5").hosts ==
          std::vector<std::string>{"localhost", "127.0.0.1", "[::1]", "192.168.1.5"});
    CHECK(origin_policy_for("Build-Box.LAN").hosts ==
          std::vector<std::string>{"localhost", "127.0.0.1", "[::1]", "build-box.lan"});
    CHECK(origin_policy_for("fe80::1").hosts ==
          std::vector<std::string>{"localhost", "127.0.0.1", "[::1]", "[fe80::1]"});
}

TEST_CASE("Host must name the endpoint, with or without a port", "[origin]") {
    const OriginPolicy policy = origin_policy_for("127.0.0.1");
    CHECK(origin_test_host_ok("localhost", policy));
    CHECK(origin_test_host_ok("localhost:8080", policy));
    CHECK(origin_test_host_ok("LocalHost:8080", policy));
    CHECK(origin_test_host_ok("127.0.0.1:3000", policy));
    CHECK(origin_test_host_ok("[::1]", policy));
    CHECK(origin_test_host_ok("[::1]:3000", policy));
    CHECK(origin_test_host_ok("[0:0:0:0:0:0:0:1]:3000", policy) == false);  // not spelt as listed
}

TEST_CASE("a rebinding page's Host is refused", "[origin]") {
    const OriginPolicy policy = origin_policy_for("127.0.0.1");
    const Result<Done> evil = check_host("evil.example", policy, false);
    REQUIRE_FALSE(evil.ok());
    CHECK(evil.error().find("evil") == std::string::npos);  // never repeated
    CHECK(evil.error().find("localhost, 127.0.0.1, [::1]") != std::string::npos);
    CHECK_FALSE(origin_test_host_ok("evil.example:8080", policy));
    CHECK_FALSE(origin_test_host_ok("localhost.evil.example", policy));
    CHECK_FALSE(origin_test_host_ok("127.0.0.1.nip.io", policy));
    CHECK_FALSE(origin_test_host_ok("localhost.", policy));
    CHECK_FALSE(origin_test_host_ok("[::2]:80", policy));
    // A wildcard listener answers to no name of its own either.
    CHECK_FALSE(origin_test_host_ok("0.0.0.0:8080", origin_policy_for("0.0.0.0")));
}

TEST_CASE("a malformed or missing Host is refused", "[origin]") {
    const OriginPolicy policy = origin_policy_for("127.0.0.1");
    const Result<Done> missing = check_host(std::nullopt, policy, false);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().find("no Host header") != std::string::npos);
    for (const char* bad :
         {"", "localhost:", "localhost:0x50", "localhost:65536", "localhost:123456",
          "localhost:80:80", "localhost@evil.example", "evil.example@localhost",
          "user:pw@localhost", "localhost/path", "local host", "[::1", "[::1]x", "[::1]:", "[]",
          "[::1%25eth0]", "[::1]:80:80", "::1", "http://localhost"}) {
        INFO(bad);
        const Result<Done> verdict = check_host(std::string_view(bad), policy, false);
        REQUIRE_FALSE(verdict.ok());
    }
    CHECK(check_host("localhost:", policy, false).error().find("malformed") != std::string::npos);
}

TEST_CASE("on a unix socket Host may be missing and need only be well-formed", "[origin]") {
    const OriginPolicy policy = origin_policy_for("");
    CHECK(origin_test_host_ok(std::nullopt, policy, true));
    CHECK(origin_test_host_ok("localhost", policy, true));
    CHECK(origin_test_host_ok("mcpd", policy, true));
    CHECK_FALSE(origin_test_host_ok("local host", policy, true));
    CHECK_FALSE(origin_test_host_ok("localhost@evil", policy, true));
}

TEST_CASE("Origin is accepted when absent or naming the endpoint", "[origin]") {
    const OriginPolicy policy = origin_policy_for("127.0.0.1");
    CHECK(origin_test_origin_ok(std::nullopt, policy));
    CHECK(origin_test_origin_ok("http://localhost", policy));
    CHECK(origin_test_origin_ok("http://localhost:6274", policy));
    CHECK(origin_test_origin_ok("https://127.0.0.1:8443", policy));
    CHECK(origin_test_origin_ok("http://[::1]:3000", policy));
    CHECK(origin_test_origin_ok("HTTP://LOCALHOST:3000", policy));
    const OriginPolicy named = origin_policy_for("devbox.lan");
    CHECK(origin_test_origin_ok("https://DevBox.lan", named));
}

TEST_CASE("a page of another site is refused by its Origin", "[origin]") {
    const OriginPolicy policy = origin_policy_for("127.0.0.1");
    const Result<Done> evil = check_origin("http://evil.example", policy);
    REQUIRE_FALSE(evil.ok());
    CHECK(evil.error().find("evil") == std::string::npos);
    for (const char* bad : {"http://evil.example:8080",
                            "http://localhost.evil.example",
                            "http://127.0.0.1.nip.io",
                            "http://localhost@evil",
                            "http://localhost:80@evil.example",
                            "http://evil@localhost",
                            "http://localhost/",
                            "http://localhost/path",
                            "http://localhost?x",
                            "http://localhost#x",
                            "http://localhost:",
                            "http://localhost:99999",
                            "null",
                            "NULL",
                            "file://",
                            "ftp://localhost",
                            "chrome-extension://abc",
                            "localhost",
                            "//localhost",
                            "http://",
                            "http:///localhost",
                            "http://[::1",
                            "https://[::2]",
                            " http://localhost",
                            "http://local host"}) {
        INFO(bad);
        CHECK_FALSE(origin_test_origin_ok(std::string_view(bad), policy));
    }
    CHECK(check_origin("null", policy).error().find("opaque origin") != std::string::npos);
}
