/**
 * Debian's chromium driven by playwright-core: headless, a fresh profile per launch, nothing
 * downloaded, no network of its own (no sync, no component updates). Closed in the test's
 * teardown, even when the test fails. Screenshots go to test-artifacts/ (ignored by git).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import type { Test } from 'tap';
import { ROOT } from './engine-process.js';

export const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = path.join(ROOT, 'test-artifacts');

/** A fresh profile (playwright passes it as --user-data-dir) in a temporary folder. */
export async function launchBrowser(t: Test, viewport = { width: 1280, height: 720 }): Promise<BrowserContext> {
  const profile = mkdtempSync(path.join(tmpdir(), 'audio-engine-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync',
    ],
  });
  t.teardown(async () => {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  });
  return browser;
}

/** Where a screenshot named `name` is kept. */
export function artifact(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return path.join(ARTIFACTS, name);
}
