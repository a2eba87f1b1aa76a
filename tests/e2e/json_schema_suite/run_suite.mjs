// The JSON Schema Test Suite (draft-04, from the json-schema-test-suite npm package) against pagoda's grammar
// compiler: `node run_suite.mjs PAGODA_BINARY [SUMMARY.json]`.
// For every schema of the suite, `pagoda grammar --jsonl` either refuses it (an error naming the unsupported
// feature) or compiles it; then
//   - every random output it generates under the schema must validate with ajv (draft-04, ajv-formats);
//   - no instance the suite marks invalid may be accepted by the grammar (its JSON.stringify text);
//   - the valid instances it accepts are counted (the grammar allows a subset: its whitespace, property order and
//     number spellings).
// Prints a table per file; exits 1 on any generated output ajv rejects or any invalid instance accepted.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv-draft-04';
import addFormats from 'ajv-formats';

const here = dirname(fileURLToPath(import.meta.url));
const [binary, summaryPath] = process.argv.slice(2);
if (!binary) {
  console.error('usage: node run_suite.mjs PAGODA_BINARY [SUMMARY.json]');
  process.exit(2);
}
const suiteDir = join(here, 'node_modules', 'json-schema-test-suite', 'tests', 'draft4');
const files = readdirSync(suiteDir).filter((f) => f.endsWith('.json')).map((f) => join(suiteDir, f));
files.push(join(suiteDir, 'optional', 'format.json'));

const child = spawn(binary, ['grammar', '--jsonl'], { stdio: ['pipe', 'pipe', 'inherit'] });
const answers = createInterface({ input: child.stdout });
const pending = [];
answers.on('line', (line) => pending.shift()(JSON.parse(line)));
const ask = (request) => new Promise((resolve) => {
  pending.push(resolve);
  child.stdin.write(JSON.stringify(request) + '\n');
});

const ajv = new Ajv({ strict: false, allErrors: false });
addFormats(ajv);

const rows = [];
const failures = [];
let seed = 1;
for (const file of files) {
  const name = file.slice(suiteDir.length + 1);
  const row = { file: name, groups: 0, compiled: 0, refused: 0, samples: 0, invalidAccepted: 0, validAccepted: 0, valid: 0, refusals: [] };
  for (const group of JSON.parse(readFileSync(file, 'utf8'))) {
    row.groups++;
    const texts = group.tests.map((t) => JSON.stringify(t.data));
    const answer = await ask({ kind: 'json_schema', schema: group.schema, samples: 20, seed: seed++, max_bytes: 48, texts });
    if (!answer.ok) {
      row.refused++;
      row.refusals.push(`${group.description}: ${answer.error}`);
      continue;
    }
    row.compiled++;
    let validate;
    try {
      validate = ajv.compile(group.schema);
    } catch (e) {
      failures.push(`${name} / ${group.description}: ajv cannot compile the schema pagoda accepted (${e.message})`);
      continue;
    }
    for (const sample of answer.samples) {
      row.samples++;
      let value;
      try {
        value = JSON.parse(sample);
      } catch (e) {
        failures.push(`${name} / ${group.description}: output is not JSON: ${sample}`);
        continue;
      }
      if (!validate(value)) {
        failures.push(`${name} / ${group.description}: ajv rejects ${sample}: ${ajv.errorsText(validate.errors)}`);
      }
    }
    group.tests.forEach((t, i) => {
      if (t.valid) {
        row.valid++;
        if (answer.accepted[i]) row.validAccepted++;
      } else if (answer.accepted[i]) {
        row.invalidAccepted++;
        failures.push(`${name} / ${group.description} / ${t.description}: the grammar accepts the invalid ${texts[i]}`);
      }
    });
  }
  rows.push(row);
}
child.stdin.end();

const pad = (s, n) => String(s).padEnd(n);
const num = (s, n) => String(s).padStart(n);
console.log(`${pad('file', 26)}${num('groups', 7)}${num('compiled', 9)}${num('refused', 8)}${num('samples ok', 11)}${num('valid accepted', 15)}`);
for (const r of rows) {
  console.log(`${pad(r.file, 26)}${num(r.groups, 7)}${num(r.compiled, 9)}${num(r.refused, 8)}${num(r.samples, 11)}${num(`${r.validAccepted}/${r.valid}`, 15)}`);
}
for (const r of rows) for (const why of r.refusals) console.log(`refused: ${r.file} / ${why}`);
for (const f of failures) console.log(`FAIL: ${f}`);
const total = rows.reduce((t, r) => ({ groups: t.groups + r.groups, compiled: t.compiled + r.compiled, samples: t.samples + r.samples }),
  { groups: 0, compiled: 0, samples: 0 });
console.log(`${total.compiled}/${total.groups} schemas compiled, ${total.samples} generated outputs validated by ajv, ${failures.length} failures`);
if (summaryPath) writeFileSync(summaryPath, JSON.stringify({ rows, failures, total }));
process.exit(failures.length === 0 ? 0 : 1);
