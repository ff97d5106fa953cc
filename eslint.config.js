import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
        'getComputedStyle', 'setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'console',
      ].map((name) => [name, 'readonly'])),
    },
  },
);
