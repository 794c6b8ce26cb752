// Runs every ```ts example of the documentation (README.md,
// clients/*/README.md, docs/*.md), which test.sh extracted with
// clients/examples.py into examples-gen/ and compiled against the built
// package, from the repository root against the running servers; an
// example followed by a ```text block must print exactly that.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const root = join(pkg, "..", "..");

interface Example {
  file: string;
  line: number;
  name: string;
  tags: string[];
  code: string;
  expect: string | null;
}

const examples: Example[] = JSON.parse(readFileSync(join(pkg, "examples-gen", "examples.json"), "utf8"));

test("the documentation has TypeScript examples, TLS among them", () => {
  assert.ok(examples.some((e) => e.file === "clients/typescript/README.md"), "none in clients/typescript/README.md");
  assert.ok(examples.some((e) => e.tags.includes("tls")), "no TLS example");
});

for (const ex of examples) {
  test(`${ex.file}:${ex.line} runs`, async () => {
    const js = join(pkg, "examples-gen", "dist", `${ex.name}.js`);
    const run = await promisify(execFile)(process.execPath, [js], { cwd: root, timeout: 120_000 }).catch(
      (e: { code?: number; stdout?: string; stderr?: string }) => {
        assert.fail(`${ex.file}:${ex.line} failed (exit ${e.code}):\n${e.stderr}\n--- ran:\n${ex.code}`);
      },
    );
    if (ex.expect !== null) {
      assert.equal(run.stdout, ex.expect, `${ex.file}:${ex.line}: output differs from the text block after it`);
    }
  });
}
