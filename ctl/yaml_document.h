// A YAML document read with libyaml into nodes that know their bytes in the text, so that adopt
// can replace a value or remove a key's lines and leave every other byte as it was.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mcpctl {

struct YamlMember;

struct YamlNode {
    enum class Kind { scalar, sequence, mapping };
    Kind kind = Kind::scalar;
    std::size_t begin = 0;        // its first byte
    std::size_t end = 0;          // after its last byte (a block collection: its last scalar's)
    bool flow = false;            // a {...} or [...] collection
    bool plain = true;            // a scalar without quotes
    bool anchored = false;        // it has an anchor, a tag, or is an alias (*name)
    std::string value;            // a scalar's text
    std::vector<YamlNode> items;  // a sequence's
    std::vector<YamlMember> members;  // a mapping's, in order

    const YamlNode* get(std::string_view key) const;  // a mapping's value by key
};

// A key and its value. Not a std::pair: that would need YamlNode complete inside itself,
// which clang's reading of libstdc++ refuses; named like one all the same.
struct YamlMember {
    YamlNode first;
    YamlNode second;
};

// The one document of `text`. Fails, naming the line, when libyaml cannot read it, when it
// holds more than one document, or nests deeper than 64 levels.
mcpd::Result<YamlNode> parse_yaml(std::string_view text);

// The node as JSON: scalars as strings (a plain null, ~ or empty one as null).
nlohmann::json yaml_to_json(const YamlNode& node);

}  // namespace mcpctl
