#include <event2/buffer.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/line_reader.h"

using mcpd::LineReader;
using Result = LineReader::Result;

namespace {

struct Buffer {
    std::unique_ptr<evbuffer, decltype(&evbuffer_free)> buf{evbuffer_new(), &evbuffer_free};
    void add(const std::string& s) { evbuffer_add(buf.get(), s.data(), s.size()); }
    std::size_t size() const { return evbuffer_get_length(buf.get()); }
};

// Everything the reader yields until it needs more input; oversized lines show as "<oversized>".
std::vector<std::string> drain(LineReader& reader, Buffer& b) {
    std::vector<std::string> got;
    std::string line;
    for (;;) {
        const Result r = reader.next(b.buf.get(), line);
        if (r == Result::need_more) return got;
        got.push_back(r == Result::line ? line : "<oversized>");
    }
}

}  // namespace

TEST_CASE("line reader splits complete lines and keeps the partial rest") {
    LineReader reader(1024);
    Buffer b;
    b.add("{\"a\":1}\n{\"b\":2}\n{\"c\"");
    CHECK(drain(reader, b) == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"});
    CHECK(reader.buffered() == 4);
    b.add(":3}\n");
    CHECK(drain(reader, b) == std::vector<std::string>{"{\"c\":3}"});
    CHECK(b.size() == 0);
}

TEST_CASE("line reader strips one CR before LF and skips blank lines") {
    LineReader reader(1024);
    Buffer b;
    b.add("one\r\n\n\r\n  \ntwo\r\r\n");
    // A line of spaces is not blank framing-wise: it is handed on (and rejected as JSON later).
    CHECK(drain(reader, b) == std::vector<std::string>{"one", "  ", "two\r"});
}

TEST_CASE("line reader returns a partial last line at EOF") {
    LineReader reader(1024);
    Buffer b;
    b.add("first\nlast-without-newline");
    CHECK(drain(reader, b) == std::vector<std::string>{"first"});
    std::string line;
    REQUIRE(reader.finish(b.buf.get(), line) == Result::line);
    CHECK(line == "last-without-newline");
    CHECK(reader.finish(b.buf.get(), line) == Result::need_more);
}

TEST_CASE("line reader at EOF with nothing left reports need_more") {
    LineReader reader(1024);
    Buffer b;
    std::string line;
    CHECK(reader.finish(b.buf.get(), line) == Result::need_more);
    b.add("\r\n");
    CHECK(reader.finish(b.buf.get(), line) == Result::need_more);
}

TEST_CASE("line reader discards a complete line over the limit and keeps going") {
    LineReader reader(10);
    Buffer b;
    b.add("short\n" + std::string(11, 'x') + "\nafter\n");
    CHECK(drain(reader, b) == std::vector<std::string>{"short", "<oversized>", "after"});
    CHECK(reader.discarded_bytes() == 12);
}

TEST_CASE("line reader accepts a line of exactly the limit") {
    LineReader reader(10);
    Buffer b;
    b.add(std::string(10, 'y') + "\n");
    CHECK(drain(reader, b) == std::vector<std::string>{std::string(10, 'y')});
}

TEST_CASE("line reader discards an oversized line arriving in pieces without buffering it") {
    LineReader reader(10);
    Buffer b;
    b.add(std::string(8, 'a'));
    CHECK(drain(reader, b).empty());
    b.add(std::string(8, 'a'));  // now 16 > 10 with no newline: discard starts, reported once
    CHECK(drain(reader, b) == std::vector<std::string>{"<oversized>"});
    CHECK(b.size() == 0);
    b.add(std::string(100, 'a'));  // still the same line: dropped silently
    CHECK(drain(reader, b).empty());
    CHECK(b.size() == 0);
    b.add("aaa\nnext\n");
    CHECK(drain(reader, b) == std::vector<std::string>{"next"});
    CHECK(reader.discarded_bytes() == 8 + 8 + 100 + 4);
}

TEST_CASE("line reader drops an oversized unterminated tail at EOF") {
    LineReader reader(4);
    Buffer b;
    b.add("ok\n123456789");
    CHECK(drain(reader, b) == std::vector<std::string>{"ok", "<oversized>"});
    std::string line;
    CHECK(reader.finish(b.buf.get(), line) == Result::need_more);
    CHECK(b.size() == 0);
}

TEST_CASE("line reader does not rescan a growing partial line from the start") {
    // Feeding a long line one byte at a time must still frame it correctly.
    LineReader reader(1 << 20);
    Buffer b;
    const std::string payload(5000, 'z');
    for (char c : payload) {
        b.add(std::string(1, c));
        CHECK(drain(reader, b).empty());
    }
    b.add("\n");
    CHECK(drain(reader, b) == std::vector<std::string>{payload});
}

TEST_CASE("line reader with keep_edges reports an oversized line when it ends, with its edges") {
    LineReader reader(10, /*keep_edges=*/true);
    Buffer b;
    const std::string head(LineReader::kEdgeBytes, 'h');
    const std::string middle(3 * LineReader::kEdgeBytes, 'm');
    const std::string tail(LineReader::kEdgeBytes - 3, 't');
    b.add(head);
    CHECK(drain(reader, b).empty());  // too long already, but not over yet
    b.add(middle);
    CHECK(drain(reader, b).empty());
    b.add(tail + "END\nnext\n");
    CHECK(drain(reader, b) == std::vector<std::string>{"<oversized>", "next"});
    CHECK(reader.discarded_bytes() == head.size() + middle.size() + tail.size() + 4);
    CHECK(reader.discarded_head() == head);
    CHECK(reader.discarded_tail() == tail + "END");
}

TEST_CASE("line reader with keep_edges keeps the edges of a complete oversized line") {
    LineReader reader(10, /*keep_edges=*/true);
    Buffer b;
    b.add("short\n{\"id\":7,\"x\":\"0123456789\"}\nafter\n");
    CHECK(drain(reader, b) == std::vector<std::string>{"short", "<oversized>", "after"});
    CHECK(reader.discarded_head() == "{\"id\":7,\"x\":\"0123456789\"}");
    CHECK(reader.discarded_tail() == "{\"id\":7,\"x\":\"0123456789\"}");
}

TEST_CASE("line reader with keep_edges reports an oversized line cut off by EOF") {
    LineReader reader(4, /*keep_edges=*/true);
    Buffer b;
    b.add("ok\n123456789");
    CHECK(drain(reader, b) == std::vector<std::string>{"ok"});
    std::string line;
    CHECK(reader.finish(b.buf.get(), line) == Result::oversized);
    CHECK(reader.discarded_head() == "123456789");
    CHECK(reader.discarded_tail() == "123456789");
    CHECK(reader.finish(b.buf.get(), line) == Result::need_more);
    CHECK(b.size() == 0);
}

namespace {

struct Pipe {
    int fds[2] = {-1, -1};
    Pipe() {
        REQUIRE(::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
    }
    ~Pipe() {
        for (int fd : fds) {
            if (fd >= 0) ::close(fd);
        }
    }
    void write_all(const std::string& s) {
        REQUIRE(::write(fds[1], s.data(), s.size()) == static_cast<ssize_t>(s.size()));
    }
    void close_writer() {
        ::close(fds[1]);
        fds[1] = -1;
    }
};

// Every line the reader yields from what `read_from` has taken in so far.
std::vector<std::string> lines_of(LineReader& reader) {
    std::vector<std::string> got;
    std::string_view line;
    for (;;) {
        const Result r = reader.next(line);
        if (r == Result::need_more) return got;
        got.push_back(r == Result::line ? std::string(line) : "<oversized>");
    }
}

}  // namespace

TEST_CASE("line reader reads a descriptor into its own buffer, until EOF") {
    LineReader reader(1024);
    Pipe pipe;
    pipe.write_all("one\ntw");
    CHECK(reader.read_from(pipe.fds[0]) == 6);
    CHECK(lines_of(reader) == std::vector<std::string>{"one"});
    CHECK(reader.read_from(pipe.fds[0]) == -1);  // nothing ready: EAGAIN
    CHECK(errno == EAGAIN);
    pipe.write_all("o\nthree");
    pipe.close_writer();
    CHECK(reader.read_from(pipe.fds[0]) == 7);
    CHECK(lines_of(reader) == std::vector<std::string>{"two"});
    CHECK(reader.read_from(pipe.fds[0]) == 0);
    std::string_view line;
    REQUIRE(reader.finish(line) == Result::line);
    CHECK(line == "three");
    CHECK(reader.finish(line) == Result::need_more);
}

TEST_CASE("line reader hands out lines with readable padding after them") {
    // Under AddressSanitizer, reading past the buffer would fail this test.
    LineReader reader(1 << 20);
    std::string input;
    for (int i = 0; i < 50; ++i) input += std::string(static_cast<std::size_t>(i * 37), 'p') + "x\n";
    reader.append(input);
    std::string_view line;
    int seen = 0;
    while (reader.next(line) == Result::line) {
        volatile char sink = 0;
        for (std::size_t i = 0; i < LineReader::kPadding; ++i) sink = sink + line.data()[line.size() + i];
        ++seen;
    }
    CHECK(seen == 50);
}

TEST_CASE("line reader gathers a multi-MiB line from many reads and gives the memory back") {
    LineReader reader(std::size_t{64} << 20);
    const std::string payload(std::size_t{5} << 20, 'm');
    const std::string chunk(LineReader::kReadBytes, 'm');
    for (std::size_t sent = 0; sent < payload.size(); sent += chunk.size()) {
        reader.append(chunk);
        CHECK(lines_of(reader).empty());
    }
    reader.append("\nnext\n");
    std::string_view line;
    REQUIRE(reader.next(line) == Result::line);
    CHECK(line.size() == payload.size());
    CHECK(line == payload);
    REQUIRE(reader.next(line) == Result::line);
    CHECK(line == "next");
    CHECK(reader.next(line) == Result::need_more);
    CHECK(reader.buffered() == 0);
    CHECK(reader.capacity() <= 2 * LineReader::kReadBytes + LineReader::kPadding);
}

TEST_CASE("line reader gives its buffer away with the last line, and goes on with the rest") {
    LineReader reader(4 * 1024 * 1024);
    const std::string first(3 * 1024 * 1024, 'x');
    reader.append(first + "\nsecond\nthi");
    std::string_view line;
    REQUIRE(reader.next(line) == Result::line);
    REQUIRE(line.size() == first.size());
    mcpd::ByteBuffer given = reader.give_buffer();
    CHECK(line.data() >= given.data());
    CHECK(line.data() + line.size() <= given.data() + given.capacity());
    CHECK(line == first);  // still readable, in the buffer given away
    CHECK(reader.unread() == "second\nthi");
    CHECK(reader.capacity() < first.size());
    REQUIRE(reader.next(line) == Result::line);
    CHECK(line == "second");
    CHECK(reader.next(line) == Result::need_more);
    reader.append("rd\n");
    REQUIRE(reader.next(line) == Result::line);
    CHECK(line == "third");
    // Nothing after the line: the reader starts again empty.
    reader.append("last\n");
    REQUIRE(reader.next(line) == Result::line);
    const mcpd::ByteBuffer again = reader.give_buffer();
    CHECK(reader.buffered() == 0);
    CHECK(reader.next(line) == Result::need_more);
    reader.append("more\n");
    REQUIRE(reader.next(line) == Result::line);
    CHECK(line == "more");
}
