// Who may read GET /metrics (daemon/control/metrics_access.h): the token file's checks, a Host
// that names the endpoint, and the bearer token compared; and the request head it reads them
// from (daemon/control/http_head.h).
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "daemon/control/http_head.h"
#include "daemon/control/metrics_access.h"
#include "temp_dir.h"

using namespace mcpd;

namespace {

std::string write_token_file(const TempDir& dir, const std::string& name, const std::string& text,
                             mode_t mode) {
    const std::string path = dir.path(name);
    std::ofstream(path, std::ios::binary) << text;
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return path;
}

ListenAddress listen_on(std::string host, std::uint16_t port, bool ipv6 = false) {
    return ListenAddress{std::move(host), port, ipv6};
}

}  // namespace

TEST_CASE("the token file must be mcpd's user's alone, and hold one word", "[metrics_access]") {
    TempDir dir("mcpd-token");
    const uid_t me = ::geteuid();
    const std::string good = write_token_file(dir, "good", "abc123\n", 0600);
    const Result<std::string> token = read_metrics_token(good, me);
    INFO((token ? "" : token.error()));
    REQUIRE(token.ok());
    CHECK(token.value() == "abc123");
    CHECK(read_metrics_token(write_token_file(dir, "readonly", "t0k\r\n", 0400), me).value() ==
          "t0k");

    const std::string shared = write_token_file(dir, "shared", "abc123\n", 0644);
    const Result<std::string> open = read_metrics_token(shared, me);
    REQUIRE_FALSE(open.ok());
    CHECK(open.error() == "metrics_token_file " + shared +
                              " has mode 0644, so other users may read or change the token: make "
                              "it 0600 (chmod 600 " +
                              shared + ")");
    CHECK_FALSE(read_metrics_token(write_token_file(dir, "group", "abc\n", 0640), me).ok());

    const std::string link = dir.path("link");
    REQUIRE(::symlink(good.c_str(), link.c_str()) == 0);
    const Result<std::string> linked = read_metrics_token(link, me);
    REQUIRE_FALSE(linked.ok());
    CHECK(linked.error().find("a symbolic link is not followed") != std::string::npos);

    const Result<std::string> missing = read_metrics_token(dir.path("none"), me);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().starts_with("cannot read metrics_token_file " + dir.path("none")));
    const Result<std::string> empty =
        read_metrics_token(write_token_file(dir, "empty", "\n", 0600), me);
    REQUIRE_FALSE(empty.ok());
    CHECK(empty.error().find("is empty") != std::string::npos);
    CHECK_FALSE(read_metrics_token(write_token_file(dir, "spaced", "two words\n", 0600), me).ok());
    CHECK_FALSE(
        read_metrics_token(
            write_token_file(dir, "long", std::string(kMaxMetricsTokenBytes + 1, 'a'), 0600), me)
            .ok());
    CHECK_FALSE(read_metrics_token(dir.path(""), me).ok());  // a directory

    // Another user's file is refused, even at mode 0600 (root owns this one: not if mcpd is
    // root, which may use root's files).
    if (me != 0) {
        const Result<std::string> other = read_metrics_token(good, me + 1);
        REQUIRE_FALSE(other.ok());
        CHECK(other.error().find("it must belong to mcpd's user") != std::string::npos);
    } else {
        REQUIRE(::chown(good.c_str(), 4242, 4242) == 0);
        const Result<std::string> other = read_metrics_token(good, 0);
        REQUIRE_FALSE(other.ok());
        CHECK(other.error() == "metrics_token_file " + good +
                                   " belongs to uid 4242: it must belong to mcpd's user (uid 0) "
                                   "or root");
    }
}

TEST_CASE("Host must name the endpoint's own listen_on and port", "[metrics_access]") {
    const ListenAddress loopback = listen_on("127.0.0.1", 9464);
    CHECK(host_names("127.0.0.1:9464", loopback));
    CHECK(host_names("localhost:9464", loopback));
    CHECK(host_names("LOCALHOST:9464", loopback));
    CHECK_FALSE(host_names("127.0.0.1", loopback));  // port 80 then
    CHECK_FALSE(host_names("127.0.0.1:9465", loopback));
    CHECK_FALSE(host_names("127.0.0.1:", loopback));
    CHECK_FALSE(host_names("127.0.0.1:09464x", loopback));
    CHECK_FALSE(host_names("127.0.0.2:9464", loopback));
    CHECK_FALSE(host_names("evil.example:9464", loopback));
    CHECK_FALSE(host_names("127.0.0.1.evil.example:9464", loopback));
    CHECK_FALSE(host_names("[::1]:9464", loopback));
    CHECK_FALSE(host_names("", loopback));
    CHECK(host_names("127.0.0.1", listen_on("127.0.0.1", 80)));

    const ListenAddress v6 = listen_on("::1", 9464, true);
    CHECK(host_names("[::1]:9464", v6));
    CHECK(host_names("[0:0::1]:9464", v6));
    CHECK(host_names("localhost:9464", v6));
    CHECK_FALSE(host_names("[::2]:9464", v6));
    CHECK_FALSE(host_names("[::1:9464", v6));
    CHECK_FALSE(host_names("127.0.0.1:9464", v6));

    // Bound to every listen_on: any listen_on literal of that family, never a name.
    const ListenAddress any = listen_on("0.0.0.0", 9464);
    CHECK(host_names("192.0.2.7:9464", any));
    CHECK_FALSE(host_names("evil.example:9464", any));
    CHECK_FALSE(host_names("localhost:9464", any));
    CHECK_FALSE(host_names("192.0.2.7:1", any));
    const ListenAddress lan = listen_on("192.0.2.7", 9464);
    CHECK(host_names("192.0.2.7:9464", lan));
    CHECK_FALSE(host_names("localhost:9464", lan));
}

TEST_CASE("the bearer token is compared whole", "[metrics_access]") {
    CHECK(bearer_matches("Bearer abc", "abc"));
    CHECK(bearer_matches("bearer  abc", "abc"));
    CHECK_FALSE(bearer_matches("Bearer abcd", "abc"));
    CHECK_FALSE(bearer_matches("Bearer ab", "abc"));
    CHECK_FALSE(bearer_matches("Bearer ABC", "abc"));
    CHECK_FALSE(bearer_matches("Basic abc", "abc"));
    CHECK_FALSE(bearer_matches("abc", "abc"));
    CHECK_FALSE(bearer_matches("Bearer ", ""));
}

TEST_CASE("a request head: its line and the headers the endpoint acts on", "[metrics_access]") {
    const std::string text =
        "GET /metrics?x=1 HTTP/1.1\r\nhost:  127.0.0.1:9464 \r\nX-Other: a\r\n"
        "AUTHORIZATION: Bearer t\r\n\r\n";
    CHECK(http_head_end(text + "body") == text.size());
    const std::optional<HttpHead> head = parse_http_head(text);
    REQUIRE(head);
    CHECK(head->method == "GET");
    CHECK(head->path == "/metrics");
    CHECK(head->minor == 1);
    CHECK(head->host == "127.0.0.1:9464");
    CHECK(head->authorization == "Bearer t");

    const std::optional<HttpHead> bare = parse_http_head("HEAD /metrics HTTP/1.0\n\n");
    REQUIRE(bare);
    CHECK(bare->minor == 0);
    CHECK_FALSE(bare->host);
    CHECK(http_head_end("GET / HTTP/1.1\r\nHost: x\r\n") == std::string::npos);

    for (const char* refused :
         {"GET /metrics\r\n\r\n",                                 // no version
          "GET /metrics HTTP/2.0\r\n\r\n",                        // not 1.x
          "GET http://x/metrics HTTP/1.1\r\n\r\n",                // not a path
          "GET /a b HTTP/1.1\r\n\r\n",                            // a space in the target
          "G(T /metrics HTTP/1.1\r\n\r\n",                        // not a method
          "GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",  // Host twice
          "GET /metrics HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",  // a folded line
          "GET /metrics HTTP/1.1\r\nno colon\r\n\r\n",
          "GET /metrics HTTP/1.1\r\nHost: a\x01\r\n\r\n",  // a control character
          "GET /metrics HTTP/1.1\r\nBad Name: a\r\n\r\n"}) {
        INFO(refused);
        CHECK_FALSE(parse_http_head(refused));
    }
}
