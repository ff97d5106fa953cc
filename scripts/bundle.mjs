// Bundles the built engine (dist/src/main.js) into one file, dist/audio-engine.mjs: loading one
// module instead of several hundred small ESM files more than halves Node's start-up work, which
// is most of the time to ready. @grpc/grpc-js and @grpc/reflection stay outside: they read their
// own .proto files from their package folders at run time.
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
