// Drives a running `pagoda serve` with the official openai npm package, unchanged: completions and chat,
// streamed and not, usage on the last chunk, n=2, stop strings, seeds, an echo's prompt logprobs. Usage: node
// client_test.mjs BASE_URL GOLDEN_FILE. Exits 0 when every check passes; prints one line per check.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { check, finish } from "./checks.mjs";

const [baseURL, goldenFile] = process.argv.slice(2);
const golden = readFileSync(goldenFile, "utf8");  // the greedy continuation of "Once upon a time", 196 tokens
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey: process.env.PAGODA_API_KEY || "none", maxRetries: 0 });
const prompt = "Once upon a time";

await check("models.list names the served model", async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].id, "stories260K");
});

await check("completion, greedy, is the golden text", async () => {
  const r = await client.completions.create({ model: "stories260K", prompt, max_tokens: 196, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.equal(r.choices[0].text, golden);
  assert.equal(r.choices[0].finish_reason, "length");
  assert.equal(r.usage.prompt_tokens, 5);
  assert.equal(r.usage.completion_tokens, 196);
  assert.equal(r.usage.total_tokens, 201);
});

await check("completion, streamed, joins to the golden text with usage on the last chunk", async () => {
  const stream = await client.completions.create({
    prompt, max_tokens: 196, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = "", chunks = 0, usage = null, finish = null;
  for await (const chunk of stream) {
    chunks += 1;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, golden);
  assert.equal(finish, "length");
  assert.ok(chunks > 10, `only ${chunks} chunks`);
  assert.equal(usage.completion_tokens, 196);
  assert.equal(usage.prompt_tokens, 5);
});

await check("chat, greedy, plain template gives the golden text", async () => {
  const r = await client.chat.completions.create({
    messages: [{ role: "user", content: prompt }], max_tokens: 196, temperature: 0,
  });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(r.choices[0].message.content, golden);
});

await check("chat, streamed, role first then content deltas, usage at the end", async () => {
  const stream = await client.chat.completions.create({
    messages: [{ role: "user", content: prompt }], max_completion_tokens: 40, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = "", role = null, usage = null, finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(role, "assistant");
  assert.ok(golden.startsWith(text) && text.length > 20, JSON.stringify(text));
  assert.equal(finish, "length");
  assert.equal(usage.completion_tokens, 40);
});

await check("n=2 gives two choices with their own indexes", async () => {
  const r = await client.completions.create({ prompt, max_tokens: 12, temperature: 0.9, seed: 7, n: 2 });
  assert.equal(r.choices.length, 2);
  assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1]);
  assert.equal(r.usage.completion_tokens, 24);
  assert.equal(r.usage.prompt_tokens, 5);
  const stream = await client.chat.completions.create({
    messages: [{ role: "user", content: prompt }], max_tokens: 8, temperature: 0.9, seed: 7, n: 2, stream: true,
  });
  const texts = ["", ""];
  for await (const chunk of stream) for (const c of chunk.choices) texts[c.index] += c.delta.content || "";
  assert.ok(texts[0].length > 0 && texts[1].length > 0, JSON.stringify(texts));
});

await check("the same seed gives the same sampled text", async () => {
  const req = { prompt, max_tokens: 48, temperature: 1.0, top_p: 0.95, seed: 1234 };
  const a = await client.completions.create(req);
  const b = await client.completions.create(req);
  const c = await client.completions.create({ ...req, seed: 99 });
  assert.equal(a.choices[0].text, b.choices[0].text);
  assert.notEqual(a.choices[0].text, c.choices[0].text);
});

await check("a stop string ends the text before it, finish_reason stop", async () => {
  const r = await client.completions.create({ prompt, max_tokens: 100, temperature: 0, stop: ["Lily"] });
  assert.equal(r.choices[0].text, ", there was a little girl named ");
  assert.equal(r.choices[0].finish_reason, "stop");
  const s = await client.chat.completions.create({
    messages: [{ role: "user", content: prompt }], max_tokens: 100, temperature: 0, stop: "park", stream: true,
  });
  let text = "", finish = null;
  for await (const chunk of s) for (const c of chunk.choices) {
    text += c.delta.content || "";
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(text, ", there was a little girl named Lily. She loved to play outside in the ");
  assert.equal(finish, "stop");
});

await check("logprobs come back for every token", async () => {
  const r = await client.chat.completions.create({
    messages: [{ role: "user", content: prompt }], max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 3,
  });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, 5);
  for (const t of lp) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 3);
    assert.equal(t.top_logprobs[0].logprob, t.logprob);  // greedy: the chosen token is the most likely
  }
  assert.equal(lp.map((t) => t.token).join(""), r.choices[0].message.content);
});

await check("echo with logprobs and max_tokens 0 scores the prompt (lm-evaluation-harness's loglikelihood)", async () => {
  const r = await client.completions.create({ prompt, echo: true, logprobs: 2, max_tokens: 0 });
  const c = r.choices[0];
  assert.equal(c.text, prompt);
  assert.equal(c.finish_reason, "length");
  assert.equal(r.usage.completion_tokens, 0);
  const lp = c.logprobs;
  assert.equal(lp.tokens.length, r.usage.prompt_tokens);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  let offset = 0;
  lp.tokens.forEach((t, i) => {
    assert.equal(lp.text_offset[i], offset);
    offset += [...t].length;  // code points, as the server counts them
    if (i > 0) assert.ok(Number.isFinite(lp.token_logprobs[i]) && lp.token_logprobs[i] <= 0);
  });
  assert.equal(lp.tokens.join(""), prompt);
});

await check("a model that is not served is a 404 NotFoundError", async () => {
  await assert.rejects(
    client.completions.create({ model: "gpt-4o", prompt, max_tokens: 2 }),
    (err) => err instanceof OpenAI.NotFoundError && err.status === 404);
});

await check("an invalid field is a 400 BadRequestError naming it", async () => {
  await assert.rejects(
    client.completions.create({ prompt, max_tokens: 2, temperature: 5 }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === "temperature");
});

finish();
