#include "daemon/server/era_memory.h"

namespace mcpd {

EraMemory::Start EraMemory::next_start() const {
    if (pinned_ == config::Era::legacy) return Start::legacy;
    if (pinned_ == config::Era::modern) return Start::modern;
    if (!verdict_) return Start::probe;
    return *verdict_ ? Start::modern : Start::legacy;
}

void EraMemory::ready(bool modern) {
    if (pinned_ == config::Era::auto_detect) verdict_ = modern;
}

}  // namespace mcpd
