#include "ctl/stats_view.h"

#include <algorithm>
#include <functional>
#include <initializer_list>

#include "common/duration.h"
#include "common/terminal_text.h"
#include "ctl/output.h"

namespace mcpctl {

using nlohmann::json;

namespace {

// A column narrower than this does not give way any further.
constexpr std::size_t kMinShrunkWidth = 6;

// ---- A server's and a name's figures, as the tables and the sort keys read them.

const json& totals(const json& server) {
    return stats_member(server, "totals");
}

// A percentile of COUNTERS' latency; nullopt while nothing was measured.
std::optional<double> percentile_us(const json& counters, std::string_view key) {
    const json& latency = stats_member(counters, "latency");
    const std::optional<double> count = stats_number(stats_member(latency, "count"));
    if (!count || *count <= 0) return std::nullopt;
    return stats_number(stats_member(latency, key));
}

std::string percentile_text(const json& counters, std::string_view key) {
    const std::optional<double> us = percentile_us(counters, key);
    return us ? duration_us_text(*us) : "-";
}

// What names a row of the tools table: the tool of a tools/call, else the method (methods have
// a '/' or are "ping" and the like).
std::string_view label_key(const json& tool) {
    return stats_member(tool, "tool").is_string() ? "tool" : "method";
}

// That name, escaped: the server and the client chose it.
std::string tool_label(const json& tool) {
    return field_text(tool, label_key(tool));
}

// ---- Layout

// The set of sort keys a column shows the figure of, one bit per key.
constexpr unsigned keys(std::initializer_list<SortKey> list) {
    unsigned bits = 0;
    for (const SortKey key : list) bits |= 1U << static_cast<unsigned>(key);
    return bits;
}

struct Column {
    std::string_view header;
    bool numeric = false;    // right-aligned
    bool shrinks = false;    // a name: gives way when the table is wider than allowed
    unsigned sorted_by = 0;  // keys(...) that order the rows by this column
};

// `line` cut to `width` columns, without the spaces that would end it.
std::string cut_line(std::string_view line, std::size_t width) {
    std::string cut = cut_to_width(line, width);
    while (!cut.empty() && cut.back() == ' ') cut.pop_back();
    return cut;
}

// `text` in exactly `width` columns, cut with a '~' when longer.
std::string fit(const std::string& text, std::size_t width, bool right) {
    const std::size_t have = display_width(text);
    if (have > width) return width == 0 ? std::string() : cut_to_width(text, width - 1) + "~";
    const std::string pad(width - have, ' ');
    return right ? pad + text : text + pad;
}

// Columns padded to their widest cell (numbers on the right), two spaces apart, no trailing
// spaces. When wider than `width`, the name columns give way, widest first, down to
// kMinShrunkWidth; whatever still sticks out is cut off.
std::vector<std::string> layout(const std::vector<Column>& columns,
                                const std::vector<std::string>& header,
                                const std::vector<std::vector<std::string>>& rows,
                                std::size_t width) {
    std::vector<std::size_t> widths(columns.size(), 0);
    const auto widen = [&](const std::vector<std::string>& row) {
        for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c)
            widths[c] = std::max(widths[c], display_width(row[c]));
    };
    widen(header);
    for (const auto& row : rows) widen(row);

    std::size_t total = columns.empty() ? 0 : 2 * (columns.size() - 1);
    for (const std::size_t w : widths) total += w;
    while (total > width) {
        std::size_t widest = columns.size();
        for (std::size_t c = 0; c < columns.size(); ++c)
            if (columns[c].shrinks && widths[c] > kMinShrunkWidth &&
                (widest == columns.size() || widths[c] > widths[widest]))
                widest = c;
        if (widest == columns.size()) break;
        --widths[widest];
        --total;
    }

    std::vector<std::string> lines;
    const auto append = [&](const std::vector<std::string>& row) {
        std::string line;
        for (std::size_t c = 0; c < columns.size(); ++c) {
            if (c > 0) line += "  ";
            line += fit(c < row.size() ? row[c] : "-", widths[c], columns[c].numeric);
        }
        lines.push_back(cut_line(line, width));
    };
    append(header);
    for (const auto& row : rows) append(row);
    return lines;
}

// The header cells, the sort key's column marked when the style asks for it.
std::vector<std::string> header_cells(const std::vector<Column>& columns, const TableStyle& style) {
    std::vector<std::string> header;
    for (const Column& column : columns) {
        header.emplace_back(column.header);
        if (style.mark_sort_column && style.sort && (column.sorted_by & keys({*style.sort})) != 0)
            header.back() += '*';
    }
    return header;
}

// ---- Sorting

// A figure a sort key compares, largest first; nullopt sorts last.
using Figure = std::function<std::optional<double>(const json&)>;

Figure server_figure(SortKey key) {
    switch (key) {
        case SortKey::calls:
            return [](const json& s) { return stats_number(stats_member(s, "calls_per_s_10s")); };
        case SortKey::errors:
            return [](const json& s) { return error_ratio(totals(s)); };
        case SortKey::p99:
            return [](const json& s) { return percentile_us(totals(s), "p99_us"); };
        case SortKey::cpu:
            return [](const json& s) { return stats_number(stats_member(s, "cpu_percent")); };
        case SortKey::rss:
            return [](const json& s) { return stats_number(stats_member(s, "rss_bytes")); };
        case SortKey::name:
            break;
    }
    return {};
}

// Tools have no CPU or memory of their own: those keys sort them by calls.
Figure tool_figure(SortKey key) {
    switch (key) {
        case SortKey::errors:
            return [](const json& t) { return error_ratio(t); };
        case SortKey::p99:
            return [](const json& t) { return percentile_us(t, "p99_us"); };
        case SortKey::name:
            return {};
        case SortKey::calls:
        case SortKey::cpu:
        case SortKey::rss:
            break;
    }
    return [](const json& t) { return stats_number(stats_member(t, "requests")); };
}

// Whether a row with figure `a` goes before one with `b`: the larger first, a missing one
// last; nullopt when the figures do not decide.
std::optional<bool> larger_first(std::optional<double> a, std::optional<double> b) {
    if (a.has_value() != b.has_value()) return a.has_value();
    if (!a || *a == *b) return std::nullopt;
    return *a > *b;
}

std::string name_of(const json& object) {
    const json& name = stats_member(object, "name");
    return name.is_string() ? name.get<std::string>() : std::string();
}

void append_section(std::string& text, const std::vector<std::string>& lines) {
    if (lines.empty()) return;
    if (!text.empty()) text += '\n';
    for (const std::string& line : lines) text += line + '\n';
}

}  // namespace

// ---- Sorting

std::string_view to_string(SortKey key) {
    switch (key) {
        case SortKey::name:
            return "name";
        case SortKey::calls:
            return "calls";
        case SortKey::errors:
            return "errors";
        case SortKey::p99:
            return "p99";
        case SortKey::cpu:
            return "cpu";
        case SortKey::rss:
            return "rss";
    }
    return "name";
}

std::optional<SortKey> sort_key_named(std::string_view name) {
    for (const SortKey key : kSortKeys)
        if (to_string(key) == name) return key;
    return std::nullopt;
}

SortKey next_sort_key(SortKey key, int step) {
    constexpr int count = static_cast<int>(std::size(kSortKeys));
    const int at = static_cast<int>(std::find(std::begin(kSortKeys), std::end(kSortKeys), key) -
                                    std::begin(kSortKeys));
    return kSortKeys[((at + step) % count + count) % count];
}

std::vector<const json*> sorted_servers(const json& result, SortKey key) {
    std::vector<const json*> servers;
    for (const json& server : servers_in(result)) servers.push_back(&server);
    const Figure figure = server_figure(key);
    std::stable_sort(servers.begin(), servers.end(), [&](const json* a, const json* b) {
        if (figure)
            if (const std::optional<bool> before = larger_first(figure(*a), figure(*b)))
                return *before;
        return name_of(*a) < name_of(*b);
    });
    return servers;
}

namespace {

// The servers in the daemon's order with `key` unset, else sorted by it.
std::vector<const json*> ordered_servers(const json& result, std::optional<SortKey> key) {
    if (key) return sorted_servers(result, *key);
    std::vector<const json*> servers;
    for (const json& server : servers_in(result)) servers.push_back(&server);
    return servers;
}

}  // namespace

std::vector<ToolRow> tool_rows(const json& result, std::optional<SortKey> key) {
    std::vector<ToolRow> rows;
    for (const json& server : servers_in(result)) {
        const json& tools = stats_member(server, "tools");
        if (!tools.is_array()) continue;
        for (const json& tool : tools) rows.push_back({&server, &tool});
    }
    if (!key) return rows;
    const Figure figure = tool_figure(*key);
    const auto label = [](const json& tool) {
        const json& name = stats_member(tool, label_key(tool));
        return name.is_string() ? name.get<std::string>() : std::string();
    };
    std::stable_sort(rows.begin(), rows.end(), [&](const ToolRow& a, const ToolRow& b) {
        if (figure)
            if (const std::optional<bool> before = larger_first(figure(*a.tool), figure(*b.tool)))
                return *before;
        const std::string server_a = name_of(*a.server), server_b = name_of(*b.server);
        if (server_a != server_b) return server_a < server_b;
        return label(*a.tool) < label(*b.tool);
    });
    return rows;
}

// ---- Tables

std::vector<std::string> servers_table(const json& result, const TableStyle& style) {
    static const std::vector<Column> columns = {{"SERVER", false, true, keys({SortKey::name})},
                                                {"STATE"},
                                                {"CALL/S", true, false, keys({SortKey::calls})},
                                                {"AVG/S", true},
                                                {"ERR%", true, false, keys({SortKey::errors})},
                                                {"P50", true},
                                                {"P99", true, false, keys({SortKey::p99})},
                                                {"IN-FL", true},
                                                {"SESS", true},
                                                {"CPU%", true, false, keys({SortKey::cpu})},
                                                {"RSS", true, false, keys({SortKey::rss})}};
    const std::vector<const json*> servers = ordered_servers(result, style.sort);

    std::vector<std::vector<std::string>> rows;
    for (const json* server : servers) {
        const json& counters = totals(*server);
        rows.push_back({field_text(*server, "name"), field_text(*server, "state"),
                        rate_text(stats_member(*server, "calls_per_s_10s")),
                        rate_text(stats_member(*server, "calls_per_s")), error_percent_text(counters),
                        percentile_text(counters, "p50_us"), percentile_text(counters, "p99_us"),
                        field_text(counters, "in_flight"), field_text(*server, "sessions"),
                        cpu_text(stats_member(*server, "cpu_percent")),
                        bytes_text(stats_member(*server, "rss_bytes"))});
    }
    return layout(columns, header_cells(columns, style), rows, style.width);
}

std::vector<std::string> tools_table(const json& result, const TableStyle& style) {
    // Tools have no CPU or memory of their own: those keys sort them by calls.
    static const std::vector<Column> columns = {
        {"SERVER", false, true},
        {"TOOL/METHOD", false, true, keys({SortKey::name})},
        {"CALLS", true, false, keys({SortKey::calls, SortKey::cpu, SortKey::rss})},
        {"ERR%", true, false, keys({SortKey::errors})},
        {"P50", true},
        {"P99", true, false, keys({SortKey::p99})},
        {"IN-FL", true},
        {"IN", true},
        {"OUT", true}};
    const std::vector<ToolRow> tools = tool_rows(result, style.sort);
    if (tools.empty()) return {"no calls counted yet"};
    std::vector<std::vector<std::string>> rows;
    for (const ToolRow& row : tools) {
        const json& tool = *row.tool;
        rows.push_back({field_text(*row.server, "name"), tool_label(tool),
                        field_text(tool, "requests"), error_percent_text(tool),
                        percentile_text(tool, "p50_us"), percentile_text(tool, "p99_us"),
                        field_text(tool, "in_flight"), bytes_text(stats_member(tool, "bytes_in")),
                        bytes_text(stats_member(tool, "bytes_out"))});
    }
    return layout(columns, header_cells(columns, style), rows, style.width);
}

std::vector<std::string> sessions_table(const json& result, const TableStyle& style) {
    static const std::vector<Column> columns = {
        {"SERVER", false, true}, {"ID", true},  {"CLIENT", false, true},
        {"PID", true},           {"UID", true}, {"CALLS", true},
        {"ERR%", true},          {"P99", true}, {"IN-FL", true}};
    const std::vector<const json*> servers = ordered_servers(result, style.sort);

    std::vector<std::vector<std::string>> rows;
    for (const json* server : servers) {
        const json& sessions = stats_member(*server, "sessions_detail");
        if (!sessions.is_array()) continue;
        for (const json& session : sessions)
            rows.push_back({field_text(*server, "name"), field_text(session, "id"),
                            client_text(session), field_text(session, "pid"),
                            field_text(session, "uid"), field_text(session, "requests"),
                            error_percent_text(session), percentile_text(session, "p99_us"),
                            field_text(session, "in_flight")});
    }
    if (rows.empty()) return {"no sessions"};
    return layout(columns, header_cells(columns, {}), rows, style.width);
}

std::vector<std::string> children_table(const json& result, const TableStyle& style) {
    static const std::vector<Column> columns = {
        {"SERVER", false, true}, {"KIND", false}, {"PID", true},   {"PROJECT", false, true},
        {"SESS", true},          {"CALLS", true}, {"ERR%", true},  {"P99", true},
        {"IN-FL", true},         {"RSS", true}};
    std::vector<std::vector<std::string>> rows;
    for (const json* server : ordered_servers(result, style.sort)) {
        const json& children = stats_member(*server, "per_child");
        if (!children.is_array()) continue;
        for (const json& child : children) {
            const json& counters = totals(child);
            rows.push_back({field_text(*server, "name"), field_text(child, "kind"),
                            field_text(child, "pid"), field_text(child, "project"),
                            field_text(child, "sessions"), field_text(counters, "requests"),
                            error_percent_text(counters), percentile_text(counters, "p99_us"),
                            field_text(counters, "in_flight"),
                            bytes_text(stats_member(child, "rss_bytes"))});
        }
    }
    if (rows.empty()) return {"no server processes"};
    return layout(columns, header_cells(columns, {}), rows, style.width);
}

std::vector<std::string> restart_lines(const json& result) {
    std::vector<std::string> lines;
    for (const json& server : servers_in(result)) {
        const std::optional<double> restarts = stats_number(stats_member(server, "restarts"));
        if (!restarts || *restarts <= 0) continue;
        std::string line = field_text(server, "name") + ": " + field_text(server, "restarts") +
                           (*restarts == 1 ? " restart" : " restarts");
        const json& reasons = stats_member(server, "restart_reasons");
        if (reasons.is_object() && !reasons.empty()) {
            std::vector<std::string> parts;
            for (const auto& [reason, count] : reasons.items())
                parts.push_back(mcpd::escape_controls(reason) + ": " +
                                mcpd::escape_controls(count.dump()));
            line += " (" + join(parts, ", ") + ")";
        }
        lines.push_back(std::move(line));
    }
    return lines;
}

std::vector<std::string> memory_lines(const json& result) {
    std::vector<std::string> lines;
    for (const json& server : servers_in(result)) {
        const json& peak = stats_member(server, "peak_rss_bytes");
        const std::optional<double> kills = stats_number(stats_member(server, "oom_kills"));
        if (!stats_number(peak) && (!kills || *kills <= 0)) continue;
        std::string line = field_text(server, "name") + ": peak memory " + bytes_text(peak);
        if (kills && *kills > 0)
            line += ", " + fixed_text(*kills, 0) + (*kills == 1 ? " OOM kill" : " OOM kills");
        lines.push_back(std::move(line));
    }
    return lines;
}

std::string stats_text(const json& result) {
    if (servers_in(result).empty()) return "no servers to show\n";
    bool tools = false;
    bool sessions = false;
    bool children = false;
    for (const json& server : servers_in(result)) {
        tools = tools || stats_member(server, "tools").is_array();
        sessions = sessions || stats_member(server, "sessions_detail").is_array();
        children = children || stats_member(server, "per_child").is_array();
    }
    std::string text;
    append_section(text, servers_table(result));
    append_section(text, restart_lines(result));
    append_section(text, memory_lines(result));
    if (tools) append_section(text, tools_table(result));
    if (sessions) append_section(text, sessions_table(result));
    if (children) append_section(text, children_table(result));
    return text;
}

// ---- top

std::vector<std::string> top_screen(const json& result, const TopView& view) {
    double calls_per_s = 0;
    double sessions = 0;
    for (const json& server : servers_in(result)) {
        calls_per_s += stats_number(stats_member(server, "calls_per_s_10s")).value_or(0);
        sessions += stats_number(stats_member(server, "sessions")).value_or(0);
    }
    const std::optional<double> uptime_ms = stats_number(stats_member(result, "uptime_ms"));
    const std::size_t servers = servers_in(result).size();
    std::vector<std::string> lines = {
        "mcpd up " +
            (uptime_ms ? mcpd::format_age(mcpd::Duration(static_cast<std::int64_t>(*uptime_ms)))
                       : std::string("-")) +
            ", " + std::to_string(servers) + (servers == 1 ? " server, " : " servers, ") +
            fixed_text(sessions, 0) + (sessions == 1 ? " session, " : " sessions, ") +
            rate_text(calls_per_s) + " calls/s    sort: " + std::string(to_string(view.sort)),
        std::string("q quit  s or > next sort  < previous sort  t ") +
            (view.tools ? "hide" : "show") + " tools  space refresh",
        ""};
    const TableStyle style{view.sort, true, view.width};
    if (servers == 0) {
        lines.emplace_back("no servers to show");
    } else {
        for (std::string& line : servers_table(result, style)) lines.push_back(std::move(line));
        const std::vector<std::string> memory = memory_lines(result);
        if (!memory.empty()) lines.emplace_back();
        for (const std::string& line : memory) lines.push_back(line);
    }
    if (view.tools) {
        lines.emplace_back();
        for (std::string& line : tools_table(result, style)) lines.push_back(std::move(line));
    }

    if (lines.size() > view.height) {
        const std::size_t hidden = lines.size() - view.height + 1;
        lines.resize(view.height);
        if (!lines.empty()) lines.back() = "(" + std::to_string(hidden) + " more lines)";
    }
    for (std::string& line : lines) line = cut_line(line, view.width);
    return lines;
}

}  // namespace mcpctl
