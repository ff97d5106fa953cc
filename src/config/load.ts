/**
 * Configuration: file → parse (smol-toml) → validate with defaults → resolve paths → freeze.
 * Any problem is a ConfigError whose message names the key; main.ts exits 2 on it.
 */
import { access, constants, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import { ConfigError, ValidationError } from '../errors.js';
import { checkRedundantLeg, checkRtpOutput } from '../spec/rtp-output.js';
import { compileValidator, DOTTED } from '../spec/validate.js';
import { isValidKeySpec } from '../auth/keys.js';
import { CLOCK_SOURCE, Config } from './schema.js';
import { OUTPUT_RT_PRIORITY } from '../gst/realtime.js';

export interface LoadedConfig extends Config {
  /** The file it came from (absolute). */
  file: string;
  /** engine.state_dir resolved against the config file's folder. */
  stateDir: string;
  /** engine.fallback_dir resolved against the config file's folder. */
  fallbackDir: string;
}

const validator = compileValidator(Config);

/** Which file to read: `--config PATH`, then AUDIO_ENGINE_CONFIG, then ./config.toml. */
export function configPath(argvPath: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  const chosen = argvPath ?? env.AUDIO_ENGINE_CONFIG ?? 'config.toml';
  return path.resolve(cwd, chosen);
}

/** Validates an already parsed document (used by tests and by loadConfig). */
export function checkConfig(document: unknown, file: string): LoadedConfig {
  checkClockSource(document, file);
  let config: Config;
  try {
    config = validator.parse(document, DOTTED);
  } catch (error) {
    if (error instanceof ValidationError) throw new ConfigError(`${file}: ${error.message}`);
    throw error;
  }
  if (config.mode === 'managed' && (!config.auth.enabled || config.auth.api_keys.length === 0)) {
    throw new ConfigError(`${file}: mode = "managed" needs auth.enabled = true and at least one key in auth.api_keys`);
  }
  if (config.auth.enabled && config.auth.api_keys.length === 0) {
    throw new ConfigError(`${file}: auth.api_keys is empty while auth.enabled = true: no client could connect`);
  }
  config.auth.api_keys.forEach((key, i) => {
    if (!isValidKeySpec(key)) {
      throw new ConfigError(`${file}: auth.api_keys.${i} must be a plain key of printable characters or "sha256:" and 64 hex digits`);
    }
  });
  const ports = new Map<number, string>();
  const claim = (port: number, key: string): void => {
    const other = ports.get(port);
    if (other !== undefined) throw new ConfigError(`${file}: ${key} = ${port} is the same port as ${other}`);
    ports.set(port, key);
  };
  claim(config.server.rest_port, 'server.rest_port');
  claim(config.server.grpc_port, 'server.grpc_port');
  claim(config.server.dashboard_port, 'server.dashboard_port');
  const ids = new Set<string>();
  config.stations.forEach((station, i) => {
    if (ids.has(station.id)) throw new ConfigError(`${file}: stations.${i}.id "${station.id}" is used twice`);
    ids.add(station.id);
    const harbor = 8100 + station.number - 1;
    const other = ports.get(harbor);
    if (other !== undefined) {
      throw new ConfigError(`${file}: stations.${i}.number = ${station.number} gives harbor port ${harbor}, the same port as ${other}`);
    }
    ports.set(harbor, `stations.${i}.number`);
    if (station.harbor === 'icecast' && station.password === undefined) {
      throw new ConfigError(`${file}: stations.${i}.password is required with harbor = "icecast" (the source password; user "source")`);
    }
    if (station.harbor !== 'icecast' && station.password !== undefined) {
      throw new ConfigError(`${file}: stations.${i}.password is only used with harbor = "icecast"`);
    }
    try {
      checkRtpOutput(station.output, (name) => `stations.${i}.output.${name}`);
      checkRedundantLeg(station.output, `stations.${i}.output.redundant.host`);
    } catch (error) {
      if (error instanceof ValidationError) throw new ConfigError(`${file}: ${error.message}`);
      throw error;
    }
  });
  if (config.engine.jitter_max_ms < config.engine.jitter_ms) {
    throw new ConfigError(`${file}: engine.jitter_max_ms = ${config.engine.jitter_max_ms} is below engine.jitter_ms = ${config.engine.jitter_ms}: the ceiling must hold the reserve`);
  }
  const priority = config.engine.control_priority;
  if (priority !== 0 && priority <= OUTPUT_RT_PRIORITY) {
    throw new ConfigError(`${file}: engine.control_priority = ${priority} is not above the children's real-time threads (${OUTPUT_RT_PRIORITY}): 0 (off) or ${OUTPUT_RT_PRIORITY + 1}-99`);
  }
  const stateDir = path.resolve(path.dirname(file), config.engine.state_dir);
  const fallbackDir = path.resolve(path.dirname(file), config.engine.fallback_dir);
  return deepFreeze({ ...config, file, stateDir, fallbackDir });
}

/** A clearer message than the pattern's for the one key whose values are a short list. */
function checkClockSource(document: unknown, file: string): void {
  const clock = (document as { clock?: unknown } | null)?.clock;
  const source = clock !== null && typeof clock === 'object' ? (clock as { source?: unknown }).source : undefined;
  if (typeof source === 'string' && !CLOCK_SOURCE.test(source)) {
    const shown = JSON.stringify(source.length > 40 ? `${source.slice(0, 40)}…` : source);
    throw new ConfigError(`${file}: clock.source must be "tai", "realtime" or a PTP hardware clock "/dev/ptpN"; got ${shown}`);
  }
}

/** At start: a named PTP hardware clock must exist and be readable by the engine (its children open it). */
export async function checkClockDevice(config: LoadedConfig): Promise<void> {
  const source = config.clock.source;
  if (!source.startsWith('/dev/')) return;
  try {
    await access(source, constants.R_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`${config.file}: clock.source = "${source}" cannot be read (${code}): no such PTP hardware clock, or no permission`);
  }
}

export async function loadConfig(file: string): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`${file}: cannot read the configuration file (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let document: unknown;
  try {
    document = parseToml(text);
  } catch (error) {
    if (error instanceof TomlError) {
      throw new ConfigError(`${file}:${error.line}:${error.column}: ${error.message.split('\n')[0] ?? 'invalid TOML'}`);
    }
    throw error;
  }
  const config = checkConfig(document, file);
  await checkClockDevice(config);
  return config;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
