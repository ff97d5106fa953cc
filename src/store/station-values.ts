/**
 * The live processing values of stations (PATCH /api/stations/{id}): one JSON file per station
 * under <state_dir>/stations, written atomically and durably before the change is answered
 * (temp file, fsync, rename, fsync the folder), as pipeline records are. config.toml stays the
 * source of a station's existence; a file records the configured processing it was made from,
 * and when config.toml's processing has changed since, the configuration wins (stale()).
 */
import { mkdir, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { PipelineSpec } from '../spec/schema.js';
import { writeDurably } from './durable-file.js';

export type Processing = PipelineSpec['processing'];

export interface StationValues {
  /** The processing the station runs with. */
  processing: Processing;
  /** config.toml's processing when the values were set. */
  config_processing: Processing;
  /** 1 for the configured values, +1 with every change. */
  version: number;
  updated_at: string;
}

const FORMAT = 1;
const STATION_ID = /^[a-z0-9-]{1,32}$/;

export class StationValuesStore {
  readonly dir: string;
  constructor(stateDir: string) {
    this.dir = path.join(stateDir, 'stations');
  }

  private fileOf(id: string): string {
    if (!STATION_ID.test(id)) throw new Error(`not a station id: ${id}`);
    return path.join(this.dir, `${id}.json`);
  }

  /** The stored values, or undefined when there are none or they cannot be read (reason logged by the caller). */
  async get(id: string): Promise<StationValues | undefined> {
    let text: string;
    try {
      text = await readFile(this.fileOf(id), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const raw = JSON.parse(text) as Partial<StationValues> & { format?: unknown };
    if (raw.format !== FORMAT || !Array.isArray(raw.processing) || !Array.isArray(raw.config_processing) || typeof raw.version !== 'number') {
      throw new Error(`${this.fileOf(id)}: not a station values record`);
    }
    return { processing: raw.processing, config_processing: raw.config_processing, version: raw.version, updated_at: String(raw.updated_at) };
  }

  async put(id: string, values: StationValues): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeDurably(this.fileOf(id), `${JSON.stringify({ format: FORMAT, ...values }, null, 2)}\n`, 0o600);
  }

  async remove(id: string): Promise<void> {
    await unlink(this.fileOf(id)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }
}
