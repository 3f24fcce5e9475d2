// --host URLs, the ssh command they become, and what ssh's exit statuses mean.
#include <stdlib.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/endpoint.h"
#include "ctl/ssh_tunnel.h"

using mcpctl::Endpoint;
using Words = std::vector<std::string>;

namespace {

Endpoint parsed(const std::string& url) {
    mcpd::Result<Endpoint> endpoint = mcpctl::parse_host(url);
    INFO(url);
    REQUIRE(endpoint.ok());
    return std::move(endpoint).value();
}

std::string rejection(const std::string& url) {
    const mcpd::Result<Endpoint> endpoint = mcpctl::parse_host(url);
    CHECK_FALSE(endpoint.ok());
    return endpoint.ok() ? std::string() : endpoint.error();
}

// A wait status as waitpid reports an exit with `code`.
int exited(int code) { return code << 8; }

}  // namespace

TEST_CASE("ssh URLs name the user, host, port and remote socket") {
    const Endpoint full = parsed("ssh://alice@devbox.lan:2222/run/user/1000/mcpd/mcpd.sock");
    REQUIRE(full.remote());
    CHECK(full.ssh->user == "alice");
    CHECK(full.ssh->host == "devbox.lan");
    CHECK(full.ssh->port == "2222");
    CHECK(full.ssh->socket == "/run/user/1000/mcpd/mcpd.sock");
    CHECK(full.describe() == "ssh://alice@devbox.lan:2222/run/user/1000/mcpd/mcpd.sock");

    const Endpoint bare = parsed("ssh://devbox");
    CHECK(bare.ssh->user.empty());
    CHECK(bare.ssh->host == "devbox");
    CHECK(bare.ssh->port.empty());
    CHECK(bare.ssh->socket.empty());
    CHECK(parsed("ssh://devbox/").ssh->socket.empty());

    const Endpoint v6 = parsed("ssh://bob@[::1]:22");
    CHECK(v6.ssh->host == "::1");
    CHECK(v6.ssh->port == "22");
    CHECK(v6.describe() == "ssh://bob@[::1]:22");

    const Endpoint local = parsed("unix:///tmp/x/mcpd.sock");
    CHECK_FALSE(local.remote());
    CHECK(local.socket_path == "/tmp/x/mcpd.sock");
}

TEST_CASE("host URLs that are not one are refused with the reason") {
    CHECK_THAT(rejection("devbox"), Catch::Contains("expected ssh://"));
    CHECK_THAT(rejection("http://devbox"), Catch::Contains("expected ssh://"));
    CHECK_THAT(rejection("ssh://"), Catch::Contains("no host"));
    CHECK_THAT(rejection("ssh://@devbox"), Catch::Contains("user"));
    CHECK_THAT(rejection("ssh://devbox:"), Catch::Contains("port"));
    CHECK_THAT(rejection("ssh://devbox:0"), Catch::Contains("1 to 65535"));
    CHECK_THAT(rejection("ssh://devbox:70000"), Catch::Contains("1 to 65535"));
    CHECK_THAT(rejection("ssh://devbox:22x"), Catch::Contains("1 to 65535"));
    CHECK_THAT(rejection("ssh://[::1"), Catch::Contains("]"));
    // ssh would take these for options.
    CHECK_THAT(rejection("ssh://-oProxyCommand=evil"), Catch::Contains("'-'"));
    CHECK_THAT(rejection("ssh://-x@devbox"), Catch::Contains("'-'"));
    CHECK_THAT(rejection("unix://relative.sock"), Catch::Contains("absolute"));
}

TEST_CASE("a --host flag wins over MCPD_HOST, and --socket names the remote socket") {
    ::setenv("MCPD_HOST", "ssh://envhost", 1);
    mcpd::Result<Endpoint> endpoint = mcpctl::resolve_endpoint("", "");
    REQUIRE(endpoint.ok());
    CHECK(endpoint->ssh->host == "envhost");
    endpoint = mcpctl::resolve_endpoint("ssh://flaghost", "/srv/mcpd.sock");
    REQUIRE(endpoint.ok());
    CHECK(endpoint->ssh->host == "flaghost");
    CHECK(endpoint->ssh->socket == "/srv/mcpd.sock");
    // The URL's own path wins over --socket.
    endpoint = mcpctl::resolve_endpoint("ssh://flaghost/a.sock", "/srv/mcpd.sock");
    REQUIRE(endpoint.ok());
    CHECK(endpoint->ssh->socket == "/a.sock");

    ::setenv("MCPD_HOST", "nonsense", 1);
    endpoint = mcpctl::resolve_endpoint("", "");
    CHECK_FALSE(endpoint.ok());
    CHECK_THAT(endpoint.error(), Catch::StartsWith("MCPD_HOST: "));
    ::unsetenv("MCPD_HOST");

    endpoint = mcpctl::resolve_endpoint("", "/tmp/local.sock");
    REQUIRE(endpoint.ok());
    CHECK_FALSE(endpoint->remote());
    CHECK(endpoint->socket_path == "/tmp/local.sock");
}

TEST_CASE("the ssh command runs 'mcpctl dial' remotely, the socket quoted for the shell") {
    mcpctl::SshTarget target{"alice", "devbox", "2222", "/home/alice/it's here/mcpd.sock"};
    CHECK(mcpctl::ssh_command(target, nullptr) ==
          Words{"ssh", "-T", "-x", "-l", "alice", "-p", "2222", "--", "devbox",
                "mcpctl --socket '/home/alice/it'\\''s here/mcpd.sock' dial"});

    mcpctl::SshTarget plain{"", "devbox", "", ""};
    CHECK(mcpctl::ssh_command(plain, "") == Words{"ssh", "-T", "-x", "--", "devbox", "mcpctl dial"});
    CHECK(mcpctl::ssh_command(plain, "ssh -i /k") ==
          Words{"/bin/sh", "-c", "ssh -i /k \"$@\"", "ssh", "-T", "-x", "--", "devbox",
                "mcpctl dial"});
}

TEST_CASE("ssh exit statuses become sentences and mcpctl exit codes") {
    const mcpctl::SshTarget target{"alice", "devbox", "", ""};
    CHECK_FALSE(mcpctl::explain_ssh_exit(exited(0), target));

    const auto unreachable = mcpctl::explain_ssh_exit(exited(255), target);
    REQUIRE(unreachable);
    CHECK(unreachable->exit_code == mcpctl::kExitError);
    CHECK_THAT(unreachable->message, Catch::Contains("ssh could not connect to alice@devbox"));

    const auto not_running = mcpctl::explain_ssh_exit(exited(3), target);
    REQUIRE(not_running);
    CHECK(not_running->exit_code == mcpctl::kExitNotRunning);
    CHECK(not_running->code == "not_running");

    const auto no_mcpctl = mcpctl::explain_ssh_exit(exited(127), target);
    REQUIRE(no_mcpctl);
    CHECK_THAT(no_mcpctl->message, Catch::Contains("no runnable 'mcpctl'"));

    const auto killed = mcpctl::explain_ssh_exit(SIGKILL, target);
    REQUIRE(killed);
    CHECK_THAT(killed->message, Catch::Contains("signal 9"));
}

TEST_CASE("a remote endpoint whose ssh cannot run reports it as an error of the call") {
    ::setenv("MCPD_SSH_COMMAND", "exit 255; :", 1);
    mcpctl::DaemonClient client(parsed("ssh://nowhere"));
    mcpd::control::Reply reply;
    REQUIRE(client.connect());
    CHECK_FALSE(client.call(mcpd::control::request(mcpd::control::Command::status), reply,
                            std::chrono::seconds(10)));
    CHECK(client.error().code == "ssh");
    CHECK_THAT(client.error().message, Catch::Contains("ssh could not connect to nowhere"));
    ::unsetenv("MCPD_SSH_COMMAND");
}
