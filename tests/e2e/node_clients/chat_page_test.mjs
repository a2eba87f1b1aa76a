// Drives pagoda serve's chat page (GET /) in headless Chromium (Debian's /usr/bin/chromium through
// playwright-core): types a message, sends it, and waits for the streamed reply and its live figures.
// Usage: node chat_page_test.mjs BASE_URL EXPECTED_PREFIX. Exits 0 when the reply appears and starts with it.
import { chromium } from "playwright-core";

const [baseURL, expected] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
let ok = false;
try {
  const page = await browser.newPage();
  await page.goto(baseURL + "/");
  await page.fill("#temperature", "0");
  await page.fill("#max_tokens", "150");
  await page.fill("#prompt", "Once upon a time");
  // Record the reply's length at each DOM update: a streamed reply is seen part-way, before it is complete.
  // "150 tokens" in the figures counts the SSE deltas the page parsed.
  await page.evaluate(() => {
    window.__lengths = [];
    new MutationObserver(() => {
      const body = document.querySelector("#reply-1 .body");
      if (body) window.__lengths.push(body.textContent.length);
    }).observe(document.getElementById("log"), { subtree: true, childList: true, characterData: true });
  });
  await page.click("#send");
  await page.waitForSelector("#reply-1[data-done]", { timeout: 30000 });
  const state = await page.evaluate(() => ({
    done: document.querySelector("#reply-1").dataset.done,
    text: document.querySelector("#reply-1 .body").textContent,
    stats: document.querySelector("#reply-1 .stats").textContent,
    lengths: window.__lengths,
  }));
  const final = state.text.length;
  const partial = state.lengths.some((n) => n > 0 && n < final);
  console.log(JSON.stringify(state));
  ok = state.done === "1" && state.text.startsWith(expected) && partial &&
       /TTFT \d+ ms · TPOT [\d.]+ ms · [\d.]+ tokens\/s · 150 tokens/.test(state.stats);
} finally {
  await browser.close();
}
console.log(ok ? "chat page ok" : "chat page FAILED");
process.exit(ok ? 0 : 1);
