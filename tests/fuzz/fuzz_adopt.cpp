// Fuzz target: adopt's planners for agent files (ctl/adopt_json, adopt_toml, adopt_yaml with
// yaml_document, text_position and adopt_entries).
//
// The first byte picks the format (JSON, TOML, YAML) and whether --group is asked; the rest is
// the file's text. Invariants: no crash and no exception; a plan's text is the input when it
// says nothing changed; a changed plan names what it rewrote and adopted servers with valid
// names only.
#include <cstdint>
#include <string>
#include <string_view>

#include "ctl/adopt.h"
#include "fuzz_input.h"

namespace {

bool valid_name(std::string_view name) {
    if (name.empty()) return false;
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok) return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::uint8_t choice = size > 0 ? data[0] : 0;
    const std::string text(reinterpret_cast<const char*>(data) + (size > 0 ? 1 : 0),
                           size > 0 ? size - 1 : 0);
    mcpctl::AdoptOptions options;
    options.format = choice % 3 == 0   ? mcpctl::AdoptFormat::json
                     : choice % 3 == 1 ? mcpctl::AdoptFormat::toml
                                       : mcpctl::AdoptFormat::yaml;
    if ((choice & 0x80) != 0) options.group = "all";
    const mcpd::Result<mcpctl::AdoptPlan> plan = mcpctl::plan_adopt(text, options);
    if (!plan) return 0;
    FUZZ_CHECK(plan.value().changed || plan.value().text == text,
               "an unchanged plan changed the text");
    if (!plan.value().changed) return 0;
    FUZZ_CHECK(!plan.value().rewritten.empty(), "a changed plan names no rewritten entry");
    for (const mcpctl::ImportedServer& server : plan.value().servers)
        FUZZ_CHECK(valid_name(server.name), "an adopted server has an invalid name");
    FUZZ_CHECK(!plan.value().servers.empty(), "a changed plan adopted no server");
    return 0;
}
