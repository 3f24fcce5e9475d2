// The Envelope's own methods: what the scanners fill, reset between messages, and the one
// field read lazily (json_envelope.cpp and plain_envelope.cpp are the scanners).
#include "common/json_envelope.h"

namespace mcpd::wire {

void Envelope::clear() {
    jsonrpc_ok = false;
    id_kind = IdKind::absent;
    id = {};
    has_method = has_params = params_array = has_result = has_error = false;
    method.clear();
    progress_token = {};
    progress_token_valid = true;
    reported_token = {};
    malformed = repeated_id = false;
    request_id = {};
    subscription_id = {};
    related_task_id = {};
    uri.clear();
    name = {};
    name_repeated = params_task = meta_client_capabilities = false;
    level.clear();
    task_id.clear();
    created_task_id.clear();
    result_type.clear();
    elicitation_id.clear();
    status.clear();
    result_object = error_valid = is_error = false;
    error_code = 0;
}

std::string_view Envelope::name_in(std::string_view text, std::string& storage) const {
    if (name.length < 2) return {};
    const std::string_view body = text.substr(name.offset + 1, name.length - 2);
    if (body.find('\\') == std::string_view::npos) return body;
    if (!unescape(body, storage)) return {};
    return storage;
}

void Envelope::after_splice(std::span<const Replacement> replacements) {
    const auto moved = [&](Span& span) -> const Replacement* {
        if (span.empty()) return nullptr;
        std::int64_t shift = 0;
        std::int64_t grown = 0;
        const Replacement* replaced = nullptr;
        for (const Replacement& r : replacements) {
            const std::int64_t change = static_cast<std::int64_t>(r.text.size()) - r.span.length;
            if (r.span == span) {
                replaced = &r;
            } else if (r.span.offset + r.span.length <= span.offset) {
                shift += change;
            } else if (r.span.offset >= span.offset &&
                       r.span.offset + r.span.length <= span.offset + span.length) {
                grown += change;
            }
        }
        span.offset = static_cast<std::uint32_t>(span.offset + shift);
        if (replaced != nullptr) span.length = static_cast<std::uint32_t>(replaced->text.size());
        else span.length = static_cast<std::uint32_t>(span.length + grown);
        return replaced;
    };
    if (const Replacement* r = moved(id)) {
        id_kind = !r->text.empty() && r->text.front() == '"' ? IdKind::string : IdKind::integer;
    }
    if (moved(progress_token) != nullptr) progress_token_valid = true;
    moved(reported_token);
    moved(request_id);
    moved(subscription_id);
    moved(related_task_id);
    moved(name);
}

}  // namespace mcpd::wire
