#include "config/registry_sandbox.h"

#include <array>
#include <climits>
#include <string>

#include "config/enum_names.h"

namespace mcpd::config {

namespace {

constexpr std::string_view kSandboxKeys[] = {"preset", "read",  "write", "hide",
                                             "network", "memory", "tasks", "cpu",
                                             "open_files", "strict"};

// Fewer descriptors than this and no runtime starts at all.
constexpr std::int64_t kMinOpenFiles = 16;
constexpr std::uint64_t kMinMemory = 1024 * 1024;

std::string presets_text() {
    std::string text;
    for (const std::string_view preset : sandbox_presets()) {
        text += (text.empty() ? "" : ", ") + in_quotes(preset);
    }
    return text;
}

// `preset` or `sandbox = "..."`.
bool read_preset(const toml::node& value, std::string_view key, Sandbox& sandbox,
                 Diagnostics& diag) {
    const auto name = read_string(value, key, diag);
    if (!name) return false;
    for (const std::string_view preset : sandbox_presets()) {
        if (*name != preset) continue;
        if (preset == "none") {
            sandbox.off = true;
        } else {
            sandbox.preset = *name;
        }
        return true;
    }
    diag.error(value.source(), "unknown sandbox preset " + in_quotes(*name) + ": expected one of " +
                                   presets_text() + did_you_mean(*name, sandbox_presets()));
    return false;
}

void read_paths(const toml::node& value, std::string_view key, std::vector<std::string>& out,
                Diagnostics& diag) {
    auto paths = read_string_array(value, "sandbox." + std::string(key), diag);
    if (!paths) return;
    const toml::array& array = *value.as_array();
    for (std::size_t i = 0; i < paths->size(); ++i) {
        const std::string& path = (*paths)[i];
        if (is_rule_path(path)) {
            out.push_back(path);
            continue;
        }
        diag.error(array[i].source(),
                   "expected an absolute path, \"~/...\", or a path starting with {project}, "
                   "{cache} or {state} in 'sandbox." +
                       std::string(key) + "', got " + in_quotes(path));
    }
}

std::optional<std::uint64_t> read_memory(const toml::node& value, Diagnostics& diag) {
    std::optional<std::uint64_t> bytes;
    if (const auto* number = value.as_integer()) {
        if (number->get() > 0) bytes = static_cast<std::uint64_t>(number->get());
    } else if (const auto* text = value.as_string()) {
        bytes = parse_byte_size(text->get());
    }
    if (!bytes || *bytes < kMinMemory) {
        diag.error(value.source(),
                   "expected a size of at least 1M for 'sandbox.memory', like \"512M\" or \"2G\" "
                   "(K, M, G and T are powers of 1024), or a number of bytes");
        return std::nullopt;
    }
    return bytes;
}

std::optional<CpuLimit> read_cpu(const toml::node& value, Diagnostics& diag) {
    std::optional<CpuLimit> cpu;
    if (const auto* number = value.as_integer()) {
        if (number->get() > 0 && number->get() <= 10000)
            cpu = CpuLimit{CpuLimit::Kind::weight, static_cast<std::uint32_t>(number->get())};
    } else if (const auto* text = value.as_string()) {
        cpu = parse_cpu_limit(text->get());
    }
    if (!cpu) {
        diag.error(value.source(),
                   "expected a quota in percent of one CPU for 'sandbox.cpu', like \"50%\" or "
                   "\"200%\", or a relative weight from 1 to 10000 (100 is the default share)");
    }
    return cpu;
}

template <typename T>
void set(std::optional<T>& target, std::optional<T> value) {
    if (value) target = std::move(value);
}

void read_key(std::string_view name, const toml::node& value, Sandbox& sandbox,
              Diagnostics& diag) {
    if (name == "preset") {
        read_preset(value, "sandbox.preset", sandbox, diag);
    } else if (name == "read") {
        read_paths(value, name, sandbox.read, diag);
    } else if (name == "write") {
        read_paths(value, name, sandbox.write, diag);
    } else if (name == "hide") {
        read_paths(value, name, sandbox.hide, diag);
    } else if (name == "network") {
        set(sandbox.network,
            read_enum<NetworkAccess>(value, "sandbox.network", kNetworkNames, diag));
    } else if (name == "memory") {
        set(sandbox.memory, read_memory(value, diag));
    } else if (name == "tasks") {
        if (auto n = read_integer(value, "sandbox.tasks", 1, INT_MAX, diag))
            sandbox.tasks = static_cast<std::uint64_t>(*n);
    } else if (name == "cpu") {
        set(sandbox.cpu, read_cpu(value, diag));
    } else if (name == "open_files") {
        if (auto n = read_integer(value, "sandbox.open_files", kMinOpenFiles, INT_MAX, diag))
            sandbox.open_files = static_cast<std::uint64_t>(*n);
    } else if (name == "strict") {
        set(sandbox.strict, read_bool(value, "sandbox.strict", diag));
    }
}

}  // namespace

std::span<const std::string_view> sandbox_keys() {
    return kSandboxKeys;
}

std::optional<Sandbox> read_sandbox(const toml::node& value, std::string_view where,
                                    Diagnostics& diag) {
    Sandbox sandbox;
    if (value.is_string()) {
        read_preset(value, "sandbox", sandbox, diag);
        return sandbox;
    }
    const auto* table = value.as_table();
    if (!table) {
        diag.error(value.source(), "expected a preset (" + presets_text() +
                                       ") or a table of rules for 'sandbox' of " +
                                       std::string(where) + ", got " +
                                       std::string(type_name(value)));
        return std::nullopt;
    }
    for (const auto& [key, node] : entries_in_file_order(*table)) {
        const std::string_view name = key->str();
        bool known = false;
        for (const std::string_view k : kSandboxKeys) known = known || k == name;
        if (!known) {
            const std::string hint = did_you_mean(name, kSandboxKeys);
            std::string expected;
            for (const std::string_view k : kSandboxKeys) expected += (expected.empty() ? "" : ", ") + std::string(k);
            diag.error(key->source(), "unknown key '" + std::string(name) + "' in 'sandbox' of " +
                                          std::string(where) +
                                          (hint.empty() ? "; expected " + expected : hint));
            continue;
        }
        read_key(name, *node, sandbox, diag);
    }
    return sandbox;
}

}  // namespace mcpd::config
