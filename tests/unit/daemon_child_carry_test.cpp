// A server process handed across an upgrade in place (ChildProcess::why_not_carried,
// begun_stdout, resume_begun): a line the child had begun when mcpd exec'd is read on from
// where it stopped, in order, by the process that takes the pipes over.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>

#include <catch2/catch.hpp>
#include <event2/event.h>
#include <string>
#include <vector>

#include "daemon/io/event_loop.h"
#include "daemon/server/child_process.h"

using namespace mcpd;

namespace {

struct Pipes {
    int child_stdin_read = -1;  // what the child would read
    int child_stdout_write = -1;
    int child_stderr_write = -1;
    SpawnedProcess process;  // mcpd's ends
};

Pipes make_pipes() {
    int in[2], out[2], err[2];
    REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
    for (const int fd : {in[1], out[0], err[0]}) ::fcntl(fd, F_SETFL, O_NONBLOCK);
    Pipes p;
    p.child_stdin_read = in[0];
    p.child_stdout_write = out[1];
    p.child_stderr_write = err[1];
    p.process.pid = 99999;  // never signalled or reaped here
    p.process.stdin_fd = UniqueFd(in[1]);
    p.process.stdout_fd = UniqueFd(out[0]);
    p.process.stderr_fd = UniqueFd(err[0]);
    return p;
}

void write_all(int fd, std::string_view text) {
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
}

void turn(EventLoop& loop) {
    for (int i = 0; i < 5; ++i) event_base_loop(loop.base(), EVLOOP_NONBLOCK);
}

}  // namespace

TEST_CASE("carried child: a begun line is finished by the process that takes the pipes over") {
    EventLoop loop;
    Pipes pipes = make_pipes();
    std::vector<std::string> before, after, logs_after;
    ChildProcess::Callbacks callbacks;
    callbacks.on_message = [&before](ChildProcess&, wire::PaddedText line) {
        before.emplace_back(line.text);
    };
    auto old_child = std::make_unique<ChildProcess>(loop, std::move(pipes.process), 1 << 20, callbacks);
    write_all(pipes.child_stdout_write, "{\"jsonrpc\":\"2.0\",\"method\":\"one\"}\n{\"jsonrpc\":");
    write_all(pipes.child_stderr_write, "a log li");
    turn(loop);
    REQUIRE(before.size() == 1);
    CHECK(old_child->why_not_carried().empty());
    const std::string begun_out(old_child->begun_stdout());
    const std::string begun_err(old_child->begun_stderr());
    CHECK(begun_out == "{\"jsonrpc\":");
    CHECK(begun_err == "a log li");

    // The exec: the descriptors survive (duplicated here, as the old record closes its own).
    SpawnedProcess taken;
    taken.pid = 99999;
    taken.stdin_fd = UniqueFd(::fcntl(old_child->stdin_fd(), F_DUPFD_CLOEXEC, 3));
    taken.stdout_fd = UniqueFd(::fcntl(old_child->stdout_fd(), F_DUPFD_CLOEXEC, 3));
    taken.stderr_fd = UniqueFd(::fcntl(old_child->stderr_fd(), F_DUPFD_CLOEXEC, 3));
    old_child.reset();
    callbacks.on_message = [&after](ChildProcess&, wire::PaddedText line) {
        after.emplace_back(line.text);
    };
    callbacks.on_log = [&logs_after](ChildProcess&, std::string_view line) {
        logs_after.emplace_back(line);
    };
    ChildProcess new_child(loop, std::move(taken), 1 << 20, callbacks);
    new_child.resume_begun(begun_out, begun_err);
    write_all(pipes.child_stdout_write, "\"2.0\",\"method\":\"two\"}\n");
    write_all(pipes.child_stderr_write, "ne\n");
    turn(loop);
    REQUIRE(after.size() == 1);
    CHECK(after[0] == "{\"jsonrpc\":\"2.0\",\"method\":\"two\"}");
    REQUIRE(logs_after.size() == 1);
    CHECK(logs_after[0] == "a log line");
    // What mcpd writes to it goes on in the same pipe.
    CHECK(new_child.send("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}"));
    turn(loop);
    char buffer[128] = {};
    const ssize_t n = ::read(pipes.child_stdin_read, buffer, sizeof buffer - 1);
    CHECK(std::string(buffer, n > 0 ? static_cast<std::size_t>(n) : 0) ==
          "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n");
    for (const int fd : {pipes.child_stdin_read, pipes.child_stdout_write, pipes.child_stderr_write})
        ::close(fd);
}

TEST_CASE("carried child: whole lines not yet read, or input not yet written, keep it from being carried") {
    ::signal(SIGPIPE, SIG_IGN);  // as mcpd does: a write to a closed pipe is an error, not death
    EventLoop loop;
    Pipes pipes = make_pipes();
    ChildProcess::Callbacks callbacks;
    ChildProcess child(loop, std::move(pipes.process), 1 << 20, callbacks);
    CHECK(child.why_not_carried().empty());
    // A stdin the child does not read: mcpd's line waits in the pipe, then in its buffer.
    const std::string big(256 * 1024, 'x');
    child.send(big);
    turn(loop);
    CHECK(child.why_not_carried() == "mcpd is writing to it");
    for (const int fd : {pipes.child_stdin_read, pipes.child_stdout_write, pipes.child_stderr_write})
        ::close(fd);
    turn(loop);
    CHECK_FALSE(child.why_not_carried().empty());
}
