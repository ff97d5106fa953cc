#!/usr/bin/env node
// Sorts the tap test files by what they can do: a file that can start another process (it
// imports node:child_process or execa, itself or through any module it imports from this
// repository, src/ included) is "processes"; every other file runs inside tap's own process
// alone and is "in-process". scripts/test.sh runs the in-process files in parallel under every
// supported Node and the others once, one at a time, so that real children do not share the
// 2-core machine with each other.
//
//   node scripts/test-files.mjs in-process    # one path a line
//   node scripts/test-files.mjs processes
//   node scripts/test-files.mjs why FILE      # the import chain that makes FILE "processes"
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SPAWNS = /from\s+['"](?:node:)?child_process['"]|from\s+['"]execa['"]|require\(\s*['"](?:node:)?child_process['"]\s*\)/;
const IMPORTS = /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

/** The repository file a relative specifier names (TypeScript's `.js` for `.ts`), or null. */
function resolveImport(from, spec) {
  if (!spec.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), spec);
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`, path.join(base, 'index.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? null;
}

const chains = new Map();
/** The import chain from `file` to a module that can spawn, or null when there is none. */
function spawnChain(file, visiting = new Set()) {
  if (chains.has(file)) return chains.get(file);
  if (visiting.has(file)) return null;
  visiting.add(file);
  const text = readFileSync(file, 'utf8');
  let chain = SPAWNS.test(text) ? [file] : null;
  for (const m of chain === null ? text.matchAll(IMPORTS) : []) {
    const target = resolveImport(file, m[1] ?? m[2] ?? m[3]);
    const rest = target === null ? null : spawnChain(target, visiting);
    if (rest !== null) {
      chain = [file, ...rest];
      break;
    }
  }
  visiting.delete(file);
  chains.set(file, chain);
  return chain;
}

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'fixtures' ? [] : testFiles(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

const [what, file] = process.argv.slice(2);
const relative = (f) => path.relative(ROOT, f);
if (what === 'why' && file !== undefined) {
  const chain = spawnChain(path.resolve(file));
  process.stdout.write(`${chain === null ? 'in-process' : chain.map(relative).join(' > ')}\n`);
} else if (what === 'in-process' || what === 'processes') {
  const files = testFiles(path.join(ROOT, 'test')).sort();
  const wanted = files.filter((f) => (spawnChain(f) === null) === (what === 'in-process'));
  process.stdout.write(`${wanted.map(relative).join('\n')}\n`);
} else {
  process.stderr.write('usage: node scripts/test-files.mjs in-process | processes | why FILE\n');
  process.exit(2);
}
