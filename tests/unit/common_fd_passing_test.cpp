// common/fd_passing: both ends of SCM_RIGHTS on a socket pair, and every way a receive fails.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "common/fd_passing.h"

using mcpd::UniqueFd;

namespace {

struct SocketPair {
    UniqueFd a;
    UniqueFd b;
};

SocketPair socket_pair() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// The pipe a descriptor refers to, as /proc names it ("pipe:[1234]").
std::string target_of(int fd) {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
}

std::size_t open_descriptors() {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
        ++count;
    return count;
}

}  // namespace

TEST_CASE("descriptors arrive in the order sent, close-on-exec, the sender's kept open",
          "[common][fd_passing]") {
    const SocketPair link = socket_pair();
    int in[2], out[2];
    REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    const UniqueFd in_read(in[0]), in_write(in[1]), out_read(out[0]), out_write(out[1]);

    const int sent[] = {in_read.get(), out_write.get()};
    REQUIRE(mcpd::send_fds(link.a.get(), sent, 'F').ok());
    CHECK(::fcntl(in_read.get(), F_GETFD) >= 0);  // still ours

    mcpd::Result<std::vector<UniqueFd>> received = mcpd::receive_fds(link.b.get(), 2);
    REQUIRE(received.ok());
    const std::vector<UniqueFd>& fds = received.value();
    REQUIRE(fds.size() == 2);
    CHECK(target_of(fds[0].get()) == target_of(in_read.get()));
    CHECK(target_of(fds[1].get()) == target_of(out_write.get()));
    CHECK(fds[0].get() != in_read.get());
    CHECK((::fcntl(fds[0].get(), F_GETFD) & FD_CLOEXEC) != 0);
    CHECK((::fcntl(fds[1].get(), F_GETFD) & FD_CLOEXEC) != 0);
}

TEST_CASE("nothing to read yet is transient, a closed peer is permanent", "[common][fd_passing]") {
    SocketPair link = socket_pair();
    const mcpd::Result<std::vector<UniqueFd>> early = mcpd::receive_fds(link.b.get(), 2);
    REQUIRE_FALSE(early.ok());
    CHECK(early.transient());

    link.a.reset();
    const mcpd::Result<std::vector<UniqueFd>> closed = mcpd::receive_fds(link.b.get(), 2);
    REQUIRE_FALSE(closed.ok());
    CHECK_FALSE(closed.transient());
}

TEST_CASE("another number of descriptors is refused, and none of them leaks",
          "[common][fd_passing]") {
    const std::size_t before = open_descriptors();
    for (const int count : {0, 1, 3}) {
        DYNAMIC_SECTION(count << " descriptors") {
            const SocketPair link = socket_pair();
            std::vector<int> fds(static_cast<std::size_t>(count), STDERR_FILENO);
            if (count == 0) {
                REQUIRE(::send(link.a.get(), "F", 1, MSG_NOSIGNAL) == 1);  // the byte alone
            } else {
                REQUIRE(mcpd::send_fds(link.a.get(), fds, 'F').ok());
            }
            const mcpd::Result<std::vector<UniqueFd>> received = mcpd::receive_fds(link.b.get(), 2);
            REQUIRE_FALSE(received.ok());
            CHECK_FALSE(received.transient());
            CHECK(received.error().starts_with("expected 2 descriptors, got "));
        }
    }
    CHECK(open_descriptors() == before);
}

TEST_CASE("sending to a closed peer is a sentence, not SIGPIPE", "[common][fd_passing]") {
    SocketPair link = socket_pair();
    link.b.reset();
    const int fds[] = {STDIN_FILENO};
    const mcpd::Result<mcpd::Done> sent = mcpd::send_fds(link.a.get(), fds, 'F');
    REQUIRE_FALSE(sent.ok());
    CHECK(sent.error() == "mcpd closed the connection before taking the descriptors");
}

TEST_CASE("detach_fd keeps the number but lets go of what it was", "[common][fd_passing]") {
    int ends[2];
    REQUIRE(::pipe2(ends, O_CLOEXEC) == 0);
    const UniqueFd read_end(ends[0]);
    UniqueFd write_end(ends[1]);
    mcpd::detach_fd(write_end.get());
    CHECK(::fcntl(write_end.get(), F_GETFD) >= 0);  // still open: the number stays taken
    CHECK(target_of(write_end.get()) == "/dev/null");
    // The pipe's only writer is gone: its reader sees the end.
    char byte;
    CHECK(::read(read_end.get(), &byte, 1) == 0);
}
