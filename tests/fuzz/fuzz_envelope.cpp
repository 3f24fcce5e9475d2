// Fuzz target: the envelope scanner and splice (common/json_envelope).
//
// Any bytes. Invariants: no crash; the text is never changed; whenever the plain pass
// (plain_envelope) accepts a message, simdjson's scanner accepts it too with the very same
// envelope; a second scan of the same text agrees with the first, and a scanner with a small limit agrees whenever the text fits it;
// every span lies inside the text; an id is a whole string or integer token as its kind says;
// splicing new tokens into the rewritable fields and scanning again finds exactly the new
// tokens with everything else unchanged, as Envelope::after_splice says without a scan, and splicing the old ones back restores the text.
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_envelope.h"
#include "common/plain_envelope.h"
#include "fuzz_input.h"

namespace {

using namespace mcpd::wire;

constexpr std::size_t kSmallLimit = 256;

// JSON's integer grammar, written here apart from the scanners' as the oracle they are held to.
bool integer_token_oracle(std::string_view token) {
    if (!token.empty() && token.front() == '-') token.remove_prefix(1);
    if (token.empty() || (token.front() == '0' && token.size() > 1)) return false;
    for (const char c : token) {
        if (c < '0' || c > '9') return false;
    }
    return true;
}

bool is_string_token(std::string_view token) {
    return token.size() >= 2 && token.front() == '"' && token.back() == '"';
}

// JSON's number grammar: an integer, then an optional fraction and exponent.
bool is_number_token(std::string_view token) {
    std::size_t i = token.starts_with('-') ? 1 : 0;
    const auto digits = [&] {
        const std::size_t from = i;
        while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i;
        return i - from;
    };
    const std::size_t whole = digits();
    if (whole == 0 || (whole > 1 && token[i - whole] == '0')) return false;
    if (i < token.size() && token[i] == '.') {
        ++i;
        if (digits() == 0) return false;
    }
    if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
        ++i;
        if (i < token.size() && (token[i] == '+' || token[i] == '-')) ++i;
        if (digits() == 0) return false;
    }
    return i == token.size();
}

// A token a multiplexer may replace byte for byte: a whole string or integer.
bool is_scalar_token(std::string_view token) {
    return is_string_token(token) || integer_token_oracle(token);
}

bool inside(const Span& span, std::string_view text) {
    return static_cast<std::uint64_t>(span.offset) + span.length <= text.size();
}

// The fields a multiplexer rewrites, by pointer so one list serves every envelope.
struct Field {
    const char* name;
    Span Envelope::*span;
};
constexpr Field kFields[] = {
    {"id", &Envelope::id},
    {"progress token", &Envelope::progress_token},
    {"reported token", &Envelope::reported_token},
    {"requestId", &Envelope::request_id},
    {"subscriptionId", &Envelope::subscription_id},
    {"related task", &Envelope::related_task_id},
    {"name", &Envelope::name},  // a group renames tools: strings only
};

// Whether the field holds a token that may be replaced; checks what its envelope promises.
bool rewritable(const Envelope& e, const Field& field, std::string_view text) {
    const Span& span = e.*field.span;
    if (span.empty()) return false;
    const std::string_view token = span.in(text);
    if (field.span == &Envelope::id) {
        if (e.id_kind == IdKind::string)
            FUZZ_CHECK(is_string_token(token), "a string id is not a string token");
        if (e.id_kind == IdKind::integer)
            FUZZ_CHECK(integer_token_oracle(token), "an integer id is not an integer token");
        return e.id_kind == IdKind::string || e.id_kind == IdKind::integer;
    }
    if (field.span == &Envelope::progress_token && e.progress_token_valid) {
        FUZZ_CHECK(is_string_token(token) || is_number_token(token),
                   "a valid progress token is not a string or number token");
    }
    return is_scalar_token(token);
}

// Replace every rewritable field at once, rescan, check, and put the old tokens back.
void check_splice(std::string& text, const Envelope& original, EnvelopeScanner& scanner,
                  bool as_strings) {
    std::vector<Replacement> changes;
    std::vector<std::string> tokens;
    std::vector<const Field*> fields;
    tokens.reserve(std::size(kFields));
    for (const Field& field : kFields) {
        if (!rewritable(original, field, text)) continue;
        if (field.span == &Envelope::name && !as_strings) continue;
        const std::size_t n = tokens.size();
        tokens.push_back(as_strings ? "\"mcpd-r" + std::to_string(n) + "\""
                                    : std::to_string(18446744073709551000u + n));
        fields.push_back(&field);
        changes.push_back({original.*field.span, tokens.back()});
    }
    if (changes.empty()) return;
    for (std::size_t i = 0; i < changes.size(); ++i) {
        for (std::size_t j = i + 1; j < changes.size(); ++j) {
            const Span& a = changes[i].span;
            const Span& b = changes[j].span;
            FUZZ_CHECK(a.offset + a.length <= b.offset || b.offset + b.length <= a.offset,
                       std::string("the spans of ") + fields[i]->name + " and " + fields[j]->name +
                           " overlap");
        }
    }
    std::string spliced;
    splice(text, changes, spliced);
    Envelope after;
    FUZZ_CHECK(scanner.scan(spliced, after) == ScanStatus::ok,
               "a spliced message no longer scans: " + spliced);
    Envelope shifted = original;
    shifted.after_splice(changes);
    FUZZ_CHECK(shifted == after, "after_splice reads the spliced message otherwise than a scan: " + spliced);
    std::vector<Replacement> back;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        const Span& span = after.*fields[i]->span;
        FUZZ_CHECK(inside(span, spliced),
                   std::string("span of ") + fields[i]->name + " outside the text");
        FUZZ_CHECK(span.in(spliced) == tokens[i], std::string("after splicing, ") +
                                                      fields[i]->name +
                                                      " is not the new token: " + spliced);
        back.push_back({span, (original.*fields[i]->span).in(text)});
    }
    if (original.id_kind == IdKind::string || original.id_kind == IdKind::integer) {
        FUZZ_CHECK(after.id_kind == (as_strings ? IdKind::string : IdKind::integer),
                   "the new id has the wrong kind");
    }
    FUZZ_CHECK(after.jsonrpc_ok == original.jsonrpc_ok && after.has_method == original.has_method &&
                   after.method == original.method && after.has_result == original.has_result &&
                   after.has_error == original.has_error && after.malformed == original.malformed &&
                   after.uri == original.uri && after.created_task_id == original.created_task_id,
               "splicing ids changed other fields: " + spliced);
    std::string restored;
    splice(spliced, back, restored);
    FUZZ_CHECK(restored == text, "splicing the old tokens back did not restore the text");
}


// A well-formed message whose fields (every one the scanner reads) hold values of any JSON
// type, chosen by the input: byte mutations alone rarely turn a string into an object.
std::string typed_message(mcpd::fuzz::FuzzInput& in) {
    struct Slot {
        const char* key;
        const char* usual;
    };
    // path prefix: "" top level, "p" params, "m" params._meta, "r" result, "e" error
    constexpr Slot kTop[] = {{"jsonrpc", R"("2.0")"}, {"id", "1"}, {"method", R"("tools/call")"}};
    constexpr Slot kParams[] = {{"progressToken", R"("t")"}, {"requestId", "1"},
                                {"uri", R"("file:///a")"},  {"level", R"("info")"},
                                {"taskId", R"("task-1")"},   {"protocolVersion", R"("2025-11-25")"},
                                {"name", R"("echo")"}};
    constexpr Slot kMeta[] = {{"progressToken", R"("t")"},
                              {"io.modelcontextprotocol/subscriptionId", R"("s")"},
                              {"io.modelcontextprotocol/related-task", R"({"taskId":"task-1"})"}};
    constexpr Slot kResult[] = {{"task", R"({"taskId":"task-1","status":"working"})"},
                                {"resultType", R"("complete")"}};
    auto value = [&in](const char* usual) -> std::string {
        return (in.byte() & 3) == 0 ? std::string(in.pick(mcpd::fuzz::kAnyJson)) : usual;
    };
    auto members = [&](const Slot* slots, std::size_t n, std::uint8_t present) {
        std::string out;
        for (std::size_t i = 0; i < n; ++i) {
            if ((present >> i & 1) == 0) continue;
            const std::string v = value(slots[i].usual);
            out += std::string(out.empty() ? "" : ",") + "\"" + slots[i].key + "\":" + v;
        }
        return out;
    };
    const std::uint8_t shape = in.byte();
    std::string body = members(kTop, std::size(kTop), shape);
    std::string meta = members(kMeta, std::size(kMeta), in.byte());
    std::string params = members(kParams, std::size(kParams), in.byte());
    if (!meta.empty()) params += std::string(params.empty() ? "" : ",") + "\"_meta\":{" + meta + "}";
    auto add = [&body](const std::string& key, const std::string& v) {
        body += std::string(body.empty() ? "" : ",") + "\"" + key + "\":" + v;
    };
    if ((shape & 0x10) != 0) add("params", (in.byte() & 7) == 0 ? std::string(in.pick(mcpd::fuzz::kAnyJson)) : "{" + params + "}");
    if ((shape & 0x20) != 0) add("result", "{" + members(kResult, std::size(kResult), in.byte()) + "}");
    if ((shape & 0x40) != 0) add("error", value(R"({"code":-32601,"message":"m"})"));
    return "{" + body + "}";
}

void check_text(std::string_view input) {
    static EnvelopeScanner scanner(16 * 1024 * 1024);
    static EnvelopeScanner small(kSmallLimit);

    static EnvelopeScanner general(16 * 1024 * 1024, EnvelopeScanner::Path::general_only);
    const std::size_t size = input.size();

    std::string text(input);
    Envelope e;
    const ScanStatus status = scanner.scan(text, e);
    FUZZ_CHECK(text == input, "scan changed the text");

    Envelope plain;
    // With padding the plain pass may read, filled with what would matter if it were read.
    std::string padded(input);
    for (std::size_t i = 0; i < mcpd::wire::kScanPadding; ++i) padded += "\" \\\x01"[i % 4];
    const std::string_view padded_input = std::string_view(padded).substr(0, size);
    if (scan_plain(mcpd::wire::PaddedText{padded_input}, plain)) {
        std::string copy(input);
        Envelope full;
        FUZZ_CHECK(general.scan(copy, full) == ScanStatus::ok,
                   "the plain pass accepted a message simdjson refuses: " + copy);
        FUZZ_CHECK(plain == full, "the plain pass and simdjson read different envelopes: " + copy);
        FUZZ_CHECK(status == ScanStatus::ok && e == plain, "the scanner did not take the plain reading");
    }

    Envelope again;
    FUZZ_CHECK(scanner.scan(text, again) == status &&
                   (status != ScanStatus::ok || e == again),
               "a second scan of the same text disagrees");
    if (size <= kSmallLimit) {
        std::string copy(input);
        Envelope limited;
        FUZZ_CHECK(small.scan(copy, limited) == status &&
                       (status != ScanStatus::ok || e == limited),
                   "a scanner with a smaller limit disagrees on a text that fits it");
    }
    if (status != ScanStatus::ok) return;

    for (const Field& field : kFields) {
        FUZZ_CHECK(inside(e.*field.span, text),
                   std::string("span of ") + field.name + " outside the text");
    }
    FUZZ_CHECK(e.id.empty() == (e.id_kind == IdKind::absent), "id span and id kind disagree");
    if (e.repeated_id) FUZZ_CHECK(e.malformed, "a repeated id is not malformed");
    check_splice(text, e, scanner, true);
    check_splice(text, e, scanner, false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    check_text(std::string_view(reinterpret_cast<const char*>(data), size));
    mcpd::fuzz::FuzzInput in(data, size);
    check_text(typed_message(in));
    return 0;
}
