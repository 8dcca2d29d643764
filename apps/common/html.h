#pragma once
// Text put into an HTML page (`vkf bench compare --html`, `vkf serve`'s page): the five
// characters that could end a text node or a quoted attribute, escaped.
#include <string>

namespace vkf::app {

inline std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

}  // namespace vkf::app
