// common/result.h and common/check.h.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <string>

#include "common/check.h"
#include "common/result.h"

namespace {

mcpd::Result<int> parse_port(const std::string& text) {
    if (text.empty()) return mcpd::permanent_failure("the port is empty: give a number");
    if (text == "busy") return mcpd::transient_failure("the port is in use: try again later");
    return std::stoi(text);
}

}  // namespace

TEST_CASE("result: a value or a sentence, transient or permanent", "[common][result]") {
    const mcpd::Result<int> good = parse_port("8080");
    REQUIRE(good.ok());
    CHECK(good.value() == 8080);
    CHECK_FALSE(good.transient());

    const mcpd::Result<int> empty = parse_port("");
    REQUIRE_FALSE(empty.ok());
    CHECK(empty.error() == "the port is empty: give a number");
    CHECK_FALSE(empty.transient());

    const mcpd::Result<int> busy = parse_port("busy");
    REQUIRE_FALSE(busy);
    CHECK(busy.transient());

    const mcpd::Result<mcpd::Done> done = mcpd::Done{};
    CHECK(done.ok());
}

TEST_CASE("check: a broken invariant aborts with what broke and where", "[common][result]") {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::dup2(pipe_fds[1], STDERR_FILENO);
        ::signal(SIGABRT, SIG_DFL);  // not the test framework's handler: a plain abort
        MCPD_CHECK(1 + 1 == 3, "arithmetic changed");
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::string said;
    char buffer[256];
    for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) said.append(buffer, n);
    ::close(pipe_fds[0]);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGABRT);
    CHECK(said.find("internal error at") != std::string::npos);
    CHECK(said.find("arithmetic changed (1 + 1 == 3)") != std::string::npos);
}
