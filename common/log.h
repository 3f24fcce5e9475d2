// The daemon log: one line per event on stderr, optionally tagged with a server name. Control
// characters in the server name and the message are escaped (common/terminal_text.h), on
// stderr and in a sink alike: one message is always one line.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/enum_names.h"

namespace mcpd::log {

// The daemon log's levels; also the registry's `log_level` and `mcpd --log-level`.
enum class Level { debug, info, warning, error };

inline constexpr EnumName<Level> kLevelNames[] = {
    {"debug", Level::debug},
    {"info", Level::info},
    {"warning", Level::warning},
    {"error", Level::error},
};

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

// A repeated event from `server` (a stray reply, a declined request), named by `kind`, a fixed
// phrase: the first in a window of 10 s is written as "kind: detail", the rest are counted,
// and the count is said as one line when the window ends (flush_due).
void repeated(Level level, std::string_view server, std::string_view kind, std::string_view detail);

// `text` cut to `max_bytes`, saying how long it was: for ids and names a peer chose.
std::string excerpt(std::string_view text, std::size_t max_bytes = 64);

// Say the counts that are due at `now` (lines over the rate, folded repeats); returns when
// the next one falls due, if any. Called before each line is written, and by whoever owns a
// timer (daemon/log_pump) so a count is said when a flood ends, not when the source next
// logs.
std::optional<TimePoint> flush_due(TimePoint now);

// Called whenever something starts being counted: the owner of the timer arms it.
using FlushWanted = void (*)();
void on_flush_wanted(FlushWanted callback);

// Where lines go instead of stderr (journald's native protocol, with the server as a field).
// It receives the server and the message already escaped.
using Sink = void (*)(Level level, std::string_view server, std::string_view message);
void set_sink(Sink sink);

// A line that also carries journal fields ("KEY=value", KEY in capitals): with the journal,
// each is a field of the entry (`journalctl FIELD=value` selects it); elsewhere only the
// message is written. Rate-limited like write(). Values are escaped like messages.
void write_with_fields(Level level, std::string_view server, std::string_view message,
                       std::span<const std::string> fields);
using FieldSink = void (*)(Level level, std::string_view server, std::string_view message,
                           std::span<const std::string> fields);
void set_field_sink(FieldSink sink);

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
