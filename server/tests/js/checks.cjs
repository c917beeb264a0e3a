// What the JS check scripts share: one `ok`/`FAIL` line per check (the Rust harness
// reads them), and an exit status saying whether any failed.
"use strict";

let failures = 0;

/** Throws `message` unless `condition` holds. */
function expect(condition, message) {
  if (!condition) throw new Error(message);
}

/** `value` as JSON, cut to 400 characters. */
function short(value) {
  const text = JSON.stringify(value);
  return text && text.length > 400 ? `${text.slice(0, 400)}…` : text;
}

/** Runs one check, printing its line; a failure does not stop the next. */
async function check(name, fn) {
  const start = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${((Date.now() - start) / 1000).toFixed(2)}s)`);
  } catch (error) {
    failures += 1;
    console.log(`FAIL ${name}: ${error && error.stack ? error.stack : error}`);
  }
}

/** Ends the process: 1 if any check failed. */
function finish() {
  process.exit(failures ? 1 : 0);
}

module.exports = { check, expect, finish, short };
