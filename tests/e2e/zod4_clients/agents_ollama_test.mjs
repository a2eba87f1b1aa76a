// Clients that need zod 4, unchanged, against `pagoda serve` with the bundled model: the @openai/agents SDK in
// Responses mode runs an agent with a function tool to completion (the call forced by tool_choice, as the model
// is tiny; the SDK sends `include` on every call), and the AI SDK's Ollama provider (ollama-ai-provider-v2)
// generates and streams text through /api/chat, greedy, equal to the OpenAI chat endpoint's.
// Usage: node agents_ollama_test.mjs BASE_URL. Exits 0 when every check passes; prints one line per check.
import assert from "node:assert/strict";
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from "@openai/agents";
import { generateText, streamText } from "ai";
import { createOllama } from "ollama-ai-provider-v2";
import { z } from "zod";
import { check, finish } from "../node_clients/checks.mjs";

const [baseURL] = process.argv.slice(2);
const apiKey = process.env.PAGODA_API_KEY || "none";
const model = "stories260K";
setTracingDisabled(true);

await check("@openai/agents (Responses): an agent calls its tool and runs to a final output", async () => {
  const calls = [];
  const getWeather = tool({
    name: "get_weather",
    description: "The weather in a city",
    parameters: z.object({ city: z.enum(["Oslo", "Paris"]) }),
    execute: async ({ city }) => {
      calls.push(city);
      return `11 degrees in ${city}`;
    },
  });
  const agent = new Agent({
    name: "weather",
    instructions: "Answer with the weather.",
    model,
    tools: [getWeather],
    // The call is forced (the model is tiny); the tool's output is the run's final output.
    modelSettings: { toolChoice: "get_weather", maxTokens: 24, temperature: 0 },
    toolUseBehavior: "stop_on_first_tool",
  });
  const runner = new Runner({ modelProvider: new OpenAIProvider({ baseURL: baseURL + "/v1", apiKey, useResponses: true }) });
  const result = await runner.run(agent, "What is the weather in Oslo?", { maxTurns: 4 });
  assert.equal(calls.length, 1);
  assert.ok(["Oslo", "Paris"].includes(calls[0]));
  assert.equal(result.finalOutput, `11 degrees in ${calls[0]}`);
  assert.deepEqual(result.newItems.map((i) => i.type), ["tool_call_item", "tool_call_output_item"]);
});

await check("ollama-ai-provider-v2: generateText and streamText say the chat endpoint's greedy text", async () => {
  const r = await fetch(baseURL + "/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + apiKey },
    body: JSON.stringify({ messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 24, temperature: 0 }),
  });
  const expected = (await r.json()).choices[0].message.content;
  const ollama = createOllama({ baseURL: baseURL + "/api", headers: { Authorization: "Bearer " + apiKey } });
  const settings = { model: ollama(model), prompt: "Once upon a time", temperature: 0, maxOutputTokens: 24 };
  const whole = await generateText(settings);
  assert.equal(whole.text, expected);
  assert.ok(whole.usage.outputTokens > 0);
  let text = "";
  for await (const piece of streamText(settings).textStream) text += piece;
  assert.equal(text, expected);
});

finish();
