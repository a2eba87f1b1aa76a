// Ollama's API (/api/*) through the official `ollama` npm package, @langchain/ollama's ChatOllama and the AI SDK's
// Ollama provider (ollama-ai-provider-v2, when installed), unchanged, against `pagoda serve` with the bundled model:
// list, show, ps and version; chat and generate, whole and streamed (the pieces make the whole text, the last has
// done and the counts), greedy text equal to the OpenAI chat endpoint's; format as a JSON schema; a forced tool
// call in Ollama's shape (arguments as an object); embed; Ollama's errors (an unknown model, think).
// Usage: node ollama_test.mjs BASE_URL. Exits 0 when every check passes; prints one line per check.
import assert from "node:assert/strict";
import { Ollama } from "ollama";
import { ChatOllama } from "@langchain/ollama";
import { check, finish } from "./checks.mjs";

const [baseURL] = process.argv.slice(2);
const apiKey = process.env.PAGODA_API_KEY || "none";
const headers = { Authorization: "Bearer " + apiKey };
const ollama = new Ollama({ host: baseURL, headers });
const model = "stories260K";
const messages = [{ role: "user", content: "Once upon a time" }];
const greedy = { temperature: 0, num_predict: 24 };

// The same conversation through /v1/chat/completions, greedy: what /api/chat must say.
async function openaiChat(maxTokens) {
  const r = await fetch(baseURL + "/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify({ messages, max_tokens: maxTokens, temperature: 0 }),
  });
  assert.equal(r.status, 200);
  return r.json();
}
const expected = await openaiChat(24);
const expectedText = expected.choices[0].message.content;

await check("list, show, ps and version describe the one model", async () => {
  const list = await ollama.list();
  assert.equal(list.models.length, 1);
  assert.equal(list.models[0].name, model + ":latest");
  assert.equal(list.models[0].details.format, "gguf");
  const show = await ollama.show({ model: list.models[0].name });
  assert.ok(show.capabilities.includes("completion"));
  assert.ok(show.capabilities.includes("tools"));
  const ps = await ollama.ps();
  assert.equal(ps.models[0].model, model + ":latest");
  assert.ok(ps.models[0].context_length > 0);
  const version = await ollama.version();
  assert.equal(typeof version.version, "string");
});

await check("chat: the chat endpoint's greedy text and Ollama's counts", async () => {
  const r = await ollama.chat({ model, messages, options: greedy });
  assert.equal(r.model, model);
  assert.equal(r.message.role, "assistant");
  assert.equal(r.message.content, expectedText);
  assert.equal(r.done, true);
  assert.equal(r.done_reason, expected.choices[0].finish_reason === "length" ? "length" : "stop");
  assert.equal(r.prompt_eval_count, expected.usage.prompt_tokens);
  assert.equal(r.eval_count, expected.usage.completion_tokens);
  assert.ok(r.total_duration > 0 && r.eval_duration >= 0 && r.prompt_eval_duration >= 0);
  assert.match(r.created_at, /^\d{4}-\d\d-\d\dT/);
});

await check("chat stream: the pieces make the whole text; the last is done with the counts", async () => {
  const stream = await ollama.chat({ model, messages, options: greedy, stream: true });
  let text = "";
  let last = null;
  let pieces = 0;
  for await (const part of stream) {
    if (!part.done) {
      text += part.message.content;
      pieces += 1;
    }
    last = part;
  }
  assert.ok(pieces > 1);
  assert.equal(text, expectedText);
  assert.equal(last.done, true);
  assert.equal(last.eval_count, expected.usage.completion_tokens);
});

await check("generate, whole and streamed, through the template and raw", async () => {
  const whole = await ollama.generate({ model, prompt: "Once upon a time", options: greedy });
  assert.equal(whole.done, true);
  assert.equal(whole.response, expectedText);
  const stream = await ollama.generate({ model, prompt: "Once upon a time", options: greedy, stream: true });
  let text = "";
  for await (const part of stream) text += part.response;
  assert.equal(text, expectedText);
  const raw = await ollama.generate({ model, prompt: "Once upon a time", raw: true, options: { temperature: 0, num_predict: 8 } });
  assert.equal(raw.eval_count, 8);
  assert.equal(raw.done_reason, "length");
});

await check("format: a JSON schema constrains the answer", async () => {
  const format = {
    type: "object",
    properties: { mood: { type: "string", enum: ["happy", "sad"] }, ok: { type: "boolean" } },
    required: ["mood", "ok"],
    additionalProperties: false,  // absent, other properties are allowed (JSON Schema's rule) and the model adds some
  };
  const r = await ollama.chat({ model, messages, format, options: { temperature: 0, num_predict: 64 } });
  const parsed = JSON.parse(r.message.content);
  assert.ok(["happy", "sad"].includes(parsed.mood));
  assert.equal(typeof parsed.ok, "boolean");
  assert.deepEqual(Object.keys(parsed), ["mood", "ok"]);
});

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", enum: ["Oslo", "Paris"] } }, required: ["city"] },
  },
};

await check("tools: a forced call in Ollama's shape, whole and streamed, and its result fed back", async () => {
  const tool_choice = { type: "function", function: { name: "get_weather" } };  // pagoda's field; Ollama has none
  const r = await ollama.chat({ model, messages, tools: [weatherTool], tool_choice, options: { temperature: 0, num_predict: 32 } });
  assert.equal(r.message.tool_calls.length, 1);
  const call = r.message.tool_calls[0];
  assert.equal(call.function.name, "get_weather");
  assert.ok(["Oslo", "Paris"].includes(call.function.arguments.city));
  const stream = await ollama.chat({
    model, messages, tools: [weatherTool], tool_choice, stream: true, options: { temperature: 0, num_predict: 32 },
  });
  const streamedCalls = [];
  for await (const part of stream) if (part.message.tool_calls) streamedCalls.push(...part.message.tool_calls);
  assert.equal(streamedCalls.length, 1);
  assert.deepEqual(streamedCalls[0].function.arguments, call.function.arguments);
  const next = await ollama.chat({
    model,
    messages: [...messages, r.message, { role: "tool", content: "11 degrees", tool_name: "get_weather" }],
    tools: [weatherTool],
    options: { temperature: 0, num_predict: 8 },
  });
  assert.equal(next.done, true);
});

await check("embed and the legacy embeddings", async () => {
  const r = await ollama.embed({ model, input: ["Once upon a time", "The end"] });
  assert.equal(r.embeddings.length, 2);
  const norm = Math.hypot(...r.embeddings[0]);
  assert.ok(Math.abs(norm - 1) < 1e-3, String(norm));
  assert.equal(r.prompt_eval_count > 0, true);
  const legacy = await ollama.embeddings({ model, prompt: "Once upon a time" });
  assert.equal(legacy.embedding.length, r.embeddings[0].length);
});

await check("Ollama's errors: an unknown model is a 404, think on a model that cannot think a 400", async () => {
  await assert.rejects(ollama.chat({ model: "llama3.2", messages }), (err) => {
    assert.equal(err.status_code, 404);
    assert.equal(err.error, 'model "llama3.2" not found, try pulling it first');
    return true;
  });
  await assert.rejects(ollama.chat({ model, messages, think: true }), (err) => {
    assert.equal(err.status_code, 400);
    assert.equal(err.error, `"${model}" does not support thinking`);
    return true;
  });
  await assert.rejects(ollama.chat({ model, messages, options: { mirostat: 2 } }), (err) => {
    assert.equal(err.status_code, 400);
    assert.match(err.error, /options\.mirostat/);
    return true;
  });
});

await check("@langchain/ollama ChatOllama: invoke and stream say the chat endpoint's text", async () => {
  const chat = new ChatOllama({ baseUrl: baseURL, model, temperature: 0, numPredict: 24, headers });
  const r = await chat.invoke([["human", "Once upon a time"]]);
  assert.equal(r.content, expectedText);
  let text = "";
  for await (const chunk of await chat.stream([["human", "Once upon a time"]])) text += chunk.content;
  assert.equal(text, expectedText);
  assert.equal(r.usage_metadata.input_tokens, expected.usage.prompt_tokens);
});

finish();
