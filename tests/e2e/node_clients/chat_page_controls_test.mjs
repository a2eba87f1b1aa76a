// The chat page's controls in headless Chromium at a desktop and a phone width: Send is disabled and Stop enabled
// while a reply streams, Stop ends it (the caller checks the server cancelled it), a stopped or failed turn is
// never resent, the page has no horizontal overflow, and it has a favicon.
// Usage: node chat_page_controls_test.mjs BASE_URL MAX_TOKENS [SCREENSHOT_DIR]: MAX_TOKENS for the reply that is
// stopped (it must take longer than the browser needs to see its first text). Exits 0 when every check holds.
import { chromium } from "playwright-core";

const [baseURL, maxTokens, screenshotDir] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };
try {
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    const tag = `${width}px`;
    const page = await browser.newPage({ viewport: { width, height } });
    const sent = [];  // the bodies the page posts
    page.on("request", (r) => { if (r.url().endsWith("/v1/chat/completions")) sent.push(JSON.parse(r.postData())); });
    await page.goto(baseURL + "/");
    check(await page.evaluate(() => !!document.querySelector('link[rel="icon"]')), `${tag}: a favicon`);
    await page.fill("#max_tokens", maxTokens);
    await page.fill("#prompt", "Once upon a time");
    // Mid-stream (the first text of the reply), inside the page so no round trip lets the stream finish first:
    // record the buttons' states, then press Stop.
    await page.evaluate(() => {
      new MutationObserver((records, observer) => {
        const body = document.querySelector("#reply-1 .body");
        if (!body || body.textContent.length === 0) return;
        observer.disconnect();
        window.__during = { send: document.getElementById("send").disabled,
                            stop: document.getElementById("stop").disabled };
        document.getElementById("stop").click();
      }).observe(document.getElementById("log"), { subtree: true, childList: true, characterData: true });
    });
    await page.click("#send");
    await page.waitForSelector("#reply-1[data-done]", { timeout: 30000 });
    check(await page.evaluate(() => document.querySelector("#reply-1").dataset.done) === "stopped", `${tag}: stopped`);
    const during = await page.evaluate(() => window.__during);
    check(during && during.send && !during.stop,
          `${tag}: Send disabled and Stop enabled while streaming ${JSON.stringify(during)}`);
    const after = await page.evaluate(() => ({ send: document.getElementById("send").disabled,
                                               stop: document.getElementById("stop").disabled }));
    check(!after.send && after.stop, `${tag}: Send enabled again after Stop`);
    // A failed turn (max_tokens 0 is a 400), then a good one: neither the stopped nor the failed turn is resent.
    await page.fill("#max_tokens", "0");
    await page.fill("#prompt", "this one fails");
    await page.click("#send");
    await page.waitForFunction(() => document.querySelectorAll(".msg.assistant[data-done]").length === 2, null,
                               { timeout: 30000 });
    check(await page.evaluate(() => document.querySelector("#reply-2").dataset.done) === "error", `${tag}: failed`);
    await page.fill("#max_tokens", "3");
    await page.fill("#prompt", "The cat");
    await page.click("#send");
    await page.waitForFunction(() => document.querySelectorAll(".msg.assistant[data-done='1']").length === 1,
                               null, { timeout: 30000 });
    const last = sent[sent.length - 1];
    check(sent.length === 3, `${tag}: three requests sent, got ${sent.length}`);
    check(last && last.messages.length === 1 && last.messages[0].content === "The cat",
          `${tag}: the last request carries only the new turn: ${JSON.stringify(last && last.messages)}`);
    // Nothing wider than the viewport.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, `${tag}: ${overflow} px of horizontal overflow`);
    if (screenshotDir) await page.screenshot({ path: `${screenshotDir}/chat-${width}.png`, fullPage: true });
    await page.close();
  }
} finally {
  await browser.close();
}
for (const f of failures) console.log("FAILED: " + f);
console.log(failures.length === 0 ? "chat page controls ok" : "chat page controls FAILED");
process.exit(failures.length === 0 ? 0 : 1);
