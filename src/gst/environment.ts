/**
 * Where GStreamer and the engine's own elements are, the environment every child gets, and the
 * check behind health: can this engine run pipelines at all?
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCommand } from '../process/child.js';
import { INSTANCE_VAR } from '../process/reap.js';

/** Elements every pipeline needs, and the engine's own ones for the processing steps. */
export const REQUIRED_ELEMENTS = [
  'srtsrc', 'typefind', 'tsdemux', 'decodebin', 'audioconvert', 'audioresample', 'rtpL24pay', 'udpsink',
] as const;
export const OWN_ELEMENTS = ['clockbridge', 'loudnorm', 'parametriceq', 'pipelinestats', 'rtpbatch', 'srtaccess', 'chaindecode', 'enginecontrol', 'aacframer', 'l24pack'] as const;

/** The repository (or installed package) root: the folder holding our package.json. */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'gst-plugins'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the engine package root');
    dir = parent;
  }
}

export interface GstEnvironment {
  launchCommand: string;
  inspectCommand: string;
  /** Environment added for every child. */
  env: Record<string, string>;
}

export function gstEnvironment(stateDir: string, processEnv: NodeJS.ProcessEnv): GstEnvironment {
  const pluginDir = processEnv.AUDIO_ENGINE_PLUGIN_PATH ?? path.join(packageRoot(), 'gst-plugins', 'build');
  const pluginPath = [pluginDir, processEnv.GST_PLUGIN_PATH].filter((p): p is string => p !== undefined && p !== '').join(':');
  return {
    launchCommand: processEnv.AUDIO_ENGINE_GST_LAUNCH ?? 'gst-launch-1.0',
    inspectCommand: 'gst-inspect-1.0',
    env: {
      GST_PLUGIN_PATH: pluginPath,
      // A registry of our own, writable: children start warm (a cold scan costs about 0.5 s).
      GST_REGISTRY: path.join(stateDir, `gst-registry-${process.arch}.bin`),
      GST_DEBUG_NO_COLOR: '1',
      [INSTANCE_VAR]: stateDir,
    },
  };
}

export interface GstCheck {
  ok: boolean;
  missing: string[];
  reason: string | undefined;
}

/** Element names in the output of a bare `gst-inspect-1.0` (lines `plugin:  element: description`). */
export function listedElements(listing: string): Set<string> {
  const names = new Set<string>();
  for (const line of listing.split('\n')) {
    const match = /^[A-Za-z0-9_.-]+:\s+([A-Za-z0-9_-]+):\s/.exec(line);
    if (match?.[1] !== undefined) names.add(match[1]);
  }
  return names;
}

/** Checks that every element exists, with one gst-inspect-1.0 run (which also warms the registry). */
export async function checkGstreamer(gst: GstEnvironment): Promise<GstCheck> {
  const all: string[] = [...REQUIRED_ELEMENTS, ...OWN_ELEMENTS];
  let listed = new Set<string>();
  let failure: string | undefined;
  try {
    const result = await runCommand(gst.inspectCommand, [], gst.env, 20_000);
    if (result.exitCode === 0) listed = listedElements(result.stdout);
    else failure = `${gst.inspectCommand} exited with ${String(result.exitCode)}`;
  } catch (error) {
    failure = `cannot run ${gst.inspectCommand}: ${error instanceof Error ? error.message : String(error)}`;
  }
  const missing = all.filter((name) => !listed.has(name));
  const reason = missing.length === 0
    ? undefined
    : `${failure ?? 'GStreamer elements missing'}: ${missing.join(', ')} (run scripts/setup.sh)`;
  return { ok: missing.length === 0, missing, reason };
}
