// Property test of structured outputs through `pagoda serve` and the bundled model: 200 random JSON schemas
// (seeded; objects with required and optional properties, nested objects, arrays with bounds, strings with
// lengths, enums, formats and patterns, bounded integers and numbers, booleans, null, const, anyOf over distinct
// types, $defs with $ref), each sent as vLLM's guided_json on /v1/completions greedy and sampled. Every output
// that ends with finish_reason "stop" must validate with ajv (draft-07 and ajv-formats); an output cut by
// max_tokens is counted, not validated. Usage: node served_property_test.mjs BASE_URL [NUM_SCHEMAS]. Exits 0 when
// every complete output validates and most outputs complete; prints the counts.
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const [baseURL, numArg] = process.argv.slice(2);
const numSchemas = Number(numArg || 200);

// xorshift32: the same schemas on every run.
let state = 0x9e3779b9;
const rand = () => {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state / 0x100000000;
};
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[int(0, xs.length - 1)];
const words = ['cat', 'dog', 'sun', 'red', 'big', 'Lily', 'park', 'ball', 'tree', 'happy'];

function leaf(depth) {
  switch (int(0, 9)) {
    case 0: return { type: 'string', maxLength: int(1, 12) };
    case 1: return { type: 'string', minLength: int(1, 3), maxLength: int(3, 10) };
    case 2: return { enum: Array.from({ length: int(1, 4) }, () => pick(words)).filter((w, i, a) => a.indexOf(w) === i) };
    case 3: return { type: 'string', format: pick(['date', 'time', 'date-time', 'uuid', 'email']) };
    case 4: return { type: 'string', pattern: pick(['^[a-z]{2,5}$', '^[0-9]{3}-[0-9]{2}$', '^(yes|no)$']) };
    case 5: { const lo = int(-50, 50); return { type: 'integer', minimum: lo, maximum: lo + int(0, 1000) }; }
    case 6: { const lo = int(-10, 10); return { type: 'number', minimum: lo, exclusiveMaximum: lo + int(1, 100) }; }
    case 7: return { type: 'boolean' };
    case 8: return pick([{ type: 'null' }, { const: pick(words) }, { const: int(0, 9) }]);
    default: return depth > 0 ? node(depth - 1) : { type: 'boolean' };
  }
}

function node(depth) {
  switch (depth > 0 ? int(0, 5) : 0) {
    case 1: {
      const minItems = int(0, 2);
      return { type: 'array', items: leaf(depth - 1), minItems, maxItems: minItems + int(0, 3) };
    }
    case 2: return { anyOf: [{ type: 'integer', minimum: 0, maximum: 99 }, { type: 'string', maxLength: 6 }, { type: 'null' }].slice(0, int(2, 3)) };
    case 3: return { type: 'array', prefixItems: [leaf(0), leaf(0)], items: false };
    default: return object(depth);
  }
}

function object(depth) {
  const n = int(1, 4);
  const properties = {};
  const required = [];
  for (let i = 0; i < n; i++) {
    const name = `${pick(words)}_${i}`;
    properties[name] = depth > 0 && rand() < 0.3 ? node(depth - 1) : leaf(0);
    if (rand() < 0.7) required.push(name);
  }
  return { type: 'object', properties, required, additionalProperties: false };
}

function schemaAt(i) {
  const s = object(int(0, 2));
  if (i % 10 === 9) {  // $defs and $ref
    return { $defs: { item: leaf(0) }, type: 'object', properties: { a: { $ref: '#/$defs/item' }, b: { type: 'array', items: { $ref: '#/$defs/item' }, maxItems: 3 } }, required: ['a', 'b'], additionalProperties: false };
  }
  return s;
}

const ajv = new Ajv({ strict: false, allErrors: false });
addFormats(ajv);
const counts = { schemas: 0, refused: 0, outputs: 0, complete: 0, valid: 0, cut: 0 };
const failures = [];
for (let i = 0; i < numSchemas; i++) {
  const schema = schemaAt(i);
  const validate = ajv.compile(schema);
  counts.schemas++;
  for (const temperature of [0, 1]) {
    const body = { prompt: 'Once upon a time', max_tokens: 256, temperature, seed: i, guided_json: schema };
    const res = await fetch(baseURL + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    });
    const reply = await res.json();
    if (res.status === 400) {
      counts.refused++;
      failures.push({ schema, error: reply.error });  // every feature used here is a supported one
      break;
    }
    if (res.status !== 200) {
      failures.push({ schema, status: res.status, reply });
      continue;
    }
    counts.outputs++;
    const choice = reply.choices[0];
    if (choice.finish_reason !== 'stop') {
      counts.cut++;
      continue;
    }
    counts.complete++;
    let value;
    try {
      value = JSON.parse(choice.text);
    } catch (e) {
      failures.push({ schema, temperature, text: choice.text, error: 'not JSON' });
      continue;
    }
    if (validate(value)) counts.valid++;
    else failures.push({ schema, temperature, text: choice.text, errors: validate.errors });
  }
}
console.log(JSON.stringify(counts));
for (const f of failures.slice(0, 5)) console.log('FAIL ' + JSON.stringify(f));
const ok = failures.length === 0 && counts.complete >= 0.9 * counts.outputs;
console.log(ok ? 'property test passed' : `property test failed: ${failures.length} failures`);
process.exit(ok ? 0 : 1);
