// The JSON Schema Test Suite against pagoda's grammar compiler:
//   node run_suite.mjs PAGODA_BINARY [SUMMARY.json] [--suite TESTS_DIR --drafts draft4,draft6,...]
// Without --suite: the draft-04 cases of the json-schema-test-suite npm package (its latest release carries draft-03
// and draft-04 only). With --suite: a checkout of json-schema-org/JSON-Schema-Test-Suite's tests/ folder (fetched, not
// committed), each draft given (draft4, draft6, draft7, draft2019-09, draft2020-12) validated by ajv's class for it.
// For every schema of the suite, `pagoda grammar --jsonl` (objects' properties in any order, as a validator takes
// them) either refuses it (an error naming the unsupported feature) or compiles it; then
//   - every random output it generates under the schema must validate with ajv (and ajv-formats);
//   - no instance the suite marks invalid may be accepted by the grammar (its JSON.stringify text);
//   - the valid instances it accepts are counted: a schema is "exact" when it accepts every valid one (the grammar
//     may allow a subset: its number spellings, string escapes, and bounds it cannot express); a format.json schema
//     of 2019-09 or 2020-12 (`format` an annotation there) that rejects some is "format asserted", by design.
// Each schema is read in its folder's draft (the probe's "dialect": draft-04/06/07 ignore the keywords beside $ref).
// Prints a table per file, the refused schemas with their errors, the narrower ones with the valid instances they
// reject, and a total per draft; exits 1 on any generated output ajv rejects or any invalid
// instance accepted.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import Ajv2019 from 'ajv/dist/2019.js';
import Ajv2020 from 'ajv/dist/2020.js';
import AjvDraft04 from 'ajv-draft-04';
import addFormats from 'ajv-formats';
import { createRequire } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = args[i + 1];
  args.splice(i, 2);
  return value;
};
const suiteRoot = option('--suite');
const drafts = (option('--drafts') || 'draft4').split(',');
const [binary, summaryPath] = args;
if (!binary) {
  console.error('usage: node run_suite.mjs PAGODA_BINARY [SUMMARY.json] [--suite TESTS_DIR --drafts draft4,draft7,...]');
  process.exit(2);
}
const require = createRequire(import.meta.url);
function validatorFor(draft) {
  // multipleOfPrecision: 2.4 is a multiple of 0.0001, which a float division alone denies; ownProperties: a
  // property named "constructor" is absent from {}, not Object.prototype's.
  const options = { strict: false, allErrors: false, validateFormats: true, multipleOfPrecision: 9, ownProperties: true };
  let ajv;
  if (draft === 'draft4') ajv = new AjvDraft04(options);
  else if (draft === 'draft2019-09') ajv = new Ajv2019(options);
  else if (draft === 'draft2020-12') ajv = new Ajv2020(options);
  else {
    ajv = new Ajv(options);
    if (draft === 'draft6') ajv.addMetaSchema(require('ajv/dist/refs/json-schema-draft-06.json'));
  }
  addFormats(ajv);
  // ajv-formats' email and uri are narrower than their RFCs (no quoted local part or address literal; no URI with
  // an empty path after its scheme), which the suite's valid instances use: these two are checked by the RFCs' ABNF.
  ajv.addFormat('email', rfc5321Mailbox);
  ajv.addFormat('uri', rfc3986Uri);
  return ajv;
}
// RFC 3986 section 3 and appendix A, and RFC 5321 section 4.1.2 (with 4.1.3's address literals), as regexes.
const decOctet = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const ipv4 = `(?:${decOctet}\\.){3}${decOctet}`;
const h16 = '[0-9a-f]{1,4}';
const ls32 = `(?:${h16}:${h16}|${ipv4})`;
const ipv6 = '(?:' + [
  `(?:${h16}:){6}${ls32}`, `::(?:${h16}:){5}${ls32}`, `(?:${h16})?::(?:${h16}:){4}${ls32}`,
  `(?:(?:${h16}:){0,1}${h16})?::(?:${h16}:){3}${ls32}`, `(?:(?:${h16}:){0,2}${h16})?::(?:${h16}:){2}${ls32}`,
  `(?:(?:${h16}:){0,3}${h16})?::${h16}:${ls32}`, `(?:(?:${h16}:){0,4}${h16})?::${ls32}`,
  `(?:(?:${h16}:){0,5}${h16})?::${h16}`, `(?:(?:${h16}:){0,6}${h16})?::`].join('|') + ')';
const unreserved = "a-z0-9\\-._~", subDelims = "!$&'()*+,;=", pct = '%[0-9a-f]{2}';
const pchar = `(?:[${unreserved}${subDelims}:@]|${pct})`;
const authority = `(?:(?:[${unreserved}${subDelims}:]|${pct})*@)?` +
  `(?:\\[(?:${ipv6}|v[0-9a-f]+\\.[${unreserved}${subDelims}:]+)\\]|(?:[${unreserved}${subDelims}]|${pct})*)(?::\\d*)?`;
const hierPart = `(?://${authority}(?:/${pchar}*)*|/(?:${pchar}+(?:/${pchar}*)*)?|${pchar}+(?:/${pchar}*)*|)`;
const queryOrFragment = `(?:${pchar}|[/?])*`;
const rfc3986Uri = new RegExp(`^[a-z][a-z0-9+\\-.]*:${hierPart}(?:\\?${queryOrFragment})?(?:#${queryOrFragment})?$`, 'i');
const atom = "[a-z0-9!#$%&'*+/=?^_`{|}~-]+";
const label = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const rfc5321Mailbox = new RegExp(`^(?:${atom}(?:\\.${atom})*|"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*")` +
  `@(?:(?:${label}\\.)+${label}|\\[${ipv4}\\]|\\[IPv6:${ipv6}\\])$`, 'i');
// ajv divides in floats, so a large multiple of 0.0001 can fail its multipleOf even with a tolerance; a whole
// document that is one number failing only multipleOf is checked again in exact decimal arithmetic.
function exactMultipleAfterAll(text, schema, errors) {
  if (!errors.every((e) => e.keyword === 'multipleOf' && e.instancePath === '')) return false;
  const scaled = (t, digits) => {
    const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(t.trim());
    if (!m) return null;
    const fraction = (m[3] || '').padEnd(digits, '0');
    return BigInt(m[1] + m[2] + fraction);
  };
  const divisor = String(errors[0].params.multipleOf);
  const digits = Math.max((text.split('.')[1] || '').length, (divisor.split('.')[1] || '').length);
  const a = scaled(text, digits), b = scaled(divisor, digits);
  return a !== null && b !== null && b !== 0n && a % b === 0n && typeof schema === 'object';
}
function filesOf(draft) {
  const dir = suiteRoot ? join(suiteRoot, draft) : join(here, 'node_modules', 'json-schema-test-suite', 'tests', draft);
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => join(dir, f));
  if (existsSync(join(dir, 'optional', 'format.json'))) files.push(join(dir, 'optional', 'format.json'));
  else if (existsSync(join(dir, 'optional', 'format')))
    for (const f of readdirSync(join(dir, 'optional', 'format')).filter((f) => f.endsWith('.json')))
      files.push(join(dir, 'optional', 'format', f));
  return { dir, files };
}

const child = spawn(binary, ['grammar', '--jsonl'], { stdio: ['pipe', 'pipe', 'inherit'] });
const answers = createInterface({ input: child.stdout });
const pending = [];
answers.on('line', (line) => pending.shift()(JSON.parse(line)));
const ask = (request) => new Promise((resolve) => {
  pending.push(resolve);
  child.stdin.write(JSON.stringify(request) + '\n');
});

const rows = [];
const failures = [];
let seed = 1;
for (const draft of drafts) {
  const ajv = validatorFor(draft);
  const { dir, files } = filesOf(draft);
  for (const file of files) {
    const name = `${draft}/${file.slice(dir.length + 1)}`;
    const row = { draft, file: name, groups: 0, compiled: 0, refused: 0, exact: 0, formatAsserted: 0, unverifiable: 0,
                  samples: 0, invalidAccepted: 0, validAccepted: 0, valid: 0, refusals: [], narrower: [] };
    // 2019-09 and 2020-12 make `format` an annotation unless a vocabulary asks for assertion, and their format.json
    // expects every string valid; pagoda asserts the formats it knows (structured output wants them), as the
    // optional/format files of the same drafts expect.
    const formatAnnotation = /^draft20(19-09|20-12)\/format\.json$/.test(name);
    for (const group of JSON.parse(readFileSync(file, 'utf8'))) {
      row.groups++;
      const texts = group.tests.map((t) => JSON.stringify(t.data));
      const answer = await ask({ kind: 'json_schema', schema: group.schema, samples: 20, seed: seed++, max_bytes: 48,
                                 texts, any_property_order: true, dialect: draft });
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
        if (/no schema with key or ref "http/.test(e.message)) {
          row.unverifiable++;  // a remote metaschema or $ref ajv cannot fetch here: nothing to check with
          continue;
        }
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
        if (!validate(value) && !exactMultipleAfterAll(sample, group.schema, validate.errors)) {
          failures.push(`${name} / ${group.description}: ajv rejects ${sample}: ${ajv.errorsText(validate.errors)}`);
        }
      }
      const rejected = [];
      group.tests.forEach((t, i) => {
        if (t.valid) {
          row.valid++;
          if (answer.accepted[i]) row.validAccepted++;
          else rejected.push(texts[i].length > 60 ? `${texts[i].slice(0, 57)}...` : texts[i]);
        } else if (answer.accepted[i]) {
          row.invalidAccepted++;
          failures.push(`${name} / ${group.description} / ${t.description}: the grammar accepts the invalid ${texts[i]}`);
        }
      });
      if (rejected.length === 0) row.exact++;
      else if (formatAnnotation && Object.keys(group.schema).every((k) => k === 'format' || k === '$schema')) {
        row.formatAsserted++;
        row.narrower.push(`${group.description} (format asserted by design): rejects the valid ${rejected.join(' ')}`);
      } else row.narrower.push(`${group.description}: rejects the valid ${rejected.join(' ')}`);
    }
    rows.push(row);
  }
}
child.stdin.end();

const pad = (s, n) => String(s).padEnd(n);
const num = (s, n) => String(s).padStart(n);
const narrower = (r) => r.compiled - r.exact - r.formatAsserted - r.unverifiable;
console.log(`${pad('file', 40)}${num('groups', 7)}${num('refused', 8)}${num('exact', 6)}${num('narrower', 9)}${num('format asserted', 16)}${num('samples ok', 11)}${num('valid accepted', 15)}`);
for (const r of rows) {
  console.log(`${pad(r.file, 40)}${num(r.groups, 7)}${num(r.refused, 8)}${num(r.exact, 6)}${num(narrower(r), 9)}${num(r.formatAsserted, 16)}${num(r.samples, 11)}${num(`${r.validAccepted}/${r.valid}`, 15)}`);
}
for (const r of rows) for (const why of r.refusals) console.log(`refused: ${r.file} / ${why}`);
for (const r of rows) for (const what of r.narrower) console.log(`narrower: ${r.file} / ${what}`);
for (const f of failures) console.log(`FAIL: ${f}`);
const sum = (list) => list.reduce((t, r) => ({ groups: t.groups + r.groups, compiled: t.compiled + r.compiled,
  refused: t.refused + r.refused, exact: t.exact + r.exact, formatAsserted: t.formatAsserted + r.formatAsserted,
  unverifiable: t.unverifiable + r.unverifiable, samples: t.samples + r.samples }),
  { groups: 0, compiled: 0, refused: 0, exact: 0, formatAsserted: 0, unverifiable: 0, samples: 0 });
const byDraft = {};
for (const draft of drafts) {
  const t = (byDraft[draft] = sum(rows.filter((r) => r.draft === draft)));
  console.log(`${draft}: ${t.groups} schemas: ${t.exact} compiled and accept every valid instance, ` +
              `${narrower(t)} compiled narrower (some valid instance rejected), ` +
              `${t.formatAsserted} narrower by design (format asserted where the draft makes it an annotation), ` +
              `${t.refused} refused by name, ${t.unverifiable} compiled but not checkable here (a remote metaschema)`);
}
const total = sum(rows);
console.log(`${total.compiled}/${total.groups} schemas compiled, ${total.samples} generated outputs validated by ajv, ${failures.length} failures`);
if (summaryPath) writeFileSync(summaryPath, JSON.stringify({ rows, failures, total, byDraft }));
process.exit(failures.length === 0 ? 0 : 1);
