// The text of a `stats` result (docs/STATS.md): the tables of `mcpctl stats` and the screen of
// `mcpctl top`. Pure: JSON in, lines out, no I/O.
//
// Every text a server or a client chose (names, tools, methods, clientInfo, restart reasons)
// goes through escape_controls, so it cannot drive the terminal. A figure that is absent or
// null prints as "-". Widths are counted in code points (escaped text is ASCII or well-formed
// UTF-8); a line is never cut inside a character.
#pragma once

#include <cstddef>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctl/stats_cells.h"

namespace mcpctl {

// ---- Sorting

// What `top` sorts the servers by (and the tools, where the figure exists).
enum class SortKey { name, calls, errors, p99, cpu, rss };
inline constexpr SortKey kSortKeys[] = {SortKey::name, SortKey::calls, SortKey::errors,
                                        SortKey::p99,  SortKey::cpu,   SortKey::rss};

std::string_view to_string(SortKey key);
std::optional<SortKey> sort_key_named(std::string_view name);
// The key `step` places after `key` in kSortKeys, going round (-1: the one before).
SortKey next_sort_key(SortKey key, int step = 1);

// The result's servers ordered by `key`: names A to Z; every other key largest first, servers
// without the figure last, ties by name.
std::vector<const nlohmann::json*> sorted_servers(const nlohmann::json& result, SortKey key);

// One row of the tools table: a server's entry of "tools".
struct ToolRow {
    const nlohmann::json* server;
    const nlohmann::json* tool;
};
// Every server's tools, in the daemon's order with `key` unset, else by `key` (name: server,
// then tool or method; calls: requests; cpu and rss, which tools do not have: by calls).
std::vector<ToolRow> tool_rows(const nlohmann::json& result, std::optional<SortKey> key);

// ---- Tables

struct TableStyle {
    std::optional<SortKey> sort;    // rows in this order (the daemon's when unset)
    bool mark_sort_column = false;  // a '*' after the header of the sort key's column
    std::size_t width = std::numeric_limits<std::size_t>::max();  // the names give way first
};

// SERVER STATE CALL/S AVG/S ERR% P50 P99 IN-FL SESS CPU% RSS: one row per server.
std::vector<std::string> servers_table(const nlohmann::json& result, const TableStyle& style = {});
// SERVER TOOL/METHOD CALLS ERR% P50 P99 IN-FL IN OUT: one row per tool or method of a server.
std::vector<std::string> tools_table(const nlohmann::json& result, const TableStyle& style = {});
// SERVER ID CLIENT PID UID CALLS ERR% P99 IN-FL: one row per session of a server.
std::vector<std::string> sessions_table(const nlohmann::json& result, const TableStyle& style = {});
// SERVER KIND PID PROJECT SESS CALLS ERR% P99 IN-FL RSS: one row per process of a server
// ("per_child", asked with --children).
std::vector<std::string> children_table(const nlohmann::json& result, const TableStyle& style = {});
// "demo: 3 restarts (exit 1: 2, signal 9: 1)" for each server that restarted.
std::vector<std::string> restart_lines(const nlohmann::json& result);

// "demo: peak memory 12MiB, 1 OOM kill" for each server whose peak mcpd knows.
std::vector<std::string> memory_lines(const nlohmann::json& result);

// `mcpctl stats`: the servers table, the restarts, the peaks, then the tools, sessions and
// children tables when the result has them (asked with --tools, --sessions, --children), a
// blank line apart.
std::string stats_text(const nlohmann::json& result);

// ---- top

struct TopView {
    SortKey sort = SortKey::calls;
    bool tools = false;  // the tools table under the servers
    std::size_t width = 80;
    std::size_t height = 24;  // numeric_limits max: every line
};

// The lines of one screen of `mcpctl top`: a summary (uptime, servers, sessions, calls/s, sort
// key), the keys, then the tables sorted by the view's key. At most `height` lines (the last
// one says how many more there were), none wider than `width`.
std::vector<std::string> top_screen(const nlohmann::json& result, const TopView& view);

}  // namespace mcpctl
