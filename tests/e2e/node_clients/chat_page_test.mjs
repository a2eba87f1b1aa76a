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
  // Each record's added text node is read, not the body when the observer runs: when one network read brings
  // the whole stream (a loaded machine), the page still renders delta by delta, all inside one task.
  // "150 tokens" in the figures is the usage chunk's completion_tokens.
  await page.evaluate(() => {
    window.__lengths = [];
    new MutationObserver((records) => {
      for (const r of records) {
        const el = r.target.nodeType === Node.TEXT_NODE ? r.target.parentElement : r.target;
        if (!el || !el.matches("#reply-1 .body")) continue;
        if (r.type === "characterData") window.__lengths.push(r.target.data.length);
        for (const n of r.addedNodes) if (n.nodeType === Node.TEXT_NODE) window.__lengths.push(n.data.length);
      }
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
