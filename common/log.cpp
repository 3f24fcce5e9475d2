#include "common/log.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>
#include <string>

#include "common/terminal_text.h"

namespace mcpd::log {
namespace {

Level g_level = Level::info;
bool g_journal = false;
Sink g_sink = nullptr;

// syslog priorities journald understands as "<N>" line prefixes.
int syslog_priority(Level level) {
    switch (level) {
        case Level::debug: return 7;
        case Level::info: return 6;
        case Level::warning: return 4;
        case Level::error: return 3;
    }
    return 6;
}

void append_timestamp(std::string& out) {
    const auto now = std::chrono::system_clock::now();
    const std::time_t secs = std::chrono::system_clock::to_time_t(now);
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm local{};
    localtime_r(&secs, &local);
    std::array<char, 32> buf{};
    const std::size_t n = std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%S", &local);
    out.append(buf.data(), n);
    std::array<char, 8> ms{};
    std::snprintf(ms.data(), ms.size(), ".%03d ", static_cast<int>(millis));
    out.append(ms.data());
}

}  // namespace

bool parse_level(std::string_view text, Level& out) {
    for (Level l : {Level::debug, Level::info, Level::warning, Level::error}) {
        if (text == level_name(l)) {
            out = l;
            return true;
        }
    }
    return false;
}

std::string_view level_name(Level level) {
    switch (level) {
        case Level::debug: return "debug";
        case Level::info: return "info";
        case Level::warning: return "warning";
        case Level::error: return "error";
    }
    return "info";
}

void set_level(Level level) { g_level = level; }
Level level() { return g_level; }
void set_journal_mode(bool on) { g_journal = on; }
void set_sink(Sink sink) { g_sink = sink; }

void write(Level lvl, std::string_view server, std::string_view message) {
    if (lvl < g_level) return;
    // Messages carry other people's text (a server's stderr, a client's name): escaped, none
    // can start a forged line, change a terminal or hide in the journal.
    if (g_sink != nullptr) {
        g_sink(lvl, escape_controls(server), escape_controls(message));
        return;
    }
    std::string line;
    line.reserve(message.size() + server.size() + 48);
    if (g_journal) {
        line += '<';
        line += std::to_string(syslog_priority(lvl));
        line += '>';
    } else {
        append_timestamp(line);
        line += level_name(lvl);
        line += ' ';
    }
    if (!server.empty()) {
        line += '[';
        append_escaped_controls(line, server);
        line += "] ";
    }
    append_escaped_controls(line, message);
    line += '\n';
    // One write per line keeps lines whole when several processes share stderr.
    std::size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;
        }
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace mcpd::log
