#include "ctl/yaml_document.h"

#include <yaml.h>

#include <algorithm>

#include "ctl/text_position.h"

namespace mcpctl {

namespace {

constexpr int kMaxDepth = 64;

// libyaml's parser and its current event, released however the reading ends.
class YamlReader {
public:
    explicit YamlReader(std::string_view text) : positions_(text) {
        ::yaml_parser_initialize(&parser_);
        ::yaml_parser_set_input_string(
            &parser_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    }
    ~YamlReader() {
        if (have_event_) ::yaml_event_delete(&event_);
        ::yaml_parser_delete(&parser_);
    }
    YamlReader(const YamlReader&) = delete;
    YamlReader& operator=(const YamlReader&) = delete;

    // The next event; fails with libyaml's problem and line.
    mcpd::Result<const yaml_event_t*> next() {
        if (have_event_) ::yaml_event_delete(&event_);
        have_event_ = ::yaml_parser_parse(&parser_, &event_) != 0;
        if (!have_event_) {
            std::string sentence = "not valid YAML: line ";
            sentence += std::to_string(parser_.problem_mark.line + 1);
            sentence += ": ";
            sentence += parser_.problem != nullptr ? parser_.problem : "unreadable";
            return mcpd::permanent_failure(std::move(sentence));
        }
        return &event_;
    }

    std::size_t byte(const yaml_mark_t& mark) const { return positions_.byte_of_index(mark.index); }

private:
    TextPositions positions_;
    yaml_parser_t parser_{};
    yaml_event_t event_{};
    bool have_event_ = false;
};

// The node whose first event is `event`, reading the rest of it.
mcpd::Result<YamlNode> read_node(YamlReader& reader, const yaml_event_t& event, int depth) {
    if (depth > kMaxDepth)
        return mcpd::permanent_failure("it nests deeper than 64 levels, which adopt does not read");
    YamlNode node;
    node.begin = reader.byte(event.start_mark);
    node.end = reader.byte(event.end_mark);
    switch (event.type) {
        case YAML_ALIAS_EVENT:
            node.anchored = true;
            return node;
        case YAML_SCALAR_EVENT:
            node.anchored = event.data.scalar.anchor != nullptr || event.data.scalar.tag != nullptr;
            node.plain = event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
            node.value.assign(reinterpret_cast<const char*>(event.data.scalar.value),
                              event.data.scalar.length);
            return node;
        case YAML_SEQUENCE_START_EVENT:
            node.kind = YamlNode::Kind::sequence;
            node.anchored = event.data.sequence_start.anchor != nullptr ||
                            event.data.sequence_start.tag != nullptr;
            node.flow = event.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
            break;
        case YAML_MAPPING_START_EVENT:
            node.kind = YamlNode::Kind::mapping;
            node.anchored = event.data.mapping_start.anchor != nullptr ||
                            event.data.mapping_start.tag != nullptr;
            node.flow = event.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
            break;
        default:
            return mcpd::permanent_failure("not valid YAML: an event out of place");
    }
    std::vector<YamlNode> children;
    for (;;) {
        mcpd::Result<const yaml_event_t*> next = reader.next();
        if (!next) return next.failure();
        const yaml_event_t& child = *next.value();
        if (child.type == YAML_SEQUENCE_END_EVENT || child.type == YAML_MAPPING_END_EVENT) {
            if (node.flow) node.end = reader.byte(child.end_mark);
            break;
        }
        mcpd::Result<YamlNode> read = read_node(reader, child, depth + 1);
        if (!read) return read.failure();
        children.push_back(std::move(read).value());
        if (!node.flow) node.end = std::max(node.end, children.back().end);
    }
    if (node.kind == YamlNode::Kind::sequence) {
        node.items = std::move(children);
        return node;
    }
    for (std::size_t i = 0; i + 1 < children.size(); i += 2)
        node.members.push_back(YamlMember{std::move(children[i]), std::move(children[i + 1])});
    return node;
}

}  // namespace

const YamlNode* YamlNode::get(std::string_view key) const {
    for (const auto& [name, found] : members)
        if (name.kind == Kind::scalar && name.value == key) return &found;
    return nullptr;
}

mcpd::Result<YamlNode> parse_yaml(std::string_view text) {
    YamlReader reader(text);
    std::vector<YamlNode> documents;
    for (;;) {
        mcpd::Result<const yaml_event_t*> next = reader.next();
        if (!next) return next.failure();
        const yaml_event_t& event = *next.value();
        if (event.type == YAML_STREAM_END_EVENT) break;
        if (event.type == YAML_STREAM_START_EVENT || event.type == YAML_DOCUMENT_START_EVENT ||
            event.type == YAML_DOCUMENT_END_EVENT)
            continue;
        if (!documents.empty())
            return mcpd::permanent_failure("it holds more than one YAML document");
        mcpd::Result<YamlNode> node = read_node(reader, event, 0);
        if (!node) return node.failure();
        documents.push_back(std::move(node).value());
    }
    if (documents.empty()) return YamlNode{};
    return std::move(documents.front());
}

nlohmann::json yaml_to_json(const YamlNode& node) {
    switch (node.kind) {
        case YamlNode::Kind::sequence: {
            nlohmann::json out = nlohmann::json::array();
            for (const YamlNode& item : node.items) out.push_back(yaml_to_json(item));
            return out;
        }
        case YamlNode::Kind::mapping: {
            nlohmann::json out = nlohmann::json::object();
            for (const auto& [key, value] : node.members) out[key.value] = yaml_to_json(value);
            return out;
        }
        case YamlNode::Kind::scalar:
            break;
    }
    if (node.plain && (node.value.empty() || node.value == "null" || node.value == "~"))
        return nullptr;
    return node.value;
}

}  // namespace mcpctl
