// Opens a benchmark report (DIR/index.html, written by `pagoda ... --report DIR`) from disk in headless
// Chromium (Debian's /usr/bin/chromium through playwright-core), with the network cut off, and checks that the
// table and the SVG plots are there and drawn, then screenshots it and checks the picture is not blank: its PNG
// must be far larger than the same viewport's screenshot of an empty page (a white PNG compresses to almost
// nothing). Usage: node report_page_test.mjs DIR MIN_ROWS MIN_PLOTS [SCREENSHOT.png]. Prints "report page ok".
import { chromium } from "playwright-core";

const [dir, minRows, minPlots, shotPath] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
let ok = false;
try {
  const context = await browser.newContext({ viewport: { width: 1500, height: 1200 }, offline: true });
  const requests = [];
  const page = await context.newPage();
  page.on("request", (r) => { if (!r.url().startsWith("file:")) requests.push(r.url()); });
  const blank = await page.screenshot({ fullPage: false });
  await page.goto("file://" + dir + "/index.html");
  const state = await page.evaluate(() => ({
    rows: document.querySelectorAll("table tr").length - 1,
    plots: [...document.querySelectorAll("svg")].map((s) => {
      const box = s.getBoundingClientRect();
      return { w: box.width, h: box.height, marks: s.querySelectorAll("polyline, circle, rect").length };
    }),
  }));
  const shot = await page.screenshot({ fullPage: true, path: shotPath || undefined });
  const drawn = state.plots.filter((p) => p.w > 300 && p.h > 200 && p.marks > 3).length;
  console.log(JSON.stringify({ ...state, blank_png_bytes: blank.length, png_bytes: shot.length, requests }));
  ok = state.rows >= Number(minRows) && drawn >= Number(minPlots) && shot.length > 8 * blank.length &&
       requests.length === 0;
} finally {
  await browser.close();
}
console.log(ok ? "report page ok" : "report page FAILED");
process.exit(ok ? 0 : 1);
