/**
 * Every station of config.toml, by id. Stations are not stored: the configuration is their
 * source. They start with the engine (autostart) and stop with it.
 */
import type { StationConfig } from '../config/schema.js';
import { Station, type StationDeps, type StationView } from './station.js';

/** Unknown station: 404 in fastify's error shape (code STATION_NOT_FOUND). */
export class StationNotFoundError extends Error {
  readonly statusCode = 404;
  readonly code = 'STATION_NOT_FOUND';
  constructor(id: string) {
    super(`station ${id} not found`);
    this.name = 'StationNotFoundError';
  }
}

export class Stations {
  private readonly stations = new Map<string, Station>();

  constructor(configs: readonly StationConfig[], deps: StationDeps) {
    for (const config of configs) this.stations.set(config.id, new Station(config, deps));
  }

  get size(): number {
    return this.stations.size;
  }

  require(id: string): Station {
    const station = this.stations.get(id);
    if (station === undefined) throw new StationNotFoundError(id);
    return station;
  }

  list(): StationView[] {
    return [...this.stations.values()].map((s) => s.view());
  }

  /** For metrics: each station's managed pipeline under its pipeline id `station:<id>`. */
  *entries(): IterableIterator<{ record: { id: string; spec: { input: { latency?: number }; output: Station['config']['output'] } }; managed: Station['managed'] }> {
    for (const station of this.stations.values()) {
      const latency = station.config.harbor === 'srt' ? station.config.latency : undefined;
      yield { record: { id: station.supervisor.id, spec: { input: { latency }, output: station.config.output } }, managed: station.managed };
    }
  }

  /** Starts every station marked autostart (refusals are logged and shown, never fatal). */
  async autostart(): Promise<number> {
    await Promise.all([...this.stations.values()].map((s) => s.autostart()));
    return [...this.stations.values()].filter((s) => s.view().enabled).length;
  }

  async shutdown(): Promise<void> {
    await Promise.all([...this.stations.values()].map((s) => s.shutdown()));
  }
}
