// /v1/embeddings' `dimensions` through the official openai npm package, unchanged, against a `pagoda serve` whose
// model declares Matryoshka sizes (its metadata or --matryoshka-dimensions): the full vectors equal what
// `pagoda embed` printed for the same texts; `dimensions` ALLOWED gives vectors of that length and norm 1, each the
// full vector's first ALLOWED values renormalized (in base64, the SDK's default, and in float); REFUSED is a 400
// naming the field. Usage: node embeddings_dimensions_test.mjs BASE_URL EXPECTED_JSONL MODEL ALLOWED REFUSED
// (EXPECTED_JSONL: the `pagoda embed` lines of the texts below, in order). Exits 0 when every check passes; prints
// one line per check.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { check, finish } from "./checks.mjs";

const [baseURL, expectedFile, model, allowedArg, refusedArg] = process.argv.slice(2);
const allowed = Number(allowedArg);
const refused = Number(refusedArg);
const expected = readFileSync(expectedFile, "utf8").trim().split("\n").map((line) => JSON.parse(line));
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey: "none", maxRetries: 0 });
const texts = ["Once upon a time", "The cat sat on the mat.", "Lily"];

function norm(v) {
  return Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
}

function assertSameVector(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < got.length; i += 1)
    assert.ok(Math.abs(got[i] - want[i]) <= 1e-5, `${what}: dimension ${i} is ${got[i]}, expected ${want[i]}`);
}

// The full vector cut to its first n values, then L2-normalized again.
function truncated(v, n) {
  const head = v.slice(0, n);
  const s = norm(head);
  return head.map((x) => x / s);
}

assert.equal(expected.length, texts.length, "the expected file has one line per text");

await check("embeddings.create without dimensions: the full vectors pagoda embed printed", async () => {
  const r = await client.embeddings.create({ model, input: texts });
  assert.equal(r.data.length, texts.length);
  for (let i = 0; i < texts.length; i += 1) {
    assert.ok(Math.abs(norm(r.data[i].embedding) - 1) < 1e-5);
    assertSameVector(r.data[i].embedding, expected[i].embedding, texts[i]);
  }
});

for (const encoding_format of [undefined, "float"]) {
  await check(`dimensions ${allowed} (${encoding_format || "base64, the default"}): the first values renormalized`, async () => {
    const r = await client.embeddings.create({ model, input: texts, dimensions: allowed, encoding_format });
    for (let i = 0; i < texts.length; i += 1) {
      assert.equal(r.data[i].embedding.length, allowed);
      assert.ok(Math.abs(norm(r.data[i].embedding) - 1) < 1e-5, `norm ${norm(r.data[i].embedding)}`);
      assertSameVector(r.data[i].embedding, truncated(expected[i].embedding, allowed), texts[i]);
    }
  });
}

await check(`dimensions ${refused} is a 400 naming the field`, async () => {
  await assert.rejects(client.embeddings.create({ model, input: texts[0], dimensions: refused }), (err) => {
    assert.equal(err.status, 400);
    assert.equal(err.param, "dimensions");
    return true;
  });
});

finish();
