#include "daemon/mux/project.h"

#include <algorithm>
#include <cctype>

#include "common/json_read.h"

namespace mcpd {

namespace {

bool is_unreserved(unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

// Characters a path segment may hold unescaped (RFC 3986 pchar, and the separator).
bool path_may_hold(unsigned char c) {
    return is_unreserved(c) || c == '/' || c == ':' || c == '@' || c == '!' || c == '$' ||
           c == '&' || c == '\'' || c == '(' || c == ')' || c == '*' || c == '+' || c == ',' ||
           c == ';' || c == '=';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Every escape decoded; nothing when an escape is malformed or names a separator or NUL,
// which no file name holds.
std::optional<std::string> decode_path(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        if (i + 2 >= text.size()) return std::nullopt;
        const int high = hex_value(text[i + 1]);
        const int low = hex_value(text[i + 2]);
        if (high < 0 || low < 0) return std::nullopt;
        const char c = static_cast<char>(high * 16 + low);
        if (c == '/' || c == '\0') return std::nullopt;
        out += c;
        i += 2;
    }
    return out;
}

// `/a/./b//c/../d/` as `/a/b/d`; never above `/`.
std::string resolve_segments(std::string_view path) {
    std::vector<std::string_view> kept;
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        const std::string_view segment = path.substr(start, end - start);
        if (segment == "..") {
            if (!kept.empty()) kept.pop_back();
        } else if (!segment.empty() && segment != ".") {
            kept.push_back(segment);
        }
        start = end + 1;
    }
    std::string out;
    for (std::string_view segment : kept) {
        out += '/';
        out += segment;
    }
    return out.empty() ? "/" : out;
}

std::string encode_path(std::string_view path) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(path.size());
    for (const char ch : path) {
        const auto c = static_cast<unsigned char>(ch);
        if (path_may_hold(c)) {
            out += ch;
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
        }
    }
    return out;
}

std::string replace_placeholder(std::string text, const std::string& directory) {
    for (std::size_t at = text.find(config::kProjectPlaceholder); at != std::string::npos;
         at = text.find(config::kProjectPlaceholder, at + directory.size())) {
        text.replace(at, config::kProjectPlaceholder.size(), directory);
    }
    return text;
}

std::string last_segment(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    return name.empty() ? std::string("/") : std::string(name);
}

}  // namespace

std::optional<std::string> normalise_root_uri(std::string_view uri) {
    // scheme ":" (RFC 3986: a letter, then letters, digits, + - .)
    const std::size_t colon = uri.find(':');
    if (colon == 0 || colon == std::string_view::npos ||
        !std::isalpha(static_cast<unsigned char>(uri[0]))) {
        return std::nullopt;
    }
    std::string scheme;
    for (const char c : uri.substr(0, colon)) {
        const auto u = static_cast<unsigned char>(c);
        if (!std::isalnum(u) && c != '+' && c != '-' && c != '.') return std::nullopt;
        scheme += static_cast<char>(std::tolower(u));
    }
    if (scheme != "file") return std::string(uri);

    std::string_view rest = uri.substr(colon + 1);
    rest = rest.substr(0, std::min(rest.find('?'), rest.find('#')));
    if (rest.starts_with("//")) {
        rest.remove_prefix(2);
        const std::size_t slash = rest.find('/');
        std::string host(rest.substr(0, slash));
        std::transform(host.begin(), host.end(), host.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        // Another machine's file is not a directory here, and never a project's.
        if (!host.empty() && host != "localhost") return std::nullopt;
        rest = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
    }
    if (!rest.starts_with('/')) return std::nullopt;  // a relative path is no root
    const std::optional<std::string> path = decode_path(rest);
    if (!path) return std::nullopt;
    return directory_uri(*path);
}

std::optional<std::string> file_uri_path(std::string_view normalised_uri) {
    constexpr std::string_view kPrefix = "file://";
    if (!normalised_uri.starts_with(kPrefix)) return std::nullopt;
    return decode_path(normalised_uri.substr(kPrefix.size()));
}

std::string directory_uri(std::string_view absolute_path) {
    return "file://" + encode_path(resolve_segments(absolute_path));
}

std::string Project::key() const {
    std::string out = "uid " + std::to_string(user);
    for (const std::string& root : roots) {
        out += '\n';
        out += root;
    }
    return out;
}

nlohmann::json Project::roots_result() const {
    nlohmann::json list = nlohmann::json::array();
    for (const std::string& root : roots) {
        nlohmann::json entry{{"uri", root}};
        if (const auto path = file_uri_path(root)) entry["name"] = last_segment(*path);
        list.push_back(std::move(entry));
    }
    return nlohmann::json{{"roots", std::move(list)}};
}

Result<Project> project_from_roots(const nlohmann::json& list_roots_result) {
    const nlohmann::json* roots = json_read::member(list_roots_result, "roots");
    if (roots == nullptr || !roots->is_array()) {
        return permanent_failure("the client's roots/list result has no \"roots\" array");
    }
    Project project;
    project.from_roots = true;
    for (const nlohmann::json& root : *roots) {
        const std::string* uri = json_read::string_at(root, "uri");
        if (uri == nullptr)
            return permanent_failure("a root in the client's roots/list result has no \"uri\"");
        std::optional<std::string> normalised = normalise_root_uri(*uri);
        if (!normalised) {
            return permanent_failure(
                "the client reported a root that is not an absolute URI of this machine (a "
                "file:// root must have an empty or localhost host)");
        }
        if (project.directory.empty()) {
            if (const auto path = file_uri_path(*normalised)) project.directory = *path;
        }
        project.roots.push_back(std::move(*normalised));
    }
    if (project.roots.empty()) return permanent_failure("the client reported no roots");
    if (project.directory.empty()) {
        return permanent_failure("the client reported no file:// root");
    }
    std::sort(project.roots.begin(), project.roots.end());
    project.roots.erase(std::unique(project.roots.begin(), project.roots.end()),
                        project.roots.end());
    return project;
}

Result<Project> project_from_directory(std::string_view absolute_path) {
    if (!absolute_path.starts_with('/')) {
        return permanent_failure("the working directory is not an absolute path");
    }
    if (absolute_path.find('\0') != std::string_view::npos) {
        return permanent_failure("the working directory holds a NUL byte");
    }
    Project project;
    project.directory = resolve_segments(absolute_path);
    project.roots.push_back(directory_uri(project.directory));
    return project;
}

config::ServerConfig config_for_project(const config::ServerConfig& server,
                                        const Project& project) {
    config::ServerConfig config = server;
    config.cwd =
        config.cwd.empty() ? project.directory : replace_placeholder(config.cwd, project.directory);
    for (std::string& arg : config.args) arg = replace_placeholder(arg, project.directory);
    for (auto& [name, value] : config.env) value = replace_placeholder(value, project.directory);
    // A project's child is answered roots/list with the project; a user's child asks its
    // sessions, as a shared server does.
    if (server.sharing != config::Sharing::user) config.roots = project.roots;
    config.run_as = project.identity;
    // {project} of its sandbox; unset without one, so that a child whose command, directory
    // and environment do not depend on its project can keep serving when its roots change.
    if (server.sandbox.any()) config.project_dir = project.directory;
    return config;
}

}  // namespace mcpd
