#include "common/plain_envelope.h"

#include <array>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "common/json_string.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mcpd::wire {

namespace {

// Past this nesting the general scanner decides (it allows far more).
constexpr int kPlainMaxDepth = 32;


// Byte classes: what ends a string's run of ordinary bytes (where SSE2 does not find it), and
// what ends a scalar token.
#if !defined(__SSE2__)
constexpr std::array<bool, 256> string_stops() {
    std::array<bool, 256> stops{};
    for (int c = 0; c < 0x20; ++c) stops[static_cast<std::size_t>(c)] = true;
    for (int c = 0x80; c < 0x100; ++c) stops[static_cast<std::size_t>(c)] = true;
    stops['"'] = stops['\\'] = true;
    return stops;
}
constexpr std::array<bool, 256> kStringStops = string_stops();
#endif
constexpr std::array<bool, 256> scalar_stops() {
    std::array<bool, 256> stops{};
    for (const char c : std::string_view(" \t\n\r,:[]{}\"")) stops[static_cast<unsigned char>(c)] = true;
    return stops;
}
constexpr std::array<bool, 256> kScalarStops = scalar_stops();

// The end of the run of ordinary string bytes from `p`: at the first quote, backslash, control
// character or non-ASCII byte, or `end`. Sixteen bytes at a time where SSE2 is (every x86-64),
// up to the end: the bytes after it are the padding, and a stop found there counts as `end`.
[[gnu::always_inline]] inline const unsigned char* ordinary_run(const unsigned char* p,
                                                              const unsigned char* const end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(' ');
    for (; p < end; p += 16) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        // Signed, a non-ASCII byte is negative: one compare finds it and the control characters.
        const __m128i stops = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)),
            _mm_cmplt_epi8(bytes, space));
        const auto mask = static_cast<unsigned>(_mm_movemask_epi8(stops));
        if (mask != 0) {
            const unsigned char* const stop = p + std::countr_zero(mask);
            return stop < end ? stop : end;
        }
    }
    return end;
#else
    while (p < end && !kStringStops[*p]) ++p;
    return p;
#endif
}

// The length of the RFC 3629 UTF-8 sequence at `p` (no overlong forms, no surrogates, nothing
// past U+10FFFF), or 0 when there is none.
std::ptrdiff_t utf8_sequence(const unsigned char* p, const unsigned char* end) {
    const unsigned lead = *p;
    std::ptrdiff_t more = 0;
    std::uint32_t code_point = 0;
    std::uint32_t least = 0;
    if ((lead & 0xe0) == 0xc0) {
        more = 1, code_point = lead & 0x1f, least = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
        more = 2, code_point = lead & 0x0f, least = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
        more = 3, code_point = lead & 0x07, least = 0x10000;
    } else {
        return 0;
    }
    if (end - p <= more) return 0;
    for (std::ptrdiff_t i = 1; i <= more; ++i) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        code_point = code_point << 6 | (p[i] & 0x3fU);
    }
    if (code_point < least || code_point > 0x10ffff || (code_point >= 0xd800 && code_point <= 0xdfff))
        return 0;
    return more + 1;
}

// `key == literal`, by length first (most keys differ in length from most literals); a short
// literal is compared as one integer, without a call to memcmp.
template <std::size_t N>
[[gnu::always_inline]] inline bool is(std::string_view key, const char (&literal)[N]) {
    constexpr std::size_t length = N - 1;
    if (key.size() != length) return false;
    if constexpr (length <= sizeof(std::uint64_t)) {
        std::uint64_t a = 0;
        std::uint64_t b = 0;
        std::memcpy(&a, key.data(), length);
        std::memcpy(&b, literal, length);
        return a == b;
    } else {
        return std::memcmp(key.data(), literal, length) == 0;
    }
}

// The envelope fields, each of which a usual message sets at most once.
enum Field : std::uint32_t {
    kJsonrpc = 1U << 0, kId = 1U << 1, kMethod = 1U << 2, kParams = 1U << 3, kResult = 1U << 4,
    kError = 1U << 5, kProgressToken = 1U << 6, kReportedToken = 1U << 7, kRequestId = 1U << 8,
    kSubscriptionId = 1U << 9, kRelatedTaskId = 1U << 10, kUri = 1U << 11, kName = 1U << 12,
    kLevel = 1U << 13, kTaskId = 1U << 14, kCreatedTaskId = 1U << 15, kResultType = 1U << 16,
    kElicitationId = 1U << 17, kStatus = 1U << 18, kFlatTaskId = 1U << 19, kIsError = 1U << 20,
    kMeta = 1U << 21, kCode = 1U << 22, kMessage = 1U << 23,
};

class PlainReader {
public:
    PlainReader(std::string_view text, Envelope& out)
        : base_(text.data()), p_(text.data()), end_(text.data() + text.size()), out_(out) {}

    bool message() {
        const auto field = [this](std::string_view key) {
            if (is(key, "jsonrpc")) {
                std::string_view token;
                bool escaped = false;
                if (!once(kJsonrpc) || !string(token, escaped)) return false;
                if (!escaped) {
                    out_.jsonrpc_ok = is(token, "\"2.0\"");
                    return true;
                }
                std::string text;
                if (!decode_string(token, text)) return false;
                out_.jsonrpc_ok = text == "2.0";
                return true;
            }
            if (is(key, "id")) return once(kId) && id();
            if (is(key, "method")) {
                if (!once(kMethod) || !kept_string(out_.method)) return false;
                out_.has_method = true;
                return true;
            }
            if (is(key, "params")) {
                if (!once(kParams)) return false;
                out_.has_params = true;
                if (at('[')) {
                    out_.params_array = true;
                    return value(1);
                }
                return next_is('{') && params();
            }
            if (is(key, "result")) {
                out_.has_result = true;
                return once(kResult) && next_is('{') && result();
            }
            if (is(key, "error")) {
                out_.has_error = true;
                return once(kError) && next_is('{') && error();
            }
            return value(1);
        };
        bool read = false;
        // Nearly every message opens with its version: one comparison reads that member.
        constexpr std::string_view kUsualOpening = R"({"jsonrpc":"2.0",)";
        if (static_cast<std::size_t>(end_ - p_) > kUsualOpening.size() &&
            std::memcmp(p_, kUsualOpening.data(), kUsualOpening.size()) == 0) {
            out_.jsonrpc_ok = true;
            seen_ |= kJsonrpc;
            p_ += kUsualOpening.size();
            read = members(field);
        } else {
            skip_space();
            read = next_is('{') && object(1, field);
        }
        skip_space();
        return read && p_ == end_;
    }

private:
    bool once(Field field) {
        if ((seen_ & field) != 0) return false;
        seen_ |= field;
        return true;
    }

    // Compact JSON has no whitespace: that test is made in line, the loop only when there is.
    // At the end it reads the padding, and the loop stops at the end.
    [[gnu::always_inline]] void skip_space() {
        if (static_cast<unsigned char>(*p_) <= ' ') skip_space_run();
    }
    [[gnu::noinline]] void skip_space_run() {
        // The cursor lives in a local: a store through a char pointer could alias the member.
        const char* p = p_;
        while (p < end_ && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
        p_ = p;
    }
    bool at(char c) const { return p_ < end_ && *p_ == c; }
    bool next_is(char c) {
        if (!at(c)) return false;
        ++p_;
        return true;
    }

    Span span_of(std::string_view token) const {
        return Span{static_cast<std::uint32_t>(token.data() - base_),
                    static_cast<std::uint32_t>(token.size())};
    }

    // After '{': each member's key to `fn`, which reads the value; `depth` that of the object.
    template <typename Fn>
    bool object(int depth, Fn&& fn) {
        if (depth > kPlainMaxDepth) return false;
        skip_space();
        if (next_is('}')) return true;
        return members(fn);
    }

    // An object's members from the cursor (at a key, or space before it) to its closing brace.
    template <typename Fn>
    bool members(Fn&& fn) {
        skip_space();
        for (;;) {
            std::string_view key;
            bool escaped = false;
            // An escaped key is rare; the general scanner unescapes it.
            if (!string(key, escaped) || escaped) return false;
            key = key.substr(1, key.size() - 2);
            skip_space();
            if (!next_is(':')) return false;
            skip_space();
            if (!fn(key)) return false;
            skip_space();
            if (next_is(',')) {
                skip_space();
                continue;
            }
            return next_is('}');
        }
    }

    // A string token at the cursor, quotes included, with its escapes and UTF-8 checked;
    // `escaped` says whether it has escapes.
    [[gnu::always_inline]] bool string(std::string_view& token, bool& escaped) {
        const auto* p = reinterpret_cast<const unsigned char*>(p_);
        const auto* const end = reinterpret_cast<const unsigned char*>(end_);
        if (p == end || *p != '"') return false;
        const char* const start = p_;
        ++p;
        escaped = false;
        for (;;) {
            p = ordinary_run(p, end);
            if (p == end) return false;
            if (*p == '"') break;
            if (*p == '\\') {
                if (end - p < 2) return false;
                escaped = true;
                p += 2;
            } else if (*p >= 0x80) {
                const std::ptrdiff_t length = utf8_sequence(p, end);
                if (length == 0) return false;
                p += length;
            } else {
                return false;  // a raw control character
            }
        }
        ++p;
        p_ = reinterpret_cast<const char*>(p);
        token = std::string_view(start, static_cast<std::size_t>(p_ - start));
        return !escaped || valid_escapes(token.substr(1, token.size() - 2));
    }

    bool string(std::string_view& token) {
        bool escaped = false;
        return string(token, escaped);
    }

    bool kept_string(std::string& into) {
        std::string_view token;
        bool escaped = false;
        if (!string(token, escaped)) return false;
        if (escaped) return decode_string(token, into);
        into.assign(token.data() + 1, token.size() - 2);
        return true;
    }

    bool kept_string(Field field, std::string& into) { return once(field) && kept_string(into); }

    // A number or literal: the bytes up to the next delimiter.
    std::string_view scalar() {
        const char* const start = p_;
        const char* p = p_;
        while (p < end_ && !kScalarStops[static_cast<unsigned char>(*p)]) ++p;
        p_ = p;
        return std::string_view(start, static_cast<std::size_t>(p - start));
    }

    // A string or an integer, where it lies: the tokens mcpd splices.
    bool token(Field field, Span& span) {
        if (!once(field)) return false;
        std::string_view token;
        if (at('"')) {
            if (!string(token)) return false;
        } else {
            token = scalar();
            if (!is_integer_token(token)) return false;
        }
        span = span_of(token);
        return true;
    }

    bool id() {
        std::string_view token;
        if (at('"')) {
            if (!string(token)) return false;
            out_.id_kind = IdKind::string;
        } else {
            token = scalar();
            if (token == "null") {
                out_.id_kind = IdKind::null;
            } else if (is_integer_token(token)) {
                out_.id_kind = IdKind::integer;
            } else {
                return false;
            }
        }
        out_.id = span_of(token);
        return true;
    }

    // Any value, validated and not kept.
    bool value(int depth) {
        if (p_ == end_) return false;
        switch (*p_) {
            case '{':
                ++p_;
                return object(depth + 1, [this, depth](std::string_view) { return value(depth + 1); });
            case '[': {
                ++p_;
                if (depth + 1 > kPlainMaxDepth) return false;
                skip_space();
                if (next_is(']')) return true;
                for (;;) {
                    if (!value(depth + 1)) return false;
                    skip_space();
                    if (next_is(',')) {
                        skip_space();
                        continue;
                    }
                    return next_is(']');
                }
            }
            case '"': {
                std::string_view token;
                return string(token);
            }
            default: {
                const std::string_view token = scalar();
                // A fraction or an exponent is for the general scanner, which checks its range.
                return token == "true" || token == "false" || token == "null" || is_integer_token(token);
            }
        }
    }

    bool params() {
        return object(2, [this](std::string_view key) {
            if (is(key, "_meta")) return once(kMeta) && next_is('{') && meta(3);
            if (is(key, "progressToken")) return token(kReportedToken, out_.reported_token);
            if (is(key, "requestId")) return token(kRequestId, out_.request_id);
            if (is(key, "uri")) return kept_string(kUri, out_.uri);
            if (is(key, "name")) {
                std::string_view name;
                if (!once(kName) || !string(name)) return false;
                out_.name = span_of(name);
                return true;
            }
            if (is(key, "level")) return kept_string(kLevel, out_.level);
            if (is(key, "taskId")) return kept_string(kTaskId, out_.task_id);
            if (is(key, "elicitationId")) return kept_string(kElicitationId, out_.elicitation_id);
            if (is(key, "status")) return kept_string(kStatus, out_.status);
            if (is(key, "task")) out_.params_task = true;
            return value(2);
        });
    }

    // params._meta or result._meta.
    bool meta(int depth) {
        return object(depth, [this, depth](std::string_view key) {
            if (is(key, "progressToken")) return token(kProgressToken, out_.progress_token);
            if (is(key, "io.modelcontextprotocol/subscriptionId")) return token(kSubscriptionId, out_.subscription_id);
            if (is(key, "io.modelcontextprotocol/related-task")) {
                return next_is('{') && object(depth + 1, [this, depth](std::string_view inner) {
                           if (is(inner, "taskId")) return token(kRelatedTaskId, out_.related_task_id);
                           return value(depth + 1);
                       });
            }
            if (is(key, "io.modelcontextprotocol/clientCapabilities")) out_.meta_client_capabilities = true;
            return value(depth);
        });
    }

    bool result() {
        out_.result_object = true;
        std::string flat_task_id;
        const bool read = object(2, [&](std::string_view key) {
            if (is(key, "_meta")) return once(kMeta) && next_is('{') && meta(3);
            if (is(key, "resultType")) return kept_string(kResultType, out_.result_type);
            if (is(key, "status")) return kept_string(kStatus, out_.status);
            if (is(key, "taskId")) return kept_string(kFlatTaskId, flat_task_id);
            if (is(key, "task")) {
                return next_is('{') && object(3, [this](std::string_view inner) {
                           if (is(inner, "taskId")) return kept_string(kCreatedTaskId, out_.created_task_id);
                           return value(3);
                       });
            }
            if (is(key, "isError")) {
                if (!once(kIsError)) return false;
                const std::string_view flag = scalar();
                out_.is_error = flag == "true";
                return flag == "true" || flag == "false";
            }
            return value(2);
        });
        if (!read) return false;
        if (out_.result_type == "task" && !flat_task_id.empty()) {
            // Both forms of a task's id in one result: which wins is the general scanner's call.
            if ((seen_ & kCreatedTaskId) != 0) return false;
            out_.created_task_id = flat_task_id;
        }
        return true;
    }

    // JSON-RPC's error object: valid with an integer code and a string message.
    bool error() {
        bool code_ok = false;
        bool message_ok = false;
        const bool read = object(2, [&](std::string_view key) {
            if (is(key, "message")) {
                if (!once(kMessage)) return false;
                message_ok = at('"');
                return value(2);
            }
            if (key != "code") return value(2);
            if (!once(kCode)) return false;
            if (at('"') || at('{') || at('[')) return value(2);
            const std::string_view raw = scalar();
            if (!is_integer_token(raw)) return raw == "true" || raw == "false" || raw == "null";
            const auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), out_.error_code);
            code_ok = ec == std::errc() && end == raw.data() + raw.size();
            return true;
        });
        out_.error_valid = code_ok && message_ok;
        return read;
    }

    const char* const base_;
    const char* p_;
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
