#include "apps/serve/page.h"

#include "apps/common/html.h"

namespace vkf::serve {

std::string page_html(const std::string& source, const std::string& target, bool needs_key) {
  const std::string s = app::html_escape(source), t = app::html_escape(target);
  std::string key_box =
      needs_key ? "<p><label>API key <input id=\"key\" type=\"password\"></label></p>\n" : "";
  return R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vkf serve</title>
<style>
body { font-family: sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em; }
textarea, #out { width: 100%; min-height: 6em; box-sizing: border-box; font-size: 1.1em; }
#out { border: 1px solid #999; padding: .4em; white-space: pre-wrap; background: #f6f6f6; }
#error { color: #b00; }
</style></head><body>
<h1>vkf serve</h1>
<p id="pair">)" +
         s + " &rarr; " + t + R"(</p>
<textarea id="text" placeholder="Text to translate, one sentence a line"></textarea>
)" + key_box +
         R"(<p><button id="go">Translate</button> <span id="error"></span></p>
<div id="out"></div>
<script>
const go = document.getElementById('go');
go.addEventListener('click', async () => {
  const body = {q: document.getElementById('text').value, source: ')" +
         s + "', target: '" + t + R"(', format: 'text'};
  const key = document.getElementById('key');
  if (key) body.api_key = key.value;
  const err = document.getElementById('error');
  err.textContent = '';
  try {
    const r = await fetch('/translate', {method: 'POST',
      headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)});
    const j = await r.json();
    if (!r.ok) { err.textContent = j.error || r.statusText; return; }
    document.getElementById('out').textContent = j.translatedText;
  } catch (e) { err.textContent = String(e); }
});
// /?q=TEXT translates TEXT on load: a link to a translation, and how the page is tested.
const asked = new URLSearchParams(location.search).get('q');
if (asked !== null) { document.getElementById('text').value = asked; go.click(); }
</script></body></html>
)";
}

}  // namespace vkf::serve
