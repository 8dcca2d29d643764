#pragma once
// The page `vkf serve` answers GET / with: a text box, the language pair and the translation,
// calling POST /translate from the browser.
#include <string>

namespace vkf::serve {

std::string page_html(const std::string& source, const std::string& target, bool needs_key);

}  // namespace vkf::serve
