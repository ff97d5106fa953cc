/** The engine's version, from package.json. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from './gst/environment.js';

export const VERSION: string = (() => {
  const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
})();
