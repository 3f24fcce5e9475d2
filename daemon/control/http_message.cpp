#include "daemon/control/http_message.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "common/ascii.h"
#include "daemon/control/http_chars.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mcpd {

namespace {

using http_chars::has_control_before_slack;
using http_chars::is_token;
using http_chars::kTokenLower;
using http_chars::trimmed;

// Room kept after the head's copy, so that a name or value in it can be read sixteen bytes
// at a time past its end without leaving the string's memory (has_control_before_slack).
constexpr std::size_t kHeadSlack = 32;
// The longest name lowered by blocks: longer than any known header's (20 bytes), and the blocks
// of sixteen reach at most fifteen bytes past it, within the head's line and slack.
constexpr std::size_t kLoweredByBlocks = 32;

// A header name of at most kLoweredByBlocks bytes lying in a string with kHeadSlack bytes of
// room after it, lowercased where it lies when it is one of kKnownHeaders in any case (the
// usual case): then it is a token too, and its slot is returned. kKnownHeaders.size() for any
// other name, which is then checked a byte at a time (lowering keeps a byte a token or not).
std::size_t lower_known_name(char* name, std::size_t size) {
#if defined(__SSE2__)
    if (size > kLoweredByBlocks) return kKnownHeaders.size();
    const __m128i before_a = _mm_set1_epi8('A' - 1);
    const __m128i after_z = _mm_set1_epi8('Z' + 1);
    const __m128i case_bit = _mm_set1_epi8(0x20);
    const __m128i offsets = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (std::size_t i = 0; i < size; i += 16) {
        auto* const at = reinterpret_cast<__m128i*>(name + i);
        const __m128i bytes = _mm_loadu_si128(at);
        // Only the name's own bytes: what follows it (the colon, the value) is written back
        // as it was.
        const __m128i inside =
            _mm_cmplt_epi8(offsets, _mm_set1_epi8(static_cast<char>(size - i)));
        const __m128i upper = _mm_and_si128(
            inside, _mm_and_si128(_mm_cmpgt_epi8(bytes, before_a), _mm_cmplt_epi8(bytes, after_z)));
        _mm_storeu_si128(at, _mm_or_si128(bytes, _mm_and_si128(upper, case_bit)));
    }
    return known_header(std::string_view(name, size));
#else
    (void)name, (void)size;
    return kKnownHeaders.size();
#endif
}

// The next line of `text` without its CR LF or LF; `text` moves past it. `ended` tells
// whether it had a line end at all.
[[gnu::always_inline]] inline std::string_view next_line(std::string_view& text, bool& ended) {
    const char* const start = text.data();
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', text.size()));
    ended = newline != nullptr;
    if (!ended) {
        const std::string_view line = text;
        text = {};
        return line;
    }
    std::size_t size = static_cast<std::size_t>(newline - start);
    text = std::string_view(newline + 1, text.size() - size - 1);
    if (size > 0 && start[size - 1] == '\r') --size;
    return std::string_view(start, size);
}

Failure bad(std::string_view why) {
    return permanent_failure("malformed HTTP request: " + std::string(why));
}

std::optional<Failure> read_request_line(std::string_view line, HttpRequestHead& head) {
    const std::size_t first = line.find(' ');
    const std::size_t last = line.rfind(' ');
    if (first == std::string_view::npos || first == last)
        return bad("the request line is not METHOD TARGET HTTP/1.x");
    const std::string_view method = line.substr(0, first);
    const std::string_view target = line.substr(first + 1, last - first - 1);
    const std::string_view version = line.substr(last + 1);
    if (!is_token(method)) return bad("the method is not a token");
    if (target.empty() || target.front() != '/')
        return bad("the request target is not a path starting with '/'");
    // Visible ASCII only: a space, a control character or a raw byte over 0x7F is refused.
    if (!std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7F; }))
        return bad(
            "the request target holds a space, a control character or a byte that is not ASCII");
    if (target.find('#') != std::string_view::npos)
        return bad("the request target holds a fragment");
    if (version != "HTTP/1.1" && version != "HTTP/1.0")
        return bad("the version is not HTTP/1.1 or HTTP/1.0");
    const std::size_t question = target.find('?');
    head.method = method;
    head.path = target.substr(0, question);
    head.query =
        question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
    head.minor = version.back() - '0';
    return std::nullopt;
}

bool is_singleton(std::string_view name) {
    return std::find(kSingletonHeaders.begin(), kSingletonHeaders.end(), name) !=
           kSingletonHeaders.end();
}

// Whether the comma-separated list `value` holds the token `wanted` (case ignored).
bool lists(std::string_view value, std::string_view wanted) {
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        if (ascii_equal_ignoring_case(trimmed(value.substr(0, comma)), wanted)) return true;
        value.remove_prefix(comma == std::string_view::npos ? value.size() : comma + 1);
    }
    return false;
}

// Content-Length, Transfer-Encoding and Connection, once every header is read.
std::optional<Failure> read_framing(HttpRequestHead& head) {
    const auto length = head.header("content-length");
    const auto coding = head.header("transfer-encoding");
    if (length && coding) return bad("Content-Length and Transfer-Encoding were both sent");
    if (length) {
        std::size_t value = 0;
        const auto [end, error] =
            std::from_chars(length->data(), length->data() + length->size(), value);
        if (length->empty() ||
            !std::all_of(length->begin(), length->end(),
                         [](char c) { return c >= '0' && c <= '9'; }) ||
            error != std::errc() || end != length->data() + length->size())
            return bad("Content-Length is not a number of bytes");
        head.content_length = value;
    }
    if (coding) {
        if (!ascii_equal_ignoring_case(*coding, "chunked"))
            return bad("the only Transfer-Encoding read is chunked");
        if (head.minor == 0) return bad("Transfer-Encoding was sent with HTTP/1.0");
        head.chunked = true;
    }
    const auto connection = head.header("connection");
    if (head.minor == 0)
        head.keep_alive =
            connection && lists(*connection, "keep-alive") && !lists(*connection, "close");
    else
        head.keep_alive = !connection || !lists(*connection, "close");
    return std::nullopt;
}

}  // namespace

std::string_view HttpRequestHead::Field::name(const std::string& text) const {
    return std::string_view(text).substr(name_at, name_size);
}

std::size_t HttpRequestHead::index_of(std::string_view name) const {
    // Asked a dozen times a request: lengths first, then the bytes, no views made on the way.
    for (std::size_t i = 0; i < fields_.size(); ++i) {
        const Field& field = fields_[i];
        if (field.name_size == name.size() &&
            std::memcmp(text_.data() + field.name_at, name.data(), name.size()) == 0)
            return i;
    }
    return fields_.size();
}

std::vector<std::pair<std::string_view, std::string_view>> HttpRequestHead::headers() const {
    std::vector<std::pair<std::string_view, std::string_view>> out;
    for (const Field& field : fields_) out.emplace_back(field.name(text_), field.value(text_));
    return out;
}

Result<HttpRequestHead> parse_request_head(std::string_view text) {
    HttpRequestHead head;
    if (Result<Done> read = read_request_head(text, head); !read) return read.failure();
    return head;
}

void HttpRequestHead::clear() {
    method.clear();
    path.clear();
    query.clear();
    minor = 1;
    content_length.reset();
    chunked = false;
    keep_alive = true;
    text_.clear();
    fields_.clear();
    known_ = absent_slots();
}

Result<Done> read_request_head(std::string_view text, HttpRequestHead& head) {
    head.clear();
    bool ended = false;
    if (auto failure = read_request_line(next_line(text, ended), head)) return *failure;
    // The header lines are kept in one copy, their names lowercased where they lie, and each
    // header is where its name and value are in it: no string per header.
    head.text_.reserve(text.size() + kHeadSlack);
    head.text_.assign(text);
    head.fields_.reserve(12);  // what a client usually sends, without a reallocation
    std::string_view rest(head.text_);
    while (true) {
        const std::string_view line = next_line(rest, ended);
        if (!ended) return bad("the head does not end with an empty line");
        if (line.empty()) break;
        // A folded line continues a header in a way peers read differently.
        if (line.front() == ' ' || line.front() == '\t')
            return bad("a header line is folded (starts with a space or tab)");
        const auto* colon_at = static_cast<const char*>(std::memchr(line.data(), ':', line.size()));
        if (colon_at == nullptr) return bad("a header line has no ':'");
        const auto colon = static_cast<std::size_t>(colon_at - line.data());
        const auto at = static_cast<std::size_t>(line.data() - head.text_.data());
        if (colon == 0) return bad("a header name holds a character outside the token set");
        std::size_t known = lower_known_name(head.text_.data() + at, colon);
        if (known == kKnownHeaders.size()) {
            for (std::size_t i = at; i < at + colon; ++i) {
                const char lower = kTokenLower[static_cast<unsigned char>(head.text_[i])];
                if (lower == 0) return bad("a header name holds a character outside the token set");
                head.text_[i] = lower;
            }
        }
        const std::string_view name = line.substr(0, colon);
        const std::string_view value = trimmed(line.substr(colon + 1));
        if (has_control_before_slack(value)) return bad("a header value holds a control character");
        // Peers disagree on whether "5 " is a length: refused rather than read as 5.
        if (name == "content-length" && (line.back() == ' ' || line.back() == '\t'))
            return bad("Content-Length is not a number of bytes");
        // A name not lowered as a known one may still be one (over 32 bytes it is not).
        if (known == kKnownHeaders.size()) known = known_header(name);
        const std::size_t same =
            known < head.known_.size()
                ? std::min<std::size_t>(head.known_[known], head.fields_.size())
                : head.index_of(name);
        if (same == head.fields_.size()) {
            if (known < head.known_.size()) head.known_[known] = static_cast<std::uint32_t>(same);
            head.fields_.push_back(HttpRequestHead::Field{
                at, colon, static_cast<std::size_t>(value.data() - head.text_.data()),
                value.size()});
        } else if (is_singleton(name)) {
            return bad("the header " + std::string(name) + " was sent twice");
        } else if (!value.empty()) {
            // Joined after the lines (rare): built aside, as text_ may move as it grows.
            HttpRequestHead::Field& field = head.fields_[same];
            std::string joined(field.value(head.text_));
            if (!joined.empty()) joined += ", ";
            joined += value;
            const auto rest_at = static_cast<std::size_t>(rest.data() - head.text_.data());
            field.value_at = head.text_.size();
            field.value_size = joined.size();
            head.text_.reserve(head.text_.size() + joined.size() + kHeadSlack);
            head.text_ += joined;
            rest = std::string_view(head.text_).substr(rest_at, rest.size());
        }
    }
    if (auto failure = read_framing(head)) return *failure;
    return Done{};
}

std::size_t request_head_end(std::string_view received, std::size_t from) {
    // A line end followed by an empty line (LF, or CR LF), as parse_request_head reads lines.
    for (std::size_t at = received.find('\n', from); at != std::string_view::npos;
         at = received.find('\n', at + 1)) {
        if (at + 1 < received.size() && received[at + 1] == '\n') return at + 2;
        if (at + 2 < received.size() && received[at + 1] == '\r' && received[at + 2] == '\n')
            return at + 3;
    }
    return std::string_view::npos;
}

namespace {

// The part of `text` up to the first `separator` outside a quoted string (all of it when there
// is none); `text` moves past that separator, and is null once the last part is taken.
std::string_view next_part(std::string_view& text, bool& more, char separator) {
    if (text.find('"') == std::string_view::npos) {
        // No quoted string (the usual case): the separator is found as any byte is.
        const std::size_t at = text.find(separator);
        const std::string_view part = text.substr(0, at);
        if (at == std::string_view::npos) {
            text = {};
            more = false;
        } else {
            text.remove_prefix(at + 1);
        }
        return part;
    }
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (quoted && text[i] == '\\') {
            ++i;  // the escaped character, whatever it is
        } else if (text[i] == '"') {
            quoted = !quoted;
        } else if (!quoted && text[i] == separator) {
            const std::string_view part = text.substr(0, i);
            text.remove_prefix(i + 1);
            return part;
        }
    }
    const std::string_view part = text;
    text = {};
    more = false;
    return part;
}

// A qvalue in thousandths: "0" to "0.999", "1" to "1.000"; nothing when malformed.
std::optional<int> thousandths(std::string_view text) {
    if (text.empty() || (text[0] != '0' && text[0] != '1')) return std::nullopt;
    const int whole = text[0] - '0';
    int fraction = 0;
    if (text.size() > 1) {
        if (text[1] != '.' || text.size() > 5) return std::nullopt;
        int scale = 100;
        for (const char c : text.substr(2)) {
            if (c < '0' || c > '9') return std::nullopt;
            fraction += (c - '0') * scale;
            scale /= 10;
        }
    }
    if (whole == 1 && fraction != 0) return std::nullopt;
    return whole * 1000 + fraction;
}

// How closely `range` ("type/subtype") matches `media`: 3 the type itself, 2 type/*, 1 */*,
// 0 not at all (or not a media range).
int match_level(std::string_view range, std::string_view media) {
    const std::size_t slash = range.find('/');
    const std::size_t media_slash = media.find('/');
    if (slash == std::string_view::npos || media_slash == std::string_view::npos) return 0;
    const std::string_view type = range.substr(0, slash);
    const std::string_view subtype = range.substr(slash + 1);
    if (!is_token(type) || !is_token(subtype)) return 0;
    if (type == "*") return subtype == "*" ? 1 : 0;
    if (!ascii_equal_ignoring_case(type, media.substr(0, media_slash))) return 0;
    if (subtype == "*") return 2;
    return ascii_equal_ignoring_case(subtype, media.substr(media_slash + 1)) ? 3 : 0;
}

}  // namespace

bool accepts(std::optional<std::string_view> accept, std::string_view media) {
    if (!accept) return false;
    int best_level = 0;
    int best_q = 0;
    std::string_view elements = *accept;
    for (bool more_elements = true; more_elements;) {
        std::string_view parts = next_part(elements, more_elements, ',');
        bool more_parts = true;
        const int level = match_level(trimmed(next_part(parts, more_parts, ';')), media);
        if (level == 0 || level < best_level) continue;
        std::optional<int> q = 1000;
        while (more_parts) {
            const std::string_view parameter = trimmed(next_part(parts, more_parts, ';'));
            const std::size_t equals = parameter.find('=');
            if (ascii_equal_ignoring_case(trimmed(parameter.substr(0, equals)), "q"))
                q = equals == std::string_view::npos
                        ? std::nullopt
                        : thousandths(trimmed(parameter.substr(equals + 1)));
        }
        if (!q) continue;  // a range with a malformed weight counts for nothing
        best_q = level > best_level ? *q : std::max(best_q, *q);
        best_level = level;
    }
    return best_level > 0 && best_q > 0;
}

std::optional<std::string_view> bearer_credentials(std::string_view authorization) {
    const std::size_t space = authorization.find(' ');
    if (space == std::string_view::npos ||
        !ascii_equal_ignoring_case(authorization.substr(0, space), "Bearer"))
        return std::nullopt;
    std::string_view credentials = authorization.substr(space + 1);
    while (credentials.starts_with(' ')) credentials.remove_prefix(1);
    if (credentials.empty()) return std::nullopt;
    return credentials;
}

}  // namespace mcpd
