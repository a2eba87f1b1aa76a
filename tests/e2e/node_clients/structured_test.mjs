// Structured outputs and tool calls through real clients, unchanged, against `pagoda serve` with the bundled model
// (stories260K knows no JSON and no tools: every valid object and call below is the grammar's doing). The openai
// SDK's chat.completions.parse with a zod schema and its streamed tool calls (assembled by hand and by the SDK's
// stream helper); LangChain's withStructuredOutput (JSON schema and function calling) and bindTools; the Vercel
// AI SDK's generateObject and tool calls. Usage: node structured_test.mjs BASE_URL. Exits 0 when every check
// passes; prints one line per check.
import assert from "node:assert/strict";
import OpenAI from "openai";
import { zodFunction, zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";
import { z as z4 } from "zod/v4";
import { ChatOpenAI } from "@langchain/openai";
import { tool as langchainTool } from "@langchain/core/tools";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateObject, generateText, tool as aiTool, jsonSchema } from "ai";
import { check, finish } from "./checks.mjs";

const [baseURL] = process.argv.slice(2);
const apiKey = process.env.PAGODA_API_KEY || "none";
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey, maxRetries: 0 });
const model = "stories260K";

// Bounded fields: a tiny model inside an unbounded string could write until max_tokens.
const Person = z.object({
  name: z.string().max(12),
  age: z.number().int().min(0).max(120),
  mood: z.enum(["happy", "sad", "sleepy"]),
  likes_cats: z.boolean(),
});
const Weather = z.object({ city: z.string().max(16), unit: z.enum(["celsius", "fahrenheit"]) });
// The bundled model's context is 512 tokens of a 512-token vocabulary (a JSON character is about a token): the
// tools the default tool prompt lists must stay small to leave room for the call.
const Mood = z.object({ mood: z.enum(["happy", "sad", "sleepy"]), hours: z.number().int().min(0).max(24) });
const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string", maxLength: 16 }, unit: { enum: ["celsius", "fahrenheit"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  },
};
const timeTool = {
  type: "function",
  function: {
    name: "get_time",
    parameters: { type: "object", properties: { zone: { enum: ["UTC", "CET", "PST"] } }, required: ["zone"] },
  },
};
const dayTool = {
  type: "function",
  function: {
    name: "get_day",
    parameters: { type: "object", properties: { offset: { type: "integer", minimum: 0, maximum: 6 } }, required: ["offset"] },
  },
};
const messages = [{ role: "user", content: "Once upon a time, a girl named Lily" }];

await check("openai chat.completions.parse with a zod schema returns the parsed object", async () => {
  for (const temperature of [0, 1]) {
    const r = await client.chat.completions.parse({
      model, messages, temperature, seed: 5, max_tokens: 200,
      response_format: zodResponseFormat(Person, "person"),
    });
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.ok(m.parsed, `no parsed object: ${m.content}`);
    assert.deepEqual(Person.parse(m.parsed), m.parsed);
    assert.deepEqual(JSON.parse(m.content), m.parsed);
  }
});

// zod 4 (the `zod/v4` entry of the pinned zod, the same code `npm i zod` installs as zod 4): its JSON Schema writes
// the safe-integer bounds into .int(), a pattern beside the format of .uuid(), .iso.datetime() and .email() (the
// email one opens with two lookaheads), anyOf for .nullable() and unions, a default, additionalProperties for
// z.record; each compiles and the output parses with the zod schema.
await check("zod 4 schemas (int, uuid, datetime, email, url, record, unions, optional, nullable, default) through response_format", async () => {
  const Event = z4.object({
    id: z4.uuid(),
    host: z4.email().max(40),
    site: z4.url().max(40),
    at: z4.iso.datetime(),
    count: z4.number().int(),
    level: z4.number().int().min(1).max(5).default(3),
    kind: z4.discriminatedUnion("type", [
      z4.object({ type: z4.literal("meeting"), room: z4.number().int().min(1).max(9) }),
      z4.object({ type: z4.literal("call"), muted: z4.boolean() }),
    ]),
    flag: z4.union([z4.boolean(), z4.null()]),
    note: z4.enum(["ok", "late"]).nullable(),
    extra: z4.boolean().optional(),
  });
  const schema = z4.toJSONSchema(Event);
  assert.equal(schema.properties.count.maximum, 9007199254740991);
  for (const temperature of [0, 1]) {
    const r = await client.chat.completions.create({
      model, messages, temperature, seed: 3, max_tokens: 400,
      response_format: { type: "json_schema", json_schema: { name: "event", schema } },
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, "stop", c.message.content);
    const value = JSON.parse(c.message.content);
    const parsed = Event.parse(value);  // .url() gives the URL normalized (a scheme in lower case)
    assert.equal(parsed.site, new URL(value.site).href);
    assert.deepEqual({ ...parsed, site: value.site }, { level: 3, ...value });
  }
  // z.record (additionalProperties with propertyNames) is accepted; this model never closes an open-ended map, so
  // the check is that the schema compiles (a 200, not a 400) and the text so far is the object's start.
  const Tags = z4.object({ tags: z4.record(z4.string().max(12), z4.number().int()) });
  const t = await client.chat.completions.create({
    model, messages, temperature: 0, max_tokens: 24,
    response_format: { type: "json_schema", json_schema: { name: "tags", schema: z4.toJSONSchema(Tags) } },
  });
  assert.match(t.choices[0].message.content, /^\s*\{\s*"tags"/);
  if (t.choices[0].finish_reason === "stop") Tags.parse(JSON.parse(t.choices[0].message.content));
});

await check("openai json_object and guided_choice (vLLM's extra field) hold", async () => {
  const r = await client.chat.completions.create({
    model, messages, max_tokens: 60, temperature: 0, response_format: { type: "json_object" },
  });
  const c = r.choices[0];
  // The smallest object may need more than 60 tokens from this model only if it never closes it; either way the
  // text so far is JSON's start, and a stop means a whole object.
  if (c.finish_reason === "stop") assert.equal(typeof JSON.parse(c.message.content), "object");
  const choice = await client.chat.completions.create({
    model, messages, max_tokens: 20, temperature: 1, guided_choice: ["yes", "no", "maybe so"],
  });
  assert.ok(["yes", "no", "maybe so"].includes(choice.choices[0].message.content), choice.choices[0].message.content);
});

await check("openai: a bad schema is a 400 naming the field", async () => {
  await assert.rejects(
    client.chat.completions.create({
      model, messages, max_tokens: 10,
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "frobnicate" } } },
    }),
    (err) => err.status === 400 && err.param === "response_format.json_schema.schema",
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages, max_tokens: 10, guided_grammar: "root ::= (" }),
    (err) => err.status === 400 && err.param === "guided_grammar",
  );
});

function assemble(chunks) {
  const calls = [];
  let finish = null, content = "";
  for (const chunk of chunks) {
    for (const c of chunk.choices) {
      if (c.finish_reason) finish = c.finish_reason;
      if (c.delta.content) content += c.delta.content;
      for (const d of c.delta.tool_calls || []) {
        if (!calls[d.index]) calls[d.index] = { id: "", type: "", function: { name: "", arguments: "" } };
        const call = calls[d.index];
        if (d.id) call.id = d.id;
        if (d.type) call.type = d.type;
        if (d.function?.name) call.function.name += d.function.name;
        if (d.function?.arguments) call.function.arguments += d.function.arguments;
      }
    }
  }
  return { calls, finish, content };
}

await check("openai: streamed tool calls (required) assemble into a valid call", async () => {
  const stream = await client.chat.completions.create({
    model, messages, tools: [timeTool, dayTool], tool_choice: "required", parallel_tool_calls: false,
    stream: true, temperature: 0,
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const { calls, finish, content } = assemble(chunks);
  assert.equal(finish, "tool_calls");
  assert.equal(content, "");
  assert.equal(calls.length, 1);
  assert.match(calls[0].id, /^call_/);
  assert.equal(calls[0].type, "function");
  const args = JSON.parse(calls[0].function.arguments);
  if (calls[0].function.name === "get_day") assert.ok(Number.isInteger(args.offset) && args.offset >= 0 && args.offset <= 6);
  else assert.ok(["UTC", "CET", "PST"].includes(args.zone), calls[0].function.arguments);
});

await check("openai: a named tool's call streams its arguments piece by piece (the SDK's stream helper)", async () => {
  const runner = client.chat.completions.stream({
    model, messages, tools: [zodFunction({ name: "get_weather", parameters: Weather })],
    tool_choice: { type: "function", function: { name: "get_weather" } }, temperature: 0.7, seed: 3,
  });
  let pieces = 0;
  runner.on("tool_calls.function.arguments.delta", () => (pieces += 1));
  const final = await runner.finalChatCompletion();
  const m = final.choices[0].message;
  assert.equal(final.choices[0].finish_reason, "tool_calls");
  assert.equal(m.tool_calls.length, 1);
  assert.equal(m.tool_calls[0].function.name, "get_weather");
  Weather.parse(m.tool_calls[0].function.parsed_arguments);
  assert.ok(pieces > 2, `the arguments came in ${pieces} pieces`);
});

await check("openai: a tool call and its result go back into the conversation", async () => {
  const first = await client.chat.completions.create({
    model, messages, tools: [weatherTool], tool_choice: "required", parallel_tool_calls: false, temperature: 0,
  });
  const call = first.choices[0].message.tool_calls[0];
  const second = await client.chat.completions.create({
    model, max_tokens: 8, temperature: 0, tools: [weatherTool],
    messages: [...messages, first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "sunny, 21" }],
  });
  assert.ok(["stop", "length", "tool_calls"].includes(second.choices[0].finish_reason));
});

const chatModel = new ChatOpenAI({
  model, apiKey, temperature: 0, maxRetries: 0, configuration: { baseURL: baseURL + "/v1" },
});

await check("LangChain withStructuredOutput (json schema and function calling) returns the object", async () => {
  for (const method of ["jsonSchema", "functionCalling"]) {
    const structured = chatModel.withStructuredOutput(Mood, { name: "mood", method });
    const mood = await structured.invoke("Once upon a time, a girl named Lily");
    assert.ok(mood, `${method}: ${mood}`);
    assert.deepEqual(Mood.parse(mood), mood, method);
  }
});

await check("LangChain bindTools with tool_choice required gives a tool call", async () => {
  const weather = langchainTool(async ({ city }) => `sunny in ${city}`, {
    name: "get_weather", description: "The weather in a city", schema: Weather,
  });
  const bound = chatModel.bindTools([weather], { tool_choice: "required", parallel_tool_calls: false });
  const msg = await bound.invoke("Once upon a time, a girl named Lily");
  assert.equal(msg.tool_calls.length >= 1, true, JSON.stringify(msg));
  assert.equal(msg.tool_calls[0].name, "get_weather");
  Weather.parse(msg.tool_calls[0].args);
  assert.ok(msg.tool_calls[0].id);
});

const provider = createOpenAICompatible({ name: "pagoda", baseURL: baseURL + "/v1", apiKey, supportsStructuredOutputs: true });

await check("Vercel AI SDK generateObject returns the object", async () => {
  const { object, finishReason } = await generateObject({
    model: provider(model), schema: Person, prompt: "Once upon a time, a girl named Lily", temperature: 0,
    maxOutputTokens: 200, maxRetries: 0,
  });
  assert.equal(finishReason, "stop");
  assert.deepEqual(Person.parse(object), object);
});

await check("Vercel AI SDK generateText with a required tool gives a valid tool call", async () => {
  const result = await generateText({
    model: provider(model), prompt: "Once upon a time, a girl named Lily", toolChoice: "required",
    tools: { get_weather: aiTool({ description: "The weather in a city", inputSchema: Weather }) },
    // openai-compatible passes its provider options through as request fields: one call, as the checks expect.
    providerOptions: { pagoda: { parallel_tool_calls: false } },
    temperature: 0, maxRetries: 0,
  });
  assert.equal(result.finishReason, "tool-calls");
  assert.equal(result.toolCalls.length, 1);
  assert.equal(result.toolCalls[0].toolName, "get_weather");
  Weather.parse(result.toolCalls[0].input);
});

await check("Vercel AI SDK tool calls stream too (streamText)", async () => {
  const { streamText } = await import("ai");
  const result = streamText({
    model: provider(model), prompt: "Once upon a time", toolChoice: { type: "tool", toolName: "get_time" },
    tools: {
      get_time: aiTool({ description: "The time in a zone", inputSchema: jsonSchema(timeTool.function.parameters) }),
    },
    temperature: 0, maxRetries: 0,
  });
  const calls = await result.toolCalls;
  assert.equal(calls.length, 1);
  assert.equal(calls[0].toolName, "get_time");
  assert.ok(["UTC", "CET", "PST"].includes(calls[0].input.zone), JSON.stringify(calls[0].input));
  assert.equal(await result.finishReason, "tool-calls");
});

finish();
