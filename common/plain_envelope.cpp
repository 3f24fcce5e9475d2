#include "common/plain_envelope.h"

#include <charconv>
#include <cstdint>
#include <cstring>

#include "common/json_string.h"
#include "common/plain_tokens.h"

namespace mcpd::wire {

namespace {

using namespace plain;

// Past this nesting the general scanner decides (it allows far more).
constexpr int kPlainMaxDepth = 32;

// The envelope fields, each of which a usual message sets at most once.
enum Field : std::uint32_t {
    kJsonrpc = 1U << 0,
    kId = 1U << 1,
    kMethod = 1U << 2,
    kParams = 1U << 3,
    kResult = 1U << 4,
    kError = 1U << 5,
    kProgressToken = 1U << 6,
    kReportedToken = 1U << 7,
    kRequestId = 1U << 8,
    kSubscriptionId = 1U << 9,
    kRelatedTaskId = 1U << 10,
    kUri = 1U << 11,
    kName = 1U << 12,
    kLevel = 1U << 13,
    kTaskId = 1U << 14,
    kCreatedTaskId = 1U << 15,
    kResultType = 1U << 16,
    kElicitationId = 1U << 17,
    kStatus = 1U << 18,
    kFlatTaskId = 1U << 19,
    kIsError = 1U << 20,
    kMeta = 1U << 21,
    kCode = 1U << 22,
    kMessage = 1U << 23,
};

// The reader passes its cursor from call to call and returns where each read ended (nullptr
// when the message is not plain): a cursor kept in a member is stored and reloaded around every
// write to the envelope, whose strings could alias it.
using Cursor = const char*;

class PlainReader {
public:
    PlainReader(std::string_view text, Envelope& out)
        : base_(text.data()), end_(text.data() + text.size()), out_(out) {}

    bool message() {
        Cursor p = base_;
        // Nearly every message opens with its version: one comparison reads that member.
        constexpr std::string_view kUsualOpening = R"({"jsonrpc":"2.0",)";
        const auto field = [this](const Key& key, Cursor at) { return top_field(key, at); };
        if (static_cast<std::size_t>(end_ - p) > kUsualOpening.size() &&
            std::memcmp(p, kUsualOpening.data(), kUsualOpening.size()) == 0) {
            out_.jsonrpc_ok = true;
            seen_ |= kJsonrpc;
            p = members(p + kUsualOpening.size(), field);
        } else {
            p = space(p);
            p = p < end_ && *p == '{' ? object(p + 1, 1, field) : nullptr;
        }
        if (p == nullptr) return false;
        return space(p) == end_;
    }

private:
    bool once(Field field) {
        if ((seen_ & field) != 0) return false;
        seen_ |= field;
        return true;
    }

    // Compact JSON has no whitespace: that test is made in line, the loop only when there is.
    // At the end it reads the padding, and the loop stops at the end.
    [[gnu::always_inline]] Cursor space(Cursor p) const {
        if (static_cast<unsigned char>(*p) <= ' ') return space_run(p);
        return p;
    }
    [[gnu::noinline]] Cursor space_run(Cursor p) const {
        while (p < end_ && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
        return p;
    }
    // Past `c` at `p`, or nullptr.
    [[gnu::always_inline]] Cursor past(Cursor p, char c) const {
        return p < end_ && *p == c ? p + 1 : nullptr;
    }
    bool is_at(Cursor p, char c) const { return p < end_ && *p == c; }

    Span span_of(Cursor from, Cursor to) const {
        return Span{static_cast<std::uint32_t>(from - base_),
                    static_cast<std::uint32_t>(to - from)};
    }

    // After '{': each member's key and the cursor at its value to `fn`, which reads the value;
    // `depth` that of the object.
    template <typename Fn>
    Cursor object(Cursor p, int depth, Fn&& fn) {
        if (depth > kPlainMaxDepth) return nullptr;
        p = space(p);
        if (is_at(p, '}')) return p + 1;
        return members(p, fn);
    }

    // An object's members from the cursor (at a key, or space before it) past its closing brace.
    template <typename Fn>
    Cursor members(Cursor p, Fn&& fn) {
        p = space(p);
        for (;;) {
            bool escaped = false;
            const Cursor key_end = string(p, escaped);
            // An escaped key is rare; the general scanner unescapes it.
            if (key_end == nullptr || escaped) return nullptr;
            const Key key = Key::of(p + 1, static_cast<std::size_t>(key_end - p - 2));
            p = past(space(key_end), ':');
            if (p == nullptr) return nullptr;
            p = fn(key, space(p));
            if (p == nullptr) return nullptr;
            p = space(p);
            if (is_at(p, ',')) {
                p = space(p + 1);
                continue;
            }
            return past(p, '}');
        }
    }

    // A string token at `p`, quotes included, with its escapes and UTF-8 checked: the cursor
    // past it, or nullptr. `escaped` says whether it has escapes.
    [[gnu::always_inline]] Cursor string(Cursor at, bool& escaped) const {
        if (at >= end_ || *at != '"') return nullptr;
        const auto* p = reinterpret_cast<const unsigned char*>(at) + 1;
        const auto* const end = reinterpret_cast<const unsigned char*>(end_);
        escaped = false;
        for (;;) {
            p = ordinary_run(p, end);
            if (p == end) return nullptr;
            if (*p == '"') break;
            if (*p == '\\') {
                if (end - p < 2) return nullptr;
                escaped = true;
                p += 2;
            } else if (*p >= 0x80) {
                const std::ptrdiff_t length = utf8_sequence(p, end);
                if (length == 0) return nullptr;
                p += length;
            } else {
                return nullptr;  // a raw control character
            }
        }
        const Cursor after = reinterpret_cast<Cursor>(p) + 1;
        if (escaped &&
            !valid_escapes(std::string_view(at + 1, static_cast<std::size_t>(after - at - 2))))
            return nullptr;
        return after;
    }
    Cursor string(Cursor p) const {
        bool escaped = false;
        return string(p, escaped);
    }

    Cursor kept_string(Cursor p, std::string& into) const {
        bool escaped = false;
        const Cursor after = string(p, escaped);
        if (after == nullptr) return nullptr;
        const std::string_view token(p, static_cast<std::size_t>(after - p));
        if (escaped) return decode_string(token, into) ? after : nullptr;
        into.assign(p + 1, token.size() - 2);
        return after;
    }
    Cursor kept_string(Cursor p, Field field, std::string& into) {
        return once(field) ? kept_string(p, into) : nullptr;
    }

    // A number or literal: the bytes up to the next delimiter.
    Cursor scalar_end(Cursor p) const {
        while (p < end_ && !kScalarStops[static_cast<unsigned char>(*p)]) ++p;
        return p;
    }
    std::string_view scalar(Cursor p) const {
        return std::string_view(p, static_cast<std::size_t>(scalar_end(p) - p));
    }

    // An integer token at `p` (-?(0|[1-9][0-9]*), then a delimiter or the end): past it, or
    // nullptr. What `is_integer_token` accepts of the scalar there, read once.
    [[gnu::always_inline]] Cursor integer(Cursor p) const {
        if (p < end_ && *p == '-') ++p;
        if (p >= end_) return nullptr;
        if (*p == '0') {
            ++p;
        } else if (*p >= '1' && *p <= '9') {
            ++p;
            while (p < end_ && *p >= '0' && *p <= '9') ++p;
        } else {
            return nullptr;
        }
        return p == end_ || kScalarStops[static_cast<unsigned char>(*p)] ? p : nullptr;
    }

    // `literal` at `p` as a whole scalar: past it, or nullptr.
    template <std::size_t N>
    Cursor literal(Cursor p, const char (&word)[N]) const {
        constexpr std::size_t length = N - 1;
        if (static_cast<std::size_t>(end_ - p) < length || std::memcmp(p, word, length) != 0)
            return nullptr;
        p += length;
        return p == end_ || kScalarStops[static_cast<unsigned char>(*p)] ? p : nullptr;
    }

    // A string or an integer, where it lies: the tokens mcpd splices.
    Cursor token(Cursor p, Field field, Span& span) {
        if (!once(field)) return nullptr;
        const Cursor after = is_at(p, '"') ? string(p) : integer(p);
        if (after != nullptr) span = span_of(p, after);
        return after;
    }

    Cursor id(Cursor p) {
        Cursor after = nullptr;
        if (is_at(p, '"')) {
            after = string(p);
            out_.id_kind = IdKind::string;
        } else if ((after = integer(p)) != nullptr) {
            out_.id_kind = IdKind::integer;
        } else if ((after = literal(p, "null")) != nullptr) {
            out_.id_kind = IdKind::null;
        }
        if (after != nullptr) out_.id = span_of(p, after);
        return after;
    }

    // Any value, validated and not kept: a string or scalar here, an object or array in a call.
    [[gnu::always_inline]] Cursor value(Cursor p, int depth) {
        if (p == end_) return nullptr;
        switch (*p) {
            case '"':
                return string(p);
            case '{':
            case '[':
                return composite(p, depth);
            case 't':
                return literal(p, "true");
            case 'f':
                return literal(p, "false");
            case 'n':
                return literal(p, "null");
            default:
                // A fraction or an exponent is for the general scanner, which checks its range.
                return integer(p);
        }
    }

    // An object or array at `p`, validated and not kept.
    [[gnu::noinline]] Cursor composite(Cursor p, int depth) {
        if (*p == '{') {
            return object(p + 1, depth + 1,
                          [this, depth](const Key&, Cursor at) { return value(at, depth + 1); });
        }
        if (depth + 1 > kPlainMaxDepth) return nullptr;
        p = space(p + 1);
        if (is_at(p, ']')) return p + 1;
        for (;;) {
            p = value(p, depth + 1);
            if (p == nullptr) return nullptr;
            p = space(p);
            if (is_at(p, ',')) {
                p = space(p + 1);
                continue;
            }
            return past(p, ']');
        }
    }

    // A member of the message itself.
    Cursor top_field(const Key& key, Cursor p) {
        switch (key.text.size()) {
            case 2:
                if (is<"id">(key)) return once(kId) ? id(p) : nullptr;
                break;
            case 5:
                if (is<"error">(key)) {
                    out_.has_error = true;
                    return once(kError) && is_at(p, '{') ? error(p + 1) : nullptr;
                }
                break;
            case 6:
                if (is<"method">(key)) {
                    p = kept_string(p, kMethod, out_.method);
                    out_.has_method = p != nullptr;
                    return p;
                }
                if (is<"params">(key)) {
                    if (!once(kParams)) return nullptr;
                    out_.has_params = true;
                    if (is_at(p, '[')) {
                        out_.params_array = true;
                        return value(p, 1);
                    }
                    return is_at(p, '{') ? params(p + 1) : nullptr;
                }
                if (is<"result">(key)) {
                    out_.has_result = true;
                    return once(kResult) && is_at(p, '{') ? result(p + 1) : nullptr;
                }
                break;
            case 7:
                if (is<"jsonrpc">(key)) return jsonrpc(p);
                break;
            default:
                break;
        }
        return value(p, 1);
    }

    Cursor jsonrpc(Cursor p) {
        bool escaped = false;
        const Cursor after = once(kJsonrpc) ? string(p, escaped) : nullptr;
        if (after == nullptr) return nullptr;
        const std::string_view token(p, static_cast<std::size_t>(after - p));
        if (escaped) return escaped_version(token) ? after : nullptr;
        out_.jsonrpc_ok = is(token, "\"2.0\"");
        return after;
    }
    // A version written with escapes (valid, and never sent): kept out of the usual path.
    [[gnu::noinline]] bool escaped_version(std::string_view token) {
        std::string text;
        if (!decode_string(token, text)) return false;
        out_.jsonrpc_ok = text == "2.0";
        return true;
    }

    Cursor params(Cursor p) {
        return object(p, 2, [this](const Key& key, Cursor at) -> Cursor {
            if (is<"_meta">(key))
                return once(kMeta) && is_at(at, '{') ? meta(at + 1, 3) : nullptr;
            if (is<"progressToken">(key)) return token(at, kReportedToken, out_.reported_token);
            if (is<"requestId">(key)) return token(at, kRequestId, out_.request_id);
            if (is<"uri">(key)) return kept_string(at, kUri, out_.uri);
            if (is<"name">(key)) {
                const Cursor after = once(kName) ? string(at) : nullptr;
                if (after != nullptr) out_.name = span_of(at, after);
                return after;
            }
            if (is<"level">(key)) return kept_string(at, kLevel, out_.level);
            if (is<"taskId">(key)) return kept_string(at, kTaskId, out_.task_id);
            if (is<"elicitationId">(key))
                return kept_string(at, kElicitationId, out_.elicitation_id);
            if (is<"status">(key)) return kept_string(at, kStatus, out_.status);
            if (is<"task">(key)) out_.params_task = true;
            return value(at, 2);
        });
    }

    // params._meta or result._meta, after its '{'.
    Cursor meta(Cursor p, int depth) {
        return object(p, depth, [this, depth](const Key& key, Cursor at) -> Cursor {
            if (is<"progressToken">(key)) return token(at, kProgressToken, out_.progress_token);
            if (is<"io.modelcontextprotocol/subscriptionId">(key))
                return token(at, kSubscriptionId, out_.subscription_id);
            if (is<"io.modelcontextprotocol/related-task">(key)) {
                if (!is_at(at, '{')) return nullptr;
                return object(at + 1, depth + 1, [this, depth](const Key& inner, Cursor in) {
                    if (is<"taskId">(inner)) return token(in, kRelatedTaskId, out_.related_task_id);
                    return value(in, depth + 1);
                });
            }
            if (is<"io.modelcontextprotocol/clientCapabilities">(key))
                out_.meta_client_capabilities = true;
            return value(at, depth);
        });
    }

    Cursor result(Cursor p) {
        out_.result_object = true;
        std::string flat_task_id;
        p = object(p, 2, [&](const Key& key, Cursor at) -> Cursor {
            if (is<"_meta">(key))
                return once(kMeta) && is_at(at, '{') ? meta(at + 1, 3) : nullptr;
            if (is<"resultType">(key)) return kept_string(at, kResultType, out_.result_type);
            if (is<"status">(key)) return kept_string(at, kStatus, out_.status);
            if (is<"taskId">(key)) return kept_string(at, kFlatTaskId, flat_task_id);
            if (is<"task">(key)) {
                if (!is_at(at, '{')) return nullptr;
                return object(at + 1, 3, [this](const Key& inner, Cursor in) {
                    if (is<"taskId">(inner))
                        return kept_string(in, kCreatedTaskId, out_.created_task_id);
                    return value(in, 3);
                });
            }
            if (is<"isError">(key)) {
                if (!once(kIsError)) return nullptr;
                const std::string_view flag = scalar(at);
                out_.is_error = flag == "true";
                return flag == "true" || flag == "false" ? at + flag.size() : nullptr;
            }
            return value(at, 2);
        });
        if (p == nullptr) return nullptr;
        if (out_.result_type == "task" && !flat_task_id.empty()) {
            // Both forms of a task's id in one result: which wins is the general scanner's call.
            if ((seen_ & kCreatedTaskId) != 0) return nullptr;
            out_.created_task_id = flat_task_id;
        }
        return p;
    }

    // JSON-RPC's error object, after its '{': valid with an integer code and a string message.
    Cursor error(Cursor p) {
        bool code_ok = false;
        bool message_ok = false;
        p = object(p, 2, [&](const Key& key, Cursor at) -> Cursor {
            if (is<"message">(key)) {
                if (!once(kMessage)) return nullptr;
                message_ok = is_at(at, '"');
                return value(at, 2);
            }
            if (!is<"code">(key)) return value(at, 2);
            if (!once(kCode)) return nullptr;
            if (is_at(at, '"') || is_at(at, '{') || is_at(at, '[')) return value(at, 2);
            const std::string_view raw = scalar(at);
            const Cursor after = at + raw.size();
            if (!is_integer_token(raw)) {
                return raw == "true" || raw == "false" || raw == "null" ? after : nullptr;
            }
            const auto [end, ec] =
                std::from_chars(raw.data(), raw.data() + raw.size(), out_.error_code);
            code_ok = ec == std::errc() && end == raw.data() + raw.size();
            return after;
        });
        out_.error_valid = code_ok && message_ok;
        return p;
    }

    const char* const base_;
    const char* const end_;
    Envelope& out_;
    std::uint32_t seen_ = 0;
};

}  // namespace

bool scan_plain(PaddedText padded, Envelope& out) {
    const std::string_view text = padded.text;
    if (text.size() > kPlainScanMaxBytes) return false;
    out.clear();
    return PlainReader(text, out).message();
}

}  // namespace mcpd::wire
