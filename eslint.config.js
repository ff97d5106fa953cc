import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

// The data flow is the folder layout (README.md, "Layout"): a part of src/ imports only parts on
// a lower layer than its own (and itself), never one on its own layer or above. import-x/no-cycle
// catches file-level cycles inside a folder, which these layers cannot see.
const LAYERS = [
  ['errors.ts', 'gen', 'auth', 'net', 'stats', 'process'],
  ['spec', 'gst'],
  ['config', 'store', 'version.ts'],
  ['compiler', 'capacity', 'aes67'],
  ['supervisor'],
  ['pipelines'],
  ['stations', 'metrics', 'dashboard', 'health.ts', 'nmos'],
  ['http', 'grpc'],
  ['app.ts'],
  ['main.ts'],
];
const layerZones = LAYERS.flatMap((layer, rank) => layer.map((part) => ({
  target: `./src/${part}`,
  from: LAYERS.slice(rank).flat().filter((other) => other !== part).map((other) => `./src/${other}`),
  message: `src/${part} is on layer ${rank} of eslint.config.js (LAYERS): it imports only from the layers below it.`,
}))).filter((zone) => zone.from.length > 0);

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'gst-plugins/', 'src/gen/', '.tap/', 'coverage/', 'test-artifacts/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  // Import cycles and imports that point up the layers: eslint-plugin-import-x, resolving the
  // `.js` specifiers of our TypeScript sources to their `.ts` files.
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.mjs', '.json'], extensionAlias: { '.js': ['.ts', '.js'] } })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: layerZones }],
    },
  },
  { files: ['eslint.config.js', 'scripts/*.mjs'], ...tseslint.configs.disableTypeChecked },
  // The dashboard page: plain ES modules run by the browser (no build step, not in tsconfig).
  {
    files: ['src/dashboard/public/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'module',
      globals: Object.fromEntries([
        'window', 'document', 'sessionStorage', 'fetch', 'AbortController', 'TextDecoderStream', 'ResizeObserver',
        'getComputedStyle', 'URLSearchParams', 'setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'console',
      ].map((name) => [name, 'readonly'])),
    },
  },
);
