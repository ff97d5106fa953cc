#!/usr/bin/env node
/**
 * Process edge: argv, configuration, signals, exit code.
 *   audio-engine [--config PATH]
 * Exit 2 for a configuration that cannot be used (the message names the key), 0 after SIGTERM.
 */
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { createEngine } from './app.js';
import { configPath, loadConfig } from './config/load.js';
import { ConfigError } from './errors.js';
import { VERSION } from './version.js';

const USAGE = 'usage: audio-engine [--config PATH]\n  Without --config: $AUDIO_ENGINE_CONFIG, then ./config.toml';

async function main(): Promise<number> {
  let values: { config?: string; help?: boolean; version?: boolean };
  try {
    ({ values } = parseArgs({
      options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    process.stderr.write(`audio-engine: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.version === true) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const log = pino({ base: { service: 'audio-engine' }, timestamp: pino.stdTimeFunctions.isoTime, level: process.env.AUDIO_ENGINE_LOG_LEVEL ?? 'info' });
  let config;
  try {
    config = await loadConfig(configPath(values.config, process.env, process.cwd()));
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`audio-engine: configuration error: ${error.message}\n`);
      log.fatal({ event: 'config-error' }, error.message);
      return 2;
    }
    throw error;
  }
  const engine = await createEngine({ config, log, ownProcess: true });
  let stopping: Promise<number> | undefined;
  const stop = (signal: string): Promise<number> => {
    stopping ??= (async () => {
      log.info({ event: 'shutdown', signal }, `${signal}: stopping every pipeline child`);
      await engine.close();
      log.info({ event: 'stopped' }, 'engine stopped');
      return 0;
    })();
    return stopping;
  };
  const finished = new Promise<number>((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.on(signal, () => {
        if (stopping !== undefined) {
          log.warn({ event: 'shutdown-forced', signal }, `${signal} again: exiting now`);
          process.exit(1);
        }
        void stop(signal).then(resolve);
      });
    }
  });
  try {
    await engine.start();
  } catch (error) {
    log.fatal({ err: error, event: 'start-failed' }, `cannot start: ${(error as Error).message}`);
    await engine.close().catch(() => undefined);
    return 1;
  }
  return finished;
}

main().then(
  (code) => {
    process.exitCode = code;
    // Let pino flush; nothing else should keep the loop alive after close().
    setTimeout(() => process.exit(code), 200).unref();
  },
  (error: unknown) => {
    process.stderr.write(`audio-engine: fatal: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
