#include "common/json_envelope.h"

#include "common/json_string.h"
#include "common/plain_envelope.h"

#include <simdjson.h>

#include <charconv>
#include <cstring>

namespace mcpd::wire {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;

struct EnvelopeScanner::Parser {
    explicit Parser(std::size_t max) : parser(max) {}
    od::parser parser;
};

namespace {

constexpr std::string_view kSubscriptionId = "io.modelcontextprotocol/subscriptionId";
constexpr std::string_view kRelatedTask = "io.modelcontextprotocol/related-task";
constexpr std::string_view kClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
constexpr int kMaxDepth = 256;

static_assert(kScanPadding >= simdjson::SIMDJSON_PADDING);

std::string_view trim_right(std::string_view token) {
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t' ||
                              token.back() == '\n' || token.back() == '\r')) {
        token.remove_suffix(1);
    }
    return token;
}

// A member's key as text: where it lies when it has no escapes (nearly always), otherwise
// unescaped into `storage` (which also checks the escapes). Stage 1 has checked that the key's
// closing quote is there, so the searches are bounded by it.
error_code key_of(od::field& field, std::string_view& key, std::string& storage) {
    const char* const start = field.key().raw();
    const char* p = start;
    while (*p != '"' && *p != '\\') ++p;
    if (*p == '"') {
        key = std::string_view(start, static_cast<std::size_t>(p - start));
        return SUCCESS;
    }
    while (*p != '"') p += *p == '\\' ? 2 : 1;
    if (!unescape(std::string_view(start, static_cast<std::size_t>(p - start)), storage)) {
        return simdjson::STRING_ERROR;
    }
    key = storage;
    return SUCCESS;
}

// Call `fn(key, value)` for each member of an object value, in order; any error stops it.
template <typename Fn>
error_code for_each_member(od::value& value, Fn&& fn) {
    od::object object;
    if (auto e = value.get_object().get(object); e != SUCCESS) return e;
    std::string storage;  // an escaped key's text
    for (auto field_result : object) {
        od::field field;
        if (auto e = std::move(field_result).get(field); e != SUCCESS) return e;
        std::string_view key;
        if (auto e = key_of(field, key, storage); e != SUCCESS) return e;
        od::value member = field.value();
        if (auto e = fn(key, member); e != SUCCESS) return e;
    }
    return SUCCESS;
}

// Walks one message, validating every value and noting the envelope fields.
class Walker {
public:
    Walker(const char* base, Envelope& out) : base_(base), out_(out) {}

    error_code top(od::document& doc) {
        od::object object;
        if (auto e = doc.get_object().get(object); e != SUCCESS) return e;
        std::string storage;  // an escaped key's text
        for (auto field_result : object) {
            od::field field;
            if (auto e = std::move(field_result).get(field); e != SUCCESS) return e;
            std::string_view key;
            if (auto e = key_of(field, key, storage); e != SUCCESS) return e;
            od::value value = field.value();
            error_code e = SUCCESS;
            if (key == "jsonrpc") {
                e = read_jsonrpc(value);
            } else if (key == "id") {
                // A second id could smuggle the session's own id past the rewrite.
                if (out_.id_kind != IdKind::absent) out_.malformed = out_.repeated_id = true;
                e = read_id(value);
            } else if (key == "method") {
                od::json_type type;
                if ((e = value.type().get(type)) != SUCCESS) return e;
                if (type != od::json_type::string) out_.malformed = true;
                e = read_string(value, out_.method);
                out_.has_method = e == SUCCESS && type == od::json_type::string;
            } else if (key == "params") {
                out_.has_params = true;
                od::json_type type;
                if ((e = value.type().get(type)) != SUCCESS) return e;
                if (type != od::json_type::object && type != od::json_type::array) out_.malformed = true;
                out_.params_array = type == od::json_type::array;
                e = read_params(value);
            } else if (key == "result") {
                out_.has_result = true;
                e = read_result(value);
            } else if (key == "error") {
                out_.has_error = true;
                e = read_error(value);
            } else {
                e = walk(value, 1);
            }
            if (e != SUCCESS) return e;
        }
        return SUCCESS;
    }

    // Validate a document whose root is not an object.
    error_code other_root(od::document& doc, od::json_type type) {
        switch (type) {
            case od::json_type::array: {
                od::array array;
                if (auto e = doc.get_array().get(array); e != SUCCESS) return e;
                for (auto element_result : array) {
                    od::value element;
                    if (auto e = std::move(element_result).get(element); e != SUCCESS) return e;
                    if (auto e = walk(element, 1); e != SUCCESS) return e;
                }
                return SUCCESS;
            }
            case od::json_type::string: {
                std::string_view token;
                if (auto e = doc.raw_json_token().get(token); e != SUCCESS) return e;
                token = trim_right(token);
                od::raw_json_string raw;
                if (auto e = doc.get_raw_json_string().get(raw); e != SUCCESS) return e;
                return checked_string(token);
            }
            case od::json_type::number: {
                double number;
                return doc.get_double().get(number);
            }
            case od::json_type::boolean: {
                bool flag;
                return doc.get_bool().get(flag);
            }
            case od::json_type::null: {
                bool is_null;
                if (auto e = doc.is_null().get(is_null); e != SUCCESS) return e;
                return is_null ? SUCCESS : simdjson::N_ATOM_ERROR;
            }
            default: return simdjson::TAPE_ERROR;
        }
    }

private:
    Span span_of(std::string_view token) const {
        token = trim_right(token);
        return Span{static_cast<std::uint32_t>(token.data() - base_),
                    static_cast<std::uint32_t>(token.size())};
    }

    error_code token(od::value& value, Span& span) {
        span = span_of(value.raw_json_token());
        return SUCCESS;
    }

    error_code read_jsonrpc(od::value& value) {
        std::string text;
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::string) return walk(value, 1);
        if (auto e = read_string(value, text); e != SUCCESS) return e;
        out_.jsonrpc_ok = text == "2.0";
        return SUCCESS;
    }

    // A string mcpd keeps, unescaped by `unescape` (which takes lone surrogates).
    error_code read_string(od::value& value, std::string& into) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::string) return walk(value, 1);
        const std::string_view token = trim_right(value.raw_json_token());
        od::raw_json_string raw;
        if (auto e = value.get_raw_json_string().get(raw); e != SUCCESS) return e;
        if (!decode_string(token, into)) return simdjson::STRING_ERROR;
        return SUCCESS;
    }

    // An id is kept as its exact bytes: 1, "1" and 1.0 stay distinct.
    error_code read_id(od::value& value) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (auto e = token(value, out_.id); e != SUCCESS) return e;
        switch (type) {
            case od::json_type::string: out_.id_kind = IdKind::string; break;
            case od::json_type::null: out_.id_kind = IdKind::null; break;
            case od::json_type::number:
                out_.id_kind = is_integer_token(out_.id.in(std::string_view(base_, out_.id.offset +
                                                                                   out_.id.length)))
                                   ? IdKind::integer
                                   : IdKind::invalid;
                // Any size of integer is a valid id here; simdjson need not fit it in 64 bits.
                if (out_.id_kind == IdKind::integer) return SUCCESS;
                break;
            default: out_.id_kind = IdKind::invalid; break;
        }
        return walk(value, 1);
    }

    error_code read_params(od::value& value) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::object) return walk(value, 1);
        return for_each_member(value, [this](std::string_view key, od::value& v) {
            if (key == "_meta") return read_meta(v);
            if (key == "progressToken") return token_then_walk(v, out_.reported_token, 2);  // notifications/progress
            if (key == "requestId") return token_then_walk(v, out_.request_id, 2);
            if (key == "uri") return read_string(v, out_.uri);
            if (key == "name") return read_name(v);
            if (key == "level") return read_string(v, out_.level);
            if (key == "taskId") return read_string(v, out_.task_id);
            if (key == "elicitationId") return read_string(v, out_.elicitation_id);
            if (key == "status") return read_string(v, out_.status);
            if (key == "task") out_.params_task = true;
            return walk(v, 2);
        });
    }

    error_code read_meta(od::value& value) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::object) return walk(value, 2);
        return for_each_member(value, [this](std::string_view key, od::value& v) {
            if (key == "progressToken") return read_progress_token(v);
            if (key == kSubscriptionId) return token_then_walk(v, out_.subscription_id, 3);
            if (key == kRelatedTask) return read_related_task(v);
            if (key == kClientCapabilities) out_.meta_client_capabilities = true;
            return walk(v, 3);
        });
    }

    error_code read_progress_token(od::value& v) {
        od::json_type t;
        if (auto e = v.type().get(t); e != SUCCESS) return e;
        if (auto e = token(v, out_.progress_token); e != SUCCESS) return e;
        // The schema allows any string or number; the token is given back byte for byte.
        out_.progress_token_valid = t == od::json_type::string || t == od::json_type::number;
        return walk(v, 3);
    }

    error_code token_then_walk(od::value& v, Span& span, int depth) {
        if (auto e = token(v, span); e != SUCCESS) return e;
        return walk(v, depth);
    }

    error_code read_related_task(od::value& value) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::object) return walk(value, 3);
        return for_each_member(value, [this](std::string_view key, od::value& v) {
            if (key == "taskId") return token_then_walk(v, out_.related_task_id, 4);
            return walk(v, 4);
        });
    }

    error_code read_result(od::value& value) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::object) return walk(value, 1);
        out_.result_object = true;
        std::string flat_task_id;
        const error_code e = for_each_member(value, [&](std::string_view key, od::value& v) {
            if (key == "_meta") return read_meta(v);
            if (key == "resultType") return read_string(v, out_.result_type);
            if (key == "status") return read_string(v, out_.status);
            if (key == "taskId") return read_string(v, flat_task_id);
            if (key == "task") return read_task_object(v);
            if (key == "isError") return read_is_error(v);
            return walk(v, 2);
        });
        if (e != SUCCESS) return e;
        if (out_.result_type == "task" && !flat_task_id.empty()) out_.created_task_id = flat_task_id;
        return SUCCESS;
    }

    // JSON-RPC's error object: an integer code and a string message, whatever else it holds.
    error_code read_error(od::value& value) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::object) return walk(value, 1);
        bool code_ok = false;
        bool message_ok = false;
        const error_code e = for_each_member(value, [&](std::string_view key, od::value& v) {
            if (key != "code" && key != "message") return walk(v, 2);
            od::json_type t;
            if (auto te = v.type().get(t); te != SUCCESS) return te;
            if (key == "message") {
                message_ok = t == od::json_type::string;
                return walk(v, 2);
            }
            code_ok = false;
            const std::string_view raw = trim_right(v.raw_json_token());
            if (t != od::json_type::number || !is_integer_token(raw)) return walk(v, 2);
            const auto [end, ec] =
                std::from_chars(raw.data(), raw.data() + raw.size(), out_.error_code);
            code_ok = ec == std::errc() && end == raw.data() + raw.size();
            return SUCCESS;  // an integer of any size is valid JSON, as in walk()
        });
        if (e != SUCCESS) return e;
        out_.error_valid = code_ok && message_ok;
        return SUCCESS;
    }

    // Where params.name lies, checked like any string but not copied: only the stats need
    // it, as a view.
    error_code read_name(od::value& value) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::string) return walk(value, 2);
        if (!out_.name.empty()) out_.name_repeated = true;
        out_.name = span_of(value.raw_json_token());
        return check_string(value);
    }

    error_code read_is_error(od::value& value) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::boolean) return walk(value, 2);
        return value.get_bool().get(out_.is_error);
    }

    error_code read_task_object(od::value& value) {
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        if (type != od::json_type::object) return walk(value, 2);
        return for_each_member(value, [this](std::string_view key, od::value& v) {
            return key == "taskId" ? read_string(v, out_.created_task_id) : walk(v, 3);
        });
    }

    // Validate a value and everything in it.
    error_code walk(od::value& value, int depth) {
        if (depth > kMaxDepth) return simdjson::DEPTH_ERROR;
        od::json_type type;
        if (auto e = value.type().get(type); e != SUCCESS) return e;
        switch (type) {
            case od::json_type::object:
                return for_each_member(value, [this, depth](std::string_view, od::value& v) {
                    return walk(v, depth + 1);
                });
            case od::json_type::array: {
                od::array array;
                if (auto e = value.get_array().get(array); e != SUCCESS) return e;
                for (auto element_result : array) {
                    od::value element;
                    if (auto e = std::move(element_result).get(element); e != SUCCESS) return e;
                    if (auto e = walk(element, depth + 1); e != SUCCESS) return e;
                }
                return SUCCESS;
            }
            case od::json_type::string: return check_string(value);
            case od::json_type::number: {
                const std::string_view raw = value.raw_json_token();
                // Integers of any size are valid JSON even where 64 bits cannot hold them.
                if (is_integer_token(trim_right(raw))) return SUCCESS;
                double number;
                return value.get_double().get(number);
            }
            case od::json_type::boolean: {
                bool flag;
                return value.get_bool().get(flag);
            }
            case od::json_type::null: {
                bool is_null;
                if (auto e = value.is_null().get(is_null); e != SUCCESS) return e;
                return is_null ? SUCCESS : simdjson::N_ATOM_ERROR;
            }
        }
        return simdjson::TAPE_ERROR;
    }

    // A string mcpd does not keep is checked where it lies: nothing is unescaped or copied
    // (most of a large tool result is such strings).
    // The value must still be consumed (get_raw_json_string() does, without unescaping): the
    // on-demand iterator skips an unconsumed value without checking what follows it.
    static error_code check_string(od::value& value) {
        const std::string_view token = trim_right(value.raw_json_token());
        od::raw_json_string raw;
        if (auto e = value.get_raw_json_string().get(raw); e != SUCCESS) return e;
        return checked_string(token);
    }

    static error_code checked_string(std::string_view token) {
        if (token.size() < 2 || token.front() != '"' || token.back() != '"') return simdjson::STRING_ERROR;
        return valid_escapes(token.substr(1, token.size() - 2)) ? SUCCESS : simdjson::STRING_ERROR;
    }

    const char* base_;
    Envelope& out_;
};

}  // namespace

EnvelopeScanner::EnvelopeScanner(std::size_t max_message_bytes, Path path)
    : parser_(std::make_unique<Parser>(max_message_bytes + simdjson::SIMDJSON_PADDING)),
      max_message_bytes_(max_message_bytes),
      path_(path) {}

EnvelopeScanner::~EnvelopeScanner() = default;

ScanStatus EnvelopeScanner::scan(std::string& text, Envelope& out) {
    if (text.capacity() < text.size() + kScanPadding) text.reserve(text.size() + kScanPadding);
    return scan(PaddedText{text}, out);
}

ScanStatus EnvelopeScanner::scan(PaddedText padded, Envelope& out) {
    error_.clear();
    const std::string_view text = padded.text;
    // A message past the limit is the general scanner's to refuse, as it always was.
    if (path_ == Path::plain_first && text.size() <= max_message_bytes_ && scan_plain(padded, out))
        return ScanStatus::ok;
    out.clear();
    od::document doc;
    const simdjson::padded_string_view input(text.data(), text.size(), text.size() + kScanPadding);
    if (auto e = parser_->parser.iterate(input).get(doc); e != SUCCESS) {
        error_ = simdjson::error_message(e);
        return ScanStatus::not_json;
    }
    od::json_type type;
    if (auto e = doc.type().get(type); e != SUCCESS) {
        error_ = simdjson::error_message(e);
        return ScanStatus::not_json;
    }
    Walker walker(text.data(), out);
    if (type != od::json_type::object) {
        // Tell valid JSON of the wrong shape (a batch, a scalar) from garbage: -32600 vs -32700.
        if (auto e = walker.other_root(doc, type); e != SUCCESS) {
            error_ = simdjson::error_message(e);
            return ScanStatus::not_json;
        }
        const char* rest = nullptr;
        if (doc.current_location().get(rest) == SUCCESS) {
            error_ = "trailing content after the JSON value";
            return ScanStatus::not_json;
        }
        error_ = type == od::json_type::array ? "a batch (JSON array)" : "not a JSON object";
        return ScanStatus::not_object;
    }
    if (auto e = walker.top(doc); e != SUCCESS) {
        error_ = simdjson::error_message(e);
        return ScanStatus::not_json;
    }
    const char* location = nullptr;
    if (doc.current_location().get(location) == SUCCESS) {
        error_ = "trailing content after the JSON object";
        return ScanStatus::not_json;
    }
    return ScanStatus::ok;
}

}  // namespace mcpd::wire
