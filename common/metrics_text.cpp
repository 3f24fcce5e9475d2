#include "common/metrics_text.h"

#include <optional>
#include <utility>
#include <vector>

#include "common/json_read.h"

namespace mcpd {

namespace {

using nlohmann::json;

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence at the start of `text` (RFC 3629: no overlong
// forms, no surrogates, nothing past U+10FFFF), 0 when there is none.
std::size_t utf8_sequence(std::string_view text) {
    const auto byte = [&text](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80) return 1;
    std::size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;  // the range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) low = 0xA0;
        if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) low = 0x90;
        if (lead == 0xF4) high = 0x8F;
    } else {
        return 0;
    }
    if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
    for (std::size_t i = 2; i < length; ++i)
        if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
    return length;
}

// `name="value"` pairs, comma-separated, in the order added.
class Labels {
public:
    Labels& add(std::string_view name, std::string_view value) {
        if (!text_.empty()) text_ += ',';
        text_ += name;
        text_ += "=\"";
        text_ += escape_label_value(value);
        text_ += '"';
        return *this;
    }
    Labels with(std::string_view name, std::string_view value) const {
        Labels copy = *this;
        copy.add(name, value);
        return copy;
    }
    // "{...}", or "" without labels.
    std::string braced() const { return text_.empty() ? std::string() : '{' + text_ + '}'; }

private:
    std::string text_;
};

// One metric family: its samples are gathered first and written together after its HELP and
// TYPE lines, so that they are contiguous whatever order they are found in.
class Family {
public:
    Family(std::string_view name, std::string_view type, std::string_view help)
        : name_(name), type_(type), help_(help) {}

    // The sample NAME+suffix{labels} value.
    void add(const Labels& labels, std::string_view value, std::string_view suffix = {}) {
        samples_ += name_;
        samples_ += suffix;
        samples_ += labels.braced();
        samples_ += ' ';
        samples_ += value;
        samples_ += '\n';
    }

    // Nothing when no sample was added.
    void write_to(std::string& out) const {
        if (samples_.empty()) return;
        out += "# HELP ";
        out += name_;
        out += ' ';
        out += help_;  // constant text, with nothing to escape
        out += "\n# TYPE ";
        out += name_;
        out += ' ';
        out += type_;
        out += '\n';
        out += samples_;
    }

private:
    std::string_view name_;
    std::string_view type_;
    std::string_view help_;
    std::string samples_;
};

// A figure that is a non-negative integer; nothing when it is null, missing or anything else.
std::optional<std::uint64_t> count_at(const json& object, std::string_view key) {
    const std::optional<std::int64_t> value = json_read::integer_at(object, key);
    if (!value || *value < 0) return std::nullopt;
    return static_cast<std::uint64_t>(*value);
}

std::optional<std::uint64_t> as_count(const json& value) {
    const std::optional<std::int64_t> number = json_read::as_integer(value);
    if (!number || *number < 0) return std::nullopt;
    return static_cast<std::uint64_t>(*number);
}

// The families of the per-server rows.
struct ServerFamilies {
    Family up{"mcpd_server_up", "gauge", "Whether the server is running (1) or not (0)."};
    Family sessions{"mcpd_server_sessions", "gauge", "MCP sessions attached to the server now."};
    Family sessions_total{"mcpd_server_sessions_opened_total", "counter",
                          "MCP sessions the server has had since mcpd started or it was added."};
    Family restarts{"mcpd_server_restarts_total", "counter", "Automatic restarts of the server."};
    Family cpu{"mcpd_server_cpu_seconds_total", "counter",
               "CPU time of the server's processes, in seconds."};
    Family resident{"mcpd_server_resident_bytes", "gauge",
                    "Resident memory (RSS) of the server's processes, in bytes."};
    Family proportional{"mcpd_server_proportional_bytes", "gauge",
                        "Proportional set size (PSS) of the server's processes, in bytes."};
    Family peak{"mcpd_server_peak_resident_bytes", "gauge",
                "Peak resident memory of the server's processes, in bytes."};
    Family oom_kills{"mcpd_server_oom_kills_total", "counter",
                     "Processes of the server the kernel's OOM killer ended at its cgroup's "
                     "memory limit."};

    void add(const json& server, const Labels& labels) {
        up.add(labels, json_read::string_or(server, "state", "") == "running" ? "1" : "0");
        add_count(sessions, server, "sessions", labels);
        add_count(sessions_total, server, "sessions_total", labels);
        add_count(restarts, server, "restarts", labels);
        if (const auto ms = count_at(server, "cpu_ms")) cpu.add(labels, decimal_text(*ms, 3));
        add_count(resident, server, "rss_bytes", labels);
        add_count(proportional, server, "pss_bytes", labels);
        add_count(peak, server, "peak_rss_bytes", labels);
        add_count(oom_kills, server, "oom_kills", labels);
    }

    void write_to(std::string& out) const {
        for (const Family* family :
             {&up, &sessions, &sessions_total, &restarts, &cpu, &resident, &proportional, &peak,
              &oom_kills})
            family->write_to(out);
    }

    static void add_count(Family& family, const json& object, std::string_view key,
                          const Labels& labels) {
        if (const auto value = count_at(object, key)) family.add(labels, std::to_string(*value));
    }
};

// How a request ended: the `outcome` label and the COUNTERS field that counts it.
constexpr std::pair<std::string_view, std::string_view> kOutcomes[] = {
    {"reply", "replies"},       {"error", "errors"},     {"tool_error", "tool_errors"},
    {"cancelled", "cancelled"}, {"timeout", "timeouts"}, {"child_died", "child_died"},
    {"replayed", "replayed"},
};

// The families of the per-name rows (a server's "tools" array).
struct NameFamilies {
    Family requests{"mcpd_requests_total", "counter",
                    "Requests forwarded to the server and settled, by outcome."};
    Family in_flight{"mcpd_requests_in_flight", "gauge",
                     "Requests forwarded to the server and not settled yet."};
    Family bytes{"mcpd_request_bytes_total", "counter",
                 "Bytes of requests to the server (in) and of their answers (out)."};
    Family duration{"mcpd_request_duration_seconds", "histogram",
                    "Time from forwarding a request to its answer, in seconds."};

    void add(const json& counters, const Labels& labels) {
        for (const auto& [outcome, field] : kOutcomes)
            if (const auto value = count_at(counters, field))
                requests.add(labels.with("outcome", outcome), std::to_string(*value));
        if (const auto value = count_at(counters, "in_flight"))
            in_flight.add(labels, std::to_string(*value));
        if (const auto value = count_at(counters, "bytes_in"))
            bytes.add(labels.with("direction", "in"), std::to_string(*value));
        if (const auto value = count_at(counters, "bytes_out"))
            bytes.add(labels.with("direction", "out"), std::to_string(*value));
        if (const json* latency = json_read::object_at(counters, "latency"))
            add_histogram(*latency, labels);
    }

    // Cumulative buckets from the per-bucket counts, in seconds; nothing at all when the
    // buckets are not [[bound µs or null, count], ...] with rising bounds, so that a family
    // never holds half a histogram.
    void add_histogram(const json& latency, const Labels& labels) {
        const json* buckets = json_read::member(latency, "buckets");
        const auto sum_us = count_at(latency, "sum_us");
        if (buckets == nullptr || !buckets->is_array() || !sum_us) return;
        std::vector<std::pair<std::string, std::uint64_t>> cumulative;
        std::uint64_t total = 0;
        std::optional<std::uint64_t> previous_bound;
        bool infinite = false;
        for (const json& bucket : *buckets) {
            if (infinite || !bucket.is_array() || bucket.size() != 2) return;
            const auto count = as_count(bucket[1]);
            if (!count) return;
            total += *count;
            if (bucket[0].is_null()) {
                infinite = true;
                cumulative.emplace_back("+Inf", total);
                continue;
            }
            const auto bound = as_count(bucket[0]);
            if (!bound || (previous_bound && *bound <= *previous_bound)) return;
            previous_bound = bound;
            cumulative.emplace_back(decimal_text(*bound, 6), total);
        }
        if (!infinite) cumulative.emplace_back("+Inf", total);
        for (const auto& [le, count] : cumulative)
            duration.add(labels.with("le", le), std::to_string(count), "_bucket");
        duration.add(labels, decimal_text(*sum_us, 6), "_sum");
        duration.add(labels, std::to_string(total), "_count");
    }

    void write_to(std::string& out) const {
        for (const Family* family : {&requests, &in_flight, &bytes, &duration})
            family->write_to(out);
    }
};

}  // namespace

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    while (!value.empty()) {
        const std::size_t length = utf8_sequence(value);
        if (length == 0) {
            out += kReplacement;
            value.remove_prefix(1);
            continue;
        }
        const char c = value.front();
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += value.substr(0, length);
        }
        value.remove_prefix(length);
    }
    return out;
}

std::string decimal_text(std::uint64_t count, unsigned decimals) {
    std::uint64_t scale = 1;
    for (unsigned i = 0; i < decimals; ++i) scale *= 10;
    std::string text = std::to_string(count / scale);
    std::string fraction = std::to_string(count % scale);
    if (fraction == "0") return text;
    fraction.insert(0, decimals - fraction.size(), '0');
    fraction.erase(fraction.find_last_not_of('0') + 1);
    text += '.';
    text += fraction;
    return text;
}

std::string metrics_text(const json& stats) {
    Family up{"mcpd_up", "gauge", "Whether mcpd answered: always 1."};
    up.add(Labels(), "1");
    ServerFamilies per_server;
    NameFamilies per_name;
    if (const json* servers = json_read::member(stats, "servers");
        servers != nullptr && servers->is_array()) {
        for (const json& server : *servers) {
            const std::string* name = json_read::string_at(server, "name");
            if (name == nullptr) continue;
            const Labels labels = Labels().add("server", *name);
            per_server.add(server, labels);
            const json* tools = json_read::member(server, "tools");
            if (tools == nullptr || !tools->is_array()) continue;
            for (const json& row : *tools) {
                const std::string* method = json_read::string_at(row, "method");
                if (method == nullptr) continue;
                const std::string* tool = json_read::string_at(row, "tool");
                per_name.add(row, labels.with("method", *method).with("tool", tool ? *tool : ""));
            }
        }
    }
    std::string out;
    up.write_to(out);
    per_server.write_to(out);
    per_name.write_to(out);
    return out;
}

}  // namespace mcpd
