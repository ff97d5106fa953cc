/**
 * The official AMWA NMOS schemas (IS-04 v1.3.x, IS-05 v1.1.x; unmodified copies in
 * test/fixtures/nmos/, their SOURCE.txt names the commits) in a JSON Schema draft-04 validator,
 * each keyed by its file name as the schemas' relative `$ref`s name them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import AjvDraft04 from 'ajv-draft-04';
import formatsModule from 'ajv-formats';

// CommonJS modules with `exports.default`: under NodeNext the default import is the module object.
const Ajv = AjvDraft04.default;
const addFormats = formatsModule.default;

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/nmos');

export type NmosApi = 'is-04' | 'is-05';

const FOLDERS: Record<NmosApi, string> = {
  'is-04': path.join(FIXTURES, 'is-04-v1.3.x/APIs/schemas'),
  'is-05': path.join(FIXTURES, 'is-05-v1.1.x/APIs/schemas'),
};

export interface SchemaCheck {
  /** The validation errors of `value` against `file` (empty: valid). */
  errors(file: string, value: unknown): string[];
}

export function nmosSchemas(api: NmosApi): SchemaCheck {
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  const folder = FOLDERS[api];
  for (const file of readdirSync(folder).filter((f) => f.endsWith('.json'))) {
    ajv.addSchema(JSON.parse(readFileSync(path.join(folder, file), 'utf8')) as object, file);
  }
  return {
    errors(file, value) {
      const validate = ajv.getSchema(file);
      if (validate === undefined) throw new Error(`no schema ${file} in ${folder}`);
      if (validate(value) === true) return [];
      return (validate.errors ?? []).map((e) => `${file}${e.instancePath} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
    },
  };
}
