/**
 * src/gen is generated (npm run gen = buf generate) and committed. This regenerates into a
 * temporary folder with the same buf.gen.yaml and fails on any difference: an edit of the
 * .proto without `npm run gen`, or a hand edit of the generated code.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { ROOT } from '../helpers/engine-process.js';

const run = promisify(execFile);

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

void t.test('src/gen is what buf generate makes of proto/', async (t) => {
  const out = t.testdir();
  await run(path.join(ROOT, 'node_modules', '.bin', 'buf'), ['generate', '--output', out], { cwd: ROOT, timeout: 120_000 });
  const fresh = path.join(out, 'src', 'gen');
  const committed = path.join(ROOT, 'src', 'gen');
  const files = filesUnder(fresh);
  t.ok(files.includes(path.join('svc', 'v1', 'engine.ts')), 'the messages and the service');
  t.ok(files.includes(path.join('svc', 'v1', 'engine_descriptor.ts')), 'the descriptor for reflection');
  t.same(filesUnder(committed), files, 'the same files');
  for (const file of files) {
    const same = readFileSync(path.join(committed, file), 'utf8') === readFileSync(path.join(fresh, file), 'utf8');
    t.ok(same, `${file} is up to date (run npm run gen and commit src/gen)`);
  }
});
