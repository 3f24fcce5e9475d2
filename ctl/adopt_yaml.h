// adopt's plan for a YAML file: goose's config.yaml (extensions: NAME: {type: stdio, cmd, args,
// envs, enabled}) and Continue's config.yaml or block files (mcpServers: - {name, command,
// args, env, cwd}). Each entry is settled as any other (adopt_entries) and edited in place:
// command and args replaced, goose's envs emptied, Continue's env and cwd lines removed. libyaml
// reads the file and says where each value is (yaml_document); the edited text is read again
// and must equal the old one but for those keys, else the file is left as it is.
#pragma once

#include <string_view>

#include "common/result.h"
#include "ctl/adopt.h"

namespace mcpctl {

mcpd::Result<AdoptPlan> plan_adopt_yaml(std::string_view text, const AdoptOptions& options);

}  // namespace mcpctl
