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

}  // namespace mcpd::wire
