// Two models served at once (`pagoda serve --add-model`), through the official `ollama` and `openai` npm packages,
// unchanged: list and ps name both models, chat picks its model by name (the answer repeats it), an unknown name is
// each client's not-found error, and a keep_alive of 0 unloads the added model once its request ends.
// Usage: node multimodel_test.mjs BASE_URL ADDED_MODEL. Exits 0 when every check passes; one line per check.
import assert from "node:assert/strict";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { check, finish } from "./checks.mjs";

const [baseURL, added] = process.argv.slice(2);
const ollama = new Ollama({ host: baseURL });
const openai = new OpenAI({ baseURL: baseURL + "/v1", apiKey: "none" });
const messages = [{ role: "user", content: "Once upon a time" }];

await check("openai: models.list names both, each chat answers as its model", async () => {
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ["stories260K", added]);
  for (const model of ids) {
    const r = await openai.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0 });
    assert.equal(r.model, model);
    assert.equal(r.choices[0].finish_reason, "length");
  }
  await assert.rejects(openai.chat.completions.create({ model: "nope", messages, max_tokens: 4 }), (err) => {
    assert.equal(err.status, 404);
    assert.equal(err.code, "model_not_found");
    return true;
  });
});

await check("ollama: list and ps, chat by model, keep_alive 0 unloads", async () => {
  const list = await ollama.list();
  assert.deepEqual(list.models.map((m) => m.name), ["stories260K:latest", added + ":latest"]);
  const r = await ollama.chat({ model: added, messages, options: { num_predict: 4, temperature: 0 }, keep_alive: 0 });
  assert.equal(r.model, added);
  assert.equal(r.done, true);
  let ps = [];
  for (let i = 0; i < 50; ++i) {
    ps = (await ollama.ps()).models.map((m) => m.name);
    if (!ps.includes(added + ":latest")) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.deepEqual(ps, ["stories260K:latest"]);
  await assert.rejects(ollama.chat({ model: "nope", messages }), (err) => {
    assert.equal(err.status_code, 404);
    return true;
  });
});

finish();
