// Reasoning output through the official openai and @anthropic-ai/sdk npm packages, unchanged, against two `pagoda
// serve` instances of the bundled model: one whose chat template opens a <think> reasoning at the end of its
// prompt (as DeepSeek-R1's and Qwen3's do), one with a harmony template (gpt-oss's channels). stories260K never
// thinks on its own: a regex constraint makes it write the reasoning, the answer and the calls in each format, so
// what is checked is the server's reading of them: message.reasoning_content and delta.reasoning_content, a
// Qwen3.5 XML call and a harmony commentary call parsed into tool_calls after the reasoning, reasoning_tokens,
// the per-request reasoning_format "none", reasoning_effort reaching the template that reads it (and refused by
// the one that does not), the Responses API's reasoning item and events, Anthropic's thinking block.
// Usage: node reasoning_test.mjs THINK_BASE_URL HARMONY_BASE_URL. Prints one line per check.
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { check, finish } from "./checks.mjs";

const [thinkURL, harmonyURL] = process.argv.slice(2);
const apiKey = "none";
const think = new OpenAI({ baseURL: thinkURL + "/v1", apiKey, maxRetries: 0 });
const harmony = new OpenAI({ baseURL: harmonyURL + "/v1", apiKey, maxRetries: 0 });
const model = "stories260K";
const messages = [{ role: "user", content: "Once upon a time" }];
const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

// The think server's prompt ends inside <think>: the output is a reasoning, </think>, then the answer.
const thinkRegex = "[a-z]{1,4}( [a-z]{1,4}){1,3}</think>\n\n[A-Z][a-z]{1,4}( [a-z]{1,4}){1,3}";
const qwenCallRegex =
  "[a-z]{1,4}( [a-z]{1,4}){1,2}</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n[a-z]{2,6}\n" +
  "</parameter>\n</function>\n</tool_call>";
const esc = (s) => s.replace(/[|.{}]/g, (c) => "\\" + c);
const harmonyRegex =
  esc("<|channel|>analysis<|message|>") + "[a-z]{1,4}( [a-z]{1,4}){1,3}" +
  esc("<|end|><|start|>assistant<|channel|>final<|message|>") + "[A-Z][a-z]{1,4}( [a-z]{1,4}){1,3}";
const harmonyCallRegex =
  esc("<|channel|>analysis<|message|>") + "[a-z]{1,4}( [a-z]{1,4}){1,2}" +
  esc("<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>") +
  '\\{"city":"[a-z]{2,6}"\\}';

async function collect(stream) {
  const out = { reasoning: "", content: "", calls: {}, finish: null, usage: null, roles: 0 };
  for await (const chunk of stream) {
    if (chunk.usage) out.usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.role) out.roles += 1;
    out.reasoning += c.delta.reasoning_content ?? "";
    out.content += c.delta.content ?? "";
    for (const t of c.delta.tool_calls ?? []) {
      const call = (out.calls[t.index] ??= { name: "", arguments: "" });
      call.name += t.function?.name ?? "";
      call.arguments += t.function?.arguments ?? "";
    }
    if (c.finish_reason) out.finish = c.finish_reason;
  }
  return out;
}

await check("think tags: message.reasoning_content apart from the content, and reasoning_tokens", async () => {
  const r = await think.chat.completions.create({ model, messages, temperature: 0, max_tokens: 80, guided_regex: thinkRegex });
  const m = r.choices[0].message;
  assert.match(m.reasoning_content, /^[a-z]{1,4}( [a-z]{1,4}){1,3}$/);
  assert.match(m.content, /^[A-Z][a-z]{1,4}( [a-z]{1,4}){1,3}$/);
  assert.equal(r.choices[0].finish_reason, "stop");
  const details = r.usage.completion_tokens_details;
  assert.ok(details && details.reasoning_tokens > 0 && details.reasoning_tokens < r.usage.completion_tokens,
            JSON.stringify(r.usage));
});

await check("think tags streamed: delta.reasoning_content pieces join to the whole response's", async () => {
  const whole = await think.chat.completions.create({ model, messages, temperature: 0, max_tokens: 80, guided_regex: thinkRegex });
  const s = await collect(await think.chat.completions.create({
    model, messages, temperature: 0, max_tokens: 80, guided_regex: thinkRegex, stream: true,
    stream_options: { include_usage: true },
  }));
  assert.equal(s.reasoning, whole.choices[0].message.reasoning_content);
  assert.equal(s.content, whole.choices[0].message.content);
  assert.ok(!s.content.includes("think>") && !s.reasoning.includes("think>"));
  assert.equal(s.roles, 1);
  assert.equal(s.usage.completion_tokens_details.reasoning_tokens,
               whole.usage.completion_tokens_details.reasoning_tokens);
});

await check("a reasoning cut by max_tokens stays reasoning, the content empty", async () => {
  const r = await think.chat.completions.create({ model, messages, temperature: 0, max_tokens: 12 });
  assert.equal(r.choices[0].finish_reason, "length");
  assert.ok(r.choices[0].message.reasoning_content.length > 0);
  assert.equal(r.choices[0].message.content, "");
});

await check("a JSON response_format after a prompt that opens <think>: the object is the content", async () => {
  for (const stream of [false, true]) {
    const schema = {
      type: "object", properties: { mood: { enum: ["happy", "sad"] } }, required: ["mood"], additionalProperties: false,
    };
    const body = {
      model, messages, temperature: 0, max_tokens: 60,
      response_format: { type: "json_schema", json_schema: { name: "m", schema } },
    };
    const m = stream
      ? await collect(await think.chat.completions.create({ ...body, stream: true }))
      : (await think.chat.completions.create(body)).choices[0].message;
    const content = m.content;
    assert.ok(!m.reasoning_content, JSON.stringify(m));
    assert.ok(["happy", "sad"].includes(JSON.parse(content).mood), content);
  }
});

await check("reasoning_format none per request keeps the reasoning inline", async () => {
  const r = await think.chat.completions.create({
    model, messages, temperature: 0, max_tokens: 80, guided_regex: thinkRegex, reasoning_format: "none",
  });
  assert.equal(r.choices[0].message.reasoning_content, undefined);
  assert.match(r.choices[0].message.content, /<\/think>/);
});

await check("enable_thinking false (chat_template_kwargs): the template closes the reasoning, all is content", async () => {
  const r = await think.chat.completions.create({
    model, messages, temperature: 0, max_tokens: 10, chat_template_kwargs: { enable_thinking: false },
  });
  assert.equal(r.choices[0].message.reasoning_content, undefined);
  assert.ok(r.choices[0].message.content.length > 0);
});

await check("Qwen3.5's XML call after a reasoning parses into tool_calls, streamed and not", async () => {
  const body = { model, messages, temperature: 0, max_tokens: 120, tools: [weatherTool], guided_regex: qwenCallRegex };
  const r = await think.chat.completions.create(body);
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  assert.match(m.reasoning_content, /^[a-z]/);
  assert.equal(m.tool_calls.length, 1);
  assert.equal(m.tool_calls[0].function.name, "get_weather");
  assert.match(JSON.parse(m.tool_calls[0].function.arguments).city, /^[a-z]{2,6}$/);
  const s = await collect(await think.chat.completions.create({ ...body, stream: true }));
  assert.equal(s.finish, "tool_calls");
  assert.equal(s.reasoning, m.reasoning_content);
  assert.equal(s.calls[0].name, "get_weather");
  assert.deepEqual(JSON.parse(s.calls[0].arguments), JSON.parse(m.tool_calls[0].function.arguments));
});

await check("reasoning_effort is refused by name where the template reads none", async () => {
  await assert.rejects(
    think.chat.completions.create({ model, messages, max_tokens: 4, reasoning_effort: "low" }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === "reasoning_effort");
});

await check("harmony: the analysis channel is reasoning_content, the final channel the content", async () => {
  const r = await harmony.chat.completions.create({ model, messages, temperature: 0, max_tokens: 120, guided_regex: harmonyRegex });
  const m = r.choices[0].message;
  assert.match(m.reasoning_content, /^[a-z]{1,4}( [a-z]{1,4}){1,3}$/);
  assert.match(m.content, /^[A-Z][a-z]{1,4}( [a-z]{1,4}){1,3}$/);
  const s = await collect(await harmony.chat.completions.create({
    model, messages, temperature: 0, max_tokens: 120, guided_regex: harmonyRegex, stream: true,
  }));
  assert.equal(s.reasoning, m.reasoning_content);
  assert.equal(s.content, m.content);
});

await check("harmony: a commentary call to=functions.NAME parses into tool_calls, streamed and not", async () => {
  const body = { model, messages, temperature: 0, max_tokens: 160, tools: [weatherTool], guided_regex: harmonyCallRegex };
  const r = await harmony.chat.completions.create(body);
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  assert.ok(m.reasoning_content.length > 0);
  assert.equal(m.content, null);
  assert.equal(m.tool_calls[0].function.name, "get_weather");
  assert.match(JSON.parse(m.tool_calls[0].function.arguments).city, /^[a-z]{2,6}$/);
  const s = await collect(await harmony.chat.completions.create({ ...body, stream: true }));
  assert.equal(s.finish, "tool_calls");
  assert.equal(s.reasoning, m.reasoning_content);
  assert.equal(s.content, "");
  assert.equal(s.calls[0].name, "get_weather");
  assert.equal(s.calls[0].arguments, m.tool_calls[0].function.arguments);
});

await check("reasoning_effort reaches a template that reads it (gpt-oss's)", async () => {
  const plain = await harmony.chat.completions.create({ model, messages, max_tokens: 1 });
  const high = await harmony.chat.completions.create({ model, messages, max_tokens: 1, reasoning_effort: "high" });
  assert.ok(high.usage.prompt_tokens > plain.usage.prompt_tokens, `${high.usage.prompt_tokens} vs ${plain.usage.prompt_tokens}`);
  await assert.rejects(harmony.chat.completions.create({ model, messages, max_tokens: 1, reasoning_effort: "extreme" }),
                       (err) => err instanceof OpenAI.BadRequestError && err.param === "reasoning_effort");
});

await check("Responses API: a reasoning item before the message, whole and streamed", async () => {
  const r = await think.responses.create({ model, input: "Once upon a time", max_output_tokens: 12, temperature: 0 });
  assert.equal(r.output[0].type, "reasoning");
  assert.ok(r.output[0].content[0].text.length > 0);
  assert.equal(r.output[0].content[0].type, "reasoning_text");
  assert.ok(r.usage.output_tokens_details.reasoning_tokens > 0);
  const stream = think.responses.stream({ model, input: "Once upon a time", max_output_tokens: 12, temperature: 0 });
  let deltas = "";
  const types = [];
  for await (const e of stream) {
    types.push(e.type);
    if (e.type === "response.reasoning_text.delta") deltas += e.delta;
  }
  const final = await stream.finalResponse();
  assert.equal(deltas, r.output[0].content[0].text);
  assert.equal(final.output[0].content[0].text, deltas);
  assert.ok(types.includes("response.reasoning_text.done"), types.join(","));
  await assert.rejects(think.responses.create({ model, input: "Hi", reasoning: { effort: "low" } }),
                       (err) => err instanceof OpenAI.BadRequestError && err.param === "reasoning.effort");
});

await check("Anthropic: a thinking block before the text, whole and streamed", async () => {
  const client = new Anthropic({ baseURL: thinkURL, apiKey, maxRetries: 0 });
  const m = await client.messages.create({
    model, max_tokens: 12, temperature: 0, messages, thinking: { type: "enabled", budget_tokens: 1024 },
  });
  assert.equal(m.content[0].type, "thinking");
  assert.ok(m.content[0].thinking.length > 0);
  const stream = client.messages.stream({ model, max_tokens: 12, temperature: 0, messages });
  let thinking = "";
  stream.on("thinking", (delta) => { thinking += delta; });
  const final = await stream.finalMessage();
  assert.equal(thinking, m.content[0].thinking);
  assert.equal(final.content[0].thinking, thinking);
  // disabled: the template closes the reasoning (enable_thinking false), so there is none.
  const off = await client.messages.create({
    model, max_tokens: 12, temperature: 0, messages, thinking: { type: "disabled" },
  });
  assert.equal(off.content[0].type, "text");
});

finish();
