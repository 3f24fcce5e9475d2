#include "daemon/mux/jsonrpc.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace mcpd::jsonrpc {

std::string quote(std::string_view text) {
    // The usual text (a tool's name on every call through a group) is printable ASCII with
    // nothing to escape: quoted as it is, without building a JSON value to dump.
    const bool as_is = std::all_of(text.begin(), text.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\';
    });
    if (!as_is) {
        return nlohmann::json(std::string(text))
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    // Made in place and returned without a copy (the only named value returned).
    std::string quoted(text.size() + 2, '"');
    if (!text.empty()) std::memcpy(quoted.data() + 1, text.data(), text.size());
    return quoted;
}

std::string result(std::string_view raw_id, std::string_view result_json) {
    std::string out;
    out.reserve(raw_id.size() + result_json.size() + 40);
    out += R"({"jsonrpc":"2.0","id":)";
    out += raw_id;
    out += R"(,"result":)";
    out += result_json;
    out += '}';
    return out;
}

namespace {

// {"jsonrpc":"2.0","id":..,"error":{"code":..,"message":..  — the rest is the caller's.
std::string error_head(std::string_view raw_id, int code, std::string_view message) {
    std::string out = R"({"jsonrpc":"2.0","id":)";
    out += raw_id.empty() ? std::string_view("null") : raw_id;
    out += R"(,"error":{"code":)";
    out += std::to_string(code);
    out += R"(,"message":)";
    out += quote(message);
    return out;
}

}  // namespace

std::string error(std::string_view raw_id, int code, std::string_view message,
                  std::string_view reason) {
    std::string out = error_head(raw_id, code, message);
    if (!reason.empty()) {
        out += R"(,"data":{"reason":)";
        out += quote(reason);
        out += '}';
    }
    out += "}}";
    return out;
}

std::string error_with_outcome(std::string_view raw_id, int code, std::string_view message,
                               std::string_view reason, std::string_view outcome) {
    std::string out = error_head(raw_id, code, message);
    out += R"(,"data":{"reason":)";
    out += quote(reason);
    out += R"(,"outcome":)";
    out += quote(outcome);
    out += "}}}";
    return out;
}

std::string notification(std::string_view method) {
    std::string out = R"({"jsonrpc":"2.0","method":)";
    out += quote(method);
    out += '}';
    return out;
}

std::string notification(std::string_view method, std::string_view params_json) {
    std::string out = R"({"jsonrpc":"2.0","method":)";
    out += quote(method);
    out += R"(,"params":)";
    out += params_json;
    out += '}';
    return out;
}

std::string list_changed(std::string_view list) {
    std::string method = "notifications/";
    method += list;
    method += "/list_changed";
    return notification(method);
}

std::string cancelled(std::string_view raw_request_id, std::string_view reason) {
    std::string params = R"({"requestId":)";
    params += raw_request_id;
    params += R"(,"reason":)";
    params += quote(reason);
    params += '}';
    return notification("notifications/cancelled", params);
}

std::string cancelled(std::uint64_t request_id, std::string_view reason) {
    return cancelled(std::to_string(request_id), reason);
}

}  // namespace mcpd::jsonrpc
