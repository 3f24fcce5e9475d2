// U+FFFD in UTF-8, what a lone surrogate decodes to: shared by the JSON string tests.
#pragma once

#include <string>

inline const std::string kReplacement = "\xef\xbf\xbd";
