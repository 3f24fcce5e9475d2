// Fuzz target: the state of an upgrade in place as the binary taking over reads it
// (common/state_file, daemon/upgrade_state, daemon/server/supervisor_snapshot).
//
// When the first byte is even, the rest is the whole state as it would arrive on the
// descriptor; when it is odd, the rest is a body wrapped in a correct header, so that inputs get
// past the digest to the body's checks. Invariants: no crash and no exception; a state that
// decodes, encoded again, decodes to the same body, and mcpd's own text is a fixed point; a body that is taken is written back by to_json to a
// body that is taken again and gives the same text (what one binary writes, the next reads).
#include <cstdint>
#include <string>
#include <string_view>

#include "common/state_file.h"
#include "daemon/upgrade_state.h"
#include "fuzz_input.h"

using namespace mcpd;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    std::string text(rest);
    if (data[0] % 2 == 1) {
        const nlohmann::json body = nlohmann::json::parse(rest, nullptr, false);
        if (body.is_discarded()) return 0;
        text = state_file::encode(body);
    }
    const Result<state_file::Decoded> decoded = state_file::decode(text);
    if (!decoded) {
        FUZZ_CHECK(!decoded.error().empty(), "a refused state says why");
        return 0;
    }
    // Another writer may order or space its JSON otherwise: what mcpd writes of it reads the
    // same, and mcpd's own text is a fixed point.
    const std::string rewritten = state_file::encode(decoded->body, decoded->version);
    const Result<state_file::Decoded> reread = state_file::decode(rewritten);
    FUZZ_CHECK(reread.ok() && reread->body == decoded->body,
               "a decoded state, encoded again, decodes to the same body");
    FUZZ_CHECK(state_file::encode(reread->body, reread->version) == rewritten,
               "mcpd's own encoding is a fixed point");
    const Result<UpgradeState> state = parse_upgrade_state(decoded->body);
    if (!state) {
        FUZZ_CHECK(!state.error().empty(), "a refused body says why");
        return 0;
    }
    const nlohmann::json written = to_json(state.value());
    const Result<UpgradeState> again = parse_upgrade_state(written);
    FUZZ_CHECK(again.ok(), "what to_json writes is taken again");
    FUZZ_CHECK(to_json(again.value()).dump() == written.dump(), "and written the same");
    return 0;
}
