// The chat page's HTML; the model name is substituted (HTML-escaped) into the title.
#include "server/chat_page.h"

#include "core/html_escape.h"

namespace pagoda::server {
namespace {

constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pagoda chat: {{MODEL}}</title>
<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http%3A//www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Cpath d='M8 1 1 6h14zM3 7h10v2H3zM2 10h12l-2 5H4z' fill='%23b45309'/%3E%3C/svg%3E">
<style>
  body { font-family: system-ui, sans-serif; margin: 0; display: flex; height: 100vh; background: #f6f6f4; }
  #side { width: 15rem; padding: 1rem; border-right: 1px solid #ddd; background: #fff; font-size: 0.9rem; }
  #side label { display: block; margin-top: 0.6rem; }
  #side input { width: 100%; box-sizing: border-box; }
  #main { flex: 1; display: flex; flex-direction: column; }
  #log { flex: 1; overflow-y: auto; padding: 1rem; }
  .msg { max-width: 48rem; margin: 0.5rem 0; padding: 0.6rem 0.8rem; border-radius: 0.5rem; white-space: pre-wrap; }
  .user { background: #dbeafe; margin-left: auto; }
  .assistant { background: #fff; border: 1px solid #e5e5e5; }
  .stats { font-size: 0.75rem; color: #666; margin-top: 0.3rem; font-family: monospace; }
  .error { background: #fee2e2; }
  .dropped { opacity: 0.55; text-decoration: line-through; }
  form { display: flex; gap: 0.5rem; padding: 1rem; border-top: 1px solid #ddd; background: #fff; }
  #prompt { flex: 1; min-width: 0; font-size: 1rem; padding: 0.5rem; }
  #main { min-width: 0; }
  .msg { overflow-wrap: anywhere; }
  /* A phone: the settings fold above the conversation instead of beside it. */
  @media (max-width: 700px) {
    body { flex-direction: column; height: auto; min-height: 100vh; }
    #side { width: auto; border-right: none; border-bottom: 1px solid #ddd; display: grid;
            grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 0 0.8rem; padding: 0.6rem 1rem; }
    #side .title, #side p { grid-column: 1 / -1; }
    #side label { margin-top: 0.3rem; }
    #main { min-height: 70vh; }
    form { padding: 0.6rem; }
  }
</style>
</head>
<body>
<div id="side">
  <div class="title"><b>pagoda</b> &middot; <span id="model">{{MODEL}}</span></div>
  <label>temperature <input id="temperature" type="number" step="0.1" min="0" max="2" value="0.8"></label>
  <label>top_p <input id="top_p" type="number" step="0.05" min="0.05" max="1" value="0.95"></label>
  <label>top_k <input id="top_k" type="number" step="1" min="0" value="40"></label>
  <label>max_tokens <input id="max_tokens" type="number" step="1" min="1" value="200"></label>
  <label>seed (empty = random) <input id="seed" type="number" step="1"></label>
  <label>API key <input id="api_key" type="password" autocomplete="off"></label>
  <p><button id="clear" type="button">New conversation</button></p>
</div>
<div id="main">
  <div id="log"></div>
  <form id="form"><input id="prompt" autocomplete="off" placeholder="Type a message" value="Once upon a time">
    <button id="send" type="submit">Send</button>
    <button id="stop" type="button" disabled>Stop</button></form>
</div>
<script>
"use strict";
const messages = [];
const log = document.getElementById("log");
function bubble(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  const body = document.createElement("div");
  body.className = "body";
  body.textContent = text;
  div.appendChild(body);
  log.appendChild(div);
  log.scrollTop = log.scrollHeight;
  return div;
}
function num(id) { const v = document.getElementById(id).value; return v === "" ? undefined : Number(v); }
document.getElementById("clear").onclick = () => {
  if (inFlight) inFlight.abort();
  messages.length = 0;
  log.innerHTML = "";
};
const sendButton = document.getElementById("send");
const stopButton = document.getElementById("stop");
let inFlight = null;  // the AbortController of the reply being streamed
let numTurns = 0;     // turns sent, failed and stopped ones included: reply-N names the Nth
stopButton.onclick = () => { if (inFlight) inFlight.abort(); };
document.getElementById("form").onsubmit = async (ev) => {
  ev.preventDefault();
  if (inFlight) return;  // one reply at a time
  const input = document.getElementById("prompt");
  const text = input.value;
  if (!text) return;
  input.value = "";
  // The turn joins the history only once its reply arrives: a failed or stopped turn is never resent.
  const turn = messages.concat([{ role: "user", content: text }]);
  const userDiv = bubble("user", text);
  const div = bubble("assistant", "");
  div.id = "reply-" + (++numTurns);
  const body = div.querySelector(".body");
  const stats = document.createElement("div");
  stats.className = "stats";
  div.appendChild(stats);
  const req = { messages: turn, stream: true, stream_options: { include_usage: true },
    temperature: num("temperature"), top_p: num("top_p"), top_k: num("top_k"), max_tokens: num("max_tokens") };
  const seed = num("seed");
  if (seed !== undefined) req.seed = seed;
  const headers = { "Content-Type": "application/json" };
  const key = document.getElementById("api_key").value;
  if (key) headers["Authorization"] = "Bearer " + key;
  const t0 = performance.now();
  let tFirst = 0, tLast = 0, tokens = 0, reply = "";
  const show = () => {
    const ttft = tFirst ? (tFirst - t0) : 0;
    const tpot = tokens > 1 ? (tLast - tFirst) / (tokens - 1) : 0;
    const tps = tokens > 1 ? 1000 * (tokens - 1) / (tLast - tFirst) : 0;
    stats.textContent = `TTFT ${ttft.toFixed(0)} ms · TPOT ${tpot.toFixed(1)} ms · ${tps.toFixed(1)} tokens/s · ${tokens} tokens`;
  };
  inFlight = new AbortController();
  sendButton.disabled = true;
  stopButton.disabled = false;
  try {
    const res = await fetch("/v1/chat/completions",
                            { method: "POST", headers, body: JSON.stringify(req), signal: inFlight.signal });
    if (!res.ok) {
      const e = await res.json().catch(() => ({}));
      throw new Error(e.error ? e.error.message : res.statusText);
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let idx;
      while ((idx = buf.indexOf("\n\n")) >= 0) {
        const line = buf.slice(0, idx).trim();
        buf = buf.slice(idx + 2);
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") continue;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message);
        if (chunk.usage && chunk.choices.length === 0) { tokens = chunk.usage.completion_tokens; show(); continue; }
        const delta = chunk.choices[0].delta;
        if (delta && delta.content) {
          const now = performance.now();
          if (!tFirst) tFirst = now;
          tLast = now;
          tokens += 1;
          reply += delta.content;
          body.textContent = reply;
          show();
          log.scrollTop = log.scrollHeight;
        }
      }
    }
    messages.push(turn[turn.length - 1], { role: "assistant", content: reply });
    div.dataset.done = "1";
  } catch (err) {
    const stopped = err.name === "AbortError";
    div.className = "msg assistant error";
    body.textContent = reply + (stopped ? "\n[stopped]" : "\n[error] " + err.message);
    userDiv.className += " dropped";
    userDiv.title = "not part of the conversation: its reply " + (stopped ? "was stopped" : "failed");
    div.dataset.done = stopped ? "stopped" : "error";
  } finally {
    inFlight = null;
    sendButton.disabled = false;
    stopButton.disabled = true;
  }
};
// ?prompt=TEXT&temperature=T&max_tokens=N&send=1 fills the form (and sends it): links and browser tests.
{
  const q = new URLSearchParams(location.search);
  for (const id of ["temperature", "top_p", "top_k", "max_tokens", "seed"])
    if (q.has(id)) document.getElementById(id).value = q.get(id);
  if (q.has("prompt")) document.getElementById("prompt").value = q.get("prompt");
  if (q.get("send") === "1") document.getElementById("form").requestSubmit();
}
</script>
</body>
</html>
)HTML";

}  // namespace

std::string chat_page_html(std::string_view model_name) {
  std::string page(kPage);
  const std::string name = html_escape(model_name);
  const std::string marker = "{{MODEL}}";
  for (size_t pos = page.find(marker); pos != std::string::npos; pos = page.find(marker, pos + name.size()))
    page.replace(pos, marker.size(), name);
  return page;
}

}  // namespace pagoda::server
