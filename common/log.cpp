#include "common/log.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <map>
#include <string>

#include "common/log_output.h"
#include "common/terminal_text.h"

namespace mcpd::log {
namespace {

Level g_level = Level::info;
bool g_journal = false;
Sink g_sink = nullptr;

// Each source (a server's name, or mcpd's own lines) may log kRate lines a second, in bursts of
// up to kBurst: a server flooding its stderr (a million lines in seconds) or a peer sending
// thousands of stray replies would otherwise fill the disk. What is held back is counted and
// said once the source is under the limit again. `mcpctl logs` keeps its own ring, unthrottled.
constexpr double kRate = 200;
constexpr double kBurst = 1000;

struct Bucket {
    double tokens = kBurst;
    std::chrono::steady_clock::time_point refilled = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point noted{};  // when held-back lines were last counted
    std::uint64_t held_back = 0;
};

std::map<std::string, Bucket, std::less<>>& buckets() {
    static std::map<std::string, Bucket, std::less<>> all;
    return all;
}

// Whether a line of `source` may be written now; `held_back` is set to how many lines of it
// were not written since it last was.
bool admit(std::string_view source, std::uint64_t& held_back) {
    auto& all = buckets();
    auto it = all.find(source);
    if (it == all.end()) it = all.emplace(std::string(source), Bucket{}).first;
    Bucket& b = it->second;
    const auto now = std::chrono::steady_clock::now();
    b.tokens = std::min(kBurst, b.tokens + kRate * std::chrono::duration<double>(now - b.refilled).count());
    b.refilled = now;
    if (b.tokens < 1) {
        ++b.held_back;
        return false;
    }
    b.tokens -= 1;
    // Said at most once a second, so that a steady flood costs one more line a second.
    held_back = 0;
    if (b.held_back > 0 && now - b.noted >= std::chrono::seconds(1)) {
        held_back = b.held_back;
        b.held_back = 0;
        b.noted = now;
    }
    return true;
}

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

// One line to the sink or stderr.
void write_line(Level lvl, std::string_view server, std::string_view message) {
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
    stderr_output().line(line);
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
    std::uint64_t held_back = 0;
    if (!admit(server, held_back)) return;
    if (held_back > 0) {
        write_line(Level::warning, server,
                   std::to_string(held_back) + " log lines were not written (more than " +
                       std::to_string(static_cast<int>(kRate)) + " a second from this source)");
    }
    if (message.size() > kMaxMessageBytes) {
        // A 1 MiB id or a line of base64 says nothing more past its start.
        std::string cut(message.substr(0, kMaxMessageBytes));
        cut += "... (" + std::to_string(message.size()) + " bytes in all)";
        write_line(lvl, server, cut);
        return;
    }
    write_line(lvl, server, message);
}

}  // namespace mcpd::log
