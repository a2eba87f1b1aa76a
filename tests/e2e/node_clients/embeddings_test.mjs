// /v1/embeddings through the official openai npm package, unchanged, against `pagoda serve` with the bundled model:
// embeddings.create with one text and with several (the SDK asks for base64 by default and decodes it; float
// asked for explicitly gives the same numbers), each vector of the model's 64 dimensions and of norm 1, equal to
// what `pagoda embed` printed for the same text (the engine's pooling, called directly), usage.prompt_tokens the
// inputs' tokens; dimensions the model cannot give is a 400 naming the field. Usage: node embeddings_test.mjs
// BASE_URL EXPECTED_JSONL (the `pagoda embed` lines of the texts below, in order). Exits 0 when every check passes;
// prints one line per check.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { check, finish } from "./checks.mjs";

const [baseURL, expectedFile] = process.argv.slice(2);
const expected = readFileSync(expectedFile, "utf8").trim().split("\n").map((line) => JSON.parse(line));
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey: process.env.PAGODA_API_KEY || "none", maxRetries: 0 });
const model = "stories260K";
const texts = ["Once upon a time", "The cat sat on the mat.", "Lily"];

function assertSameVector(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < got.length; i += 1)
    assert.ok(Math.abs(got[i] - want[i]) <= 1e-6, `${what}: dimension ${i} is ${got[i]}, pagoda embed says ${want[i]}`);
}

function norm(v) {
  return Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
}

assert.equal(expected.length, texts.length, "the expected file has one line per text");

await check("embeddings.create, one text: 64 dimensions, norm 1, the engine's vector", async () => {
  const r = await client.embeddings.create({ model, input: texts[0] });
  assert.equal(r.object, "list");
  assert.equal(r.model, model);
  assert.equal(r.data.length, 1);
  assert.equal(r.data[0].object, "embedding");
  assert.equal(r.data[0].index, 0);
  assert.equal(r.data[0].embedding.length, 64);
  assert.ok(Math.abs(norm(r.data[0].embedding) - 1) < 1e-5, `norm ${norm(r.data[0].embedding)}`);
  assertSameVector(r.data[0].embedding, expected[0].embedding, texts[0]);
  assert.equal(r.usage.prompt_tokens, expected[0].num_tokens);
  assert.equal(r.usage.total_tokens, expected[0].num_tokens);
});

await check("embeddings.create, three texts at once: each in order, usage summed", async () => {
  const r = await client.embeddings.create({ model, input: texts });
  assert.equal(r.data.length, 3);
  for (let i = 0; i < 3; i += 1) {
    assert.equal(r.data[i].index, i);
    assert.ok(Math.abs(norm(r.data[i].embedding) - 1) < 1e-5);
    assertSameVector(r.data[i].embedding, expected[i].embedding, texts[i]);
  }
  assert.equal(r.usage.prompt_tokens, expected.reduce((sum, e) => sum + e.num_tokens, 0));
});

await check("encoding_format float gives the numbers the default base64 does", async () => {
  const asFloat = await client.embeddings.create({ model, input: texts, encoding_format: "float" });
  for (let i = 0; i < 3; i += 1) assertSameVector(asFloat.data[i].embedding, expected[i].embedding, texts[i]);
});

await check("dimensions the model cannot give is a 400 naming it", async () => {
  await assert.rejects(client.embeddings.create({ model, input: texts[0], dimensions: 32 }), (err) => {
    assert.equal(err.status, 400);
    assert.equal(err.param, "dimensions");
    return true;
  });
});

finish();
