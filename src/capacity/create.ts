/** Builds the engine's HostCapacity from `[engine]` of config.toml, sampling the real /proc. */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { HostCapacity } from './host-capacity.js';
import { readHostTimes, readProcessCpu } from './proc-stat.js';

export function createHostCapacity(engine: Config['engine'], log: Logger): HostCapacity {
  const cores = engine.cpu_cores > 0 ? engine.cpu_cores : availableParallelism();
  return new HostCapacity({
    capacityPct: cores * 100,
    reservePercent: engine.cpu_reserve_percent,
    normalNice: engine.normal_priority_nice,
    log: log.child({ component: 'capacity' }),
    readHost: readHostTimes,
    readProcess: readProcessCpu,
    now: () => performance.now(),
    tickMs: 1000,
    windowTicks: 5,
  });
}
