// Anthropic's Messages API (POST /v1/messages) through the official @anthropic-ai/sdk npm package, unchanged,
// against `pagoda serve` with the bundled model: messages.create (the greedy text the OpenAI chat endpoint gives
// for the same conversation, usage, stop reasons, stop_sequences), messages.stream (its events in order, the
// final message equal to create's), the raw SSE sequence with its ping, tool use (a forced tool_use block, its
// result fed back, streamed input_json_delta pieces), and Anthropic-shaped errors the SDK raises (a missing
// max_tokens, server tools), and messages.countTokens. Usage: node anthropic_test.mjs BASE_URL. Exits 0 when
// every check passes; prints one line per check.
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { check, finish } from "./checks.mjs";

const [baseURL] = process.argv.slice(2);
const apiKey = process.env.PAGODA_API_KEY || "none";
const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 });
const model = "stories260K";
const messages = [{ role: "user", content: "Once upon a time" }];

// The same conversation through /v1/chat/completions, greedy: what /v1/messages must say.
async function openaiChat(maxTokens) {
  const r = await fetch(baseURL + "/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + apiKey },
    body: JSON.stringify({ messages, max_tokens: maxTokens, temperature: 0 }),
  });
  assert.equal(r.status, 200);
  return r.json();
}

const chat = await openaiChat(40);
const expectedText = chat.choices[0].message.content;
let created = null;

await check("messages.create: the chat endpoint's greedy text, usage and stop reason", async () => {
  created = await client.messages.create({ model, max_tokens: 40, temperature: 0, messages });
  assert.equal(created.type, "message");
  assert.equal(created.role, "assistant");
  assert.equal(created.model, model);
  assert.match(created.id, /^msg_/);
  assert.equal(created.content.length, 1);
  assert.equal(created.content[0].type, "text");
  assert.equal(created.content[0].text, expectedText);
  assert.ok(expectedText.length > 0);
  assert.equal(created.stop_reason, chat.choices[0].finish_reason === "length" ? "max_tokens" : "end_turn");
  assert.equal(created.stop_sequence, null);
  assert.equal(created.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(created.usage.output_tokens, chat.usage.completion_tokens);
});

await check("messages.create with a stop sequence: stop_reason stop_sequence, the text before it", async () => {
  const word = expectedText.split(" ").filter((w) => w.length > 2)[2];
  const r = await client.messages.create({
    model,
    max_tokens: 40,
    temperature: 0,
    stop_sequences: [word],
    messages,
  });
  assert.equal(r.stop_reason, "stop_sequence");
  assert.equal(r.stop_sequence, word);
  assert.equal(r.content[0].text, expectedText.slice(0, expectedText.indexOf(word)));
});

await check("messages.stream: the events in order and the final message equal create's", async () => {
  const stream = client.messages.stream({ model, max_tokens: 40, temperature: 0, messages });
  const types = [];
  let text = "";
  stream.on("streamEvent", (event) => types.push(event.type));
  stream.on("text", (delta) => (text += delta));
  const final = await stream.finalMessage();
  assert.equal(types[0], "message_start");
  assert.equal(types[1], "content_block_start");
  assert.ok(types.slice(2, -3).length > 0, "at least one delta");
  assert.ok(types.slice(2, -3).every((t) => t === "content_block_delta"), types.join(","));
  assert.deepEqual(types.slice(-3), ["content_block_stop", "message_delta", "message_stop"]);
  assert.equal(text, expectedText);
  assert.equal(final.content[0].text, expectedText);
  assert.equal(final.stop_reason, created.stop_reason);
  assert.equal(final.usage.output_tokens, created.usage.output_tokens);
  assert.equal(final.usage.input_tokens, created.usage.input_tokens);
});

await check("the raw stream: message_start, content_block_start, ping, deltas, stop, message_delta, message_stop", async () => {
  const r = await fetch(baseURL + "/v1/messages", {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-api-key": apiKey, "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model, max_tokens: 8, temperature: 0, messages, stream: true }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /text\/event-stream/);
  const names = [...(await r.text()).matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
  assert.deepEqual(names.slice(0, 3), ["message_start", "content_block_start", "ping"]);
  assert.deepEqual(names.slice(-3), ["content_block_stop", "message_delta", "message_stop"]);
  assert.ok(names.slice(3, -3).every((n) => n === "content_block_delta"), names.join(","));
});

await check("a missing max_tokens is a BadRequestError with Anthropic's error body", async () => {
  await assert.rejects(client.messages.create({ model, messages }), (err) => {
    assert.ok(err instanceof Anthropic.BadRequestError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.error.type, "error");
    assert.equal(err.error.error.type, "invalid_request_error");
    assert.match(err.error.error.message, /max_tokens/);
    return true;
  });
});

const weatherTool = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: {
    type: "object",
    properties: { city: { type: "string", maxLength: 12 }, unit: { enum: ["celsius", "fahrenheit"] } },
    required: ["city", "unit"],
  },
};
const question = [{ role: "user", content: "What is the weather in Paris?" }];

await check("tool_choice tool: a tool_use block with an input its schema allows, stop_reason tool_use", async () => {
  const r = await client.messages.create({
    model,
    max_tokens: 60,
    messages: question,
    tools: [weatherTool],
    tool_choice: { type: "tool", name: "get_weather" },
  });
  assert.equal(r.stop_reason, "tool_use");
  const calls = r.content.filter((block) => block.type === "tool_use");
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, "get_weather");
  assert.ok(["celsius", "fahrenheit"].includes(calls[0].input.unit));
  assert.equal(typeof calls[0].input.city, "string");
  // The result goes back as a tool_result block, and the model answers in text.
  const next = await client.messages.create({
    model,
    max_tokens: 8,
    tools: [weatherTool],
    messages: [
      ...question,
      { role: "assistant", content: r.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: calls[0].id, content: "21 degrees" }] },
    ],
  });
  assert.equal(next.type, "message");
  assert.ok(["end_turn", "max_tokens", "tool_use"].includes(next.stop_reason));
});

await check("messages.stream with a forced tool: input_json_delta pieces, the final tool_use input parsed", async () => {
  const stream = client.messages.stream({
    model,
    max_tokens: 60,
    messages: question,
    tools: [weatherTool],
    tool_choice: { type: "tool", name: "get_weather" },
  });
  const deltas = [];
  stream.on("streamEvent", (event) => {
    if (event.type === "content_block_delta") deltas.push(event.delta.type);
  });
  const final = await stream.finalMessage();
  assert.ok(deltas.length > 1 && deltas.every((t) => t === "input_json_delta"), deltas.join(","));
  assert.equal(final.stop_reason, "tool_use");
  assert.equal(final.content.length, 1);
  assert.equal(final.content[0].type, "tool_use");
  assert.equal(final.content[0].name, "get_weather");
  assert.ok(["celsius", "fahrenheit"].includes(final.content[0].input.unit));
});

await check("server tools are refused with a 400 naming them", async () => {
  const tools = [{ type: "web_search_20250305", name: "web_search" }];
  await assert.rejects(client.messages.create({ model, max_tokens: 8, messages, tools }), (err) => {
    assert.equal(err.status, 400);
    assert.match(err.error.error.message, /no server tools/);
    return true;
  });
});

await check("messages.countTokens: the prompt's tokens, as create's usage counts them", async () => {
  const counted = await client.messages.countTokens({ model, messages });
  assert.equal(counted.input_tokens, created.usage.input_tokens);
  const system = await client.messages.countTokens({ model, system: "Be brief.", messages });
  assert.ok(system.input_tokens > counted.input_tokens);
});

finish();
