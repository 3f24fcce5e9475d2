// The envelope of a JSON-RPC message: the few fields a multiplexer reads or rewrites.
//
// The scanner validates a whole message (UTF-8, syntax, string escapes, numbers) in one pass,
// building no tree (a short message of the usual shape in a plain pass of its own,
// plain_envelope.h; any other with simdjson's on-demand parser), and records where the envelope fields
// sit in the original bytes so that new ids can be spliced in without re-serialising anything:
// a 16 MiB tool result is checked and forwarded, never copied into a DOM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_splice.h"
#include "common/json_string.h"

namespace mcpd::wire {

enum class IdKind : std::uint8_t { absent, string, integer, null, invalid };

struct Envelope {
    bool jsonrpc_ok = false;  // "jsonrpc": "2.0"
    IdKind id_kind = IdKind::absent;
    Span id;  // the raw token, quotes included for strings
    bool has_method = false;
    std::string method;
    // Compares by length first. `method == "ping"` on the std::string measures the literal and
    // compares bytes every time, and the router tests each message against a dozen names.
    bool method_is(std::string_view wanted) const { return std::string_view(method) == wanted; }
    bool has_params = false;
    bool params_array = false;  // by-position params: JSON-RPC allows them, MCP never sends them
    bool has_result = false;
    bool has_error = false;

    Span progress_token;               // params._meta.progressToken
    bool progress_token_valid = true;  // it is a string or a number, as the schema says
    Span reported_token;  // params.progressToken (what notifications/progress reports on)
    // Shapes that make a message invalid JSON-RPC even though it is valid JSON.
    bool malformed = false;  // method not a string, params not an object/array, a repeated id
    bool repeated_id = false;
    Span request_id;  // params.requestId (notifications/cancelled)
    Span subscription_id;  // params._meta or result._meta "io.modelcontextprotocol/subscriptionId"
    Span related_task_id;  // params._meta "io.modelcontextprotocol/related-task".taskId
    std::string uri;       // params.uri, when a string
    // params.name, when a string (the tool of a tools/call): its raw token, quotes included,
    // read only when needed (tool_name).
    Span name;
    bool name_repeated = false;  // params held "name" more than once (`name` is the last)
    // params.task (2025-11-25 task augmentation) is there, and a _meta holds the 2026-07-28
    // client capabilities: what a group session takes out before forwarding (it has no tasks).
    bool params_task = false;
    bool meta_client_capabilities = false;
    std::string level;     // params.level, when a string
    std::string task_id;   // params.taskId, when a string
    std::string created_task_id;  // result.task.taskId (2025-11-25) or result.taskId (2026 ext)
    std::string result_type;      // result.resultType
    std::string elicitation_id;   // params.elicitationId, when a string
    std::string status;           // params.status or result.status (a task's), when a string
    bool result_object = false;   // "result" is an object (every MCP result is one)
    bool is_error = false;        // result.isError is true (a tool's failure)
    bool error_valid = false;     // "error" is an object with an integer code and a string message
    std::int64_t error_code = 0;  // that code

    // Back to a fresh envelope, keeping the strings' memory (one is filled per message).
    void clear();

    // params.name as text, from `text` (the message scanned): where it lies when it has no
    // escapes, else unescaped into `storage`. Empty when there is none.
    std::string_view name_in(std::string_view text, std::string& storage) const;

    bool operator==(const Envelope&) const = default;

    // This envelope as it reads after `replacements` (each a whole string or integer token put
    // in place of a field's whole token, as the multiplexer splices them) are applied to its
    // text: every span moved by what the replacements before it added or took away, a replaced
    // field's span the new token's, and the id's kind that of its new token. A replacement
    // inside a field's token (a group's prefix taken out of a name) changes that span's length.
    void after_splice(std::span<const Replacement> replacements);
    void after_splice(const Replacements& replacements) {
        after_splice(std::span<const Replacement>(replacements.data(), replacements.size()));
    }

    bool is_request() const { return has_method && id_kind != IdKind::absent; }
    bool is_notification() const { return has_method && id_kind == IdKind::absent; }
    bool is_response() const { return !has_method && (has_result || has_error); }
};

// Bytes the scanner may read past the end of a message (simdjson's padding).
inline constexpr std::size_t kScanPadding = 64;

// A message with at least kScanPadding readable bytes after it, which the scanner reads where
// it lies (a LineReader's lines are such).
struct PaddedText {
    std::string_view text;
};

enum class ScanStatus {
    ok,
    not_json,    // not valid JSON or not UTF-8: JSON-RPC -32700
    not_object,  // valid JSON but not an object (a batch array, a scalar): -32600
};

class EnvelopeScanner {
public:
    // `plain_first`: a short message of the usual shape is read by scan_plain
    // (plain_envelope.h), everything else by simdjson; `general_only` always uses simdjson (the
    // fuzzer compares the two).
    enum class Path { plain_first, general_only };
    explicit EnvelopeScanner(std::size_t max_message_bytes, Path path = Path::plain_first);
    ~EnvelopeScanner();
    EnvelopeScanner(const EnvelopeScanner&) = delete;
    EnvelopeScanner& operator=(const EnvelopeScanner&) = delete;

    // Validate `text` completely and fill `out`. The string's capacity may grow by the few
    // bytes of padding simdjson reads past the end; its contents are unchanged.
    ScanStatus scan(std::string& text, Envelope& out);
    // The same for a message that already has its padding.
    ScanStatus scan(PaddedText text, Envelope& out);
    // What was wrong with the last message that was not ok, for error replies and logs.
    const std::string& error() const { return error_; }

private:
    struct Parser;
    std::unique_ptr<Parser> parser_;
    std::string error_;
    std::size_t max_message_bytes_;
    Path path_;
};

}  // namespace mcpd::wire
