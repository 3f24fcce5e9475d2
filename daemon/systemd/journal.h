// Logging straight to journald, so each line carries its server as a field:
// `journalctl -u mcpd SERVER=github` shows one server's lines.
#pragma once

namespace mcpd {

// When stderr is the journal (JOURNAL_STREAM matches it), send log lines with
// sd_journal_send instead. Returns whether it did.
bool use_journal_if_connected();

}  // namespace mcpd
