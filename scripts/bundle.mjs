// Bundles the built engine (dist/src/main.js) into one file, dist/audio-engine.mjs: loading one
// module instead of several hundred small ESM files more than halves Node's start-up work, which
// is most of the time to ready. @grpc/grpc-js and @grpc/reflection stay outside: they read their
// own .proto files from their package folders at run time.
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

await build({
  entryPoints: ['dist/src/main.js'],
  outfile: 'dist/audio-engine.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  external: ['@grpc/grpc-js', '@grpc/reflection'],
  // CommonJS dependencies inside an ES module bundle expect these.
  banner: {
    js: [
      "import { createRequire as __engineCreateRequire } from 'node:module';",
      "import { fileURLToPath as __engineFileURLToPath } from 'node:url';",
      "import { dirname as __engineDirname } from 'node:path';",
      'const require = __engineCreateRequire(import.meta.url);',
      'const __filename = __engineFileURLToPath(import.meta.url);',
      'const __dirname = __engineDirname(__filename);',
    ].join('\n'),
  },
  logLevel: 'warning',
});

// The dashboard page (src/dashboard/public) and the libraries it imports, copied from node_modules
// into dist/dashboard: the engine serves them itself, the browser fetches nothing elsewhere.
const page = 'dist/dashboard';
rmSync(page, { recursive: true, force: true });
cpSync('src/dashboard/public', page, { recursive: true });
mkdirSync(`${page}/vendor`, { recursive: true });
for (const [from, to] of [
  ['node_modules/preact/dist/preact.module.js', 'preact.module.js'],
  ['node_modules/preact/dist/preact.module.js.map', 'preact.module.js.map'],
  ['node_modules/preact/hooks/dist/hooks.module.js', 'hooks.module.js'],
  ['node_modules/preact/hooks/dist/hooks.module.js.map', 'hooks.module.js.map'],
  ['node_modules/preact/LICENSE', 'preact.LICENSE'],
  ['node_modules/htm/dist/htm.module.js', 'htm.module.js'],
  ['node_modules/htm/LICENSE', 'htm.LICENSE'],
  ['node_modules/uplot/dist/uPlot.esm.js', 'uPlot.esm.js'],
  ['node_modules/uplot/dist/uPlot.min.css', 'uPlot.min.css'],
  ['node_modules/uplot/LICENSE', 'uPlot.LICENSE'],
]) {
  cpSync(from, `${page}/vendor/${to}`);
}
