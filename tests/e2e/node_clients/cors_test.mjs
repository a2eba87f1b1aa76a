// A page on another origin calls pagoda from headless Chromium: GET /v1/models and a streamed chat completion, both
// with an Authorization header (so the browser sends a CORS preflight first). Serves the page itself from a second
// local port (another origin).
// Usage: node cors_test.mjs PAGODA_URL EXPECT PAGE_PORT: the page is served at http://127.0.0.1:PAGE_PORT (the
// origin to allow); EXPECT is "allowed" (both calls must work) or "refused" (the browser must block both). Exits 0
// when the outcome is as expected.
import http from "node:http";
import { chromium } from "playwright-core";

const [apiURL, expect, pagePort] = process.argv.slice(2);
const page = `<!doctype html><meta charset="utf-8"><script>
window.__result = (async () => {
  const headers = { "Authorization": "Bearer k", "Content-Type": "application/json" };
  const out = {};
  try {
    const models = await fetch(${JSON.stringify(apiURL)} + "/v1/models", { headers });
    out.models = (await models.json()).data.length;
  } catch (e) { out.models = "blocked: " + e.message; }
  try {
    const res = await fetch(${JSON.stringify(apiURL)} + "/v1/chat/completions", { method: "POST", headers,
      body: JSON.stringify({ messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 8, stream: true }) });
    const reader = res.body.getReader();
    let text = "", chunks = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      ++chunks;
      text += new TextDecoder().decode(value);
    }
    out.stream = text.includes("data: [DONE]") ? "done" : "incomplete";
  } catch (e) { out.stream = "blocked: " + e.message; }
  return out;
})();
</script>`;
const site = http.createServer((req, res) => {
  res.writeHead(200, { "Content-Type": "text/html" });
  res.end(page);
});
await new Promise((r) => site.listen(Number(pagePort), "127.0.0.1", r));
const origin = `http://127.0.0.1:${pagePort}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
let ok = false;
try {
  const tab = await browser.newPage();
  await tab.goto(origin + "/");
  const result = await tab.evaluate(() => window.__result);
  console.log(JSON.stringify(result));
  ok = expect === "allowed"
    ? result.models === 1 && result.stream === "done"
    : String(result.models).startsWith("blocked") && String(result.stream).startsWith("blocked");
} finally {
  await browser.close();
  site.close();
}
console.log(ok ? "cors ok" : "cors FAILED");
process.exit(ok ? 0 : 1);
