// OpenAI's Responses API (POST /v1/responses, stateless) through the official openai npm package, unchanged,
// against `pagoda serve` with the bundled model: responses.create (the chat endpoint's greedy text as
// output_text, instructions and input items, usage, incomplete by max_output_tokens), text.format json_schema
// (an object the schema allows: the grammar's doing), function tools (a forced call as a function_call item),
// responses.stream (its typed events in order, text and function-call arguments), and previous_response_id
// refused by name. Usage: node responses_test.mjs BASE_URL. Exits 0 when every check passes; prints one line per
// check.
import assert from "node:assert/strict";
import OpenAI from "openai";
import { check, finish } from "./checks.mjs";

const [baseURL] = process.argv.slice(2);
const apiKey = process.env.PAGODA_API_KEY || "none";
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey, maxRetries: 0 });
const model = "stories260K";

const chat = await client.chat.completions.create({
  model,
  messages: [
    { role: "system", content: "Tell a story." },
    { role: "user", content: "Once upon a time" },
  ],
  max_tokens: 40,
  temperature: 0,
});
const expectedText = chat.choices[0].message.content;

const person = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 10 },
    mood: { enum: ["happy", "sad", "sleepy"] },
    age: { type: "integer", minimum: 0, maximum: 99 },
  },
  required: ["name", "mood", "age"],
  additionalProperties: false,
};
const weatherTool = {
  type: "function",
  name: "get_weather",
  description: "The weather in a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string", maxLength: 12 }, unit: { enum: ["celsius", "fahrenheit"] } },
    required: ["city", "unit"],
    additionalProperties: false,
  },
  strict: true,
};

await check("responses.create: the chat endpoint's greedy text as output_text, usage, incomplete by length", async () => {
  const r = await client.responses.create({
    model,
    instructions: "Tell a story.",
    input: "Once upon a time",
    max_output_tokens: 40,
    temperature: 0,
  });
  assert.equal(r.object, "response");
  assert.match(r.id, /^resp_/);
  assert.equal(r.model, model);
  assert.equal(r.output_text, expectedText);
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, "message");
  assert.equal(r.output[0].role, "assistant");
  assert.equal(r.output[0].content[0].type, "output_text");
  const length = chat.choices[0].finish_reason === "length";
  assert.equal(r.status, length ? "incomplete" : "completed");
  assert.equal(r.output[0].status, r.status);  // a message cut by max_output_tokens is incomplete too
  if (length) assert.equal(r.incomplete_details.reason, "max_output_tokens");
  assert.equal(r.instructions, "Tell a story.");
  assert.equal(r.max_output_tokens, 40);
  assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(r.usage.total_tokens, chat.usage.prompt_tokens + chat.usage.completion_tokens);
});

await check("input as message items (input_text parts, a developer turn) is the same conversation", async () => {
  const r = await client.responses.create({
    model,
    input: [
      { role: "system", content: [{ type: "input_text", text: "Tell a story." }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Once upon a time" }] },
    ],
    max_output_tokens: 40,
    temperature: 0,
  });
  assert.equal(r.output_text, expectedText);
});

await check("text.format json_schema: the output is an object the schema allows, status completed", async () => {
  const r = await client.responses.create({
    model,
    input: "Describe a person.",
    max_output_tokens: 100,
    temperature: 0,  // the Responses API has no seed: greedy keeps the check deterministic
    text: { format: { type: "json_schema", name: "person", schema: person, strict: true } },
  });
  assert.equal(r.status, "completed");
  const value = JSON.parse(r.output_text);
  assert.deepEqual(Object.keys(value).sort(), ["age", "mood", "name"]);
  assert.ok(["happy", "sad", "sleepy"].includes(value.mood));
  assert.ok(Number.isInteger(value.age) && value.age >= 0 && value.age <= 99);
  assert.equal(r.text.format.type, "json_schema");
});

await check("a forced function tool: a function_call item with arguments its schema allows", async () => {
  const r = await client.responses.create({
    model,
    input: "What is the weather in Paris?",
    max_output_tokens: 60,
    tools: [weatherTool],
    tool_choice: { type: "function", name: "get_weather" },
  });
  const calls = r.output.filter((item) => item.type === "function_call");
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, "get_weather");
  assert.match(calls[0].call_id, /^call_/);
  const args = JSON.parse(calls[0].arguments);
  assert.ok(["celsius", "fahrenheit"].includes(args.unit));
  assert.equal(typeof args.city, "string");
  // The call's result goes back as items, and the model answers in text.
  const next = await client.responses.create({
    model,
    input: [
      { role: "user", content: "What is the weather in Paris?" },
      { type: "function_call", call_id: calls[0].call_id, name: "get_weather", arguments: calls[0].arguments },
      { type: "function_call_output", call_id: calls[0].call_id, output: '{"temperature": 21}' },
    ],
    max_output_tokens: 8,
    tools: [weatherTool],
  });
  assert.equal(next.output[0].type, "message");
});

await check("responses.stream: typed events in order, the text deltas joining to the final output_text", async () => {
  const stream = client.responses.stream({
    model,
    input: "Describe a person.",
    max_output_tokens: 100,
    temperature: 0,
    text: { format: { type: "json_schema", name: "person", schema: person, strict: true } },
  });
  const types = [];
  let text = "";
  let last = -1;
  for await (const event of stream) {
    types.push(event.type);
    assert.equal(event.sequence_number, last + 1);
    last = event.sequence_number;
    if (event.type === "response.output_text.delta") text += event.delta;
  }
  const final = await stream.finalResponse();
  const deltas = types.filter((t) => t === "response.output_text.delta").length;
  assert.ok(deltas > 1);
  assert.deepEqual(types, [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    ...Array(deltas).fill("response.output_text.delta"),
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
  ]);
  assert.equal(final.status, "completed");
  assert.equal(final.output[0].content[0].text, text);
  JSON.parse(text);
  assert.ok(final.usage.output_tokens > 0);
});

await check("responses.stream with a forced function call: its arguments stream as deltas", async () => {
  const stream = client.responses.stream({
    model,
    input: "What is the weather in Paris?",
    max_output_tokens: 60,
    tools: [weatherTool],
    tool_choice: { type: "function", name: "get_weather" },
  });
  const types = [];
  for await (const event of stream) types.push(event.type);
  const final = await stream.finalResponse();
  assert.equal(types[0], "response.created");
  assert.ok(types.filter((t) => t === "response.function_call_arguments.delta").length > 1, types.join(","));
  assert.ok(types.includes("response.function_call_arguments.done"));
  assert.equal(types.at(-1), "response.completed");
  const call = final.output.find((item) => item.type === "function_call");
  assert.equal(call.name, "get_weather");
  JSON.parse(call.arguments);
});

await check("previous_response_id is a 400 naming it (this server keeps no responses)", async () => {
  await assert.rejects(
    client.responses.create({ model, input: "Hi", previous_response_id: "resp_123" }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === "previous_response_id",
  );
});

await check("reasoning.effort is refused by name where the template reads none, reasoning.summary everywhere", async () => {
  await assert.rejects(
    client.responses.create({ model, input: "Hi", reasoning: { effort: "low" } }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === "reasoning.effort",
  );
  await assert.rejects(
    client.responses.create({ model, input: "Hi", reasoning: { summary: "auto" } }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === "reasoning.summary",
  );
});

finish();
