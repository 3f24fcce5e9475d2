// The daemon log escapes control characters in every line it writes: on stderr (plain and
// journal mode) and through a sink, so one message is always one line.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "common/log.h"

namespace {

// What log::write puts on stderr while `body` runs (fd 2 pointed at a temporary file).
template <typename Body>
std::string captured_stderr(Body body) {
    std::FILE* file = std::tmpfile();
    REQUIRE(file != nullptr);
    const int saved = ::dup(STDERR_FILENO);
    REQUIRE(saved >= 0);
    REQUIRE(::dup2(::fileno(file), STDERR_FILENO) == STDERR_FILENO);
    body();
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    std::string text;
    std::rewind(file);
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;)
        text.append(buffer, n);
    std::fclose(file);
    return text;
}

std::vector<std::string> g_sunk;
void sink(mcpd::log::Level, std::string_view server, std::string_view message) {
    g_sunk.push_back(std::string(server) + "|" + std::string(message));
}

constexpr const char* kHostile = "red \x1b[31mtext\x1b]0;title\x07 bell\ncr\rdel\x7f c1\u009b end";
constexpr const char* kEscaped =
    "red \\u001b[31mtext\\u001b]0;title\\u0007 bell\\u000acr\\u000ddel\\u007f c1\\u009b end";

}  // namespace

TEST_CASE("log: a line on stderr has its control characters escaped", "[log]") {
    mcpd::log::set_level(mcpd::log::Level::info);
    const std::string text = captured_stderr([] { mcpd::log::info("de\x1bmo", kHostile); });
    INFO(text);
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find(std::string("[de\\u001bmo] ") + kEscaped + "\n") != std::string::npos);
    // Exactly one line: the newline inside the message did not start another.
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}

TEST_CASE("log: in journal mode a message cannot forge a line with its own priority", "[log]") {
    mcpd::log::set_level(mcpd::log::Level::info);
    mcpd::log::set_journal_mode(true);
    const std::string text =
        captured_stderr([] { mcpd::log::info("demo", "harmless\n<0>emergency, not really"); });
    mcpd::log::set_journal_mode(false);
    CHECK(text == "<6>[demo] harmless\\u000a<0>emergency, not really\n");
}

TEST_CASE("log: a sink (journald) receives the server and message escaped", "[log]") {
    g_sunk.clear();
    mcpd::log::set_level(mcpd::log::Level::info);
    mcpd::log::set_sink(&sink);
    mcpd::log::warning("s\ty", kHostile);
    mcpd::log::info("caf\u00e9 \u00fcber");  // UTF-8 text is left alone
    mcpd::log::set_sink(nullptr);
    REQUIRE(g_sunk.size() == 2);
    CHECK(g_sunk[0] == std::string("s\\u0009y|") + kEscaped);
    CHECK(g_sunk[1] == "|caf\u00e9 \u00fcber");
}
