/**
 * Durable pipeline records: one JSON file per pipeline under <state_dir>/pipelines.
 * A write is atomic and durable before it returns (temp file, fsync, rename, fsync the folder),
 * so a pipeline acknowledged with 201 survives kill -9 and power loss. A write that fails (a full
 * file system) leaves nothing behind and throws StorageError. A damaged file is set aside (renamed
 * *.damaged-<ms>) and reported; it never blocks start-up.
 *
 * A record may hold a secret (`input.passphrase`), so every record is mode 0600 and the folder
 * 0700: the same mode for all records (created so, never widened), so neither a window between
 * create and chmod nor a record's mode tells which pipelines have a passphrase. Records written
 * by earlier versions (0640) are narrowed when the store opens.
 */
import { chmod, mkdir, readdir, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { StorageError, ValidationError } from '../errors.js';
import type { PipelineSpec } from '../spec/schema.js';
import { parsePipelineSpec } from '../spec/validate.js';
import { syncFolder, writeDurably } from './durable-file.js';
import { PIPELINE_ID } from './ids.js';

export interface PipelineRecord {
  id: string;
  /** Creation order; ties of created_at are broken by it. */
  seq: number;
  created_at: string;
  spec: PipelineSpec;
  /** 1 at creation, +1 with every change (the ETag of PATCH); records without it are version 1. */
  version?: number;
}

const FORMAT = 1;
/** Owner read/write only: a record may hold a passphrase. */
export const RECORD_MODE = 0o600;
const DIR_MODE = 0o700;

export interface OpenResult {
  records: PipelineRecord[];
  /** Files set aside, with the reason. */
  damaged: { file: string; reason: string }[];
}

export class PipelineStore {
  readonly dir: string;
  constructor(stateDir: string) {
    this.dir = path.join(stateDir, 'pipelines');
  }

  private fileOf(id: string): string {
    if (!PIPELINE_ID.test(id)) throw new Error(`not a pipeline id: ${id}`);
    return path.join(this.dir, `${id}.json`);
  }

  /** Reads every record, oldest first. */
  async open(): Promise<OpenResult> {
    await mkdir(this.dir, { recursive: true, mode: DIR_MODE });
    await chmod(this.dir, DIR_MODE);
    const records: PipelineRecord[] = [];
    const damaged: OpenResult['damaged'] = [];
    for (const entry of (await readdir(this.dir)).sort()) {
      const file = path.join(this.dir, entry);
      if (entry.endsWith('.tmp')) {
        await unlink(file).catch(() => undefined); // a write that never reached its rename
        continue;
      }
      if (!entry.endsWith('.json')) continue;
      try {
        await chmod(file, RECORD_MODE);
        records.push(decode(await readFile(file, 'utf8'), entry));
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        const aside = `${file}.damaged-${Date.now()}`;
        await rename(file, aside).catch(() => undefined);
        damaged.push({ file: aside, reason });
      }
    }
    records.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.seq - b.seq));
    return { records, damaged };
  }

  async put(record: PipelineRecord): Promise<void> {
    const body = `${JSON.stringify({ format: FORMAT, ...record }, null, 2)}\n`;
    try {
      await writeDurably(this.fileOf(record.id), body, RECORD_MODE);
    } catch (error) {
      // Nothing half-made: writeDurably left neither the temp file nor a record of unknown durability.
      const errno = (error as NodeJS.ErrnoException).code ?? 'EIO';
      throw new StorageError(
        errno,
        errno === 'ENOSPC' || errno === 'EDQUOT'
          ? `the state directory is full (${errno}): the pipeline record could not be written; nothing was created`
          : `the pipeline record could not be written (${errno}); nothing was created`,
      );
    }
  }

  async remove(id: string): Promise<void> {
    await unlink(this.fileOf(id)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    await syncFolder(this.dir);
  }
}

function decode(text: string, entry: string): PipelineRecord {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not the parser's message: it quotes the text around the fault, which may be a passphrase.
    throw new Error('not valid JSON');
  }
  if (raw.format !== FORMAT) throw new Error(`unknown format ${JSON.stringify(raw.format)}`);
  const { id, seq, created_at: createdAt, spec, version } = raw;
  if (typeof id !== 'string' || !PIPELINE_ID.test(id) || `${id}.json` !== entry) throw new Error('id does not match the file name');
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) throw new Error('seq is not an integer');
  if (typeof createdAt !== 'string' || Number.isNaN(Date.parse(createdAt))) throw new Error('created_at is not a timestamp');
  if (version !== undefined && (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1)) throw new Error('version is not a positive integer');
  try {
    return { id, seq, created_at: createdAt, spec: parsePipelineSpec(spec, { root: 'spec', separator: '.' }), ...(version === undefined ? {} : { version }) };
  } catch (error) {
    if (error instanceof ValidationError) throw new Error(error.message);
    throw error;
  }
}

