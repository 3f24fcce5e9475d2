#include "common/log.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "common/log_limits.h"
#include "common/log_output.h"
#include "common/terminal_text.h"

namespace mcpd::log {
namespace {

Level g_level = Level::info;
bool g_journal = false;
Sink g_sink = nullptr;
FieldSink g_field_sink = nullptr;

// Each source (a server's name, or mcpd's own lines) may log kRate lines a second, in bursts of
// up to kBurst: a server flooding its stderr (a million lines in seconds) or a peer sending
// thousands of stray replies would otherwise fill the disk. What is held back is counted and
// the count said once a second. `mcpctl logs` keeps its own ring, unthrottled.
constexpr double kRate = 200;
constexpr double kBurst = 1000;
// A repeated event (see repeated()) is written once per window, then counted.
constexpr std::chrono::seconds kRepeatWindow{10};

SourceRates& rates() {
    static SourceRates all(kRate, kBurst);
    return all;
}

RepeatFolder& repeats() {
    static RepeatFolder all(kRepeatWindow);
    return all;
}

FlushWanted g_flush_wanted = nullptr;

// Something is now counted that a later flush_due() must say.
void want_flush() {
    if (g_flush_wanted != nullptr) g_flush_wanted();
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

// Write the counts due at `now`. Asked before every line: nothing to do costs a comparison
// (log_limits keeps when the first count falls due).
void say_due(TimePoint now) {
    for (const SourceRates::HeldBack& held : rates().take_due(now)) {
        std::string message = std::to_string(held.lines);
        message += " log lines were not written (more than ";
        message += std::to_string(static_cast<int>(kRate));
        message += " a second from this source)";
        write_line(Level::warning, held.source, message);
    }
    for (const RepeatFolder::Folded& folded : repeats().take_due(now)) {
        std::string message = folded.kind;
        message += ": ";
        message += std::to_string(folded.count);
        message += " more in the last ";
        message += std::to_string(kRepeatWindow.count());
        message += " s";
        write_line(Level::info, folded.source, message);
    }
}

}  // namespace

bool parse_level(std::string_view text, Level& out) {
    const std::optional<Level> level = value_of<Level>(kLevelNames, text);
    if (level) out = *level;
    return level.has_value();
}

std::string_view level_name(Level level) { return name_of<Level>(kLevelNames, level); }

void set_level(Level level) { g_level = level; }
Level level() { return g_level; }
void set_journal_mode(bool on) { g_journal = on; }
void set_sink(Sink sink) { g_sink = sink; }

void write(Level lvl, std::string_view server, std::string_view message) {
    if (lvl < g_level) return;
    const TimePoint now = Clock::now();
    say_due(now);
    if (!rates().admit(server, now)) {
        want_flush();
        return;
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

void set_field_sink(FieldSink sink) { g_field_sink = sink; }

void write_with_fields(Level lvl, std::string_view server, std::string_view message,
                       std::span<const std::string> fields) {
    if (g_field_sink == nullptr || lvl < g_level) {
        write(lvl, server, message);
        return;
    }
    const TimePoint now = Clock::now();
    say_due(now);
    if (!rates().admit(server, now)) {
        want_flush();
        return;
    }
    std::vector<std::string> escaped;
    escaped.reserve(fields.size());
    for (const std::string& field : fields) escaped.push_back(escape_controls(field));
    g_field_sink(lvl, escape_controls(server), escape_controls(message.substr(0, kMaxMessageBytes)),
                 escaped);
}

void repeated(Level lvl, std::string_view server, std::string_view kind, std::string_view detail) {
    if (lvl < g_level) return;
    const TimePoint now = Clock::now();
    say_due(now);
    if (!repeats().first(server, kind, now)) {
        want_flush();
        return;
    }
    std::string message(kind);
    if (!detail.empty()) {
        message += ": ";
        message += detail;
    }
    message += " (the same again within ";
    message += std::to_string(kRepeatWindow.count());
    message += " s is counted, not written)";
    write(lvl, server, message);
}

std::string excerpt(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) return std::string(text);
    std::string out(text.substr(0, max_bytes));
    out += "... (";
    out += std::to_string(text.size());
    out += " bytes)";
    return out;
}

std::optional<TimePoint> flush_due(TimePoint now) {
    say_due(now);
    const auto held = rates().next_due();
    const auto folded = repeats().next_due();
    if (held && folded) return std::min(*held, *folded);
    return held ? held : folded;
}

void on_flush_wanted(FlushWanted callback) { g_flush_wanted = callback; }

}  // namespace mcpd::log
