// The daemon log: one line per event on stderr, optionally tagged with a server name. Control
// characters in the server name and the message are escaped (common/terminal_text.h), on
// stderr and in a sink alike: one message is always one line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mcpd::log {

enum class Level { debug = 0, info = 1, warning = 2, error = 3 };

// Parse "debug" | "info" | "warning" | "error".
bool parse_level(std::string_view text, Level& out);
std::string_view level_name(Level level);

void set_level(Level level);
Level level();

// Journal mode: syslog priority prefixes ("<6>") and no timestamps, for when stderr is
// connected to journald. Otherwise lines start with an ISO-8601 local timestamp.
void set_journal_mode(bool on);

// Messages longer than this are cut, saying how long they were.
inline constexpr std::size_t kMaxMessageBytes = 4096;

// Write one line, escaped, unless its source (the server, or mcpd itself) is over its rate
// (see log.cpp); lines go to stderr without blocking once use_nonblocking_stderr() was called
// (log_output.h), or to the sink.
void write(Level level, std::string_view server, std::string_view message);

// Where lines go instead of stderr (journald's native protocol, with the server as a field).
// It receives the server and the message already escaped.
using Sink = void (*)(Level level, std::string_view server, std::string_view message);
void set_sink(Sink sink);

inline void debug(std::string_view msg) { write(Level::debug, {}, msg); }
inline void info(std::string_view msg) { write(Level::info, {}, msg); }
inline void warning(std::string_view msg) { write(Level::warning, {}, msg); }
inline void error(std::string_view msg) { write(Level::error, {}, msg); }

// Tagged with a server's name.
inline void debug(std::string_view server, std::string_view msg) { write(Level::debug, server, msg); }
inline void info(std::string_view server, std::string_view msg) { write(Level::info, server, msg); }
inline void warning(std::string_view server, std::string_view msg) {
    write(Level::warning, server, msg);
}
inline void error(std::string_view server, std::string_view msg) { write(Level::error, server, msg); }

}  // namespace mcpd::log
