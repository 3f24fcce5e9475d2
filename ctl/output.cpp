#include "ctl/output.h"

#include <algorithm>

#include "common/terminal_text.h"
#include "ctl/daemon_client.h"

namespace mcpctl {

using mcpd::escape_controls;

void Output::print_json(const nlohmann::json& value) {
    // The writer escapes C0 controls but leaves DEL and C1 raw; escaping them keeps the value.
    out_ << escape_controls(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
         << '\n'
         << std::flush;
}

void Output::print_text(std::string_view text) {
    out_ << text << std::flush;
}

void Output::error(std::string_view message) {
    err_ << "mcpctl: " << escape_controls(message) << '\n' << std::flush;
}

void Output::daemon_error(const nlohmann::json& error) {
    if (json_) {
        print_json({{"error", error}});
        return;
    }
    this->error(field_text(error, "message"));
    const auto details = error.find("details");
    if (details == error.end() || !details->is_array()) return;
    for (const auto& line : *details)
        err_ << escape_controls(line.is_string() ? line.get<std::string>() : line.dump()) << '\n';
    err_ << std::flush;
}

void Output::client_error(const ClientError& error) {
    if (json_)
        print_json({{"error", {{"code", error.code}, {"message", error.message}}}});
    else
        this->error(error.message);
}

std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> widths;
    const auto widen = [&](const std::vector<std::string>& row) {
        if (widths.size() < row.size()) widths.resize(row.size());
        for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    };
    widen(header);
    for (const auto& row : rows) widen(row);

    std::string text;
    const auto append = [&](const std::vector<std::string>& row) {
        std::string line;
        for (std::size_t c = 0; c < row.size(); ++c) {
            if (c > 0) line += "  ";
            line += row[c];
            if (c + 1 < row.size()) line.append(widths[c] - row[c].size(), ' ');
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        text += line + '\n';
    };
    if (!header.empty()) append(header);
    for (const auto& row : rows) append(row);
    return text;
}

std::string field_text(const nlohmann::json& object, std::string_view key) {
    if (!object.is_object()) return "-";
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return "-";
    if (it->is_string()) return escape_controls(it->get<std::string>());
    return escape_controls(it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

const nlohmann::json& servers_in(const nlohmann::json& result) {
    static const nlohmann::json kNone = nlohmann::json::array();
    const auto it = result.is_object() ? result.find("servers") : result.end();
    return it != result.end() && it->is_array() ? *it : kNone;
}

std::string client_text(const nlohmann::json& session) {
    const auto it = session.is_object() ? session.find("client") : session.end();
    if (it == session.end() || !it->is_object()) return "-";
    std::vector<std::string> parts;
    for (const char* key : {"name", "version"})
        if (it->contains(key) && !(*it)[key].is_null()) parts.push_back(field_text(*it, key));
    return parts.empty() ? "-" : join(parts, " ");
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) text += separator;
        text += items[i];
    }
    return text;
}

}  // namespace mcpctl
