// The node client tests' shared check runner: check() runs one named check and prints "ok NAME" or "FAIL NAME: the
// error"; finish() prints the tally ("all checks passed", which the C++ side looks for, or how many failed) and
// exits non-zero when any failed.
let failures = 0;

export async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    failures += 1;
    console.log(`FAIL ${name}: ${err && err.stack ? err.stack : err}`);
  }
}

export function finish() {
  if (failures > 0) {
    console.log(`${failures} checks failed`);
    process.exit(1);
  }
  console.log("all checks passed");
}
