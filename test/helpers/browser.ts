/**
 * Headless Chromium (Debian's `chromium` package) driven by puppeteer-core, for pages dcm writes.
 * No browser is ever downloaded: a missing chromium fails the test with how to install it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { ROOT } from './cli.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where tests leave files for a person to look at (git-ignored). */
export const OUTPUT_DIR = path.join(ROOT, 'test-output');

export interface Opened {
  page: Page;
  /** Console errors, page errors and failed requests seen while loading. */
  errors: string[];
  /** Requests for anything but the file itself (the page must need no network). */
  outside: string[];
  loadMs: number;
}

export async function withChromium<T>(fn: (browser: Browser) => Promise<T>): Promise<T> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`chromium is not installed at ${CHROMIUM}: apt-get update && apt-get install -y chromium (.ci/run does so)`);
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
    ],
  });
  try {
    return await fn(browser);
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

/** Open a local file; every request other than the file itself is refused and recorded. */
export async function openFile(browser: Browser, file: string, width = 1280): Promise<Opened> {
  const page = await browser.newPage();
  await page.setViewport({ width, height: 900 });
  const errors: string[] = [];
  const outside: string[] = [];
  const url = `file://${file}`;
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('requestfailed', (r) => {
    if (r.url() !== url) errors.push(`request failed: ${r.url()}`);
  });
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    if (r.url() === url) void r.continue();
    else {
      outside.push(r.url());
      void r.abort();
    }
  });
  const t0 = performance.now();
  await page.goto(url, { waitUntil: 'load' });
  const loadMs = performance.now() - t0;
  return { page, errors, outside, loadMs };
}

export function outputPath(name: string): string {
  fs.mkdirSync(OUTPUT_DIR, { recursive: true });
  return path.join(OUTPUT_DIR, name);
}
